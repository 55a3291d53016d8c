"""Agents: ordinary classes whose chosen methods become tools, and the scopes their calls run in.

``Agent`` and ``method_options`` are the authoring surface (docs/agents.md);
``Context`` / :func:`context` / :func:`current_call_tree` expose the call
scope a method runs in.
"""

from openprogram.agentic_programming.agent_class import Agent
from openprogram.agentic_programming.agent_method import METHOD_OPTION_KEYS, MethodOptions
from openprogram.agentic_programming.agent_run import AgentRunError
from openprogram.agentic_programming.call_scope import (
    MAX_CALL_DEPTH,
    CallDepthError,
    CallScope,
    CallTreeUpdated,
    call_tree_for,
)
from openprogram.agentic_programming.call_state import CallCancelled, CancelToken, Runtime
from openprogram.agentic_programming.context import (
    CallNode,
    CallStatus,
    CallTree,
    Context,
    context,
    current_call_tree,
)

__all__ = [
    "MAX_CALL_DEPTH",
    "METHOD_OPTION_KEYS",
    "Agent",
    "AgentRunError",
    "CallCancelled",
    "CallDepthError",
    "CallNode",
    "CallScope",
    "CallStatus",
    "CallTree",
    "CallTreeUpdated",
    "CancelToken",
    "Context",
    "MethodOptions",
    "Runtime",
    "call_tree_for",
    "context",
    "current_call_tree",
]
