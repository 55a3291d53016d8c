"""One place maps domain failures to HTTP: 400, 401, 403, 404, 409, 413, 422, 429."""

from __future__ import annotations

from django.core.exceptions import RequestDataTooBig, SuspiciousOperation
from django.http import Http404
from django.http.multipartparser import MultiPartParserError
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

    @api.exception_handler(MultiPartParserError)
    def _unreadable_form(request, exc: MultiPartParserError):
        # Django's multipart parser refuses, e.g., a part whose headers pass 1,024 bytes
        # (a 1,000-character file name); unhandled, that is a bare HTML 400 page.
        return api.create_response(
            request,
            {"detail": f"The form data could not be read: {exc} (a file name may be too long)."},
            status=400,
        )

    @api.exception_handler(SuspiciousOperation)
    def _suspicious(request, exc: SuspiciousOperation):
        status = 413 if isinstance(exc, RequestDataTooBig) else 400
        return api.create_response(
            request, {"detail": f"The request was refused: {exc}"}, status=status
        )

    @api.exception_handler(Http404)
    def _404(request, exc):
        return api.create_response(request, {"detail": str(exc) or "Not found."}, status=404)

    @api.exception_handler(ValidationError)
    def _422(request, exc: ValidationError):
        return api.create_response(
            request, {"detail": "Validation failed.", "errors": exc.errors}, status=422
        )
