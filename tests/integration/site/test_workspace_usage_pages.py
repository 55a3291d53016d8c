"""Account and Programs show how much of the workspace quota the signed-in user has used."""

from __future__ import annotations

import pytest
from django.test import Client

from openprogram import config
from openprogram.security.workspace_quota import shell_usage_note
from openprogram.workspace import workspace_path_for_user

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def small_quota(tmp_path):
    previous = config.get_config()
    config.configure(
        home=tmp_path, workspaces_dir=tmp_path / "workspaces", workspace_quota_bytes=64 * 1024
    )
    yield
    config._config = previous


@pytest.mark.parametrize("page", ["/account/", "/programs/"])
def test_each_user_sees_their_own_workspace_usage_and_when_it_is_over(
    page, alice_client, alice, bob
):
    bob_client = Client()
    bob_client.force_login(bob)
    workspace = workspace_path_for_user(alice.pk)
    (workspace / "data.bin").write_bytes(b"x" * 40_000)
    shell_usage_note(workspace)  # as after a shell call
    alices = alice_client.get(page).content.decode()
    assert "Workspace: 40.0 KiB of 64.0 KiB used" in alices and "over the quota" not in alices
    assert "Workspace: 0 bytes of 64.0 KiB used" in bob_client.get(page).content.decode()

    (workspace / "more.bin").write_bytes(b"y" * 40_000)
    shell_usage_note(workspace)
    over = alice_client.get(page).content.decode()
    assert "Workspace: 80.0 KiB of 64.0 KiB used" in over and "over the quota" in over
