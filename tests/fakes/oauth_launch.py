"""Start ``tests/fakes/oauth_mcp_server.py`` as a subprocess, and act as a consenting user."""

from __future__ import annotations

import contextlib
import json
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlparse

import httpx2
from mcp.shared.auth import AuthorizationCodeResult

from tests.servers import free_port, wait_for_http

SCRIPT = Path(__file__).with_name("oauth_mcp_server.py")


@dataclass
class OAuthDemo:
    """A running OAuth-protected MCP server: its URL and the log of OAuth requests."""

    port: int
    log_path: Path
    proc: subprocess.Popen[bytes]

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def url(self) -> str:
        return f"{self.base}/mcp"

    def events(self, kind: str | None = None) -> list[dict[str, Any]]:
        if not self.log_path.exists():
            return []
        lines = self.log_path.read_text().splitlines()
        found = [json.loads(line) for line in lines if line.strip()]
        return [e for e in found if kind is None or e["event"] == kind]

    def revoke_all(self) -> None:
        httpx2.post(f"{self.base}/test/revoke-all", timeout=5).raise_for_status()


@contextlib.contextmanager
def oauth_demo(directory: Path, *options: str) -> Iterator[OAuthDemo]:
    port = free_port()
    log_path = directory / f"oauth-{port}.jsonl"
    proc = subprocess.Popen(
        [sys.executable, str(SCRIPT), "--port", str(port), "--log", str(log_path), *options],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        wait_for_http(f"http://127.0.0.1:{port}/healthz", proc=proc)
        yield OAuthDemo(port=port, log_path=log_path, proc=proc)
    finally:
        proc.terminate()
        proc.wait(10)


def consent_as(account: str, *, allow: bool = True):  # type: ignore[no-untyped-def]
    """An ``Authorize`` for the framework: a user who fills in the consent form as ``account``."""

    async def authorize(url: str) -> AuthorizationCodeResult:
        async with httpx2.AsyncClient(follow_redirects=False, timeout=10.0) as http:
            page = await http.get(url)
            page.raise_for_status()
            form = dict(parse_qs(urlparse(url).query, keep_blank_values=True))
            fields = {key: values[0] for key, values in form.items()}
            fields.update(account=account, decision="allow" if allow else "deny")
            answer = await http.post(url.split("?")[0], data=fields)
        query = parse_qs(urlparse(answer.headers["location"]).query)
        if "error" in query:
            raise PermissionError(query["error"][0])
        return AuthorizationCodeResult(
            code=query["code"][0], state=query["state"][0], iss=query.get("iss", [None])[0]
        )

    return authorize
