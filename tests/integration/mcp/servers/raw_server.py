"""A hand-written stdio MCP server (no SDK) that misbehaves on purpose.

It speaks just enough JSON-RPC for the handshake and ``tools/list``. Calling
``rpc_error`` answers with a JSON-RPC error instead of a result; calling
``malformed`` answers with a result whose ``content`` is not a list.
``lying_structured`` declares an output schema and returns structured content
that breaks it; ``missing_structured`` declares one and returns none.
"""

from __future__ import annotations

import json
import sys

_TOOLS = [
    {
        "name": name,
        "description": f"Misbehaves: {name}.",
        "inputSchema": {"type": "object", "properties": {}},
    }
    for name in ("rpc_error", "malformed")
] + [
    {
        "name": name,
        "description": f"Misbehaves: {name}.",
        "inputSchema": {"type": "object", "properties": {}},
        "outputSchema": {
            "type": "object",
            "properties": {"celsius": {"type": "number"}},
            "required": ["celsius"],
        },
    }
    for name in ("lying_structured", "missing_structured")
]


def _answer(request: dict) -> dict | None:
    method = request.get("method")
    if "id" not in request:
        return None  # a notification
    reply: dict = {"jsonrpc": "2.0", "id": request["id"]}
    if method == "initialize":
        reply["result"] = {
            "protocolVersion": request["params"]["protocolVersion"],
            "capabilities": {"tools": {"listChanged": False}},
            "serverInfo": {"name": "raw", "version": "1.0"},
        }
    elif method == "tools/list":
        reply["result"] = {"tools": _TOOLS}
    elif method == "tools/call" and request["params"]["name"] == "rpc_error":
        reply["error"] = {"code": -32602, "message": "the raw server refuses"}
    elif method == "tools/call" and request["params"]["name"] == "lying_structured":
        reply["result"] = {
            "content": [{"type": "text", "text": "warm"}],
            "structuredContent": {"celsius": "warm"},
        }
    elif method == "tools/call" and request["params"]["name"] == "missing_structured":
        reply["result"] = {"content": [{"type": "text", "text": "21.5"}]}
    elif method == "tools/call":
        reply["result"] = {"content": "not a list", "isError": False}
    else:
        reply["error"] = {"code": -32601, "message": f"no method {method!r}"}
    return reply


def main() -> None:
    for line in sys.stdin:
        if not line.strip():
            continue
        reply = _answer(json.loads(line))
        if reply is not None:
            sys.stdout.write(json.dumps(reply) + "\n")
            sys.stdout.flush()


if __name__ == "__main__":
    main()
