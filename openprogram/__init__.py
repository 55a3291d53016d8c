"""OpenProgram: a function-calling framework. ``from openprogram import function, Agent``."""

from openprogram.agent.dispatcher import process_user_turn
from openprogram.agent.events import TurnRequest
from openprogram.agent.loop import agent_loop
from openprogram.agent.types import AgentTool, AgentToolResult, ToolCall
from openprogram.agentic_programming import Agent
from openprogram.programs import agent_tools, get_agent_tool, resolve_tools
from openprogram.programs.decorator import function
from openprogram.programs.results import ToolReturn

__all__ = [
    "Agent",
    "AgentTool",
    "AgentToolResult",
    "ToolCall",
    "ToolReturn",
    "TurnRequest",
    "agent_loop",
    "agent_tools",
    "function",
    "get_agent_tool",
    "process_user_turn",
    "resolve_tools",
]
