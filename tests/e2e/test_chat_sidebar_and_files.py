"""Conversation search and date groups, Markdown export, and file attachments the file tools
can read (and another user cannot), in Chromium at 1280x800 and 390x844.

(The weight of `/`, Prism included, is tested in tests/e2e/test_page_weight.py.)"""

from __future__ import annotations

import datetime
import json
import uuid
from pathlib import Path

import pytest
from django.utils import timezone
from playwright.sync_api import expect

from chat_app.models import Conversation, Message
from tests.e2e.conftest import login, open_new_conversation

pytestmark = pytest.mark.e2e


def _send(page, text: str) -> None:
    page.fill("#composer-text", text)
    page.press("#composer-text", "Enter")


def _open_drawer(page) -> None:
    if page.size == "phone":
        page.click("[data-testid=drawer-toggle]")


def test_search_finds_a_conversation_by_what_was_said_and_groups_by_date(server, sized_page):
    page = sized_page
    word = f"zebra{uuid.uuid4().hex[:6]}"
    ((alice,),) = server.sql("SELECT id FROM auth_user WHERE username = 'alice'")
    ten_days_ago = timezone.now() - datetime.timedelta(days=10)
    c = server.insert(Conversation, owner_id=alice, title="Old trip", updated=ten_days_ago)
    server.insert(Message, conversation_id=c.pk, role="user", text=f"the {word} crossing")
    login(page, server, "alice")
    open_new_conversation(page, server)
    _open_drawer(page)
    labels = page.locator("#conversation-list .group-label").all_text_contents()
    assert "Previous 30 days" in labels
    old = page.locator("#conversation-list a", has_text="Old trip").first
    assert old.locator("xpath=ancestor::ul[1]/preceding-sibling::h2[1]").text_content() == (
        "Previous 30 days"
    )
    page.fill("[data-testid=conversation-search]", word)
    results = page.locator("#search-results a")
    results.first.wait_for()
    assert results.all_inner_texts() == ["Old trip"]
    assert page.locator("#conversation-list").is_hidden()
    page.press("[data-testid=conversation-search]", "Escape")
    page.wait_for_selector("#conversation-list", state="visible")


def test_bob_does_not_find_alices_conversations(server, sized_page):
    page = sized_page
    login(page, server, "bob")
    token = next(c["value"] for c in page.context.cookies() if c["name"] == "csrftoken")
    found = page.request.get(
        server.url + "/api/conversations?q=trip", headers={"X-CSRFToken": token}
    )
    assert found.ok and all(c["title"] != "Old trip" for c in found.json())


def test_export_downloads_the_conversation_as_markdown(server, sized_page):
    page = sized_page
    login(page, server, "alice")
    url = open_new_conversation(page, server)
    _send(page, "export me please")
    page.wait_for_selector(".run[data-status=completed]")
    _send(page, "/list_dir path=.")
    page.wait_for_function(
        "() => document.querySelectorAll('.run[data-status=completed]').length == 2"
    )
    with page.expect_download() as info:
        page.click("[data-testid=export]")
    download = info.value
    assert download.suggested_filename == "Export-me-please.md"  # named after the title
    text = Path(download.path()).read_text(encoding="utf-8")
    assert text.startswith("# Export me please\n")
    assert "## You\n\nexport me please" in text and "## Assistant" in text
    # Tool calls with their arguments and results, not just their names.
    assert "### Tool `list_dir`: done" in text
    assert '"path": "."' in text and "Result:" in text
    # The same as JSON, from the chat's "…" menu.
    _open_drawer(page)
    item = page.locator("#conversation-list .conversation-item a[aria-current=true]").locator("..")
    item.locator("[data-testid=conversation-menu-button]").click()
    with page.expect_download() as info:
        page.get_by_role("menuitem", name="Export as JSON").click()
    download = info.value
    assert download.suggested_filename == "Export-me-please.json"
    data = json.loads(Path(download.path()).read_text(encoding="utf-8"))
    assert data["title"] == "Export me please"
    assert [r["user"] for r in data["runs"]] == ["export me please", "/list_dir path=."]
    call = data["runs"][1]["tool_calls"][0]
    assert call["name"] == "list_dir" and call["arguments"] == {"path": "."}
    assert call["status"] == "done" and call["result"]
    # Bob gets "not found" for the same addresses.
    page.context.clear_cookies()
    login(page, server, "bob")
    assert page.request.get(url + "export.md").status == 404
    assert page.request.get(url + "export.json").status == 404


