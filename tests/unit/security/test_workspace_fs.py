"""workspace_fs: one descriptor from decision to use, no symlink followed, on both routes.

Every test runs twice: through ``openat2`` and through the component-by-component walk
(``OPENPROGRAM_FS_FORCE_WALK=1``), which must give the same answers.
"""

from __future__ import annotations

import errno
import os
import socket
import stat
import threading
from pathlib import Path

import pytest

from openprogram.security import workspace_fs
from openprogram.security.workspace_fs import (
    FORCE_WALK_ENV,
    WorkspacePathRefused,
    existing_target,
    open_directory,
    open_node,
    open_parent,
    open_root,
    path_parts,
    replace_file,
    uses_openat2,
    walk,
)


@pytest.fixture(params=["openat2", "walk"], autouse=True)
def route(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    if request.param == "walk":
        monkeypatch.setenv(FORCE_WALK_ENV, "1")
    else:
        monkeypatch.delenv(FORCE_WALK_ENV, raising=False)
    return request.param


@pytest.fixture
def tree(tmp_path: Path) -> tuple[Path, Path]:
    """A workspace with files, a directory and symlinks in and out; a secret outside."""
    workspace = tmp_path / "ws"
    outside = tmp_path / "outside"
    (workspace / "a" / "b").mkdir(parents=True)
    outside.mkdir()
    (outside / "secret.txt").write_text("secret")
    (workspace / "a" / "b" / "notes.txt").write_text("notes")
    (workspace / "a" / "out").symlink_to(outside)
    (workspace / "a" / "inside").symlink_to("b")
    (workspace / "file-link").symlink_to(outside / "secret.txt")
    (workspace / "local-link").symlink_to("a/b/notes.txt")
    (workspace / "dangling").symlink_to(outside / "planted.txt")
    (workspace / "loop").symlink_to("loop")
    return workspace, outside


@pytest.fixture
def root(tree: tuple[Path, Path]):
    fd = open_root(tree[0])
    yield fd
    os.close(fd)


def test_the_route_is_openat2_here_unless_forced(route):
    assert uses_openat2() is (route == "openat2")


def test_without_openat2_the_walk_is_used(monkeypatch, route, root):
    def missing(*args: object) -> int:
        raise OSError(errno.ENOSYS, "Function not implemented")

    monkeypatch.setattr(workspace_fs, "_openat2", missing)
    monkeypatch.setattr(workspace_fs, "_openat2_works", None)
    assert not uses_openat2()
    fd, _ = open_node(root, ("a", "b", "notes.txt"), user_path="a/b/notes.txt")
    assert os.read(fd, 10) == b"notes"
    os.close(fd)


@pytest.mark.parametrize(
    ("user_path", "parts"),
    [("a/b/notes.txt", ("a", "b", "notes.txt")), ("./a//b/", ("a", "b")), (".", ())],
)
def test_a_relative_path_becomes_its_names(user_path, parts):
    assert path_parts(user_path) == parts


@pytest.mark.parametrize(
    ("user_path", "reason"),
    [
        ("", "empty"),
        ("a\x00b", "NUL"),
        ("~/x", "'~'"),
        ("/etc/passwd", "absolute paths are not accepted"),
        ("..", "'..' is not accepted"),
        ("a/../../x", "'..' is not accepted"),
        ("a/b/..", "'..' is not accepted"),
    ],
)
def test_it_refuses_what_is_not_a_plain_relative_path(user_path, reason):
    with pytest.raises(WorkspacePathRefused, match=reason):
        path_parts(user_path)


def test_it_opens_a_file_and_a_directory_on_one_descriptor(root):
    fd, st = open_node(root, ("a", "b", "notes.txt"), user_path="a/b/notes.txt")
    assert stat.S_ISREG(st.st_mode) and os.read(fd, 10) == b"notes"
    os.close(fd)
    fd, st = open_node(root, (), user_path=".")
    assert stat.S_ISDIR(st.st_mode)
    os.close(fd)


@pytest.mark.parametrize(
    ("user_path", "component"),
    [
        ("file-link", "file-link"),  # final component, pointing out
        ("local-link", "local-link"),  # final component, pointing inside: refused too
        ("a/out/secret.txt", "a/out"),  # a parent, pointing out
        ("a/inside/notes.txt", "a/inside"),  # a parent, pointing inside
        ("dangling", "dangling"),
        ("loop", "loop"),
    ],
)
def test_a_path_through_a_symlink_is_refused_naming_the_component(root, user_path, component):
    with pytest.raises(WorkspacePathRefused, match=f"'{component}' is a symbolic link"):
        open_node(root, path_parts(user_path), user_path=user_path)


def test_a_missing_path_is_not_found_and_names_the_path(root):
    with pytest.raises(FileNotFoundError, match=r"'a/nope\.txt'"):
        open_node(root, ("a", "nope.txt"), user_path="a/nope.txt")


def test_a_fifo_is_refused_without_blocking(tree, root):
    os.mkfifo(tree[0] / "pipe")
    outcome: list[BaseException] = []

    def try_open() -> None:
        try:
            open_node(root, ("pipe",), user_path="pipe")
        except BaseException as exc:
            outcome.append(exc)

    thread = threading.Thread(target=try_open, daemon=True)
    thread.start()
    thread.join(timeout=5)
    assert not thread.is_alive(), "opening a FIFO blocked"
    assert isinstance(outcome[0], ValueError) and "a FIFO" in str(outcome[0])


def test_a_socket_is_refused(tree, root):
    with socket.socket(socket.AF_UNIX) as server:
        server.bind(str(tree[0] / "sock"))
        with pytest.raises(OSError, match="'sock'"):  # opening a socket file: ENXIO
            open_node(root, ("sock",), user_path="sock")


def test_parents_are_made_by_the_walk_and_a_symlinked_parent_makes_nothing(tree, root):
    workspace, outside = tree
    fd = open_parent(root, ("new", "deeper", "f.txt"), user_path="new/deeper/f.txt", create=True)
    os.close(fd)
    assert (workspace / "new" / "deeper").is_dir()
    with pytest.raises(WorkspacePathRefused, match="'a/out' is a symbolic link"):
        open_parent(root, ("a", "out", "x", "f.txt"), user_path="a/out/x/f.txt", create=True)
    assert sorted(p.name for p in outside.iterdir()) == ["secret.txt"]


def test_without_create_a_missing_parent_is_not_found(root):
    with pytest.raises(FileNotFoundError):
        open_parent(root, ("nope", "f.txt"), user_path="nope/f.txt", create=False)


def test_a_directory_can_be_made_owner_only_and_opened_for_listing(tree, root):
    fd = open_directory(root, ("up",), user_path="up", create=True, mode=0o700, readable=True)
    assert os.listdir(fd) == []
    os.close(fd)
    assert stat.S_IMODE((tree[0] / "up").stat().st_mode) == 0o700


def test_an_existing_target_must_be_a_lone_regular_file(tree):
    workspace, _ = tree
    (workspace / "one.txt").write_text("1")
    os.link(workspace / "one.txt", workspace / "two.txt")
    directory = open_root(workspace)
    try:
        assert existing_target(directory, ("new.txt",), user_path="new.txt") is None
        with pytest.raises(WorkspacePathRefused, match="2 hard links"):
            existing_target(directory, ("one.txt",), user_path="one.txt")
        with pytest.raises(WorkspacePathRefused, match="'file-link' is a symbolic link"):
            existing_target(directory, ("file-link",), user_path="file-link")
        with pytest.raises(IsADirectoryError):
            existing_target(directory, ("a",), user_path="a")
    finally:
        os.close(directory)


def test_replacing_a_file_is_atomic_keeps_its_mode_and_never_follows_the_name(tree, root):
    workspace, outside = tree
    target = workspace / "a" / "b" / "notes.txt"
    target.chmod(0o640)
    directory = open_parent(root, ("a", "b", "notes.txt"), user_path="a/b/notes.txt", create=False)
    try:
        replace_file(directory, "notes.txt", b"new", mode=target.stat().st_mode)
        assert target.read_bytes() == b"new"
        assert stat.S_IMODE(target.stat().st_mode) == 0o640
        # A symlink swapped in at the name is replaced, never written through.
        target.unlink()
        target.symlink_to(outside / "secret.txt")
        replace_file(directory, "notes.txt", b"newer")
    finally:
        os.close(directory)
    assert (outside / "secret.txt").read_text() == "secret"
    assert not target.is_symlink() and target.read_bytes() == b"newer"
    assert sorted(p.name for p in (workspace / "a" / "b").iterdir()) == ["notes.txt"]


def test_the_walk_is_sorted_top_down_and_never_enters_a_symlink(tree, root):
    workspace, _ = tree
    (workspace / "a" / "skipme").mkdir()
    (workspace / "a" / "skipme" / "x").write_text("")
    seen = [
        (parts, [entry.name for entry in entries])
        for parts, _fd, entries in walk(root, (), skip=frozenset({"skipme"}))
    ]
    assert [parts for parts, _ in seen] == [(), ("a",), ("a", "b")]
    assert seen[1][1] == ["b", "inside", "out", "skipme"]
