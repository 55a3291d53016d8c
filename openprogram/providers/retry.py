"""Which provider failures are worth retrying, and how long to wait between tries.

Transient failures (429, 5xx, timeouts, refused connections) are retried with
exponential backoff; anything that will fail the same way again (bad key, bad
request, unknown model) is reported at once with the provider's own message.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Literal

__all__ = ["ProviderError", "ProviderErrorKind", "RetryPolicy", "classify_provider_error"]

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
    """
    for cls in type(error).__mro__:
        name = cls.__name__
        if name in _AUTH:
            return "provider_auth"
        if name in _BAD_REQUEST:
            return "provider_bad_request"
        if name in _TRANSIENT:
            return "provider_unavailable"
    if isinstance(error, TimeoutError | ConnectionError):
        return "provider_unavailable"
    return "provider_error"
