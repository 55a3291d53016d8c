"""One place maps domain failures to HTTP: 401, 403, 404, 409, 422, 429."""

from __future__ import annotations

from django.http import Http404
from ninja import NinjaAPI
from ninja.errors import AuthenticationError, ValidationError

__all__ = [
    "ConflictError",
    "DomainError",
    "ForbiddenError",
    "NotFoundError",
    "ThrottledError",
    "UnprocessableError",
    "install_error_handlers",
]


class DomainError(Exception):
    status = 400

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class NotFoundError(DomainError):
    status = 404


class ForbiddenError(DomainError):
    status = 403


class ConflictError(DomainError):
    status = 409


class UnprocessableError(DomainError):
    status = 422


class ThrottledError(DomainError):
    """Too many attempts; ``retry_after`` seconds (when known) becomes a Retry-After header."""

    status = 429

    def __init__(self, message: str, *, retry_after: int | None = None) -> None:
        super().__init__(message)
        self.retry_after = retry_after


def install_error_handlers(api: NinjaAPI) -> None:
    @api.exception_handler(DomainError)
    def _domain(request, exc: DomainError):
        response = api.create_response(request, {"detail": exc.message}, status=exc.status)
        if getattr(exc, "retry_after", None):
            response["Retry-After"] = str(exc.retry_after)
        return response

    @api.exception_handler(AuthenticationError)
    def _auth(request, exc):
        return api.create_response(
            request,
            {"detail": "Authentication required: log in or send 'Authorization: Bearer <token>'."},
            status=401,
        )

    @api.exception_handler(Http404)
    def _404(request, exc):
        return api.create_response(request, {"detail": str(exc) or "Not found."}, status=404)

    @api.exception_handler(ValidationError)
    def _422(request, exc: ValidationError):
        return api.create_response(
            request, {"detail": "Validation failed.", "errors": exc.errors}, status=422
        )