def test_an_attached_file_is_readable_by_the_file_tools_and_not_by_bob(
    server, sized_page, tmp_path
):
    page = sized_page
    secret = f"alice's note {uuid.uuid4().hex[:8]}"
    note = tmp_path / f"note-{page.size}.txt"
    note.write_text(secret + "\n")
    login(page, server, "alice")
    open_new_conversation(page, server)
    page.set_input_files("#attach-input", str(note))
    chip = page.locator("#attachments li")
    chip.wait_for()
    assert chip.inner_text().startswith(f"uploads/note-{page.size}.txt")
    _send(page, f"/read path=uploads/note-{page.size}.txt")
    page.wait_for_selector(".run[data-status=completed]")
    # The message shows its file as a chip; the model got the path in the text.
    file_chip = page.locator(".run .msg.user .file-chip")
    assert file_chip.inner_text() == f"note-{page.size}.txt"
    assert (
        file_chip.get_attribute("title")
        == f"uploads/note-{page.size}.txt ({len(secret) + 1} bytes)"
    )
    assert page.locator(".run .msg.user .user-text").inner_text() == (
        f"/read path=uploads/note-{page.size}.txt"
    )
    assert secret in page.locator(".tool-card .tool-result").text_content()
    assert page.locator("#attachments").is_hidden()  # sent with the message
    # Bob asks for the same path in his own workspace: it is not there.
    page.context.clear_cookies()
    login(page, server, "bob")
    open_new_conversation(page, server)
    _send(page, f"/read path=uploads/note-{page.size}.txt")
    page.wait_for_selector(".run[data-status=completed]")
    assert secret not in page.locator("#transcript").inner_text()


def test_a_message_of_files_only_shows_chips_and_is_titled_by_them(server, sized_page, tmp_path):
    page = sized_page
    note = tmp_path / f"plan-{page.size}.txt"
    note.write_text("the plan\n")
    login(page, server, "alice")
    open_new_conversation(page, server)
    page.set_input_files("#attach-input", str(note))
    page.locator("#attachments li").wait_for()
    page.press("#composer-text", "Enter")  # no words, just the file
    page.wait_for_selector(".run[data-status=completed]")
    expect(page.locator("#chat-title")).to_have_text(f"plan-{page.size}.txt")
    # The server's rendering of the message has replaced the live one (as after a reload).
    user = page.locator(".run .msg.user:not([data-pending])")
    user.wait_for()
    assert user.locator(".file-chip").all_inner_texts() == [f"plan-{page.size}.txt"]
    assert user.locator(".user-text").inner_text() == ""
    live = user.locator(".bubble").inner_html()
    page.reload()
    assert page.locator(".run .msg.user .bubble").inner_html() == live
    # Edit gives the whole message back, its file list included.
    page.locator(".run .msg.user").hover()
    page.locator(".run [data-action=edit]").click()
    edited = page.input_value(".edit-box textarea")
    assert edited.endswith(
        f"Attached files (in my workspace):\n- uploads/plan-{page.size}.txt (9 bytes)"
    )


def test_an_oversized_attachment_is_refused_with_a_message(server, sized_page, tmp_path):
    page = sized_page
    login(page, server, "alice")
    open_new_conversation(page, server)
    token = next(c["value"] for c in page.context.cookies() if c["name"] == "csrftoken")
    limit = int(page.get_attribute("#chat", "data-attachment-max"))
    response = page.request.post(
        server.url + "/api/attachments",
        headers={"X-CSRFToken": token},
        multipart={
            "file": {
                "name": "big.bin",
                "mimeType": "application/octet-stream",
                "buffer": b"x" * (limit + 1),
            }
        },
    )
    assert response.status == 413 and "at most" in response.json()["detail"]
