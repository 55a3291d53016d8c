"""bash: approval, streaming, scrubbed environment, and no survivors on timeout or cancel."""

from __future__ import annotations

import asyncio
import time
import uuid
from pathlib import Path

import pytest

from openprogram.agent.types import ApprovalDecision, ApprovalRequest
from openprogram.programs._availability import clear_availability_cache
from openprogram.programs.builtin.bash import bash, scrubbed_environment
from openprogram.programs.policy import resolve_tools
from tests.processes import live_processes_with


@pytest.fixture(autouse=True)
def _workspace_among_the_workspaces(configure, workspace):
    """As the web app lays it out: a root server hands only such a workspace to the sandbox user."""
    configure(workspaces_dir=workspace.parent)


@pytest.fixture
def approvals(turn):
    """Approve every call and remember what was asked."""
    asked: list[ApprovalRequest] = []

    async def approve(request: ApprovalRequest) -> ApprovalDecision:
        asked.append(request)
        return ApprovalDecision(approved=True)

    turn.approval_hook = approve
    return asked


def _gone(pid: int) -> bool:
    """Exited, or a zombie waiting for a parent that is not ours to reap."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return True
    return state == "Z"


async def _wait_until(condition, timeout: float = 30.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return True
        await asyncio.sleep(0.02)
    return condition()


async def test_without_an_approver_it_is_denied_and_never_runs(turn, workspace, call):
    result = await call(bash, {"command": "touch ran.txt"})
    assert result.is_error and "denied" in result.content
    assert not (workspace / "ran.txt").exists()


async def test_a_refusing_approver_stops_it(turn, workspace, call):
    async def refuse(request: ApprovalRequest) -> ApprovalDecision:
        return ApprovalDecision(approved=False, reason="not today")

    turn.approval_hook = refuse
    result = await call(bash, {"command": "touch ran.txt"})
    assert result.is_error and "not today" in result.content
    assert not (workspace / "ran.txt").exists()


async def test_an_approved_command_runs_in_the_workspace(approvals, workspace, call):
    result = await call(bash, {"command": "pwd; echo hi > made.txt; echo oops >&2; exit 3"})
    assert not result.is_error
    assert result.content.splitlines()[0] == str(workspace.resolve())
    assert "oops" in result.content and "[exit code 3]" in result.content
    assert result.details == {"exit_code": 3}
    assert (workspace / "made.txt").read_text() == "hi\n"
    assert approvals[0].tool_name == "bash" and approvals[0].arguments["command"].startswith("pwd")


async def test_output_streams_through_on_update_while_it_runs(approvals, workspace, call):
    chunks: list[str] = []

    def delivered(chunk: str) -> None:
        chunks.append(chunk)
        if "first" in chunk:  # only now may the command go on: "first" came on its own
            (workspace / "go").touch()

    result = await call(
        bash,
        {"command": "echo first; until [ -e go ]; do sleep 0.01; done; echo second"},
        on_update=delivered,
    )
    assert "first" in "".join(chunks) and "second" in "".join(chunks)
    assert len(chunks) >= 2  # two separate deliveries, not one blob at the end
    assert "first\nsecond" in result.content


async def test_the_environment_is_scrubbed(approvals, workspace, call, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-must-not-leak")
    monkeypatch.setenv("DJANGO_SECRET_KEY", "also-secret")
    monkeypatch.setenv("HARMLESS_BUT_SERVER_ONLY", "server-env")
    result = await call(bash, {"command": "env"})
    assert "sk-test-must-not-leak" not in result.content
    assert "also-secret" not in result.content and "server-env" not in result.content
    assert f"HOME={workspace.resolve()}" in result.content


def test_the_environment_allow_list_drops_secret_looking_names(monkeypatch):
    monkeypatch.setenv("TZ", "UTC")
    env = scrubbed_environment("/ws")
    assert set(env) <= {"PATH", "LANG", "LC_ALL", "TERM", "TZ", "HOME"}
    assert env["HOME"] == "/ws" and env["TZ"] == "UTC"


def _marker() -> str:
    """A sleep length no other process on the machine uses: how we find it from outside.

    Inside the sandbox's PID namespace ``$!`` is not a host PID, so survivors are found
    by their command line in the host's /proc.
    """
    return f"300.{uuid.uuid4().int % 10**9:09d}"


def _survivors(marker: str) -> list[int]:
    return live_processes_with(marker)


async def test_a_timeout_kills_the_whole_process_group(approvals, workspace, call):
    marker = _marker()
    command = f"sleep {marker} & echo started > child.pid; wait"
    # 3 s: a loaded machine still starts the child inside it; `wait` outlasts it anyway.
    result = await call(bash, {"command": command, "timeout": 3})
    assert result.is_error and "timed out after 3 s" in result.content
    assert (workspace / "child.pid").read_text().strip() == "started"
    assert await _wait_until(lambda: not _survivors(marker)), "a grandchild survived"


async def test_cancel_kills_the_whole_process_group(approvals, workspace, call):
    marker = _marker()
    cancel = asyncio.Event()
    task = asyncio.create_task(
        call(bash, {"command": f"sleep {marker} & echo started > child.pid; wait"}, cancel=cancel)
    )
    assert await _wait_until(lambda: bool(_survivors(marker)))
    cancel.set()
    result = await task
    assert result.is_error and "cancelled" in result.content
    assert await _wait_until(lambda: not _survivors(marker)), "a grandchild survived"


async def test_background_jobs_do_not_outlive_a_finished_command(approvals, workspace, call):
    marker = _marker()
    result = await call(bash, {"command": f"sleep {marker} & echo done"})
    assert "done" in result.content and "[exit code 0]" in result.content
    assert await _wait_until(lambda: not _survivors(marker)), "a background job survived"


async def test_a_job_that_leaves_the_session_still_dies_with_the_command(approvals, call):
    marker = _marker()
    command = f"setsid -f sleep {marker} >/dev/null 2>&1 < /dev/null; echo detached"
    result = await call(bash, {"command": command})
    assert "detached" in result.content and "[exit code 0]" in result.content
    assert await _wait_until(lambda: not _survivors(marker)), "a setsid job survived"


async def test_the_timeout_is_clamped_into_range(approvals, call):
    too_long = await call(bash, {"command": "echo ok", "timeout": 10_000})
    assert not too_long.is_error
    schema = bash._agent_tool.parameters["properties"]["timeout"]
    assert "at most 600" in schema["description"] and schema["default"] == 120


async def test_huge_output_keeps_head_and_tail(approvals, call):
    result = await call(bash, {"command": "seq 1 200000"})
    assert result.content.startswith("1\n2\n3\n")
    assert "200000" in result.content and "[exit code 0]" in result.content


async def test_an_empty_command_is_refused(approvals, call):
    result = await call(bash, {"command": "   "})
    assert result.is_error and "empty" in result.content


async def test_layer_4_hides_it_when_the_shell_is_not_allowed(configure):
    clear_availability_cache()
    configure(allow_shell=False)
    resolution = resolve_tools(only_available=True)
    assert "bash" not in [tool.name for tool in resolution.tools]
    clear_availability_cache()
    configure(allow_shell=True)
    assert "bash" in [tool.name for tool in resolve_tools(only_available=True).tools]
    clear_availability_cache()


def test_layer_4_says_the_bind_address_turned_the_shell_off_and_how_to_allow_it(
    configure, monkeypatch
):
    monkeypatch.delenv("OPENPROGRAM_ALLOW_SHELL", raising=False)
    clear_availability_cache()
    configure(allow_shell=False)
    decision = resolve_tools(only_available=True).decision("bash")
    clear_availability_cache()
    assert not decision.offered and decision.layer == "L4"
    assert decision.reason == (
        "shell is disabled: the server binds beyond loopback; set OPENPROGRAM_ALLOW_SHELL=1 "
        "to allow it (every call still needs approval)"
    )


def test_layer_4_names_the_operators_own_setting_when_it_turned_the_shell_off(
    configure, monkeypatch
):
    monkeypatch.setenv("OPENPROGRAM_ALLOW_SHELL", "0")
    clear_availability_cache()
    configure(allow_shell=False)
    decision = resolve_tools(only_available=True).decision("bash")
    clear_availability_cache()
    assert decision.reason == (
        "shell is disabled: OPENPROGRAM_ALLOW_SHELL is '0'; set OPENPROGRAM_ALLOW_SHELL=1 "
        "to allow it (every call still needs approval)"
    )


async def test_it_refuses_to_run_when_the_shell_is_off_even_if_called_directly(
    approvals, configure, workspace, call
):
    configure(allow_shell=False)
    result = await call(bash, {"command": "touch ran.txt"})
    assert result.is_error and "shell is disabled" in result.content
    assert "OPENPROGRAM_ALLOW_SHELL=1" in result.content
    assert not (workspace / "ran.txt").exists()


def test_its_settings_match_the_policy():
    tool = bash._agent_tool
    assert tool.requires_approval is True and "plan" in tool.unsafe_in
    assert tool.toolsets == ("runtime",)
    assert (tool.timeout, tool.timeout_min, tool.timeout_max) == (120, 1, 600)
