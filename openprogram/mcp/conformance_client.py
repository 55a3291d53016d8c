"""Headless MCP client for the official conformance suite: ``python -m ... SERVER_URL``.

``make conformance`` runs ``@modelcontextprotocol/conformance client --command
'<python> -m openprogram.mcp.conformance_client'``; the suite appends the
scenario's server URL and sets ``MCP_CONFORMANCE_SCENARIO`` (and, for some
scenarios, ``MCP_CONFORMANCE_CONTEXT`` with e.g. pre-registered credentials).

It drives the framework the way the web app does: an :class:`MCPManager`
connects an HTTP :class:`MCPServerConfig` (signed by :func:`oauth_auth` when the
server asks for OAuth), waits for it to be ready, and runs the registered
:class:`MCPTool` entries through ``execute`` inside a turn like the tool
dispatcher. The only stand-in is the user: consent is given by following the
authorization endpoint's redirect without a browser, and an elicitation form
is accepted without typing anything (so the framework applies its defaults). Exit status 0 means the scenario's
client side completed; the suite judges the rest from what reached its servers.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import sys
from typing import Any
from urllib.parse import parse_qs, urlparse

import httpx2
from mcp.client.auth.utils import build_protected_resource_metadata_discovery_urls
from mcp.shared.auth import AuthorizationCodeResult

from openprogram.agent.context import TurnContext, current_turn
from openprogram.agent.elicitation import (
    ElicitationAnswer,
    ElicitationRequest,
    elicitation_hook_for_turn,
)
from openprogram.mcp.config import MCPServerConfig
from openprogram.mcp.manager import MCPManager
from openprogram.mcp.oauth import MCPOAuthClient, MCPOAuthError, oauth_auth
from openprogram.mcp.oauth_enterprise import MCPEnterpriseClient, enterprise_auth
from openprogram.mcp.oauth_machine import MCPMachineClient, machine_auth
from openprogram.mcp.oauth_stores import MemoryOAuthStore
from openprogram.mcp.supervision import Backoff
from openprogram.mcp.tool import mcp_tool_name
from openprogram.programs import registry

__all__ = ["follow_consent_redirect", "main", "run_scenario"]

logger = logging.getLogger("openprogram.mcp.conformance")

SERVER = "conformance"
REDIRECT_URI = "http://localhost:3000/callback"
CLIENT_METADATA_URL = "https://conformance-test.local/client-metadata.json"
"""The suite's fixed CIMD URL: its authorization servers accept it as a client id."""
CONNECT_SECONDS = 25.0
"""Below the suite's 30 s per-scenario timeout, so a failure is reported, not killed."""

# The tools each scenario expects calls to, with arguments (called concurrently, as a
# model's parallel tool calls are); other scenarios only list.
_TOOL_CALLS: dict[str, list[tuple[str, dict[str, Any]]]] = {
    "tools_call": [("add_numbers", {"a": 5, "b": 3})],
    "elicitation-sep1034-client-defaults": [("test_client_elicitation_defaults", {})],
    "sse-retry": [("test_reconnection", {})],
    # 2026-07-28 input_required rounds (suite 0.2.0-alpha); the unrelated call runs
    # alongside the others and must carry none of their answers or state.
    "sep-2322-client-request-state": [
        (name, {})
        for name in (
            "test_mrtr_echo_state",
            "test_mrtr_no_state",
            "test_mrtr_unrelated",
            "test_mrtr_no_result_type",
        )
    ],
}
_AUTH_TOOL = [("test-tool", {})]
# SEP-2243: of the listed tools only the valid one is callable; the rest must be dropped.
_TOOL_CALLS["http-invalid-tool-headers"] = [("valid_tool", {"region": "us-west1"})]
_ECHO_SCHEMA = {
    "json-schema-2020-12-preservation": ("json_schema_echo", "json_schema_2020_12_tool")
}
"""Scenarios that ask for a tool's input schema back: (echo tool, tool whose schema to send).

What is sent is the registered tool's ``parameters``, the schema a model is given,
so the scenario sees what the framework kept of the server's schema.
"""


