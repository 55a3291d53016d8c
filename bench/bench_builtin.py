"""Built-in tools: what the safety checks cost per call, through AgentTool.execute.

Everything runs in a temporary workspace; web_fetch talks to a loopback server this
bench starts (allow-listed for its port only), bash is approved by a hook.

The file tools are also measured beside a baseline commit (``--baseline REF``, default
the last commit before the race-free file tools; ``--baseline none`` skips it): a
throwaway ``git worktree`` of REF and this checkout each run
``bench/_file_tool_worker.py``, asked in turn round by round so load hits both alike.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import subprocess
import sys
import tempfile
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from bench._file_tool_worker import CASES
from bench._util import median_seconds, print_table, ratio

__all__ = ["main"]

ROOT = Path(__file__).resolve().parent.parent
BASELINE = "9475132"
"""main before the file tools opened paths through openprogram/security/workspace_fs.py."""
_ROUNDS = 9
_NUMBER = {"glob": 3, "grep": 3, "read_page": 5}
_LABELS = {
    "read_small": ("read, a 100-line file", "pkg3/mod3.py"),
    "read_page": ("read, one 2,000-line page", "big.txt offset 10,000"),
    "write_new_dir": ("write, new file in a new directory", "out/N/new.txt"),
    "write_overwrite": ("write, overwrite", "300-byte file"),
    "edit": ("edit, unique replacement", "100-line file"),
    "list_dir": ("list_dir", "21 entries"),
    "glob": ("glob **/*.py", "1,000 files"),
    "grep": ("grep, 200 matches max", "1,000 files × 100 lines"),
}

_PAGE = (
    b"<html><head><title>Bench</title><script>x()</script></head><body>"
    + b"".join(
        b"<h2>Section %d</h2><p>Some text with <a href='/l'>a link</a>.</p>" % n for n in range(200)
    )
    + b"</body></html>"
)


class _Page(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(_PAGE)))
        self.end_headers()
        self.wfile.write(_PAGE)

    def log_message(self, format: str, *args: Any) -> None:
        pass


def _worker(tree: Path, *, force_walk: bool = False) -> subprocess.Popen[str]:
    env = {**os.environ, "OPENPROGRAM_FS_FORCE_WALK": "1" if force_walk else "0"}
    worker = subprocess.Popen(
        [sys.executable, str(ROOT / "bench" / "_file_tool_worker.py"), str(tree)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env=env,
    )
    assert worker.stdout is not None and worker.stdout.readline().strip() == "ready"
    return worker


def _ask(worker: subprocess.Popen[str], case: str) -> float:
    assert worker.stdin is not None and worker.stdout is not None
    worker.stdin.write(f"{case} {_NUMBER.get(case, 20)}\n")
    worker.stdin.flush()
    return float(worker.stdout.readline())


def _file_tools_beside(baseline: str) -> None:
    """Each file-tool case in this checkout and in ``baseline``, alternated round by round."""
    with tempfile.TemporaryDirectory(prefix="bench-baseline-") as tmp:
        old_tree = Path(tmp) / "tree"
        subprocess.run(
            ["git", "worktree", "add", "--detach", "--quiet", str(old_tree), baseline],
            cwd=ROOT,
            check=True,
        )
        try:
            workers = {
                "old": _worker(old_tree),
                "new": _worker(ROOT),
                "walk": _worker(ROOT, force_walk=True),
            }
            samples: dict[tuple[str, str], list[float]] = {}
            for _ in range(_ROUNDS):
                for case in CASES:
                    for tree, worker in workers.items():
                        samples.setdefault((tree, case), []).append(_ask(worker, case))
            for worker in workers.values():
                assert worker.stdin is not None
                worker.stdin.write("\n")
                worker.stdin.close()
                worker.wait(timeout=60)
        finally:
            subprocess.run(
                ["git", "worktree", "remove", "--force", str(old_tree)], cwd=ROOT, check=False
            )
    rows = []
    for case, (label, size) in _LABELS.items():
        old, new, walk = (statistics.median(samples[(t, case)]) for t in ("old", "new", "walk"))
        rows.append(
            (
                label,
                size,
                f"{old * 1000:.3f} ms",
                f"{new * 1000:.3f} ms ({ratio(new, old)})",
                f"{walk * 1000:.3f} ms ({ratio(walk, old)})",
            )
        )
    print_table(
        f"File tools: median time per call, {baseline} beside this checkout "
        f"({_ROUNDS} rounds, alternated; budget ≤ 1.5× {baseline})",
        ["operation", "input", baseline, "openat2", "forced walk"],
        rows,
    )


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench builtin")
    parser.add_argument(
        "--baseline",
        default=BASELINE,
        help=f"commit to measure the file tools beside (default {BASELINE}); 'none' skips it",
    )
    options = parser.parse_args(argv)
    _other_tools()
    if options.baseline != "none":
        _file_tools_beside(options.baseline)


def _other_tools() -> None:
    from openprogram import config
    from openprogram.agent.context import TurnContext, current_turn
    from openprogram.agent.types import ApprovalDecision
    from openprogram.programs import get_agent_tool

    previous = config._config
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Page)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    port = server.server_address[1]
    with tempfile.TemporaryDirectory() as tmp:
        home = Path(tmp)
        config.configure(home=home, web_fetch_allow_hosts=(f"127.0.0.1:{port}",))
        workspace = home / "ws"
        workspace.mkdir()

        async def approve(_request: Any) -> ApprovalDecision:
            return ApprovalDecision(approved=True)

        loop = asyncio.new_event_loop()
        token = current_turn.set(
            TurnContext(user_id="bench", workspace=workspace, approval_hook=approve)
        )

        def run(name: str, args: dict[str, Any]) -> None:
            tool = get_agent_tool(name)
            assert tool is not None
            result = loop.run_until_complete(tool.execute("bench", args))
            if result.is_error:
                raise RuntimeError(f"{name} failed: {result.content[:200]}")

        cases: list[tuple[str, str, Any, int]] = [
            ("bash `true` (spawn, scrub, reap)", "approved", lambda: run("bash", {"command": "true"}), 10),
            ("web_fetch, 13 KB HTML → text", "loopback, pinned",
             lambda: run("web_fetch", {"url": f"http://127.0.0.1:{port}/"}), 10),
        ]  # fmt: skip
        rows = []
        try:
            for label, size, fn, number in cases:
                seconds = median_seconds(fn, repeat=5, number=number)
                rows.append((label, size, f"{seconds * 1000:.3f} ms"))
        finally:
            current_turn.reset(token)
            loop.close()
            server.shutdown()
            server.server_close()
            config._config = previous
    print_table("Built-in tools: median time per call", ["operation", "input", "median"], rows)
