"""Which workspace a turn gets, and that one user's turn never reaches another's."""

from __future__ import annotations

from pathlib import Path

import pytest

from openprogram import config
from openprogram.agent.context import TurnContext, current_turn
from openprogram.workspace import (
    current_workspace,
    workspace_for_user,
    workspace_path_for_user,
    workspaces_dir,
)


@pytest.fixture(autouse=True)
def _home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(
        config, "_config", config.Config(home=tmp_path / "home", results_dir=tmp_path / "r")
    )


def _in_turn(context: TurnContext) -> Path:
    token = current_turn.set(context)
    try:
        return current_workspace()
    finally:
        current_turn.reset(token)


def test_outside_a_turn_it_is_the_default_workspace(tmp_path):
    assert current_workspace() == (tmp_path / "home" / "workspaces" / "default").resolve()
    assert current_workspace().is_dir()


def test_each_user_gets_their_own_directory(tmp_path):
    alice = _in_turn(TurnContext(user_id="alice"))
    bob = _in_turn(TurnContext(user_id=7))
    assert alice == workspaces_dir().resolve() / "alice"
    assert bob == workspaces_dir().resolve() / "7"
    assert alice != bob and alice.is_dir() and bob.is_dir()


def test_the_turns_own_workspace_wins(tmp_path):
    chosen = tmp_path / "project"
    assert _in_turn(TurnContext(user_id="alice", workspace=chosen)) == chosen.resolve()


def test_a_shared_workspace_setting_serves_every_user(tmp_path, monkeypatch):
    shared = tmp_path / "desktop-project"
    monkeypatch.setattr(
        config, "_config", config.configure(home=tmp_path / "home", workspace=shared)
    )
    assert workspace_for_user("alice") == workspace_for_user("bob") == shared.resolve()


@pytest.mark.parametrize("user_id", ["..", "../bob", "a/b", "", ".hidden", "x" * 200])
def test_user_ids_that_could_climb_out_are_refused(user_id):
    with pytest.raises(ValueError, match="cannot name a workspace"):
        workspace_for_user(user_id)


async def test_alice_cannot_read_bobs_files_through_a_tool():
    import openprogram.programs  # noqa: F401 - registers the shipped tools
    from openprogram.programs.builtin.read import read

    bob_file = workspace_for_user("bob") / "diary.txt"
    bob_file.write_text("bob's secret")
    token = current_turn.set(TurnContext(user_id="alice"))
    try:
        for path in ("../bob/diary.txt", str(bob_file)):
            result = await read._agent_tool.execute("c1", {"path": path})
            assert result.is_error and "bob's secret" not in result.content
    finally:
        current_turn.reset(token)


def test_a_remembered_workspace_follows_the_user_and_the_configuration(tmp_path, monkeypatch):
    alice = workspace_path_for_user("alice")
    assert alice == workspace_for_user("alice") and alice.is_dir()
    assert workspace_path_for_user("bob") == workspace_for_user("bob") != alice
    shared = tmp_path / "desktop-project"
    monkeypatch.setattr(
        config, "_config", config.configure(home=tmp_path / "home", workspace=shared)
    )
    assert workspace_path_for_user("alice") == shared.resolve() == workspace_path_for_user("bob")


def test_a_turn_named_a_remembered_workspace_that_was_deleted_gets_it_again():
    alice = workspace_path_for_user("alice")
    alice.rmdir()
    assert workspace_path_for_user("alice") == alice  # remembered, not looked at again

    assert _in_turn(TurnContext(user_id="alice", workspace=alice)) == alice
    assert alice.is_dir()  # the tool's look-up made it again


@pytest.mark.parametrize("user_id", ["..", "../bob", ".hidden"])
def test_ids_that_could_climb_out_are_refused_however_often_asked(user_id):
    for _ in range(2):
        with pytest.raises(ValueError, match="cannot name a workspace"):
            workspace_path_for_user(user_id)
