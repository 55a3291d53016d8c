"""The real race, on a real daphne: alice's approved shell swaps a directory for a symlink
to the data directory as fast as it can, while her turns call the file tools on paths
through that directory. Hundreds of calls, zero escapes.

The swapper runs inside the bubblewrap sandbox, as an attacker's would: ``python3``
exchanges ``d/`` (a real directory holding decoys) and ``l`` (a symlink to
``$OPENPROGRAM_HOME``) with ``renameat2(RENAME_EXCHANGE)`` in a loop. The file-tool calls
go through a second conversation's socket, twenty to a turn, so they run while it swaps.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import shlex
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from websockets.asyncio.client import connect

from openprogram.security.sandbox import sandbox_problem
from tests.integration.sandbox.chat_socket import ChatSession, chat_session, turn_frames
from tests.servers import DaphneServer, make_server
from tests.signed_in import sign_in

pytestmark = pytest.mark.skipif(sandbox_problem() is not None, reason="no sandbox here")

CALLS_PER_TOOL = 50
CALLS_PER_TURN = 20
SWAP_SECONDS = 90  # the swapper's own deadline; it stops as soon as the calls are done

_SWAPPER = """
import ctypes, os, sys, time
libc = ctypes.CDLL(None, use_errno=True)
AT_FDCWD, RENAME_EXCHANGE = -100, 2
deadline = time.monotonic() + {seconds}
swaps = 0
print("SWAPPING", flush=True)
while time.monotonic() < deadline and not os.path.exists("stop"):
    for _ in range(200):
        if libc.renameat2(AT_FDCWD, b"d", AT_FDCWD, b"l", RENAME_EXCHANGE) != 0:
            sys.exit("renameat2 failed: errno %d" % ctypes.get_errno())
        swaps += 1
if swaps % 2:
    libc.renameat2(AT_FDCWD, b"d", AT_FDCWD, b"l", RENAME_EXCHANGE)
print("SWAPS=%d" % swaps, flush=True)
"""


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DaphneServer]:
    server = make_server(tmp_path_factory.mktemp("race") / "home")
    server.create_users()
    server.start()
    yield server
    server.stop()


def _calls(n: int) -> list[tuple[str, dict[str, Any]]]:
    return [
        ("read", {"path": "d/secret_key"}),
        ("write", {"path": f"d/PWNED_{n}.txt", "content": "written through the swap"}),
        ("edit", {"path": "d/victim.txt", "old_string": "VICTIM", "new_string": "VICTIM!"}),
        ("list_dir", {"path": "d"}),
        ("glob", {"pattern": "*", "path": "d"}),
        ("grep", {"pattern": "canary", "path": "d"}),
    ]


async def _file_tool_turns(session: ChatSession) -> list[dict[str, Any]]:
    """Every planned call, twenty to a turn, one turn after another: the finished frames."""
    planned = [call for n in range(CALLS_PER_TOOL) for call in _calls(n)]
    finished: list[dict[str, Any]] = []
    for start in range(0, len(planned), CALLS_PER_TURN):
        lines = [
            f"/{name} {json.dumps(args)}" for name, args in planned[start : start + CALLS_PER_TURN]
        ]
        frames = await turn_frames(session, "\n".join(lines), timeout=60)
        finished += [frame for frame in frames if frame["type"] == "tool_finished"]
    return finished


async def _race(swapper: ChatSession, caller: ChatSession, stop: Path) -> tuple[str, list]:
    """Start the swapper, wait until it swaps, run the calls, stop it: its output, the calls."""
    command = "python3 -c " + shlex.quote(_SWAPPER.format(seconds=SWAP_SECONDS))
    text = "/bash " + json.dumps({"command": command, "timeout": SWAP_SECONDS + 30})
    output: list[str] = []
    swapping = asyncio.Event()
    async with connect(
        swapper.url, origin=swapper.origin, additional_headers={"Cookie": swapper.cookie}
    ) as ws:
        await ws.send(json.dumps({"type": "user_message", "text": text}))

        async def relay() -> None:
            while True:
                frame = json.loads(await ws.recv())
                if frame["type"] == "approval_requested":
                    await ws.send(json.dumps({"type": "approve", "call_id": frame["call_id"]}))
                if frame["type"] == "tool_update":
                    output.append(frame.get("text", ""))
                    if "SWAPPING" in "".join(output):
                        swapping.set()
                if frame["type"] in ("tool_finished", "error"):
                    output.append(json.dumps(frame))
                if frame["type"] in ("turn_finished", "error"):
                    swapping.set()
                    return

        relaying = asyncio.create_task(relay())
        await asyncio.wait_for(swapping.wait(), 60)
        assert "SWAPPING" in "".join(output), "".join(output)
        try:
            finished = await _file_tool_turns(caller)
        finally:
            stop.write_text("")
        await asyncio.wait_for(relaying, 60)
    return "".join(output), finished


def _two_conversations(server: DaphneServer, username: str) -> list[ChatSession]:
    """One session of one user on two conversations of their own."""
    person = sign_in(server, username)
    return [chat_session(person, person.conversation()) for _ in range(2)]


def test_hundreds_of_file_tool_calls_during_a_swap_loop_never_escape(server):
    alice_swapper, alice = _two_conversations(server, "alice")
    workspace = Path(alice.workspace)
    workspace.mkdir(parents=True, exist_ok=True)
    (workspace / "d").mkdir()
    (workspace / "d" / "secret_key").write_text("decoy key\n")
    (workspace / "d" / "victim.txt").write_text("VICTIM decoy\n")
    os.symlink(server.home, workspace / "l")
    secret_key = (server.home / "secret_key").read_text().strip()
    host_victim = server.home / "victim.txt"
    host_victim.write_text("VICTIM canary of the data directory\n")
    before = sorted(p.name for p in server.home.iterdir() if p.name != "quota")

    started = time.monotonic()
    output, finished = asyncio.run(_race(alice_swapper, alice, workspace / "stop"))
    elapsed = time.monotonic() - started

    swaps = re.search(r"SWAPS=(\d+)", output)
    assert swaps is not None and int(swaps[1]) > 1000, output
    assert len(finished) == CALLS_PER_TOOL * 6
    outcomes: Counter[tuple[str, str]] = Counter()
    for frame in finished:
        preview = frame["preview"]
        assert secret_key not in preview, frame
        assert "db.sqlite3" not in preview and "canary of the data" not in preview, frame
        if frame["is_error"]:
            # "'d' is a symbolic link", or "went through a symbolic link while it was
            # opened" when the swap happened during the kernel's lookup.
            assert "symbolic link" in preview, frame
        outcomes[(frame["name"], "refused" if frame["is_error"] else "ok")] += 1
    # Nothing written in the data directory, its files unchanged.
    assert host_victim.read_text() == "VICTIM canary of the data directory\n"
    # (quota/ holds the workspace-usage records, made by the server after the shell call)
    assert sorted(p.name for p in server.home.iterdir() if p.name != "quota") == before
    assert not [p for p in server.home.rglob("PWNED_*") if "workspaces" not in p.parts]
    # The race was live: every tool both met the directory and met the symlink.
    for tool in ("read", "write", "edit", "list_dir", "glob", "grep"):
        assert outcomes[(tool, "ok")] > 0 and outcomes[(tool, "refused")] > 0, outcomes
    assert elapsed < SWAP_SECONDS, elapsed
