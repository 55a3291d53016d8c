"""How much text a model can take in, for the dynamic per-call result ceiling.

litellm's model map gives ``max_input_tokens`` for known models. Unknown models
(local servers, custom names, the offline model) get :data:`FALLBACK_CONTEXT_TOKENS`.
Characters are estimated as tokens * :data:`CHARS_PER_TOKEN`, the usual English ratio.
"""

from __future__ import annotations

__all__ = [
    "CHARS_PER_TOKEN",
    "FALLBACK_CONTEXT_TOKENS",
    "context_window_chars",
    "context_window_chars_known",
    "context_window_tokens",
]

FALLBACK_CONTEXT_TOKENS = 32_000
CHARS_PER_TOKEN = 4


_known_tokens: dict[str, int] = {}
_MAX_KNOWN = 256


def context_window_tokens(model: str) -> int:
    """``max_input_tokens`` (else ``max_tokens``) from litellm's model info, else the
    fallback; remembered per model (at most ``_MAX_KNOWN`` of them)."""
    tokens = _known_tokens.get(model)
    if tokens is None:
        tokens = _model_info_tokens(model)
        if len(_known_tokens) >= _MAX_KNOWN:
            _known_tokens.clear()
        _known_tokens[model] = tokens
    return tokens


def _model_info_tokens(model: str) -> int:
    from openprogram.providers.routing import litellm_model_name

    name = litellm_model_name(model)
    if name.startswith("openprogram/"):
        return FALLBACK_CONTEXT_TOKENS
    from openprogram.providers._litellm_setup import load_litellm

    litellm = load_litellm()
    try:
        info = litellm.get_model_info(name)
    except Exception:
        # litellm raises for any model missing from its map; that is the normal
        # case for self-hosted servers, not an error worth surfacing.
        return FALLBACK_CONTEXT_TOKENS
    tokens = info.get("max_input_tokens") or info.get("max_tokens")
    return int(tokens) if tokens else FALLBACK_CONTEXT_TOKENS


def context_window_chars(model: str) -> int:
    return context_window_tokens(model) * CHARS_PER_TOKEN


def context_window_chars_known(model: str) -> int | None:
    """:func:`context_window_chars` if it was already worked out for ``model``, else None.

    A turn asks before its first request: the first time for a model may import
    litellm and read its model map (a worker thread's job); after that the answer is a
    look-up, and the turn need not hop to a thread and back for it.
    """
    tokens = _known_tokens.get(model)
    return None if tokens is None else tokens * CHARS_PER_TOKEN
