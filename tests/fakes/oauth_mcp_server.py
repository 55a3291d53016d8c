"""An MCP server behind OAuth 2.1, with its own authorization server, for the tests.

``python tests/fakes/oauth_mcp_server.py --port P [options]`` serves on 127.0.0.1:P:

- ``/mcp``: a real MCP server (the SDK's) whose every request needs a bearer
  token this server issued for ``/mcp``; a 401 names the protected-resource
  metadata, a token without scope ``tools.write`` gets 403 ``insufficient_scope``
  when it calls ``write_note`` (step-up);
- ``/.well-known/oauth-protected-resource/mcp`` and the authorization server at
  ``/as`` (RFC 8414 metadata, dynamic registration, ``/as/authorize`` with a
  consent page, ``/as/token`` with PKCE S256 and refresh).

Tools: ``whoami`` answers the account the token belongs to (the name typed on
the consent page), ``write_note`` needs the extra scope. Prompt ``greeting``
names the account too; resource ``notes://inbox`` is plain text. Options make it lie,
for the refusal tests: ``--lie issuer`` (metadata names another issuer),
``--lie resource`` (protected-resource metadata names another resource),
``--lie redirect`` (metadata redirects to another host), ``--lie insecure``
(names a plain-http authorization server elsewhere), ``--revocation
ok|fail|slow|none|elsewhere`` (the RFC 7009 endpoint ``/as/revoke`` revokes,
answers 503, hangs 30 s, is not advertised, or is advertised on another host), ``--pre-registered
ID=REDIRECT_URI`` (a client an operator registered), ``--auto-consent``
(no page: approve as ``--account`` at once), ``--token-seconds N``.
``--lie same-origin-issuer``: the metadata names the bare origin, not ``/as``.
``--legacy origin|path|other-origin|foreign-endpoint`` serves it as a 2025-03-26
server instead: no protected-resource metadata, the authorization server's metadata
at the root well-known URL, naming as issuer the origin, ``<origin>/as``, the same
server under another origin (``localhost``), or ``<origin>/as`` with its token
endpoint on that other origin. The authorization response's ``iss`` is always the
issuer the metadata names. ``--workload-token T``: the token endpoint also grants
RFC 7523 ``jwt-bearer`` for the assertion ``T`` (workload identity), account
``workload:<client_id>``.
Every OAuth request is appended as a JSON line to ``--log`` when given.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import hashlib
import html
import json
import secrets
import time
from typing import Any
from urllib.parse import urlencode

import uvicorn
from mcp.server.mcpserver import Context, MCPServer
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, RedirectResponse, Response
from starlette.routing import Mount, Route

BASE_SCOPE = "tools.read"
JWT_BEARER = "urn:ietf:params:oauth:grant-type:jwt-bearer"
WRITE_SCOPE = "tools.write"


class State:
    def __init__(self, options: argparse.Namespace) -> None:
        self.options = options
        self.base = f"http://127.0.0.1:{options.port}"
        self.clients: dict[str, dict[str, Any]] = {}
        for entry in options.pre_registered or []:
            client_id, redirect_uri = entry.split("=", 1)
            self.clients[client_id] = {"redirect_uris": [redirect_uri]}
        self.codes: dict[str, dict[str, Any]] = {}
        self.tokens: dict[str, dict[str, Any]] = {}
        self.refresh: dict[str, dict[str, Any]] = {}

    def log(self, event: str, **fields: Any) -> None:
        if self.options.log:
            with open(self.options.log, "a") as out:
                out.write(json.dumps({"event": event, **fields}) + "\n")

    def token_for(self, request: Request) -> dict[str, Any] | None:
        header = request.headers.get("authorization", "")
        if not header.startswith("Bearer "):
            return None
        grant = self.tokens.get(header.removeprefix("Bearer "))
        if grant is None or grant["expires"] < time.time():
            return None
        return grant


def build_app(options: argparse.Namespace) -> Starlette:
    state = State(options)
    resource = f"{state.base}/mcp"
    issuer = f"{state.base}/as"
    elsewhere = f"http://localhost:{options.port}"  # this server, under another origin
    advertised = {
        "origin": state.base,
        "other-origin": f"{elsewhere}/as",
    }.get(options.legacy, issuer)
    if options.lie == "issuer":
        advertised = "http://127.0.0.1:1/someone-else"
    elif options.lie == "same-origin-issuer":
        advertised = state.base
    mcp = MCPServer("oauth-demo", log_level="WARNING")

    def grant_of(ctx: Context) -> dict[str, Any]:
        request = ctx.request_context.request
        grant = state.token_for(request) if request is not None else None
        if grant is None:
            raise ValueError("no token")
        return grant

    @mcp.tool(description="Which account this connection acts for.")
    def whoami(ctx: Context) -> str:
        return f"account={grant_of(ctx)['account']}"

    @mcp.tool(description="Write a note (needs the tools.write scope).")
    def write_note(text: str, ctx: Context) -> str:
        return f"noted for {grant_of(ctx)['account']}: {text}"

    @mcp.prompt(description="Greet the account holder.")
    def greeting(tone: str, ctx: Context) -> str:
        return f"Say hello to {grant_of(ctx)['account']}, {tone}."

    @mcp.resource("notes://inbox", name="inbox", description="Your inbox", mime_type="text/plain")
    def inbox() -> str:
        return "3 unread notes"

    mcp_app = mcp.streamable_http_app(streamable_http_path="/mcp", host="127.0.0.1")

    async def protected(scope: dict[str, Any], receive: Any, send: Any) -> None:
        request = Request(scope, receive)
        if scope["type"] == "http" and scope["path"].startswith("/mcp"):
            challenge = (
                'Bearer error="invalid_token"'
                if options.legacy
                else f'Bearer resource_metadata="{state.base}/.well-known/oauth-protected-resource/mcp"'
            )
            grant = state.token_for(request)
            if grant is None or grant["resource"] != resource:
                state.log("unauthorized", path=scope["path"])
                response: Response = JSONResponse(
                    {"error": "invalid_token"}, 401, headers={"WWW-Authenticate": challenge}
                )
                await response(scope, receive, send)
                return
            body = b""
            more = True
            while more:
                message = await receive()
                body += message.get("body", b"")
                more = message.get("more_body", False)
            if b'"write_note"' in body and WRITE_SCOPE not in grant["scope"].split():
                state.log("insufficient_scope")
                response = JSONResponse(
                    {"error": "insufficient_scope"},
                    403,
                    headers={
                        "WWW-Authenticate": f'Bearer error="insufficient_scope", '
                        f'scope="{BASE_SCOPE} {WRITE_SCOPE}", resource_metadata='
                        f'"{state.base}/.well-known/oauth-protected-resource/mcp"'
                    },
                )
                await response(scope, receive, send)
                return
            replayed = False

            async def replay() -> dict[str, Any]:
                nonlocal replayed
                if not replayed:
                    replayed = True
                    return {"type": "http.request", "body": body, "more_body": False}
                return await receive()

            await mcp_app(scope, replay, send)
            return
        await mcp_app(scope, receive, send)

    async def resource_metadata(request: Request) -> Response:
        state.log("resource_metadata")
        if options.lie == "redirect":
            return RedirectResponse("http://localhost:9/elsewhere", 302)
        named = "http://127.0.0.1:1/other-mcp" if options.lie == "resource" else resource
        servers = ["http://as.example.test/as"] if options.lie == "insecure" else [issuer]
        return JSONResponse(
            {"resource": named, "authorization_servers": servers, "scopes_supported": [BASE_SCOPE]}
        )

    # "elsewhere": the same server under another host name, as a lying AS would name a third party.
    revocation_endpoint = (
        f"http://localhost:{options.port}/as/revoke"
        if options.revocation == "elsewhere"
        else f"{issuer}/revoke"
    )

    async def server_metadata(request: Request) -> Response:
        state.log("server_metadata")
        return JSONResponse(
            {
                "issuer": advertised,
                "authorization_endpoint": f"{issuer}/authorize",
                "token_endpoint": (
                    f"{elsewhere}/as/token"
                    if options.legacy == "foreign-endpoint"
                    else f"{issuer}/token"
                ),
                "registration_endpoint": f"{issuer}/register",
                **(
                    {"revocation_endpoint": revocation_endpoint}
                    if options.revocation != "none"
                    else {}
                ),
                "scopes_supported": [BASE_SCOPE, WRITE_SCOPE],
                "response_types_supported": ["code"],
                "grant_types_supported": ["authorization_code", "refresh_token"],
                "code_challenge_methods_supported": ["S256"],
                "token_endpoint_auth_methods_supported": ["none", "client_secret_post"],
            }
        )

    async def register(request: Request) -> Response:
        metadata = await request.json()
        client_id = f"client-{secrets.token_hex(4)}"
        state.clients[client_id] = metadata
        state.log("register", client_id=client_id, redirect_uris=metadata.get("redirect_uris"))
        return JSONResponse(
            {**metadata, "client_id": client_id, "token_endpoint_auth_method": "none"}, 201
        )

    def finish_authorization(params: dict[str, str], account: str, allow: bool) -> Response:
        target = params["redirect_uri"]
        if not allow:
            answer = {"error": "access_denied", "state": params.get("state", "")}
        else:
            code = secrets.token_urlsafe(16)
            state.codes[code] = {**params, "account": account}
            answer = {"code": code, "state": params.get("state", ""), "iss": advertised}
        return RedirectResponse(f"{target}?{urlencode(answer)}", 302)

    async def authorize(request: Request) -> Response:
        params = (
            dict(request.query_params) if request.method == "GET" else dict(await request.form())
        )
        state.log(
            "authorize",
            scope=params.get("scope"),
            resource=params.get("resource"),
            method=params.get("code_challenge_method"),
            client_id=params.get("client_id"),
        )
        client = state.clients.get(params.get("client_id", ""))
        if client is None or params.get("redirect_uri") not in client.get("redirect_uris", []):
            return JSONResponse({"error": "invalid_client"}, 400)
        if params.get("code_challenge_method") != "S256" or not params.get("code_challenge"):
            return JSONResponse({"error": "invalid_request", "error_description": "PKCE"}, 400)
        if options.auto_consent:
            return finish_authorization(params, options.account, True)
        if request.method == "POST":
            return finish_authorization(
                params, params.get("account", ""), params.get("decision") == "allow"
            )
        hidden = "".join(
            f'<input type="hidden" name="{html.escape(k)}" value="{html.escape(v)}">'
            for k, v in params.items()
        )
        return HTMLResponse(
            "<!doctype html><title>Consent</title><h1>Allow OpenProgram to use your demo tools?</h1>"
            f'<form method="post">{hidden}<label>Account <input name="account" value="demo-user">'
            '</label><button name="decision" value="allow">Allow</button>'
            '<button name="decision" value="deny">Deny</button></form>'
        )

    async def token(request: Request) -> Response:
        form = dict(await request.form())
        grant_type = form.get("grant_type")
        state.log("token", grant_type=grant_type, resource=form.get("resource"))
        if grant_type == "authorization_code":
            code = state.codes.pop(form.get("code", ""), None)
            verifier = form.get("code_verifier", "")
            digest = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).rstrip(
                b"="
            )
            if code is None or digest.decode() != code["code_challenge"]:
                return JSONResponse({"error": "invalid_grant"}, 400)
            grant = {
                "account": code["account"],
                "scope": code.get("scope") or BASE_SCOPE,
                "resource": code.get("resource") or resource,
            }
        elif grant_type == "refresh_token":
            grant = state.refresh.get(form.get("refresh_token", ""))
            if grant is None:
                return JSONResponse({"error": "invalid_grant"}, 400)
        elif grant_type == JWT_BEARER and options.workload_token:
            if form.get("assertion") != options.workload_token:
                return JSONResponse({"error": "invalid_grant"}, 400)
            grant = {
                "account": f"workload:{form.get('client_id')}",
                "scope": form.get("scope") or BASE_SCOPE,
                "resource": form.get("resource") or resource,
            }
        else:
            return JSONResponse({"error": "unsupported_grant_type"}, 400)
        access = secrets.token_urlsafe(24)
        refresh = secrets.token_urlsafe(24)
        state.tokens[access] = {**grant, "expires": time.time() + options.token_seconds}
        state.refresh[refresh] = grant
        return JSONResponse(
            {
                "access_token": access,
                "token_type": "Bearer",
                "expires_in": options.token_seconds,
                "refresh_token": refresh,
                "scope": grant["scope"],
            }
        )

    async def revoke(request: Request) -> Response:
        """RFC 7009: forget the token; 200 also for one it never knew (§2.2)."""
        form = dict(await request.form())
        token = str(form.get("token", ""))
        hint = form.get("token_type_hint")
        known = token in state.tokens or token in state.refresh
        state.log("revoke", hint=hint, known=known, client_id=form.get("client_id"))
        if options.revocation == "fail":
            return JSONResponse({"error": "server_error"}, 503)
        if options.revocation == "slow":
            await asyncio.sleep(30)
        state.refresh.pop(token, None)
        state.tokens.pop(token, None)
        return Response(status_code=200)

    async def revoke_all(request: Request) -> Response:
        """Test hook: the provider forgets every token (as if the user revoked access there)."""
        state.tokens.clear()
        state.refresh.clear()
        return JSONResponse({"revoked": True})

    app = Starlette(
        routes=[
            *(
                [Route("/.well-known/oauth-authorization-server", server_metadata)]
                if options.legacy
                else [
                    Route("/.well-known/oauth-protected-resource/mcp", resource_metadata),
                    Route("/.well-known/oauth-authorization-server/as", server_metadata),
                ]
            ),
            Route("/as/register", register, methods=["POST"]),
            Route("/as/authorize", authorize, methods=["GET", "POST"]),
            Route("/as/token", token, methods=["POST"]),
            Route("/as/revoke", revoke, methods=["POST"]),
            Route("/test/revoke-all", revoke_all, methods=["POST"]),
            Route("/healthz", lambda request: JSONResponse({"ok": True})),
            Mount("/", app=protected),
        ],
        lifespan=lambda app: mcp_app.router.lifespan_context(app),
    )
    return app


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument(
        "--lie", choices=["issuer", "same-origin-issuer", "resource", "redirect", "insecure"]
    )
    parser.add_argument("--legacy", choices=["origin", "path", "other-origin", "foreign-endpoint"])
    parser.add_argument("--auto-consent", action="store_true")
    parser.add_argument("--account", default="demo-user")
    parser.add_argument("--token-seconds", type=int, default=3600)
    parser.add_argument(
        "--revocation", choices=["ok", "fail", "slow", "none", "elsewhere"], default="ok"
    )
    parser.add_argument("--log")
    parser.add_argument("--workload-token", help="accept this assertion in the jwt-bearer grant")
    parser.add_argument("--pre-registered", action="append", metavar="CLIENT_ID=REDIRECT_URI")
    options = parser.parse_args()
    # timeout_graceful_shutdown: a 2026-07-28 client's open subscriptions/listen stream
    # must not hold SIGTERM up (the tests stop this server under connected clients).
    uvicorn.run(
        build_app(options),
        host="127.0.0.1",
        port=options.port,
        log_level="warning",
        timeout_graceful_shutdown=1,
    )


if __name__ == "__main__":
    main()
