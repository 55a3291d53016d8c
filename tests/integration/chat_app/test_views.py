"""The chat page and the owner-only download of a persisted full result."""

from __future__ import annotations

from pathlib import Path

import pytest
from django.conf import settings

from chat_app.models import Message, Run, ToolCallRecord
from chat_app.selectors import model_checks_pending_mark, model_checks_run, model_choices
from chat_app.services import conversation_create

pytestmark = pytest.mark.django_db


@pytest.fixture
def conversation(alice):
    return conversation_create(owner=alice, title="Trip")


@pytest.fixture
def finished_run(conversation):
    run = Run.objects.create(conversation=conversation, model="offline", status="completed")
    Message.objects.create(conversation=conversation, role="user", text="plan <b>it</b>", run=run)
    Message.objects.create(
        conversation=conversation,
        role="assistant",
        text="**Done** <script>alert(1)</script> [x](javascript:alert(1))",
        run=run,
    )
    return run


def test_home_is_a_new_chat_with_the_composer_and_the_sidebar(alice_client, conversation):
    response = alice_client.get("/")
    assert response.status_code == 200
    html = response.content.decode()
    assert 'id="composer-text"' in html and 'data-landing="true"' in html
    assert f'href="/c/{conversation.public_id}/"' in html  # listed under "Today"
    assert ">Today</h2>" in html


def test_opening_the_home_page_creates_no_conversation(alice_client, alice):
    assert alice_client.get("/").status_code == 200
    assert alice.conversations.count() == 0


def test_the_markdown_export_has_the_message_and_the_reply(
    alice_client, conversation, finished_run
):
    response = alice_client.get(f"/c/{conversation.public_id}/export.md")
    assert response.status_code == 200
    assert response["Content-Type"].startswith("text/markdown")
    assert "attachment;" in response["Content-Disposition"]
    text = response.content.decode()
    assert text.startswith("# Trip\n")
    assert "## You\n\nplan <b>it</b>" in text and "**Done**" in text


def test_the_export_leaves_out_runs_replaced_by_an_edit(alice_client, conversation, finished_run):
    finished_run.superseded = True
    finished_run.save()
    text = alice_client.get(f"/c/{conversation.public_id}/export.md").content.decode()
    assert "plan <b>it</b>" not in text


def test_bob_gets_404_for_the_export_of_alices_conversation(bob_client, conversation):
    assert bob_client.get(f"/c/{conversation.public_id}/export.md").status_code == 404


def test_the_page_has_the_composer_with_its_pickers(alice_client, conversation):
    html = alice_client.get(f"/c/{conversation.public_id}/").content.decode()
    for marker in (
        'id="profile-select"',
        'id="model-select"',
        'id="agent-select"',
        'id="opt-tools"',
        'id="opt-web"',
        'id="opt-plan"',
        'id="opt-attended"',
        'id="stop"',
        "default (all tools)",
        "js/chat.js",
    ):
        assert marker in html, marker


def test_the_transcript_renders_safe_markdown_and_escaped_user_text(
    alice_client, conversation, finished_run
):
    html = alice_client.get(f"/c/{conversation.public_id}/").content.decode()
    assert "<strong>Done</strong>" in html
    assert "<script>alert(1)</script>" not in html
    assert 'href="javascript:' not in html
    assert "plan &lt;b&gt;it&lt;/b&gt;" in html


def test_bob_gets_404_for_alices_conversation_page(bob_client, conversation):
    assert bob_client.get(f"/c/{conversation.public_id}/").status_code == 404


def _record_with_result(run, path) -> ToolCallRecord:
    return ToolCallRecord.objects.create(
        run=run, call_id="call-1", name="read", truncated=True, full_result_path=str(path)
    )


def test_the_owner_downloads_the_full_result(alice_client, alice, finished_run):
    results = settings.RESULTS_DIR / str(alice.pk)
    results.mkdir(parents=True, exist_ok=True)
    path = results / "read-call-1.txt"
    path.write_text("the whole result")
    _record_with_result(finished_run, path)
    response = alice_client.get(f"/runs/{finished_run.pk}/calls/call-1/result/")
    assert response.status_code == 200
    assert b"".join(response.streaming_content) == b"the whole result"
    assert "attachment" in response["Content-Disposition"]


def test_bob_cannot_download_alices_result(bob_client, alice, finished_run):
    path = settings.RESULTS_DIR / str(alice.pk) / "read-call-1.txt"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("secret")
    _record_with_result(finished_run, path)
    assert bob_client.get(f"/runs/{finished_run.pk}/calls/call-1/result/").status_code == 404


