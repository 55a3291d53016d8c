"""Built-in tools: what the safety checks cost per call, through AgentTool.execute.

Everything runs in a temporary workspace; web_fetch talks to a loopback server this
bench starts (allow-listed for its port only), bash is approved by a hook.
"""

from __future__ import annotations

import asyncio
import tempfile
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from bench._util import median_seconds, print_table

__all__ = ["main"]

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


def _make_tree(workspace: Path, files: int) -> None:
    for n in range(files):
        path = workspace / f"pkg{n % 20}" / f"mod{n}.py"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("".join(f"def f{i}():\n    return {i}  # needle{n}\n" for i in range(50)))
    (workspace / "big.txt").write_text(
        "".join(f"line {i} " + "x" * 60 + "\n" for i in range(20_000))
    )


def main() -> None:
    from openprogram import config
    from openprogram.agent.context import TurnContext, current_turn
    from openprogram.agent.types import ApprovalDecision
    from openprogram.programs import get_agent_tool
    from openprogram.security.paths import resolve_in_workspace

    previous = config._config
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Page)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    port = server.server_address[1]
    with tempfile.TemporaryDirectory() as tmp:
        home = Path(tmp)
        config.configure(home=home, web_fetch_allow_hosts=(f"127.0.0.1:{port}",))
        workspace = home / "ws"
        workspace.mkdir()
        _make_tree(workspace, files=1000)

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

        swap = ["return 7  #", "return 7 #"]

        def toggle_edit() -> None:
            run("edit", {"path": "pkg1/mod1.py", "old_string": swap[0], "new_string": swap[1]})
            swap.reverse()

        cases: list[tuple[str, str, Any, int]] = [
            ("resolve_in_workspace (pure check)", "pkg3/mod3.py",
             lambda: resolve_in_workspace(workspace, "pkg3/mod3.py"), 2000),
            ("read, one 2,000-line page", "big.txt offset 10,000",
             lambda: run("read", {"path": "big.txt", "offset": 10_000}), 5),
            ("glob **/*.py", "1,000 files",
             lambda: run("glob", {"pattern": "**/*.py", "max_results": 2000}), 3),
            ("grep, 200 matches max", "1,000 files × 100 lines",
             lambda: run("grep", {"pattern": r"needle99\d", "max_matches": 200}), 3),
            ("list_dir", "20 entries", lambda: run("list_dir", {"path": "."}), 20),
            ("edit, unique replacement", "100-line file", toggle_edit, 10),
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
