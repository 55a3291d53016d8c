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

A call that goes to litellm instead is logged at WARNING once per process, model and
reason (:func:`fallback_reasons` keeps them), so traffic moving to the slower path —
a litellm release that moved what is asked of it, above all — is seen, not silent.
"""

from __future__ import annotations

import functools
import importlib.metadata
import logging
import os
from collections.abc import Mapping
from dataclasses import dataclass
from types import ModuleType

__all__ = ["TRANSPORT_ENV", "OpenAIRoute", "fallback_reasons", "openai_route", "openai_transport"]

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
_OPENAI_DEFAULT_BASE = "https://api.openai.com/v1"
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
_warned: set[tuple[str, str]] = set()


def fallback_reasons() -> frozenset[tuple[str, str]]:
    """The (model, reason) pairs this process sent to litellm, each warned about once."""
    return frozenset(_warned)


def _fall_back(model: str, reason: str) -> None:
    if (model, reason) not in _warned:
        _warned.add((model, reason))
        log.warning(
            "model %r goes through litellm, not OpenProgram's own client: %s", model, reason
        )


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
        route = _resolve_with_litellm(litellm, model, api_base=api_base, api_key=api_key)
    except Exception as error:
        # A litellm that moved what is asked of it must not break calls: its path works.
        route = f"litellm could not be asked for the route ({type(error).__name__}: {error})"
    if isinstance(route, str):
        _fall_back(model, route)
        return None
    return route


def _resolve_with_litellm(
    litellm: ModuleType, model: str, *, api_base: str | None, api_key: str | None
) -> OpenAIRoute | str:
    """The route, or why the call is litellm's to send."""
    from litellm.llms.openai.chat.gpt_transformation import (
        OpenAIGPTConfig,
        OpenAIUnknownModelConfig,
    )
    from litellm.responses.bridge_check import responses_api_bridge_check
    from litellm.types.utils import LlmProviders

    wire_model, provider, dynamic_key, base = litellm.get_llm_provider(
        model, api_base=api_base, api_key=api_key
    )
    if provider != "openai":
        return f"provider {provider!r} is not sent as a plain OpenAI Chat Completions call"
    # o-series / GPT-5 configs rewrite messages and parameters; only the plain config
    # sends the request as given, which is the request we build.
    config = litellm.ProviderConfigManager.get_provider_chat_config(wire_model, LlmProviders.OPENAI)
    if type(config) not in (OpenAIGPTConfig, OpenAIUnknownModelConfig):
        return f"litellm rewrites its requests ({type(config).__name__})"
    if getattr(litellm, "headers", None) or getattr(litellm, "organization", None):
        return "litellm-wide headers or organization are set in code"
    # The base litellm's OpenAI chat handler uses: argument, litellm-wide, environment.
    base = (
        base
        or api_base
        or getattr(litellm, "api_base", None)
        or os.environ.get("OPENAI_BASE_URL")
        or os.environ.get("OPENAI_API_BASE")
        or _OPENAI_DEFAULT_BASE
    )
    for tools in (None, _PROBE_TOOLS):
        info, _ = responses_api_bridge_check(wire_model, "openai", tools=tools, api_base=base)
        if info.get("mode") == "responses":
            return "litellm bridges it to the Responses API"
    key = (
        api_key
        or dynamic_key
        or getattr(litellm, "api_key", None)
        or getattr(litellm, "openai_key", None)
        or os.environ.get("OPENAI_API_KEY")
    )
    if not key:
        return "no API key: litellm refuses the call with its own message"
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