def test_a_recorded_path_outside_the_results_dir_is_not_served(
    alice_client, finished_run, tmp_path
):
    outside = tmp_path / "passwd"
    outside.write_text("root:x")
    _record_with_result(finished_run, outside)
    assert alice_client.get(f"/runs/{finished_run.pk}/calls/call-1/result/").status_code == 404


def test_a_result_in_another_users_results_dir_is_not_served(alice_client, bob, finished_run):
    # Even if a record of alice's pointed at bob's saved result, she gets nothing.
    path = settings.RESULTS_DIR / str(bob.pk) / "read-call-9.txt"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("bob's secret")
    _record_with_result(finished_run, path)
    assert alice_client.get(f"/runs/{finished_run.pk}/calls/call-1/result/").status_code == 404


def test_a_symlink_escaping_the_results_dir_is_not_served(alice_client, finished_run, tmp_path):
    outside = tmp_path / "secret.txt"
    outside.write_text("secret")
    link = settings.RESULTS_DIR / "escape.txt"
    link.parent.mkdir(parents=True, exist_ok=True)
    link.unlink(missing_ok=True)
    link.symlink_to(outside)
    _record_with_result(finished_run, link)
    assert alice_client.get(f"/runs/{finished_run.pk}/calls/call-1/result/").status_code == 404


def test_the_todo_panel_renders_the_saved_list(alice_client, conversation):
    conversation.todos = [{"id": "1", "content": "pack bags", "status": "in_progress"}]
    conversation.save()
    html = alice_client.get(f"/c/{conversation.public_id}/").content.decode()
    assert '<li data-status="in_progress">pack bags</li>' in html


def test_a_model_without_its_key_is_marked_with_a_clear_message(
    alice_client, conversation, settings, monkeypatch
):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    settings.OPENPROGRAM_MODELS = ["offline", "openai/gpt-4o-mini"]
    html = alice_client.get(f"/c/{conversation.public_id}/").content.decode()
    assert "openai/gpt-4o-mini (key missing)" in html
    assert "needs OPENAI_API_KEY set in the server&#x27;s environment" in html


def test_nested_calls_are_rendered_with_their_parent(alice_client, conversation, finished_run):
    ToolCallRecord.objects.create(run=finished_run, call_id="outer", name="research")
    ToolCallRecord.objects.create(
        run=finished_run, call_id="inner", name="read", parent_call_id="outer"
    )
    html = alice_client.get(f"/c/{conversation.public_id}/").content.decode()
    assert 'data-call-id="inner" data-status="running"' in html
    assert 'data-parent-call-id="outer"' in html


def test_staff_read_a_run_with_its_tool_calls_in_the_admin(admin_client, finished_run):
    ToolCallRecord.objects.create(run=finished_run, call_id="call-9", name="grep")
    response = admin_client.get(f"/admin/chat_app/run/{finished_run.pk}/change/")
    assert response.status_code == 200
    assert b"call-9" in response.content
    conversation_page = admin_client.get(
        f"/admin/chat_app/conversation/{finished_run.conversation_id}/change/"
    )
    assert conversation_page.status_code == 200
    assert admin_client.get("/admin/chat_app/run/add/").status_code == 403


def test_favicon_ico_redirects_anonymous_browsers_to_the_svg_icon(client):
    from django.contrib.staticfiles import finders

    response = client.get("/favicon.ico")
    assert response.status_code == 301
    assert response["Location"] == settings.STATIC_URL + "favicon.svg"
    icon = finders.find("favicon.svg")
    assert icon is not None and Path(icon).read_text().startswith("<svg")


def test_every_page_links_the_favicon(alice_client, conversation):
    page = alice_client.get(f"/c/{conversation.public_id}/").content.decode()
    assert f'<link rel="icon" type="image/svg+xml" href="{settings.STATIC_URL}favicon.svg">' in page


def test_while_start_up_checks_the_keys_a_page_shows_the_model_unchecked_without_waiting(
    alice_client, conversation, settings, monkeypatch
):
    """A page shown while start-up's thread imports litellm does not wait for it."""
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    settings.OPENPROGRAM_MODELS = ["offline", "openai/gpt-4o-mini"]
    model_checks_pending_mark()
    try:
        unchecked = {c.name: c for c in model_choices()}
        html = alice_client.get(f"/c/{conversation.public_id}/").content.decode()
    finally:
        model_checks_run()
    assert unchecked["openai/gpt-4o-mini"].checked is False
    assert unchecked["openai/gpt-4o-mini"].problem is None
    assert unchecked["offline"].checked is True
    assert "(key missing)" not in html
    checked = {c.name: c for c in model_choices()}
    assert checked["openai/gpt-4o-mini"].checked is True
    assert "needs OPENAI_API_KEY" in checked["openai/gpt-4o-mini"].problem