def _planned_calls(scenario: str, context: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """The calls a scenario expects: named in its context (``toolCalls``), or known here."""
    if context.get("toolCalls"):
        return [(call["name"], dict(call.get("arguments") or {})) for call in context["toolCalls"]]
    if scenario in _ECHO_SCHEMA:
        echo, source = _ECHO_SCHEMA[scenario]
        listed = registry.get(mcp_tool_name(SERVER, source))
        return [(echo, {"schema": listed.parameters})] if listed is not None else []
    return _TOOL_CALLS.get(scenario, _AUTH_TOOL if scenario.startswith("auth/") else [])


async def follow_consent_redirect(url: str) -> AuthorizationCodeResult:
    """Stand in for a user who consents: read the code from the authorization redirect.

    Only for servers that consent without a page (the suite's, the tests'); a real
    provider's consent page needs a browser.
    """
    async with httpx2.AsyncClient(follow_redirects=False, timeout=10.0) as http:
        response = await http.get(url)
    location = response.headers.get("location")
    if response.status_code not in (301, 302, 303, 307, 308) or not location:
        raise MCPOAuthError(f"authorization endpoint answered {response.status_code}, no redirect")
    query = parse_qs(urlparse(location).query)
    if "error" in query:
        raise MCPOAuthError(f"authorization refused: {query['error'][0]}")
    if "code" not in query:
        raise MCPOAuthError("authorization redirect carries no code")
    return AuthorizationCodeResult(
        code=query["code"][0],
        state=query.get("state", [None])[0],
        iss=query.get("iss", [None])[0],
    )


async def _accept_untouched(request: ElicitationRequest) -> ElicitationAnswer:
    return ElicitationAnswer("accept", content={})


async def _ignore(event: object) -> None:
    return None


async def _enterprise_client(server_url: str, context: dict[str, Any]) -> MCPEnterpriseClient:
    """The enterprise client the scenario describes; its issuer read once from the resource.

    A deployment would configure the issuer; the suite only names the IdP, so the
    resource's protected-resource metadata says which authorization server it trusts.
    """
    url = build_protected_resource_metadata_discovery_urls(None, server_url)[0]
    async with httpx2.AsyncClient(timeout=10.0) as http:
        metadata = (await http.get(url)).raise_for_status().json()
    return MCPEnterpriseClient(
        client_id=context["client_id"],
        client_secret=context["client_secret"],
        issuer=metadata["authorization_servers"][0],
        idp_token_endpoint=context["idp_token_endpoint"],
        idp_client_id=context["idp_client_id"],
    )


def _oauth_client(context: dict[str, Any]) -> MCPOAuthClient:
    if context.get("client_id") and not context.get("private_key_pem"):
        return MCPOAuthClient(
            redirect_uri=REDIRECT_URI,
            client_name="openprogram-conformance",
            client_id=context["client_id"],
            client_secret=context.get("client_secret"),
        )
    return MCPOAuthClient(
        redirect_uri=REDIRECT_URI,
        client_name="openprogram-conformance",
        client_metadata_url=CLIENT_METADATA_URL,
    )


async def run_scenario(server_url: str, scenario: str, context: dict[str, Any]) -> str | None:
    """Run one scenario's client side; returns an error message, or ``None`` when it completed."""
    client = _oauth_client(context)
    store = MemoryOAuthStore()

    enterprise = (
        await _enterprise_client(server_url, context) if "idp_id_token" in context else None
    )

    async def idp_id_token() -> str:
        return context["idp_id_token"]

    def auth_for(config: MCPServerConfig) -> httpx2.Auth:
        if enterprise is not None:
            return enterprise_auth(config.url, enterprise, store, idp_id_token)
        if "valid_jwt" in context:  # workload identity: the platform's token for this run

            async def workload_token(audience: str) -> str:
                return context["valid_jwt"]

            workload = MCPMachineClient(
                client_id=context["client_id"], workload_token=workload_token
            )
            return machine_auth(config.url, workload, store)
        if scenario.startswith("auth/client-credentials"):
            machine = MCPMachineClient(
                client_id=context["client_id"],
                client_secret=context.get("client_secret"),
                private_key_pem=context.get("private_key_pem"),
                signing_algorithm=context.get("signing_algorithm") or "ES256",
            )
            return machine_auth(config.url, machine, store)
        return oauth_auth(config.url, client, store, follow_consent_redirect)

    # No reconnect after a failure: the suite counts every authorization attempt.
    manager = MCPManager(
        backoff=Backoff(initial=CONNECT_SECONDS * 4, maximum=CONNECT_SECONDS * 4), auth_for=auth_for
    )
    try:
        manager.add(MCPServerConfig(name=SERVER, transport="http", url=server_url, timeout=20.0))
        status = await asyncio.to_thread(
            manager.wait_for,
            SERVER,
            lambda s: s["state"] in ("ready", "failed"),
            timeout=CONNECT_SECONDS,
        )
        if status["state"] != "ready":
            return f"server did not become ready: {status['error']}"
        calls = _planned_calls(scenario, context)
        tools = [(registry.get(mcp_tool_name(SERVER, name)), args) for name, args in calls]
        if not tools or any(tool is None for tool, _ in tools):
            return None  # the scenario only checks connecting and listing
        # The dispatcher's wrapper around the host's hook, as in a chat turn; the "person"
        # accepts every form without typing, so the fields keep the defaults the server gave.
        hook = elicitation_hook_for_turn(
            host_hook=_accept_untouched, attended=True, emit=_ignore, timeout=CONNECT_SECONDS
        )
        current_turn.set(TurnContext(user_id="conformance", elicitation_hook=hook))
        results = await asyncio.gather(
            *(tool.execute(f"conformance-call-{i}", args) for i, (tool, args) in enumerate(tools))
        )
        errors = [
            f"{tool.name}: {result.content}"
            for (tool, _), result in zip(tools, results, strict=True)
            if result.is_error
        ]
        return "; ".join(errors) or None
    finally:
        await asyncio.to_thread(manager.shutdown)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) != 1:
        print("usage: python -m openprogram.mcp.conformance_client SERVER_URL", file=sys.stderr)
        return 2
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr)
    scenario = os.environ.get("MCP_CONFORMANCE_SCENARIO", "")
    context = json.loads(os.environ.get("MCP_CONFORMANCE_CONTEXT") or "{}")
    error = asyncio.run(run_scenario(argv[0], scenario, context))
    if error:
        print(f"{scenario or 'scenario'}: {error}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
