"""Which litellm model name and connection settings a user-facing model name means.

``offline`` is the built-in scripted model (``openprogram/offline``, served in process by
:mod:`openprogram.providers.offline`). Any other
name goes to litellm unchanged, which reads keys and bases from its usual
environment variables (``OPENAI_API_KEY``, ``ANTHROPIC_API_KEY``, ``OLLAMA_API_BASE``...).
``OPENPROGRAM_API_BASE`` (and ``OPENPROGRAM_API_KEY``) point every non-offline model
at one custom OpenAI-compatible server, e.g. vLLM or a llama.cpp server.
"""

from __future__ import annotations

import os
from typing import Any

__all__ = ["OFFLINE_MODEL", "connection_kwargs", "is_offline", "litellm_model_name"]

OFFLINE_MODEL = "offline"
_OFFLINE_ROUTED = "openprogram/offline"


def litellm_model_name(model: str) -> str:
    if not model or not model.strip():
        raise ValueError("a model name is required, e.g. 'offline' or 'openai/gpt-4o-mini'")
    model = model.strip()
    if model == OFFLINE_MODEL:
        return _OFFLINE_ROUTED
    return model


def is_offline(model: str) -> bool:
    """True for the built-in offline model (served in process, not through litellm)."""
    return litellm_model_name(model) == _OFFLINE_ROUTED


def connection_kwargs(
    model: str, *, api_base: str | None = None, api_key: str | None = None
) -> dict[str, Any]:
    """``api_base``/``api_key`` for litellm: explicit values, else the OPENPROGRAM_* env."""
    if is_offline(model):
        return {}
    kwargs: dict[str, Any] = {}
    base = api_base or os.environ.get("OPENPROGRAM_API_BASE")
    key = api_key or os.environ.get("OPENPROGRAM_API_KEY")
    if base:
        kwargs["api_base"] = base
    if key:
        kwargs["api_key"] = key
    return kwargs
