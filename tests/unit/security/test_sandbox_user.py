"""Who the sandbox runs as, and handing a workspace over to it without following links."""

from __future__ import annotations

import os

import pytest

from openprogram.security import sandbox_user as module
from openprogram.security.sandbox import sandbox_argv
from openprogram.security.sandbox_user import (
    SandboxUser,
    sandbox_user,
    setpriv_prefix,
    workspace_hand_over,
)

ROOT_SERVER = SandboxUser(65534, 65534, switch=True)
as_root = pytest.mark.skipif(os.geteuid() != 0, reason="chown needs root")


def test_an_ordinary_server_runs_the_sandbox_as_itself_with_no_switch(monkeypatch):
    monkeypatch.setattr(module.os, "geteuid", lambda: 1000)
    monkeypatch.setattr(module.os, "getuid", lambda: 1000)
    monkeypatch.setattr(module.os, "getgid", lambda: 1001)
    user = sandbox_user(uid=65534, gid=65534)
    assert user == SandboxUser(1000, 1001, switch=False)
    assert setpriv_prefix(user) == []


def test_a_root_server_switches_to_the_configured_user_and_never_to_root(monkeypatch):
    monkeypatch.setattr(module.os, "geteuid", lambda: 0)
    user = sandbox_user(uid=65534, gid=65534)
    prefix = setpriv_prefix(user)
    assert prefix[1:] == ["--reuid=65534", "--regid=65534", "--clear-groups", "--"]
    with pytest.raises(ValueError, match="must not be root"):
        sandbox_user(uid=0, gid=65534)


def test_bwrap_maps_the_user_to_itself_in_a_namespace_that_cannot_nest(tmp_path):
    argv = sandbox_argv(["true"], workspace=tmp_path, user=ROOT_SERVER, workspace_source="/run/x")
    options = argv[: argv.index("--")]
    at = options.index("--unshare-user")
    assert options[at : at + 6] == [
        "--unshare-user",
        "--uid",
        "65534",
        "--gid",
        "65534",
        "--disable-userns",
    ]
    bind = options.index("--bind")
    assert options[bind + 1 : bind + 3] == ["/run/x", str(tmp_path.resolve())]
    assert options[options.index("--chdir") + 1] == str(tmp_path.resolve())


@as_root
def test_the_hand_over_gives_the_user_what_it_does_not_own(tmp_path):
    workspace = tmp_path / "workspaces" / "alice"
    (workspace / "uploads").mkdir(parents=True)
    (workspace / "uploads" / "a.txt").write_text("x")
    changed = workspace_hand_over(workspace, ROOT_SERVER, workspaces=tmp_path / "workspaces")
    assert changed == 3
    for path in (workspace, workspace / "uploads", workspace / "uploads" / "a.txt"):
        assert (path.stat().st_uid, path.stat().st_gid) == (65534, 65534)
    assert workspace_hand_over(workspace, ROOT_SERVER, workspaces=tmp_path / "workspaces") == 0
    assert (tmp_path / "workspaces").stat().st_uid == 0


@as_root
def test_it_follows_no_symlink_and_leaves_hard_linked_files_alone(tmp_path):
    outside = tmp_path / "outside.txt"
    outside.write_text("root's")
    workspace = tmp_path / "workspaces" / "alice"
    workspace.mkdir(parents=True)
    (workspace / "link").symlink_to(outside)
    (workspace / "dirlink").symlink_to(tmp_path)
    os.link(outside, workspace / "hard")
    workspace_hand_over(workspace, ROOT_SERVER, workspaces=tmp_path / "workspaces")
    assert outside.stat().st_uid == 0 and tmp_path.stat().st_uid == 0
    assert (workspace / "link").lstat().st_uid == 65534  # the link itself, not its target


@as_root
def test_a_folder_outside_the_workspaces_directory_is_never_handed_over(tmp_path):
    project = tmp_path / "project"
    project.mkdir()
    (project / "code.py").write_text("x")
    assert workspace_hand_over(project, ROOT_SERVER, workspaces=tmp_path / "workspaces") == 0
    assert (
        workspace_hand_over(
            tmp_path / "workspaces", ROOT_SERVER, workspaces=tmp_path / "workspaces"
        )
        == 0
    )
    assert (project / "code.py").stat().st_uid == 0


def test_no_switch_no_hand_over(tmp_path):
    user = SandboxUser(os.getuid(), os.getgid(), switch=False)
    workspace = tmp_path / "workspaces" / "alice"
    workspace.mkdir(parents=True)
    assert workspace_hand_over(workspace, user, workspaces=tmp_path / "workspaces") == 0
