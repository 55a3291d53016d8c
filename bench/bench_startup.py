"""Start-up: time from launching daphne to the first HTTP 200, and resident memory at idle.

Each round starts a fresh daphne process on a free loopback port with its own data
directory (migrated beforehand, so only server start-up is timed).
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

from bench._util import print_table
from tests.servers import make_server

ROUNDS = 5


def _rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def _litellm_loaded(pid: int) -> bool:
    maps = Path(f"/proc/{pid}/maps").read_text()
    return "litellm" in maps


def _one_round(home: Path) -> tuple[float, float, bool]:
    server = make_server(home)
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
        return elapsed, _rss_mib(proc.pid), _litellm_loaded(proc.pid)
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def main() -> None:
    times, rss, litellm = [], [], []
    with tempfile.TemporaryDirectory() as tmp:
        for i in range(ROUNDS):
            t, r, loaded = _one_round(Path(tmp) / f"r{i}")
            times.append(t)
            rss.append(r)
            litellm.append(loaded)
    print_table(
        f"Start-up of one daphne process (median of {ROUNDS} cold starts)",
        ["measure", "value", "target"],
        [
            ["time to first HTTP 200", f"{statistics.median(times):.2f} s", "< 3 s"],
            ["resident memory at idle", f"{statistics.median(rss):.0f} MiB", ""],
            ["litellm imported at start-up", "yes" if any(litellm) else "no", "no"],
        ],
    )


if __name__ == "__main__":
    main()
