"""Where the server's CPU goes while 100 chats stream at once (the streaming load).

``python -m bench.profile_streaming [--arrivals burst|spread] [OUT [RAW]]`` starts the
paced fake model server and one daphne process as ``bench_streaming_load`` does, attaches
py-spy to the server while the 100 simultaneous streaming turns run (all sent at once, or
at random moments over 2 s with ``--arrivals spread``), and prints (and writes to ``OUT``) where the
CPU went, by area, by own time and including callees, in milliseconds per turn
(``RAW`` keeps py-spy's collapsed stacks). Only samples holding the GIL count
(``--gil``): the event loop, the database thread and litellm's worker threads contend
for it, and a thread waiting for the GIL would otherwise be charged to whatever line it
stopped at. py-spy is a tool, not a dependency: see ``bench.profile_turn``.

Not a ``bench_*`` module, so ``make bench`` does not run it; the committed summary is
``bench/profile-streaming.txt``.
"""

from __future__ import annotations

import argparse
import asyncio
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench._paced_model import MODEL
from bench._proc import process_cpu_seconds
from bench._streaming_turns import ARRIVALS, arrival_offsets
from bench._ws import chat_seats_create, daphne_start
from bench.bench_streaming_load import _alone, _paced_model, _together
from bench.profile_turn import _RATE, _py_spy, _summarise
from tests.servers import make_server

__all__ = ["main"]

_CHATS = 100
_SPREAD_SECONDS = 2.0


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.profile_streaming")
    parser.add_argument("--arrivals", choices=ARRIVALS, default="burst")
    parser.add_argument("out", nargs="?", help="file the summary is written to")
    parser.add_argument("raw", nargs="?", help="file py-spy's collapsed stacks are written to")
    options = parser.parse_args(sys.argv[1:] if argv is None else argv)
    offsets = arrival_offsets(options.arrivals, _CHATS, window=_SPREAD_SECONDS)
    spy = _py_spy()
    model_proc, model_url = _paced_model()
    try:
        with tempfile.TemporaryDirectory() as tmp:
            server = make_server(
                Path(tmp) / "home",
                OPENPROGRAM_API_BASE=model_url,
                OPENPROGRAM_API_KEY="bench",
                OPENAI_API_KEY="bench",
                OPENPROGRAM_MODELS=MODEL,
            )
            server.create_users()
            seats = chat_seats_create(server, count=1 + _CHATS, model=MODEL)
            daphne_start(server)
            assert server.proc is not None
            raw_path = Path(tmp) / "profile.txt"
            try:
                asyncio.run(_alone(server.url, seats[:1]))  # imports litellm: not profiled
                recorder = subprocess.Popen(
                    [
                        *(spy, "record", "--pid", str(server.proc.pid), "--rate", str(_RATE)),
                        *("--gil", "--format", "raw", "--output", str(raw_path)),
                        "--nonblocking",
                    ],
                    stdout=subprocess.DEVNULL,
                    stderr=subprocess.DEVNULL,
                )
                time.sleep(1.0)  # py-spy attaches
                cpu_before = process_cpu_seconds(server.proc.pid)
                load, _, _, _ = asyncio.run(
                    _together(server.url, seats[1:], server_pid=server.proc.pid, offsets=offsets)
                )
                cpu = process_cpu_seconds(server.proc.pid) - cpu_before
                recorder.send_signal(2)  # SIGINT: py-spy writes what it has and exits
                recorder.wait(timeout=30)
            finally:
                server.stop()
            raw = raw_path.read_text()
    finally:
        if model_proc.stdin is not None:
            model_proc.stdin.close()
        model_proc.wait(timeout=10)
    summary = _summarise(
        raw,
        turns=load.completed or _CHATS,
        cpu_seconds=cpu,
        title=(
            f"{_CHATS} simultaneous streaming turns"
            f"{' sent over 2 s' if options.arrivals == 'spread' else ''} "
            "(300 pieces at 50/s + 2 tool calls, "
            f"{load.pieces} pieces delivered), one daphne process, SQLite"
        ),
        threads="all threads, GIL holders only",
    )
    if options.out:
        Path(options.out).write_text(summary)
    if options.raw:
        Path(options.raw).write_text(raw)
    print(summary)


if __name__ == "__main__":
    main()
