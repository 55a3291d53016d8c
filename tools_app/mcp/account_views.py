"""Connect / Disconnect a user's own account for a per-user MCP server, and the callback.

Plain form posts (no htmx): Connect answers with a page linking to the provider's
consent page, and the provider sends the browser back to :func:`mcp_oauth_callback`
(in any web process: the flow is stored). The callback only finishes a flow the
same user started (``state``), once, before it expires.

Each view imports the OAuth flow (``oauth_services``, ``oauth_flows``) when it runs,
not at the top: the flow loads the MCP SDK (~1 s of CPU), and this module is imported
with the URLconf by every process that serves a page, nearly none of which ever sees
a Connect (tests/integration/site/test_startup_imports.py).
"""

from __future__ import annotations

from urllib.parse import urlsplit

from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_POST

from core.api_errors import UnprocessableError
from tools_app.mcp.models import MCPServer

__all__ = ["mcp_account_connect", "mcp_account_disconnect_view", "mcp_oauth_callback"]


def _per_user_server(name: str) -> MCPServer:
    return get_object_or_404(MCPServer, name=name, per_user_auth=True)


@require_POST
def mcp_account_connect(request: HttpRequest, name: str) -> HttpResponse:
    from tools_app.mcp.oauth_services import mcp_account_connect_start  # the SDK: module doc

    server = _per_user_server(name)
    redirect_uri = request.build_absolute_uri(reverse("tools:mcp-oauth-callback"))
    try:
        url = mcp_account_connect_start(user=request.user, server=server, redirect_uri=redirect_uri)
    except UnprocessableError as exc:
        messages.error(request, exc.message)
        return redirect("tools:programs")
    if url is None:
        messages.success(request, f"Your account for {server.name} is connected.")
        return redirect("tools:programs")
    # A page with a link, not a redirect: the site's CSP (form-action 'self') rightly stops a
    # form post from redirecting to another origin, and the user sees where they are sent.
    context = {"server": server.name, "url": url, "host": urlsplit(url).netloc}
    return render(request, "tools_app/mcp_oauth_continue.html", context)


@require_GET
def mcp_oauth_callback(request: HttpRequest) -> HttpResponse:
    from tools_app.mcp.oauth_flows import FlowNotFound, FlowOfAnotherUser  # the SDK: module doc
    from tools_app.mcp.oauth_services import mcp_account_callback

    params = request.GET
    try:
        name, status = mcp_account_callback(
            user=request.user,
            state=params.get("state", ""),
            code=params.get("code", ""),
            iss=params.get("iss"),
            error=params.get("error_description") or params.get("error"),
        )
    except FlowOfAnotherUser as exc:
        return render(request, "tools_app/mcp_oauth_error.html", {"message": str(exc)}, status=403)
    except FlowNotFound as exc:
        return render(request, "tools_app/mcp_oauth_error.html", {"message": str(exc)}, status=400)
    if status["state"] == "ready":
        messages.success(request, f"Your account for {name} is connected.")
    else:
        messages.error(request, f"Could not connect your account for {name}: {status['error']}")
    return redirect("tools:programs")


@require_POST
def mcp_account_disconnect_view(request: HttpRequest, name: str) -> HttpResponse:
    from tools_app.mcp.oauth_services import mcp_account_disconnect  # the SDK: module doc

    server = _per_user_server(name)
    done = mcp_account_disconnect(user=request.user, server=server)
    if not done.had_account:
        messages.info(request, f"Your account for {server.name} was not connected.")
        return redirect("tools:programs")
    messages.success(request, f"Disconnected your account for {server.name}.")
    if done.revocation_problems:
        # The tokens are gone here either way; the user may want to revoke them there too.
        messages.warning(
            request,
            f"{server.name}'s provider was not told to revoke the tokens: "
            f"{'; '.join(done.revocation_problems)}. You can revoke this app's access there.",
        )
    return redirect("tools:programs")
