"""Where an OpenAI Chat Completions call goes, resolved by litellm once and cached.

litellm decides which provider a model name means, the base URL and the key. For a
model it sends with the plain OpenAI Chat Completions request (its ``openai``
provider: OpenAI itself, and every ``openai/<name>`` model on an OpenAI-compatible
server such as vLLM, llama.cpp or LM Studio), :func:`openai_route` returns the URL,
headers and wire model name, and OpenProgram sends the request itself
(:mod:`openprogram.providers.openai_http`). Everything else returns None and stays on
litellm's own path: other providers, OpenAI models litellm rewrites the request for
(o-series and GPT-5 reasoning models, models it bridges to the Responses API), a call
without a key (litellm reports that), and every model when
``OPENPROGRAM_OPENAI_TRANSPORT=litellm``.

The answer is cached per (model, api_base, api_key) and the environment variables
litellm reads for it, so a call costs a dictionary look-up, not litellm's resolution.
"""

from __future__ import annotations

import functools
import importlib.metadata
import logging
import os
from collections.abc import Mapping
from dataclasses import dataclass
from types import ModuleType

__all__ = ["TRANSPORT_ENV", "OpenAIRoute", "openai_route", "openai_transport"]

log = logging.getLogger(__name__)

TRANSPORT_ENV = "OPENPROGRAM_OPENAI_TRANSPORT"
_TRANSPORTS = ("openprogram", "litellm")


@functools.cache
def _user_agent() -> str:
    """Asked on the first route, not at import (reading package metadata takes a while)."""
    try:
        return f"OpenProgram/{importlib.metadata.version('openprogram')}"
    except importlib.metadata.PackageNotFoundError:  # run from a source tree, not installed
        return "OpenProgram"


# What litellm (and the OpenAI SDK under it) read for an ``openai`` call besides its arguments.
_ENV = (
    "OPENAI_API_KEY",
    "OPENAI_BASE_URL",
    "OPENAI_API_BASE",
    "OPENAI_ORGANIZATION",
    "OPENAI_ORG_ID",
    "OPENAI_PROJECT_ID",
)
_MAX_ROUTES = 256
# Asked of litellm's Responses-API bridge: would it move a call with function tools?
_PROBE_TOOLS = [{"type": "function", "function": {"name": "probe", "parameters": {}}}]


@dataclass(frozen=True)
class OpenAIRoute:
    url: str
    """``<api_base>/chat/completions``."""
    model: str
    """The model name the request body carries (litellm's, without the ``openai/`` prefix)."""
    headers: Mapping[str, str]
    """Authorization, organization/project when configured, User-Agent, content types."""

    def __repr__(self) -> str:  # never print the key
        return f"OpenAIRoute(url={self.url!r}, model={self.model!r})"


def openai_transport() -> str:
    """``openprogram`` (default: we send OpenAI Chat Completions calls) or ``litellm``."""
    value = os.environ.get(TRANSPORT_ENV, "").strip().lower() or "openprogram"
    if value not in _TRANSPORTS:
        raise ValueError(f"{TRANSPORT_ENV} must be 'openprogram' or 'litellm', got {value!r}")
    return value


_MISSING = object()
_routes: dict[tuple[str | None, ...], OpenAIRoute | None] = {}


def openai_route(
    litellm: ModuleType, model: str, *, api_base: str | None, api_key: str | None
) -> OpenAIRoute | None:
    """The route for ``model`` (a litellm model name) when we send it ourselves, else None."""
    if openai_transport() == "litellm":
        return None
    key = (model, api_base, api_key, *(os.environ.get(name) for name in _ENV))
    route = _routes.get(key, _MISSING)
    if route is _MISSING:
        route = _resolve(litellm, model, api_base=api_base, api_key=api_key)
        if len(_routes) >= _MAX_ROUTES:
            _routes.clear()
        _routes[key] = route
    return route  # type: ignore[return-value]


def _resolve(
    litellm: ModuleType, model: str, *, api_base: str | None, api_key: str | None
) -> OpenAIRoute | None:
    try:
        return _resolve_with_litellm(litellm, model, api_base=api_base, api_key=api_key)
    except Exception as error:
        # A litellm that moved its internals must not break calls: its own path still works.
        log.debug("litellm's own transport for %r: %s", model, type(error).__name__)
        return None


def _resolve_with_litellm(
    litellm: ModuleType, model: str, *, api_base: str | None, api_key: str | None
) -> OpenAIRoute | None:
    from litellm.llms.openai.chat.gpt_transformation import (
        OpenAIGPTConfig,
        OpenAIUnknownModelConfig,
    )
    from litellm.responses.bridge_check import (
        _resolve_openai_api_base,
        responses_api_bridge_check,
    )
    from litellm.types.utils import LlmProviders

    wire_model, provider, dynamic_key, base = litellm.get_llm_provider(
        model, api_base=api_base, api_key=api_key
    )
    if provider != "openai":
        return None
    # o-series / GPT-5 configs rewrite messages and parameters; only the plain config
    # sends the request as given, which is the request we build.
    config = litellm.ProviderConfigManager.get_provider_chat_config(wire_model, LlmProviders.OPENAI)
    if type(config) not in (OpenAIGPTConfig, OpenAIUnknownModelConfig):
        return None
    if getattr(litellm, "headers", None) or getattr(litellm, "organization", None):
        return None  # litellm-wide settings made in code: leave such calls to litellm
    base = _resolve_openai_api_base(base or api_base)
    for tools in (None, _PROBE_TOOLS):
        info, _ = responses_api_bridge_check(wire_model, "openai", tools=tools, api_base=base)
        if info.get("mode") == "responses":
            return None
    key = (
        api_key
        or dynamic_key
        or getattr(litellm, "api_key", None)
        or getattr(litellm, "openai_key", None)
        or os.environ.get("OPENAI_API_KEY")
    )
    if not key:
        return None  # litellm refuses a call without credentials, with its own message
    headers = {
        "Authorization": f"Bearer {key}",
        "Content-Type": "application/json",
        "Accept": "application/json",
        "User-Agent": _user_agent(),
    }
    organization = os.environ.get("OPENAI_ORGANIZATION") or os.environ.get("OPENAI_ORG_ID")
    if organization:
        headers["OpenAI-Organization"] = organization
    project = os.environ.get("OPENAI_PROJECT_ID")
    if project:
        headers["OpenAI-Project"] = project
    return OpenAIRoute(
        url=base.rstrip("/") + "/chat/completions", model=wire_model, headers=headers
    )
