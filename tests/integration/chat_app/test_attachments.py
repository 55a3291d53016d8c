"""POST /api/attachments: files land in the owner's workspace uploads/, within size limits."""

from __future__ import annotations

import contextlib
import os
import shutil
import threading

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client

from chat_app.attachments import AttachmentTooLarge, attachment_save
from chat_app.selectors import workspace_for
from core.api_errors import ConflictError
from openprogram import config
from tests.swap_hook import swap_before_step

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("own_workspaces")]


@pytest.fixture
def own_workspaces(tmp_path):
    """Workspaces of this test only (user ids repeat between tests' databases)."""
    previous = config.get_config()
    config.configure(home=tmp_path, workspaces_dir=tmp_path / "workspaces")
    yield
    config._config = previous


def _upload(client: Client, name: str, data: bytes):
    return client.post("/api/attachments", {"file": SimpleUploadedFile(name, data)})


def test_an_attachment_lands_in_the_owners_workspace(alice_client, alice):
    response = _upload(alice_client, "notes.txt", b"remember the milk\n")
    assert response.status_code == 201, response.content
    body = response.json()
    assert body == {"path": "uploads/notes.txt", "name": "notes.txt", "size": 18}
    saved = workspace_for(user=alice) / "uploads" / "notes.txt"
    assert saved.read_bytes() == b"remember the milk\n"
    assert saved.stat().st_mode & 0o077 == 0  # owner-only


def test_a_second_file_of_the_same_name_does_not_overwrite_the_first(alice_client, alice):
    _upload(alice_client, "a.txt", b"one")
    assert _upload(alice_client, "a.txt", b"two").json()["path"] == "uploads/a-1.txt"
    assert (workspace_for(user=alice) / "uploads" / "a.txt").read_bytes() == b"one"


def test_a_name_cannot_climb_out_of_uploads(alice_client, alice):
    body = _upload(alice_client, "../../etc/pass wd;$(x).sh", b"x").json()
    assert body["path"] == "uploads/pass wd_x_.sh"
    assert (workspace_for(user=alice) / "uploads" / "pass wd_x_.sh").is_file()


def test_a_file_over_the_limit_is_refused_and_nothing_is_kept(alice_client, alice, settings):
    settings.CHAT_ATTACHMENT_MAX_BYTES = 10
    response = _upload(alice_client, "big.bin", b"x" * 11)
    assert response.status_code == 413
    assert "10" in response.json()["detail"]
    assert not (workspace_for(user=alice) / "uploads" / "big.bin").exists()


def test_the_uploads_folder_has_a_total_limit(alice_client, settings):
    settings.CHAT_UPLOADS_MAX_BYTES = 10
    assert _upload(alice_client, "a.bin", b"x" * 6).status_code == 201
    response = _upload(alice_client, "b.bin", b"x" * 6)
    assert response.status_code == 413 and "delete older files" in response.json()["detail"]


def test_a_symlinked_uploads_folder_cannot_send_the_file_elsewhere(
    alice_client, alice, tmp_path_factory
):
    elsewhere = tmp_path_factory.mktemp("elsewhere")
    os.symlink(elsewhere, workspace_for(user=alice) / "uploads")
    response = _upload(alice_client, "x.txt", b"x")
    assert response.status_code == 409
    assert list(elsewhere.iterdir()) == []


def test_a_file_named_uploads_gets_a_clear_error(alice_client, alice):
    (workspace_for(user=alice) / "uploads").write_text("not a folder")
    response = _upload(alice_client, "x.txt", b"x")
    assert response.status_code == 409 and "not usable" in response.json()["detail"]


def test_bobs_upload_goes_to_his_workspace_not_alices(alice, bob):
    bob_client = Client()
    bob_client.force_login(bob)
    assert _upload(bob_client, "secret.txt", b"bob's").status_code == 201
    assert (workspace_for(user=bob) / "uploads" / "secret.txt").is_file()
    assert not (workspace_for(user=alice) / "uploads" / "secret.txt").exists()


def test_an_anonymous_upload_is_refused(client):
    assert _upload(client, "x.txt", b"x").status_code == 401


def test_two_uploads_racing_cannot_together_pass_the_folder_limit(alice, settings):
    """An upload still being written counts at its full size for every other upload."""
    settings.CHAT_UPLOADS_MAX_BYTES = 10
    writing, finish = threading.Event(), threading.Event()
    results: list[object] = []

    def slow_chunks():
        writing.set()
        finish.wait(timeout=10)
        yield b"x" * 6

    def first_upload():
        try:
            results.append(attachment_save(user=alice, name="a.bin", size=6, chunks=slow_chunks()))
        except Exception as exc:  # pragma: no cover - reported by the assert below
            results.append(exc)

    thread = threading.Thread(target=first_upload)
    thread.start()
    try:
        assert writing.wait(timeout=10)
        with pytest.raises(AttachmentTooLarge, match="delete older files"):
            attachment_save(user=alice, name="b.bin", size=6, chunks=[b"y" * 6])
    finally:
        finish.set()
        thread.join(timeout=10)
    assert [getattr(r, "size", r) for r in results] == [6]
    assert sorted(p.name for p in (workspace_for(user=alice) / "uploads").iterdir()) == ["a.bin"]


