"""An SDK MCP server for the protocol features beyond plain tools (stdio only).

Elicitation (form, URL, a malformed schema), structured output with an output
schema (and one tool whose structured output breaks its own schema), resource
links and embedded resources, a tool that notices cancellation, prompts and
resources, and tools that change the prompt and resource lists.
``PROTOCOL_MARKER_DIR`` (set by the tests) is where ``wait_for_cancel`` writes
``cancelled`` once the server saw the client's cancellation.

The server speaks both protocol revisions, as the SDK does: on 2026-07-28 its
questions go back as ``input_required`` results the client answers by retrying
the call; on 2025-11-25 they are ``elicitation/create`` requests mid-call.
``PROTOCOL_REVISION=2025-11-25`` makes it an older server: it does not know
``server/discover``, so a client has to fall back to the ``initialize`` handshake.
"""

from __future__ import annotations

import asyncio
import json
import os
from pathlib import Path
from typing import Annotated, Any

import mcp_types
from mcp.server.mcpserver import Context, MCPServer
from pydantic import BaseModel

server = MCPServer("protocol", log_level="WARNING")

Asked = mcp_types.InputRequiredResult


async def _ask(
    ctx: Context, key: str, params: mcp_types.ElicitRequestParams
) -> mcp_types.ElicitResult | Asked:
    """The person's answer, asked the way the negotiated revision asks.

    2026-07-28: the first round returns the question as ``input_required``; the
    client retries the call with the answer under ``key``. Older: a request mid-call.
    """
    if ctx.protocol_version and ctx.protocol_version >= "2026-07-28":
        answer = (ctx.input_responses or {}).get(key)
        if isinstance(answer, mcp_types.ElicitResult):
            return answer
        return Asked(input_requests={key: mcp_types.ElicitRequest(params=params)})
    if isinstance(params, mcp_types.ElicitRequestURLParams):
        return await ctx.session.elicit_url(
            params.message,
            params.url,
            params.elicitation_id or key,
            related_request_id=ctx.request_id,
        )
    return await ctx.session.elicit_form(
        params.message, params.requested_schema, related_request_id=ctx.request_id
    )


PROFILE_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "title": "Your name", "default": "Alice", "minLength": 1},
        "age": {"type": "integer", "title": "Age", "default": 30, "minimum": 0},
        "score": {"type": "number", "title": "Score", "default": 95.5},
        "subscribe": {"type": "boolean", "title": "Subscribe", "default": True},
        "color": {
            "type": "string",
            "title": "Colour",
            "oneOf": [
                {"const": "red", "title": "Red"},
                {"const": "green", "title": "Green"},
            ],
            "default": "green",
        },
        "email": {"type": "string", "format": "email", "title": "E-mail"},
    },
    "required": ["name", "email"],
}


@server.tool(description="Ask the user for their profile and report what came back.")
async def ask_profile(ctx: Context) -> str | Asked:
    result = await _ask(
        ctx,
        "profile",
        mcp_types.ElicitRequestFormParams(
            message="Please fill in your profile", requested_schema=PROFILE_SCHEMA
        ),
    )
    if isinstance(result, Asked):
        return result
    return json.dumps({"action": result.action, "content": result.content}, sort_keys=True)


@server.tool(description="Ask with a nested (not allowed) schema and report the outcome.")
async def ask_malformed(ctx: Context) -> str | Asked:
    schema = {
        "type": "object",
        "properties": {"address": {"type": "object", "properties": {"street": {"type": "string"}}}},
    }
    try:
        result = await _ask(
            ctx,
            "address",
            mcp_types.ElicitRequestFormParams(
                message="Where do you live?", requested_schema=schema
            ),
        )
    except Exception as exc:
        return f"refused: {exc}"
    if isinstance(result, Asked):
        return result
    return f"unexpectedly answered: {result.action}"


