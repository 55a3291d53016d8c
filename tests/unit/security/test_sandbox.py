"""The bubblewrap argv: what it mounts, which namespaces it asks for, and the probe."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

import pytest

from openprogram.security.sandbox import sandbox_argv, sandbox_problem

_MOUNT_FLAGS = ("--bind", "--ro-bind", "--ro-bind-try", "--dev-bind", "--bind-try")


def _mounts(argv: list[str]) -> dict[str, str]:
    """Sandbox path → the flag that mounts it (before the ``--`` that starts the command)."""
    options = argv[: argv.index("--")]
    return {options[i + 2]: flag for i, flag in enumerate(options) if flag in _MOUNT_FLAGS}


@pytest.fixture
def home(tmp_path: Path) -> Path:
    for user in ("alice", "bob"):
        (tmp_path / "workspaces" / user).mkdir(parents=True)
    return tmp_path


def test_the_workspace_is_the_only_writable_mount_and_sits_at_its_real_path(home, tmp_path):
    link = tmp_path / "alice-link"
    link.symlink_to(home / "workspaces" / "alice")
    argv = sandbox_argv(["true"], workspace=link)
    mounts = _mounts(argv)
    real = str((home / "workspaces" / "alice").resolve())
    assert [path for path, flag in mounts.items() if flag == "--bind"] == [real]
    options = argv[: argv.index("--")]
    assert options[options.index("--chdir") + 1] == real
    assert options[options.index("HOME") + 1] == real


def test_nothing_else_of_the_data_directory_is_mounted(home):
    mounts = _mounts(sandbox_argv(["true"], workspace=home / "workspaces" / "alice"))
    outside = [
        path for path in mounts if path.startswith(str(home)) and "/workspaces/alice" not in path
    ]
    assert outside == []


def test_no_home_no_root_no_secrets_of_etc(home):
    mounts = _mounts(sandbox_argv(["true"], workspace=home / "workspaces" / "alice"))
    for hidden in ("/etc/shadow", "/etc/ssl/private", "/etc/ssl", "/etc", "/root", "/home", "/"):
        assert hidden not in mounts
    assert all(flag != "--bind" for path, flag in mounts.items() if path.startswith("/etc"))
    assert mounts.get("/usr") == "--ro-bind"


def test_the_root_is_an_empty_tmpfs_frozen_after_the_last_mount(home):
    argv = sandbox_argv(["true"], workspace=home)
    options = argv[: argv.index("--")]
    assert options[options.index("--tmpfs") + 1] == "/"
    assert options[-2:] == ["--remount-ro", "/"]
    tmp = [options[i + 1] for i, flag in enumerate(options) if flag == "--tmpfs"]
    assert tmp == ["/", "/dev/shm", "/tmp"]


def test_every_writable_tmpfs_but_the_root_has_a_size_and_dev_is_frozen(home):
    options = sandbox_argv(["true"], workspace=home, tmp_bytes=4 << 20)
    options = options[: options.index("--")]
    for mount in ("/tmp", "/dev/shm"):
        at = options.index(mount)
        assert options[at - 1] == "--tmpfs" and options[at - 3] == "--size"
    assert int(options[options.index("/tmp") - 2]) == 4 << 20
    assert int(options[options.index("/dev/shm") - 2]) == 4 << 20  # never more than /tmp
    remounted = [options[i + 1] for i, flag in enumerate(options) if flag == "--remount-ro"]
    assert remounted == ["/dev", "/"]


def test_it_dies_with_its_parent_in_its_own_pid_namespace_and_session(home):
    options = sandbox_argv(["true"], workspace=home)
    for flag in ("--die-with-parent", "--unshare-pid", "--new-session", "--cap-drop"):
        assert flag in options
    assert options[options.index("--cap-drop") + 1] == "ALL"


def test_the_network_is_off_unless_asked_and_then_brings_name_resolution(home):
    closed = sandbox_argv(["true"], workspace=home)
    opened = sandbox_argv(["true"], workspace=home, network=True)
    assert "--unshare-net" in closed and "--unshare-net" not in opened
    assert "/etc/resolv.conf" not in _mounts(closed)
    if Path("/etc/resolv.conf").exists():
        assert _mounts(opened)["/etc/resolv.conf"] == "--ro-bind-try"


def test_the_command_comes_after_the_options_untouched(home):
    command = ["bash", "-c", "echo '--bind / /' $HOME"]
    argv = sandbox_argv(command, workspace=home)
    assert argv[argv.index("--") + 1 :] == command


def test_a_missing_binary_is_a_reason_naming_the_package():
    sandbox_problem.cache_clear()
    reason = sandbox_problem("/nonexistent/bwrap")
    assert reason is not None and "bubblewrap" in reason and "not installed" in reason


def test_a_binary_that_cannot_sandbox_is_a_reason_not_a_crash(tmp_path):
    # Where a root server's sandbox user may run it (pytest's own folders are root's only).
    reachable = Path(tempfile.mkdtemp(dir="/tmp"))
    reachable.chmod(0o755)
    fake = reachable / "bwrap"
    fake.write_text(
        "#!/bin/sh\necho 'bwrap: No permissions to creating new namespace' >&2\nexit 1\n"
    )
    fake.chmod(0o755)
    sandbox_problem.cache_clear()
    try:
        reason = sandbox_problem(str(fake))
    finally:
        shutil.rmtree(reachable)
    assert reason is not None and "cannot start" in reason and "No permissions" in reason
