"""Each sandbox limit hit through a real daphne, while /healthz and bob's turns keep answering.

alice approves a `bash` that hits one limit and then keeps the call open a little; while it
runs, a thread keeps asking /healthz and bob runs a turn of his own. alice's result carries
the plain sentence, bob's turn finishes normally, and every /healthz answer comes quickly.
"""

from __future__ import annotations

import asyncio
import json
import threading
import time
import urllib.request
from collections.abc import Iterator

import pytest

from openprogram.security.cgroups import cgroup_support
from openprogram.security.sandbox import sandbox_problem
from tests.integration.sandbox.chat_socket import ChatSession, chat_sessions, turn_frames
from tests.servers import DaphneServer, make_server

pytestmark = pytest.mark.skipif(sandbox_problem() is not None, reason="no sandbox here")
needs_cgroup = pytest.mark.skipif(
    cgroup_support().version is None, reason=f"rlimits only here: {cgroup_support().reason}"
)

_FORKS = """python3 -c '
import os, time
for _ in range(100):
    try:
        pid = os.fork()
    except OSError:
        break
    if pid == 0:
        time.sleep(3)
        os._exit(0)
time.sleep(2)
'"""

HITS = {
    "memory": pytest.param(
        "python3 -c 'b = bytearray(120 << 20)'; sleep 2",
        "stopped: the command used more than 64 MiB of memory",
        marks=needs_cgroup,
        id="memory",
    ),
    "cpu": pytest.param(
        "python3 -c 'while True: pass'",
        "stopped: the command used more than 2 s of CPU",
        id="cpu",
    ),
    "file": pytest.param(
        "head -c 20000000 /dev/zero > big.bin; sleep 2",
        "stopped: the command tried to write a file larger than 8 MiB",
        id="file",
    ),
    "tmp": pytest.param(
        "cat /dev/zero > /tmp/fill; sleep 2",
        "/tmp is full (4 MiB)",
        id="tmp",
    ),
    "processes": pytest.param(
        _FORKS,
        "the command reached the limit of 32 processes",
        marks=needs_cgroup,
        id="processes",
    ),
}


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DaphneServer]:
    server = make_server(
        tmp_path_factory.mktemp("limits") / "home",
        OPENPROGRAM_SANDBOX_MEMORY_MB="64",
        OPENPROGRAM_SANDBOX_CPU_SECONDS="2",
        OPENPROGRAM_SANDBOX_PROCESSES="32",
        OPENPROGRAM_SANDBOX_FILE_MB="8",
        OPENPROGRAM_SANDBOX_TMP_MB="4",
    )
    server.create_users()
    server.start()
    yield server
    server.stop()


@pytest.fixture(scope="module")
def sessions(server: DaphneServer) -> dict[str, ChatSession]:
    return chat_sessions(server, "alice", "bob")


class _HealthProbe:
    """Asks /healthz over and over in a thread; remembers each answer's status and time."""

    def __init__(self, url: str) -> None:
        self.url = url + "/healthz"
        self.answers: list[tuple[int, float]] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.is_set():
            started = time.monotonic()
            try:
                with urllib.request.urlopen(self.url, timeout=10) as response:
                    status = response.status
            except OSError:
                status = 0
            self.answers.append((status, time.monotonic() - started))
            self._stop.wait(0.05)

    def __enter__(self) -> _HealthProbe:
        self._thread.start()
        return self

    def __exit__(self, *_exc: object) -> None:
        self._stop.set()
        self._thread.join()


def _finished(frames: list[dict]) -> tuple[str, dict]:
    (finished,) = [f for f in frames if f["type"] == "tool_finished"]
    output = "".join(f.get("text", "") for f in frames if f["type"] == "tool_update")
    return output, finished


@pytest.mark.parametrize(("command", "sentence"), list(HITS.values()))
def test_a_limit_hit_is_named_and_the_server_keeps_answering(server, sessions, command, sentence):

    async def both() -> tuple[list[dict], list[dict]]:
        alices = asyncio.ensure_future(
            turn_frames(sessions["alice"], "/bash " + json.dumps({"command": command}), timeout=90)
        )
        await asyncio.sleep(0.5)  # alice's command is running (or about to)
        bobs = await turn_frames(sessions["bob"], "/bash echo bob-was-served", timeout=60)
        assert not alices.done(), "alice's command ended before bob's turn: no overlap"
        return await alices, bobs

    with _HealthProbe(server.url) as probe:
        alices, bobs = asyncio.run(both())

    _output, finished = _finished(alices)
    assert sentence in finished["preview"], finished
    bob_output, bob_finished = _finished(bobs)
    assert "bob-was-served" in bob_output and not bob_finished["is_error"]
    assert probe.answers and all(status == 200 for status, _ in probe.answers)
    assert max(seconds for _, seconds in probe.answers) < 5.0
