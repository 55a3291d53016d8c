"""Where one offline 3-tool turn spends the server's CPU, under the concurrency load.

``python -m bench.profile_turn [--postgres] [OUT [RAW]]`` starts one daphne process on SQLite
(``--postgres``: on a private PostgreSQL server, as ``bench_concurrency`` does), attaches
py-spy to it (all threads, idle time left out) while ``bench_concurrency``'s 100
simultaneous chats run, and prints (and writes to ``OUT``) the functions that take
the most CPU: by own time and including what they call, as a share of all samples
and in milliseconds per turn (``RAW`` keeps py-spy's collapsed stacks). py-spy is a tool, not a dependency of the project:
``pip install py-spy`` anywhere and put it on PATH (or set ``PY_SPY``). It needs
ptrace rights over the server (root, or CAP_SYS_PTRACE in a container).

It is not a ``bench_*`` module, so ``make bench`` does not run it; the committed
summary is ``bench/profile-turn.txt``.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench._postgres import postgres_database
from bench._proc import process_cpu_seconds
from bench._ws import chat_seats_create, chat_turn, daphne_start
from tests.servers import make_server

__all__ = ["main"]

_CHATS = 100
_TURN_TEXT = "/todo_read\n/list_dir\n/todo_read"
_RATE = 1000
_TOP = 30


def _py_spy() -> str:
    found = os.environ.get("PY_SPY") or shutil.which("py-spy")
    if not found:
        raise SystemExit("py-spy is not on PATH: pip install py-spy (or set PY_SPY)")
    return found


def _frame_name(frame: str) -> str:
    # py-spy raw frames read "function (path/to/file.py:123)"; keep function and file.
    name, _, where = frame.partition(" (")
    path = where.rstrip(")").rsplit(":", 1)[0]
    for marker in ("site-packages/", "/work/main/", "lib/python3"):
        if marker in path:
            path = path.split(marker, 1)[1]
            break
    return f"{name} ({path})"


_AREAS = (
    # (area, a marker in the stack); the first that matches names the sample.
    ("litellm (model calls, their end-of-stream logging and cost work)", "litellm"),
    ("database: writing run history", "record_job"),
    ("database: starting a turn", "start_job"),
    ("database: finishing a turn", "finish_job"),
    ("database: budget checks", "budget_job"),
    ("conversation titles (after a first turn)", "model_titles"),
    ("channel layer (group messages)", "core/channel_layer.py"),
    ("channel layer (group messages)", "channels/layers.py"),
    # A relayed frame reaches its socket through ChatConsumer.dispatch, under Channels'
    # auth middleware: not the socket's login.
    (
        "relayed frames to sockets (consumer, frame writer; daphne's send if it declines)",
        "chat_events",
    ),
    ("database: socket login (session, user)", "channels/auth.py"),
    ("database: socket connect and catch-up", "connect_job"),
    ("socket connect, messages, disconnect (consumers)", "consumers.py"),
    ("database: other (sessions, closing connections)", "thread_handler"),
    ("tools (todo_read, list_dir and their policy)", "openprogram/programs"),
    ("thread hand-offs (waking the event loop)", "_write_to_self"),
    ("WebSocket and TCP (twisted, autobahn)", "autobahn"),
    ("WebSocket and TCP (twisted, autobahn)", "twisted/internet/tcp"),
    ("WebSocket and TCP (twisted, autobahn)", "twisted/internet/abstract"),
    ("waiting for I/O (epoll)", "EpollSelector.select"),
    ("agent loop and dispatcher", "openprogram/agent"),
    ("turn task, relay, consumers", "chat_app"),
)


def _area(stack: str) -> str:
    for area, marker in _AREAS:
        if marker in stack:
            return area
    return "other (event loop, daphne, thread pool)"


def _summarise(
    raw: str,
    *,
    turns: int,
    cpu_seconds: float,
    title: str = "100 simultaneous offline 3-tool turns, one daphne process, SQLite",
    threads: str = "all threads",
) -> str:
    own: collections.Counter[str] = collections.Counter()
    inclusive: collections.Counter[str] = collections.Counter()
    areas: collections.Counter[str] = collections.Counter()
    total = 0
    for line in raw.splitlines():
        stack, _, count_text = line.rpartition(" ")
        if not stack or not count_text.isdigit():
            continue
        count = int(count_text)
        frames = [_frame_name(f) for f in stack.split(";")]
        total += count
        areas[_area(stack)] += count
        own[frames[-1]] += count
        for name in set(frames):
            inclusive[name] += count
    if not total:
        return "py-spy recorded no samples\n"
    ms_per_sample = cpu_seconds * 1000 / turns / total

    def table(title: str, counts: collections.Counter[str]) -> list[str]:
        rows = [f"## {title}", "", "  share  ms/turn  what"]
        for name, count in counts.most_common(_TOP):
            rows.append(f"{100 * count / total:6.1f}%  {count * ms_per_sample:7.2f}  {name}")
        return [*rows, ""]

    head = [
        f"# CPU profile: {title}",
        "",
        f"server CPU {cpu_seconds:.2f} s for {turns} turns = {cpu_seconds * 1000 / turns:.1f} ms"
        f" per turn; {total} py-spy samples at {_RATE} Hz ({threads}, idle left out)",
        "",
    ]
    return "\n".join(
        head
        + table("by area", areas)
        + table("own time", own)
        + table("including callees", inclusive)
    )


async def _load(url: str, seats: list) -> int:
    outcomes = await asyncio.gather(
        *(chat_turn(url, seat, _TURN_TEXT, timeout=120) for seat in seats),
        return_exceptions=True,
    )
    return sum(1 for o in outcomes if not isinstance(o, BaseException) and o.finished_frame)


def main(argv: list[str] | None = None) -> None:
    argv = sys.argv[1:] if argv is None else argv
    postgres = "--postgres" in argv
    argv = [arg for arg in argv if arg != "--postgres"]
    spy = _py_spy()
    with tempfile.TemporaryDirectory() as tmp, contextlib.ExitStack() as stack:
        extra_env = {"DATABASE_URL": stack.enter_context(postgres_database())} if postgres else {}
        server = make_server(Path(tmp) / "home", **extra_env)
        server.create_users()
        seats = chat_seats_create(server, count=_CHATS + 1)
        daphne_start(server)
        assert server.proc is not None
        raw_path = Path(tmp) / "profile.txt"
        try:
            # The first turn imports litellm: keep that out of the profile.
            asyncio.run(_load(server.url, seats[_CHATS:]))
            recorder = subprocess.Popen(
                [
                    *(spy, "record", "--pid", str(server.proc.pid), "--rate", str(_RATE)),
                    *("--format", "raw", "--output", str(raw_path), "--nonblocking"),
                ],
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
            time.sleep(1.0)  # py-spy attaches
            cpu_before = process_cpu_seconds(server.proc.pid)
            finished = asyncio.run(_load(server.url, seats[:_CHATS]))
            cpu = process_cpu_seconds(server.proc.pid) - cpu_before
            recorder.send_signal(2)  # SIGINT: py-spy writes what it has and exits
            recorder.wait(timeout=30)
        finally:
            server.stop()
        raw = raw_path.read_text()
    database = "PostgreSQL" if postgres else "SQLite"
    title = f"{_CHATS} simultaneous offline 3-tool turns, one daphne process, {database}"
    summary = _summarise(raw, turns=finished, cpu_seconds=cpu, title=title)
    print(summary)
    if argv:
        Path(argv[0]).write_text(summary)
    if len(argv) > 1:
        Path(argv[1]).write_text(raw)


if __name__ == "__main__":
    main()
