"""The Content-Security-Policy every response carries (Django 5.2 has none built in).

Scripts, styles, images, fonts and connections come from this origin only; no inline
script or style (templates load ``static/`` files, htmx is told not to inject its
indicator ``<style>``), no ``eval``, no plugins, no framing by any page
(``frame-ancestors 'none'``, beside Django's ``X-Frame-Options: DENY``), forms post
only here. The socket's own origin is named in ``connect-src`` besides ``'self'``
because older browsers do not let ``'self'`` cover ``ws:``/``wss:``.

The other headers come from Django's ``SecurityMiddleware`` and settings:
``X-Content-Type-Options: nosniff``, ``Referrer-Policy: same-origin``,
``Cross-Origin-Opener-Policy: same-origin``, and HSTS when ``HTTPS=1``.
"""

from __future__ import annotations

from django.core.exceptions import DisallowedHost
from django.http import HttpRequest, HttpResponse
from django.utils.deprecation import MiddlewareMixin

__all__ = ["CSP_DIRECTIVES", "ContentSecurityPolicyMiddleware", "content_security_policy"]

CSP_DIRECTIVES: dict[str, str] = {
    "default-src": "'self'",
    "script-src": "'self'",
    "style-src": "'self'",
    "img-src": "'self' data:",
    "font-src": "'self'",
    "connect-src": "'self'",
    "object-src": "'none'",
    "base-uri": "'none'",
    "form-action": "'self'",
    "frame-ancestors": "'none'",
}


def content_security_policy(request: HttpRequest) -> str:
    directives = dict(CSP_DIRECTIVES)
    try:
        host = request.get_host()
    except DisallowedHost:  # the 400 answering a bad Host header: no socket to name
        host = ""
    if host:
        scheme = "wss" if request.is_secure() else "ws"
        directives["connect-src"] += f" {scheme}://{host}"
    return "; ".join(f"{name} {value}" for name, value in directives.items())


class ContentSecurityPolicyMiddleware(MiddlewareMixin):
    """Set the policy on every response that does not carry its own (sync and async)."""

    def process_response(self, request: HttpRequest, response: HttpResponse) -> HttpResponse:
        if "Content-Security-Policy" not in response:
            response["Content-Security-Policy"] = content_security_policy(request)
        return response
