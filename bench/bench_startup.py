"""Start-up: time from launching daphne to the first HTTP 200; resident memory at idle and
after the first offline turn.

Each round starts a fresh daphne process on a free loopback port. The data directory
is migrated and seeded (users, one conversation per round) once beforehand, so only
server start-up is timed. After the idle reading, one offline turn with a tool call
runs over a real WebSocket (it imports litellm), then memory is read again.
"""

from __future__ import annotations

import asyncio
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

from bench._util import print_table
from bench._ws import ChatSeat, chat_seats_create, chat_turn
from tests.servers import DaphneServer, make_server

ROUNDS = 5


def _rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def _litellm_loaded(pid: int) -> bool:
    maps = Path(f"/proc/{pid}/maps").read_text()
    return "litellm" in maps


def _one_round(server: DaphneServer, seat: ChatSeat) -> tuple[float, float, bool, float]:
    started = time.perf_counter()
    proc = subprocess.Popen(
        [
            str(Path(sys.executable).parent / "daphne"),
            "-b",
            "127.0.0.1",
            "-p",
            str(server.port),
            "openprogram_site.asgi:application",
        ],
        cwd=Path(__file__).resolve().parent.parent,
        env=server.env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        while True:
            try:
                with urllib.request.urlopen(server.url + "/healthz", timeout=1) as resp:
                    if resp.status == 200:
                        break
            except OSError:
                if proc.poll() is not None:
                    raise RuntimeError("daphne exited during start-up") from None
                time.sleep(0.005)
        elapsed = time.perf_counter() - started
        with urllib.request.urlopen(server.url + "/login/", timeout=5):
            pass
        idle, litellm_at_idle = _rss_mib(proc.pid), _litellm_loaded(proc.pid)
        record = asyncio.run(chat_turn(server.url, seat, "/todo_read", timeout=120))
        if record.stop_reason != "completed":
            raise RuntimeError(f"the first offline turn ended with {record.stop_reason!r}")
        return elapsed, idle, litellm_at_idle, _rss_mib(proc.pid)
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def main() -> None:
    times, rss, litellm, after_turn = [], [], [], []
    with tempfile.TemporaryDirectory() as tmp:
        server = make_server(Path(tmp))
        server.create_users()
        seats = chat_seats_create(server, count=ROUNDS, users=("alice",))
        for seat in seats:
            t, r, loaded, turned = _one_round(server, seat)
            times.append(t)
            rss.append(r)
            litellm.append(loaded)
            after_turn.append(turned)
    print_table(
        f"Start-up of one daphne process (median of {ROUNDS} cold starts)",
        ["measure", "value", "target"],
        [
            ["time to first HTTP 200", f"{statistics.median(times):.2f} s", "< 3 s"],
            ["resident memory at idle", f"{statistics.median(rss):.0f} MiB", ""],
            ["litellm imported at start-up", "yes" if any(litellm) else "no", "no"],
            [
                "resident memory after the first offline turn",
                f"{statistics.median(after_turn):.0f} MiB",
                "",
            ],
        ],
    )


if __name__ == "__main__":
    main()
