"""Which provider failures are worth retrying, and how long to wait between tries.

Transient failures (429, 5xx, timeouts, refused connections) are retried with
exponential backoff; anything that will fail the same way again (bad key, bad
request, unknown model) is reported at once with the provider's own message.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Literal

__all__ = [
    "ProviderError",
    "ProviderErrorKind",
    "RetryPolicy",
    "classify_provider_error",
    "kind_for_status",
    "retry_after_seconds",
]

ProviderErrorKind = Literal[
    "provider_unavailable", "provider_auth", "provider_bad_request", "provider_error"
]


class ProviderError(Exception):
    """A model call that failed for good; ``kind`` says whether retrying could help."""

    def __init__(self, kind: ProviderErrorKind, message: str, *, attempts: int = 1) -> None:
        super().__init__(message)
        self.kind: ProviderErrorKind = kind
        self.message = message
        self.attempts = attempts


@dataclass(frozen=True)
class RetryPolicy:
    attempts: int = 3
    """Total tries for a transient failure (1 = no retry)."""
    base_delay: float = 0.5
    """Seconds before the 2nd try; doubled before each later one."""
    max_delay: float = 8.0

    def delay_before(self, attempt: int) -> float:
        """Wait before try number ``attempt`` (2, 3, ...)."""
        return min(self.max_delay, self.base_delay * 2 ** max(0, attempt - 2))

    @classmethod
    def from_env(cls) -> RetryPolicy:
        """``OPENPROGRAM_PROVIDER_RETRIES`` / ``OPENPROGRAM_PROVIDER_RETRY_DELAY`` override."""
        attempts = int(os.environ.get("OPENPROGRAM_PROVIDER_RETRIES", cls.attempts))
        base = float(os.environ.get("OPENPROGRAM_PROVIDER_RETRY_DELAY", cls.base_delay))
        if attempts < 1 or base < 0:
            raise ValueError(
                f"OPENPROGRAM_PROVIDER_RETRIES must be >= 1 and OPENPROGRAM_PROVIDER_RETRY_DELAY "
                f">= 0, got {attempts!r} and {base!r}"
            )
        return cls(attempts=attempts, base_delay=base)


_TRANSIENT = (
    "RateLimitError",
    "InternalServerError",
    "ServiceUnavailableError",
    "APIConnectionError",
    "Timeout",
    "BadGatewayError",
)
_AUTH = ("AuthenticationError", "PermissionDeniedError")
_BAD_REQUEST = (
    "BadRequestError",
    "NotFoundError",
    "ContextWindowExceededError",
    "ContentPolicyViolationError",
    "UnprocessableEntityError",
    "UnsupportedParamsError",
)


def classify_provider_error(error: BaseException) -> ProviderErrorKind:
    """Map a litellm (or network) exception to a kind, by class name up the MRO.

    Names rather than classes so this module never imports litellm; subclasses
    (ContextWindowExceededError is a BadRequestError) are matched most-specific first.
    Errors of our own OpenAI transport carry their kind (``provider_error_kind``).
    """
    own = getattr(error, "provider_error_kind", None)
    if own is not None:
        return own
    for cls in type(error).__mro__:
        name = cls.__name__
        if name in _AUTH:
            return "provider_auth"
        if name in _BAD_REQUEST:
            return "provider_bad_request"
        if name in _TRANSIENT:
            return "provider_unavailable"
    status = getattr(error, "status_code", None)
    if isinstance(status, int) and status >= 400:
        # A generic APIError still says what the server answered (litellm maps 403 so).
        return kind_for_status(status)
    if isinstance(error, TimeoutError | ConnectionError):
        return "provider_unavailable"
    return "provider_error"


def kind_for_status(status: int) -> ProviderErrorKind:
    """The kind of an HTTP error status: auth, retryable, or a request that cannot succeed."""
    if status in (401, 403):
        return "provider_auth"
    if status in (408, 409, 429) or status >= 500:
        return "provider_unavailable"
    if 400 <= status < 500:
        return "provider_bad_request"  # 400 (context length too), 404 model, 413, 422
    return "provider_error"


MAX_RETRY_AFTER = 30.0
"""Longest Retry-After (seconds) a turn waits out; a longer one is reported at once."""


def retry_after_seconds(error: BaseException) -> float | None:
    """The wait a 429/503 asked for (``Retry-After`` in seconds), if it said one.

    Our transport's errors carry it as ``retry_after``; litellm's exceptions keep the
    provider's HTTP response (``response.headers``). An HTTP-date form is ignored.
    """
    value = getattr(error, "retry_after", None)
    if value is None:
        headers = getattr(getattr(error, "response", None), "headers", None)
        try:
            value = headers.get("retry-after") if headers is not None else None
        except Exception:  # a response object without real headers: no hint
            value = None
    try:
        seconds = float(value) if value is not None else None
    except (TypeError, ValueError):
        return None
    return seconds if seconds is not None and seconds >= 0 else None