def test_a_file_longer_than_announced_is_refused(alice):
    with pytest.raises(AttachmentTooLarge, match="larger than its 3 bytes"):
        attachment_save(user=alice, name="a.bin", size=3, chunks=[b"xx", b"xx"])
    assert list((workspace_for(user=alice) / "uploads").iterdir()) == []


def test_a_page_without_the_csrf_token_cannot_upload_with_alices_session(alice):
    browser = Client(enforce_csrf_checks=True)
    browser.force_login(alice)
    response = browser.post(
        "/api/attachments",
        {"file": SimpleUploadedFile("x.txt", b"x")},
        HTTP_ORIGIN="http://localhost:3000",
    )
    assert response.status_code == 403
    assert not (workspace_for(user=alice) / "uploads" / "x.txt").exists()


@pytest.mark.parametrize("swapped", ["d", "uploads"])
def test_a_directory_swapped_for_a_symlink_at_any_step_never_sends_the_file_outside(
    alice, tmp_path_factory, swapped
):
    """The shell swaps a directory on the way to ``uploads`` (``uploads -> d/inner``, which
    today's code refuses outright) or ``uploads`` itself for a symlink, before each step."""
    outside = tmp_path_factory.mktemp("outside")
    workspace = workspace_for(user=alice)
    landed = outside / "inner" if swapped == "d" else outside

    def reset() -> None:
        for name in ("d", "moved", "uploads"):
            path = workspace / name
            if path.is_symlink() or path.is_file():
                path.unlink()
            elif path.exists():
                shutil.rmtree(path)
        if swapped == "d":
            (workspace / "d" / "inner").mkdir(parents=True)
            os.symlink("d/inner", workspace / "uploads")
        else:
            (workspace / "uploads").mkdir()
        landed.mkdir(exist_ok=True)

    def swap() -> None:
        os.rename(workspace / swapped, workspace / "moved")
        os.symlink(outside, workspace / swapped)

    def save() -> None:
        with contextlib.suppress(ConflictError):
            attachment_save(user=alice, name="a.txt", size=1, chunks=[b"a"])

    reset()
    with swap_before_step(0, swap) as undisturbed:
        save()
    assert undisturbed.steps > 0
    for step in range(1, undisturbed.steps + 2):
        reset()
        with swap_before_step(step, swap):
            save()
        assert list(landed.iterdir()) == [], step


def test_a_1000_character_file_name_gets_the_apis_json_error_not_an_html_page(alice_client):
    # Built by hand: the test client's own encoder would cut the name to 255 characters.
    name = "a" * 1000 + ".txt"
    body = (
        f'--XyZ\r\nContent-Disposition: form-data; name="file"; filename="{name}"\r\n'
        "Content-Type: text/plain\r\n\r\nx\r\n--XyZ--\r\n"
    ).encode()
    response = alice_client.post(
        "/api/attachments", data=body, content_type="multipart/form-data; boundary=XyZ"
    )
    assert response.status_code == 400
    assert response["Content-Type"].startswith("application/json")
    assert "form data could not be read" in response.json()["detail"]


def test_a_form_django_finds_suspicious_gets_the_apis_json_error(alice_client, settings):
    settings.DATA_UPLOAD_MAX_NUMBER_FIELDS = 2
    response = alice_client.post(
        "/api/attachments",
        {"a": "1", "b": "2", "c": "3", "file": SimpleUploadedFile("x.txt", b"x")},
    )
    assert response.status_code == 400
    assert "The request was refused" in response.json()["detail"]


def test_an_upload_past_the_workspace_quota_is_refused_and_nothing_is_kept(alice_client, alice):
    config.configure(
        home=config.get_config().home,
        workspaces_dir=config.get_config().workspaces_dir,
        workspace_quota_bytes=16 * 1024,
    )
    assert _upload(alice_client, "a.bin", b"x" * 10_000).status_code == 201
    response = _upload(alice_client, "b.bin", b"y" * 10_000)
    assert response.status_code == 413 and "the workspace is full" in response.json()["detail"]
    assert sorted(p.name for p in (workspace_for(user=alice) / "uploads").iterdir()) == ["a.bin"]
