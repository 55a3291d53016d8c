"""Peer frameworks run with scripted models that answer instantly (``make bench`` extra).

Each runner does one tool-call round trip: the model asks for ``noop(value="x")``,
the framework validates and runs the tool, feeds the result back, and the model
answers "done". Only the frameworks' own work is left to time.
"""

from __future__ import annotations

import os
from collections.abc import Awaitable, Callable

os.environ.setdefault("OPENAI_AGENTS_DISABLE_TRACING", "1")

__all__ = ["openai_agents_runner", "pydantic_ai_runner"]

Runner = Callable[[], Awaitable[str]]


def pydantic_ai_runner() -> Runner:
    from pydantic_ai import Agent
    from pydantic_ai.messages import ModelResponse, TextPart, ToolCallPart, ToolReturnPart
    from pydantic_ai.models.function import AgentInfo, FunctionModel

    def script(messages, info: AgentInfo) -> ModelResponse:
        if any(isinstance(part, ToolReturnPart) for part in messages[-1].parts):
            return ModelResponse(parts=[TextPart("done")])
        return ModelResponse(parts=[ToolCallPart("noop", {"value": "x"})])

    agent = Agent(FunctionModel(script))

    @agent.tool_plain
    def noop(value: str) -> str:
        """Return the value."""
        return value

    async def run_once() -> str:
        return (await agent.run("go")).output

    return run_once


def openai_agents_runner() -> Runner:
    from agents import Agent, ModelSettings, Runner, function_tool, set_tracing_disabled
    from agents.items import ModelResponse
    from agents.models.interface import Model
    from agents.usage import Usage
    from openai.types.responses import (
        ResponseFunctionToolCall,
        ResponseOutputMessage,
        ResponseOutputText,
    )

    set_tracing_disabled(True)

    def _is_tool_output(item: object) -> bool:
        kind = item.get("type") if isinstance(item, dict) else getattr(item, "type", None)
        return kind == "function_call_output"

    class Scripted(Model):
        async def get_response(self, system_instructions, input, *args, **kwargs):
            items = input if isinstance(input, list) else []
            if any(_is_tool_output(item) for item in items):
                text = ResponseOutputText(type="output_text", text="done", annotations=[])
                output = [
                    ResponseOutputMessage(
                        id="m", type="message", role="assistant", status="completed", content=[text]
                    )
                ]
            else:
                output = [
                    ResponseFunctionToolCall(
                        id="c",
                        call_id="call_1",
                        type="function_call",
                        name="noop",
                        arguments='{"value": "x"}',
                    )
                ]
            return ModelResponse(output=output, usage=Usage(), response_id=None)

        def stream_response(self, *args, **kwargs):
            raise NotImplementedError("the benchmark uses get_response only")

    @function_tool
    def noop(value: str) -> str:
        """Return the value."""
        return value

    agent = Agent(
        name="bench",
        instructions="",
        model=Scripted(),
        tools=[noop],
        model_settings=ModelSettings(),
    )

    async def run_once() -> str:
        return (await Runner.run(agent, "go")).final_output

    return run_once
