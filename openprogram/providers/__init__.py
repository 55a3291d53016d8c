"""Model providers: litellm resolves every model; OpenAI-compatible calls are sent by us."""

from openprogram.providers.context_window import (
    FALLBACK_CONTEXT_TOKENS,
    context_window_chars,
    context_window_tokens,
)
from openprogram.providers.retry import ProviderError, RetryPolicy, classify_provider_error
from openprogram.providers.routing import OFFLINE_MODEL, connection_kwargs, litellm_model_name
from openprogram.providers.streaming import ProviderDelta, messages_to_wire, stream_chat

__all__ = [
    "FALLBACK_CONTEXT_TOKENS",
    "OFFLINE_MODEL",
    "ProviderDelta",
    "ProviderError",
    "RetryPolicy",
    "classify_provider_error",
    "connection_kwargs",
    "context_window_chars",
    "context_window_tokens",
    "litellm_model_name",
    "messages_to_wire",
    "stream_chat",
]
