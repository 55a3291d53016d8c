"""The workspace quota: exact for write and edit, re-measured after a shell call."""

from __future__ import annotations

import os
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout

import pytest

from openprogram.programs.builtin.edit import edit
from openprogram.programs.builtin.write import write
from openprogram.security import workspace_quota
from openprogram.security.workspace_quota import (
    WorkspaceOverQuota,
    quota_write,
    shell_usage_note,
    workspace_usage,
)

KIB = 1024


@pytest.fixture
def quota(configure):
    configure(workspace_quota_bytes=32 * KIB)


async def test_writes_fit_until_the_quota_then_are_refused_and_nothing_is_written(
    quota, turn, workspace, call
):
    assert not (await call(write, {"path": "a.txt", "content": "x" * 20_000})).is_error
    refused = await call(write, {"path": "b.txt", "content": "y" * 20_000})
    assert refused.is_error and "the workspace is full" in refused.content
    assert "20.0 KiB of 32.0 KiB used" in refused.content
    assert not (workspace / "b.txt").exists()
    assert workspace_usage(workspace).used == 20 * KIB  # 20,000 bytes take five blocks


async def test_a_write_that_frees_space_is_allowed_when_full(quota, turn, workspace, call):
    assert not (await call(write, {"path": "a.txt", "content": "x" * 30_000})).is_error
    assert (await call(write, {"path": "b.txt", "content": "y" * 5_000})).is_error
    shrink = await call(write, {"path": "a.txt", "content": "small"})
    assert not shrink.is_error
    assert workspace_usage(workspace).used == 4 * KIB
    assert not (await call(write, {"path": "b.txt", "content": "y" * 5_000})).is_error


async def test_an_edit_that_grows_past_the_quota_is_refused(quota, turn, workspace, call):
    assert not (await call(write, {"path": "a.txt", "content": "x" * 30_000 + "END"})).is_error
    refused = await call(edit, {"path": "a.txt", "old_string": "END", "new_string": "z" * 10_000})
    assert refused.is_error and "the workspace is full" in refused.content
    assert (workspace / "a.txt").read_text().endswith("END")


async def test_after_a_shell_call_fills_the_workspace_writes_wait_until_space_is_freed(
    quota, turn, workspace, call
):
    workspace_usage(workspace)  # recorded: empty
    (workspace / "made-by-bash.bin").write_bytes(os.urandom(40 * KIB))  # behind the tools
    note = shell_usage_note(workspace)
    assert "over its quota: 40.0 KiB of 32.0 KiB used" in note
    refused = await call(write, {"path": "tiny.txt", "content": "x"})
    assert refused.is_error and "the workspace is full" in refused.content
    (workspace / "made-by-bash.bin").unlink()
    assert shell_usage_note(workspace) == ""
    assert not (await call(write, {"path": "tiny.txt", "content": "x"})).is_error


def test_usage_counts_a_hard_linked_file_once_and_follows_no_symlink(quota, workspace, tmp_path):
    (tmp_path / "outside.bin").write_bytes(b"o" * 100 * KIB)
    (workspace / "out").symlink_to(tmp_path)
    (workspace / "one.bin").write_bytes(b"x" * 8 * KIB)
    os.link(workspace / "one.bin", workspace / "two.bin")
    assert shell_usage_note(workspace) == ""
    assert workspace_usage(workspace).used == 8 * KIB


def test_a_failed_write_returns_its_reservation(quota, workspace):
    workspace_usage(workspace)
    with pytest.raises(RuntimeError), quota_write(workspace, adds=16 * KIB):
        assert workspace_usage(workspace).used == 16 * KIB  # reserved while it writes
        raise RuntimeError("the write failed")
    assert workspace_usage(workspace).used == 0


def test_a_reservation_counts_for_a_concurrent_writer(quota, workspace):
    with quota_write(workspace, adds=24 * KIB) as settle:
        with (
            pytest.raises(PermissionError, match="the workspace is full"),
            quota_write(workspace, adds=12 * KIB),
        ):
            pass
        settle(24 * KIB)
    assert workspace_usage(workspace).used == 24 * KIB


async def test_no_quota_means_no_refusal(configure, turn, workspace, call):
    configure(workspace_quota_bytes=0)
    assert not (await call(write, {"path": "a.txt", "content": "x" * 100_000})).is_error


def _try_to_add(workspace, size: int) -> None:
    with quota_write(workspace, adds=size) as settle:
        settle(size)


def test_a_slow_measurement_runs_after_the_result_and_no_write_is_decided_before_it(
    quota, workspace, monkeypatch
):
    """A workspace whose last walk was slow: the result does not wait for the walk, but the
    record stays locked until the walk has written, so the next write is decided on it."""
    workspace_usage(workspace)  # recorded: empty
    (workspace / "made-by-bash.bin").write_bytes(os.urandom(40 * KIB))  # behind the tools
    release, started = threading.Event(), threading.Event()
    real_measure = workspace_quota._measure

    def held(path):
        started.set()
        assert release.wait(30)
        return real_measure(path)

    monkeypatch.setattr(workspace_quota, "_measure", held)
    monkeypatch.setitem(workspace_quota._last_walk_s, str(workspace), 10.0)  # known to be slow
    assert shell_usage_note(workspace) == ""  # the last finished measurement found room
    assert started.wait(30)
    with ThreadPoolExecutor(1) as pool:
        pending = pool.submit(_try_to_add, workspace, 1)
        with pytest.raises(FutureTimeout):
            pending.result(timeout=0.3)  # waiting for the measurement, not decided on "empty"
        release.set()
        with pytest.raises(WorkspaceOverQuota, match=r"40\.0 KiB of 32\.0 KiB used"):
            pending.result(timeout=30)
    # The next slow call's result says what that finished measurement found.
    release.clear()
    note = shell_usage_note(workspace)
    release.set()
    assert "over its quota at its last measurement: 40.0 KiB of 32.0 KiB used" in note
    assert workspace_usage(workspace).used == 40 * KIB


def test_a_quick_workspace_is_measured_before_the_result(quota, workspace, monkeypatch):
    real_measure = workspace_quota._measure

    def slower_this_time(path):
        time.sleep(4 * workspace_quota._NOTE_WAIT_S)
        return real_measure(path)

    workspace_usage(workspace)
    (workspace / "made-by-bash.bin").write_bytes(os.urandom(40 * KIB))
    monkeypatch.setattr(workspace_quota, "_measure", slower_this_time)
    monkeypatch.setitem(workspace_quota._last_walk_s, str(workspace), 0.001)  # was quick
    note = shell_usage_note(workspace)  # this walk is slow, but its history says wait
    assert "over its quota: 40.0 KiB of 32.0 KiB used" in note
    assert workspace_quota._last_walk_s[str(workspace)] >= 4 * workspace_quota._NOTE_WAIT_S
