"""Workspace confinement: every path either lands inside the workspace or is refused."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from openprogram.security.paths import PathOutsideWorkspace, resolve_in_workspace


@pytest.fixture
def layout(tmp_path: Path) -> tuple[Path, Path]:
    """A workspace, a sibling ``ws-evil`` with a sentinel, and symlinks in and out."""
    workspace = tmp_path / "ws"
    evil = tmp_path / "ws-evil"
    workspace.mkdir()
    evil.mkdir()
    (evil / "secret.txt").write_text("sentinel")
    (workspace / "notes.txt").write_text("hello")
    (workspace / "sub").mkdir()
    (workspace / "out").symlink_to(evil)
    (workspace / "out-file").symlink_to(evil / "secret.txt")
    (workspace / "dangling").symlink_to(evil / "not-yet")
    (workspace / "inner").symlink_to(workspace / "sub")
    (workspace / "loop-a").symlink_to(workspace / "loop-b")
    (workspace / "loop-b").symlink_to(workspace / "loop-a")
    return workspace, evil


def test_it_resolves_a_relative_path_inside(layout):
    workspace, _ = layout
    assert resolve_in_workspace(workspace, "notes.txt") == workspace.resolve() / "notes.txt"


def test_it_accepts_an_absolute_path_inside(layout):
    workspace, _ = layout
    target = str(workspace / "sub" / "new.txt")
    assert resolve_in_workspace(workspace, target) == workspace.resolve() / "sub" / "new.txt"


def test_it_accepts_dot_as_the_workspace_itself(layout):
    workspace, _ = layout
    assert resolve_in_workspace(workspace, ".") == workspace.resolve()


def test_it_follows_a_symlink_that_stays_inside(layout):
    workspace, _ = layout
    assert resolve_in_workspace(workspace, "inner/x") == workspace.resolve() / "sub" / "x"


@pytest.mark.parametrize(
    ("user_path", "reason"),
    [
        ("../ws-evil/secret.txt", "outside"),
        ("sub/../../ws-evil/secret.txt", "outside"),
        ("out/secret.txt", "outside"),
        ("out-file", "outside"),
        ("dangling", "outside"),
        ("loop-a/x", "loop"),
        ("~/secret.txt", "'~'"),
        ("~root", "'~'"),
        ("notes\x00.txt", "NUL"),
        ("", "empty"),
        ("/etc/passwd", "outside"),
    ],
)
def test_it_refuses_escapes(layout, user_path, reason):
    workspace, _ = layout
    with pytest.raises(PathOutsideWorkspace, match=reason):
        resolve_in_workspace(workspace, user_path)


def test_it_rejects_a_sibling_prefix(layout):
    workspace, evil = layout
    with pytest.raises(PathOutsideWorkspace, match="outside"):
        resolve_in_workspace(workspace, str(evil / "secret.txt"))


def test_it_rejects_symlink_escape_through_a_new_file(layout):
    workspace, _ = layout
    with pytest.raises(PathOutsideWorkspace):
        resolve_in_workspace(workspace, "out/new-file.txt")


def test_it_compares_by_the_workspace_real_location(tmp_path, layout):
    workspace, _ = layout
    alias = tmp_path / "alias"
    alias.symlink_to(workspace)
    assert resolve_in_workspace(alias, str(workspace / "notes.txt")) == (
        workspace.resolve() / "notes.txt"
    )


def test_it_reports_a_missing_file_when_it_must_exist(layout):
    workspace, _ = layout
    with pytest.raises(FileNotFoundError, match=r"nope\.txt"):
        resolve_in_workspace(workspace, "nope.txt", must_exist=True)


def test_it_refuses_a_workspace_that_does_not_exist(tmp_path):
    with pytest.raises(PathOutsideWorkspace, match="not usable"):
        resolve_in_workspace(tmp_path / "missing", "a.txt")


def test_it_refuses_a_non_string_path(layout):
    workspace, _ = layout
    with pytest.raises(PathOutsideWorkspace, match="must be a string"):
        resolve_in_workspace(workspace, 42)  # type: ignore[arg-type]


_segments = st.sampled_from(
    [
        "..",
        ".",
        "out",
        "out-file",
        "dangling",
        "inner",
        "sub",
        "loop-a",
        "ws-evil",
        "~",
        "é",
        "\x00",
    ]
)
_generated_paths = st.one_of(
    st.lists(_segments, min_size=1, max_size=6).map("/".join),
    st.lists(_segments, min_size=1, max_size=6).map(lambda parts: "/" + "/".join(parts)),
    st.text(max_size=40),
)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(user_path=_generated_paths)
def test_any_generated_path_stays_inside_or_is_refused(user_path):
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        workspace = root / "ws"
        workspace.mkdir()
        (root / "ws-evil").mkdir()
        (workspace / "sub").mkdir()
        (workspace / "out").symlink_to(root / "ws-evil")
        (workspace / "out-file").symlink_to(root / "ws-evil" / "secret")
        (workspace / "dangling").symlink_to(root / "nowhere")
        (workspace / "inner").symlink_to(workspace / "sub")
        (workspace / "loop-a").symlink_to(workspace / "loop-a")
        try:
            resolved = resolve_in_workspace(workspace, user_path)
        except PathOutsideWorkspace:
            return
        real_root = workspace.resolve()
        assert resolved.is_relative_to(real_root)
        # What the kernel would open must be inside too (resolving again changes nothing).
        assert Path(os.path.realpath(resolved)).is_relative_to(real_root)


def test_it_refuses_a_link_reached_by_climbing_out_of_a_symlink_loop(tmp_path):
    # Found by the property test: Python's resolve() stops at the loop and would leave
    # ``out`` (a link to a sibling directory) unresolved.
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (tmp_path / "ws-evil").mkdir()
    (workspace / "out").symlink_to(tmp_path / "ws-evil")
    (workspace / "loop-a").symlink_to(workspace / "loop-a")
    with pytest.raises(PathOutsideWorkspace, match="symlink loop"):
        resolve_in_workspace(workspace, "loop-a/../out")
