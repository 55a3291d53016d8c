"""OpenProgram: a function-calling framework. ``from openprogram import function, Agent``."""

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
    "agent_tools",
    "function",
    "get_agent_tool",
    "resolve_tools",
]