@server.tool(description="Send the user to a link and report whether they went.")
async def ask_link(url: str, ctx: Context) -> str | Asked:
    result = await _ask(
        ctx,
        "sign-in",
        mcp_types.ElicitRequestURLParams(
            message="Sign in to continue", url=url, elicitation_id="elicit-1"
        ),
    )
    if isinstance(result, Asked):
        return result
    return f"link: {result.action}"


class Forecast(BaseModel):
    city: str
    celsius: float


@server.tool(
    description="A structured weather forecast.",
    annotations=mcp_types.ToolAnnotations(read_only_hint=True, open_world_hint=True),
)
def forecast(city: str) -> Forecast:
    return Forecast(city=city, celsius=21.5)


@server.tool(description="A forecast whose structured content breaks its own output schema.")
def lying_forecast(city: str) -> Annotated[mcp_types.CallToolResult, Forecast]:
    return mcp_types.CallToolResult(
        content=[mcp_types.TextContent(type="text", text="warm")],
        structured_content={"city": city, "celsius": "warm"},
    )


@server.tool(
    description="Return a resource link and an embedded text resource.", structured_output=False
)
def resource_blocks() -> list[Any]:
    return [
        mcp_types.ResourceLink(
            type="resource_link",
            uri="file:///notes/readme.md",
            name="readme",
            mime_type="text/markdown",
            description="The notes' readme",
        ),
        mcp_types.EmbeddedResource(
            type="resource",
            resource=mcp_types.TextResourceContents(
                uri="file:///notes/today.txt", mime_type="text/plain", text="buy milk"
            ),
        ),
    ]


@server.tool(description="Sleep until cancelled; write a marker when the cancellation arrives.")
async def wait_for_cancel(seconds: float, ctx: Context) -> str:
    await ctx.report_progress(0, None, "waiting")
    try:
        await asyncio.sleep(seconds)
    except asyncio.CancelledError:
        marker_dir = os.environ.get("PROTOCOL_MARKER_DIR")
        if marker_dir:
            Path(marker_dir, "cancelled").write_text(ctx.request_id)
        raise
    return "not cancelled"


@server.prompt(description="Summarise a topic in a few sentences.")
def summarise(topic: str) -> str:
    return f"Please summarise {topic} in three sentences."


@server.resource("notes://today", name="today", description="Today's notes", mime_type="text/plain")
def today_notes() -> str:
    return "buy milk\ncall Bob"


@server.resource("notes://logo", name="logo", mime_type="image/png")
def logo() -> bytes:
    return b"\x89PNG\r\n\x1a\n"


@server.tool(description="Add a prompt and a resource and announce both lists changed.")
async def grow(ctx: Context) -> str:

    def review(code: str) -> str:
        return f"Review this code:\n{code}"

    server.prompt(name="review", description="Review some code.")(review)
    server.resource("notes://tomorrow", name="tomorrow", mime_type="text/plain")(
        lambda: "nothing yet"
    )
    await ctx.session.send_prompt_list_changed()
    await ctx.session.send_resource_list_changed()
    # 2026-07-28 clients hear of changes on their subscriptions/listen stream only.
    await ctx.notify_prompts_changed()
    await ctx.notify_resources_changed()
    return "grown"


async def _serve_handshake_only() -> None:
    """Serve stdio the way a server from before 2026-07-28 does: the handshake era only."""
    from mcp.server.runner import serve_loop
    from mcp.server.stdio import stdio_server

    lowlevel = server._lowlevel_server
    async with stdio_server() as (read, write), lowlevel.lifespan(lowlevel) as state:
        await serve_loop(
            lowlevel,
            read,
            write,
            lifespan_state=state,
            init_options=lowlevel.create_initialization_options(),
        )


if __name__ == "__main__":
    if os.environ.get("PROTOCOL_REVISION") == "2025-11-25":
        asyncio.run(_serve_handshake_only())
    else:
        server.run("stdio")
