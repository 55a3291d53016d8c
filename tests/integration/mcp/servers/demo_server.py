"""An MCP server written with the SDK's server API, for the integration tests.

Run ``python demo_server.py`` for stdio or ``python demo_server.py --http PORT``
for streamable HTTP on 127.0.0.1. Environment knobs (set by the tests):

- ``DEMO_CRASH_FILE``: a file holding a number N; while N > 0 the server
  decrements it and exits at start-up, so a test sees N failed starts and then
  a healthy server (crash, then come back).
- ``DEMO_EXTRA_TOOLS``: a number N of extra ``extra_<i>`` tools, for the benchmark
  of a large tool surface.
- ``DEMO_PROBE_TOOLS=1``: the tools a confined server's tests probe with (``where``,
  ``read_path``, ``write_here``, ``connect``): what any server's code can try.
"""

from __future__ import annotations

import asyncio
import base64
import json
import os
import socket
import sys
from pathlib import Path


def _crash_at_start_if_asked() -> None:
    crash_file = os.environ.get("DEMO_CRASH_FILE")
    if not crash_file:
        return
    path = Path(crash_file)
    remaining = int(path.read_text() or "0")
    if remaining > 0:
        path.write_text(str(remaining - 1))
        sys.exit(7)


# Before the SDK import, so a "crashing" start costs no more than the interpreter start.
if __name__ == "__main__":
    _crash_at_start_if_asked()

from mcp.server.mcpserver import Context, MCPServer  # noqa: E402
from mcp.server.mcpserver.exceptions import ToolError  # noqa: E402
from mcp.server.mcpserver.utilities.types import Image  # noqa: E402

# A 1x1 transparent PNG: the smallest real image a tool can return.
_PIXEL_PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg=="
)

server = MCPServer("demo", log_level="WARNING")


@server.tool(description="Echo the given text back.")
def echo(text: str) -> str:
    return text


@server.tool(description="Add two integers.")
def add(a: int, b: int) -> int:
    return a + b


@server.tool(description="Repeat the text; say which suffix arrived (None when null).")
def repeat(text: str, times: int = 1, suffix: str | None = "!") -> str:
    # The server's own validation refuses a null for times: only a client that leaves
    # that null out gets the default.
    return f"{text * times} suffix={suffix!r}"


@server.tool(description="Count to steps, reporting progress after each step.")
async def slow_count(steps: int, delay: float, ctx: Context) -> str:
    for step in range(1, steps + 1):
        await asyncio.sleep(delay)
        await ctx.report_progress(step, steps, f"step {step} of {steps}")
    return f"counted to {steps}"


@server.tool(description="Always fails with the given message.")
def fail(message: str) -> str:
    raise ToolError(message)


@server.tool(description="Return a text of exactly size characters.")
def big_output(size: int) -> str:
    line = "0123456789abcdefghijklmnopqrstuvwxyz\n"
    return (line * (size // len(line) + 1))[:size]


@server.tool(description="Return a one-pixel PNG and a caption.")
def pixel() -> list:
    return ["a single pixel", Image(data=_PIXEL_PNG, format="png")]


async def _announce_tools_changed(ctx: Context) -> None:
    # A 2025-era client hears the notification; a 2026-07-28 client hears of the
    # change on the subscriptions/listen stream it keeps open.
    await ctx.session.send_tool_list_changed()
    await ctx.notify_tools_changed()


def _bonus(word: str) -> str:
    return f"bonus {word}"


@server.tool(description="Add the 'bonus' tool, remove 'add', and announce the change.")
async def evolve(ctx: Context) -> str:
    server.add_tool(_bonus, name="bonus", description="A tool that appeared later.")
    server.remove_tool("add")
    await _announce_tools_changed(ctx)
    return "evolved"


@server.tool(description="Rewrite echo's description and announce the change.")
async def rewrite_echo(description: str, ctx: Context) -> str:
    server.remove_tool("echo")
    server.add_tool(echo, name="echo", description=description)
    await _announce_tools_changed(ctx)
    return "rewritten"


@server.tool(description="Exit the server process abruptly.")
def crash() -> str:
    os._exit(3)


def _extra(value: str) -> str:
    return value


for _index in range(int(os.environ.get("DEMO_EXTRA_TOOLS", "0"))):
    server.add_tool(_extra, name=f"extra_{_index}", description=f"Extra tool number {_index}.")


def where() -> str:
    return json.dumps({"cwd": os.getcwd(), "home": os.environ.get("HOME", "")})


def read_path(path: str) -> str:
    try:
        return "READ:" + Path(path).read_text()
    except OSError as exc:
        return f"{type(exc).__name__}: {exc}"


def write_here(name: str, text: str) -> str:
    Path(name).write_text(text)
    return str(Path(name).resolve())


def connect(port: int) -> str:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=5):
            return "REACHED"
    except OSError as exc:
        return f"{type(exc).__name__}: {exc}"


if os.environ.get("DEMO_PROBE_TOOLS") == "1":
    for _probe in (where, read_path, write_here, connect):
        server.add_tool(_probe, name=_probe.__name__, description=f"Probe: {_probe.__name__}.")


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--http":
        import uvicorn

        # A 2026-07-28 client keeps a subscriptions/listen stream open; uvicorn would wait
        # for it on SIGTERM, and the tests stop this server while clients are connected.
        uvicorn.run(
            server.streamable_http_app(host="127.0.0.1"),
            host="127.0.0.1",
            port=int(sys.argv[2]),
            log_level="warning",
            timeout_graceful_shutdown=1,
        )
    else:
        server.run("stdio")
