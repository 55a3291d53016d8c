"""Every page needs a login; the API answers 401 JSON instead of redirecting."""

from __future__ import annotations

from django.contrib.auth.middleware import LoginRequiredMiddleware as _DjangoLoginRequired
from django.http import JsonResponse

__all__ = ["LoginRequiredMiddleware"]


class LoginRequiredMiddleware(_DjangoLoginRequired):
    """Django's login-required middleware, except that ``/api/`` gets JSON.

    API routes authenticate themselves (session + CSRF, or a bearer token) inside
    django-ninja, so they pass through here and ninja answers 401 with a message.
    """

    def process_view(self, request, view_func, view_args, view_kwargs):
        if request.path.startswith("/api/"):
            return None
        return super().process_view(request, view_func, view_args, view_kwargs)

    def handle_no_permission(self, request, view_func):
        if request.headers.get("HX-Request"):
            response = JsonResponse({"detail": "Login required."}, status=401)
            response["HX-Redirect"] = self.get_login_url(view_func)
            return response
        return super().handle_no_permission(request, view_func)
