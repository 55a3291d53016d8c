"""How one MCP server is configured, and the ``mcpServers`` JSON other clients use.

:class:`MCPServerConfig` is plain data: the Django admin, a JSON import or a
script builds one and hands it to :class:`openprogram.mcp.MCPManager`. Every
field is validated on construction so a bad value fails where it was written,
naming the server and the field.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

__all__ = [
    "MCPConfigError",
    "MCPServerConfig",
    "MCPTransport",
    "parse_mcp_servers_json",
]

MCPTransport = Literal["stdio", "http"]

_NAME = re.compile(r"^[a-z0-9_-]{1,48}$")
_HTTP_TYPES = {"http", "streamable-http", "streamablehttp", "streamable_http"}
_STDIO_TYPES = {"stdio"}
_KNOWN_KEYS = {
    "type",
    "transport",
    "command",
    "args",
    "env",
    "url",
    "headers",
    "disabled",
    "enabled",
    "alwaysLoad",
    "allowTools",
    "denyTools",
    "timeout",
    "expose",
    "confined",
    "network",
}


class MCPConfigError(ValueError):
    """An MCP server configuration that cannot be used as written."""


def _string_list(value: Any, *, server: str, field_name: str) -> tuple[str, ...]:
    if isinstance(value, str) or not isinstance(value, Iterable):
        raise MCPConfigError(f"MCP server {server!r}: {field_name} must be a list of strings")
    items = tuple(value)
    if not all(isinstance(item, str) for item in items):
        raise MCPConfigError(f"MCP server {server!r}: {field_name} must be a list of strings")
    return items


def _string_map(value: Any, *, server: str, field_name: str) -> dict[str, str]:
    if not isinstance(value, Mapping) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in value.items()
    ):
        raise MCPConfigError(
            f"MCP server {server!r}: {field_name} must be an object of string values"
        )
    return dict(value)


@dataclass(frozen=True)
class MCPServerConfig:
    """One MCP server: how to reach it and how its tools are registered.

    ``allow_tools`` empty means every tool the server lists; ``deny_tools``
    always wins. ``timeout`` (seconds) bounds connecting, listing and each
    call. ``approved_fingerprints`` maps tool names to the definition
    fingerprints an operator approved (see :mod:`openprogram.mcp.fingerprints`).
    """

    name: str
    transport: MCPTransport = "stdio"
    command: str = ""
    args: tuple[str, ...] = ()
    env: dict[str, str] = field(default_factory=dict)
    url: str = ""
    headers: dict[str, str] = field(default_factory=dict)
    enabled: bool = True
    always_load: bool = False
    allow_tools: tuple[str, ...] = ()
    deny_tools: tuple[str, ...] = ()
    timeout: float = 60.0
    approved_fingerprints: dict[str, str] = field(default_factory=dict)
    destructive_without_approval: bool = False
    """Operator's override: tools the server marks ``destructiveHint`` run without asking."""
    expose: bool = True
    """False: the tools register (the catalog, scripts and explain see them) but are never
    offered to a model: the spec's ``expose=False`` (layer 2) for a whole server."""
    confined: bool = True
    """A stdio server runs under bubblewrap (:mod:`openprogram.mcp.stdio_confinement`);
    False runs it with the web process's full rights (the admin's explicit opt-out)."""
    network: bool = False
    """A confined stdio server may reach the network (off: a private, empty network)."""

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not _NAME.match(self.name):
            raise MCPConfigError(
                f"MCP server name {self.name!r} must be 1-48 lowercase letters, digits, '_' or '-'"
            )
        if self.transport not in ("stdio", "http"):
            raise MCPConfigError(
                f"MCP server {self.name!r}: transport must be 'stdio' or 'http', "
                f"got {self.transport!r}"
            )
        if self.transport == "stdio" and not self.command:
            raise MCPConfigError(f"MCP server {self.name!r}: a stdio server needs a command")
        if self.transport == "http" and not re.match(r"^https?://", self.url or ""):
            raise MCPConfigError(
                f"MCP server {self.name!r}: an http server needs an http(s):// url, "
                f"got {self.url!r}"
            )
        # Normalise containers so callers may pass lists; frozen needs object.__setattr__.
        set_ = object.__setattr__
        set_(self, "args", _string_list(self.args, server=self.name, field_name="args"))
        set_(self, "env", _string_map(self.env, server=self.name, field_name="env"))
        set_(self, "headers", _string_map(self.headers, server=self.name, field_name="headers"))
        for list_field in ("allow_tools", "deny_tools"):
            value = _string_list(getattr(self, list_field), server=self.name, field_name=list_field)
            set_(self, list_field, value)
        set_(
            self,
            "approved_fingerprints",
            _string_map(
                self.approved_fingerprints, server=self.name, field_name="approved_fingerprints"
            ),
        )
        timeout = self.timeout
        if (
            isinstance(timeout, bool)
            or not isinstance(timeout, int | float)
            or not math.isfinite(timeout)
            or timeout <= 0
        ):
            raise MCPConfigError(
                f"MCP server {self.name!r}: timeout must be a positive number of seconds, "
                f"got {timeout!r}"
            )
        set_(self, "timeout", float(timeout))

    def allows(self, tool_name: str) -> bool:
        """Whether the allow/deny lists let ``tool_name`` (the server's own name) register."""
        if tool_name in self.deny_tools:
            return False
        return not self.allow_tools or tool_name in self.allow_tools

    def connection_key(self) -> tuple[Any, ...]:
        """What identifies the connection: a change here means reconnecting."""
        return (
            self.transport,
            self.command,
            self.args,
            tuple(sorted(self.env.items())),
            self.url,
            tuple(sorted(self.headers.items())),
            self.confined,
            self.network,
        )


def _entry_to_config(name: str, entry: Any) -> MCPServerConfig:
    if not isinstance(entry, Mapping):
        raise MCPConfigError(f"MCP server {name!r}: its entry must be an object")
    unknown = sorted(set(entry) - _KNOWN_KEYS)
    if unknown:
        raise MCPConfigError(f"MCP server {name!r}: unknown keys {unknown!r}")
    declared = entry.get("type", entry.get("transport"))
    if declared is not None and not isinstance(declared, str):
        raise MCPConfigError(f"MCP server {name!r}: type must be a string")
    if declared is not None and declared.lower() not in _HTTP_TYPES | _STDIO_TYPES:
        raise MCPConfigError(
            f"MCP server {name!r}: type {declared!r} is not supported "
            "(use 'stdio' or 'http' / 'streamable-http')"
        )
    if "url" in entry and "command" in entry:
        raise MCPConfigError(f"MCP server {name!r}: give either command or url, not both")
    if declared is not None:
        transport: MCPTransport = "http" if declared.lower() in _HTTP_TYPES else "stdio"
    elif "url" in entry:
        transport = "http"
    elif "command" in entry:
        transport = "stdio"
    else:
        raise MCPConfigError(f"MCP server {name!r}: needs a command (stdio) or a url (http)")
    enabled = entry.get("enabled", not entry.get("disabled", False))
    flags = (
        ("enabled/disabled", enabled),
        ("alwaysLoad", entry.get("alwaysLoad")),
        ("expose", entry.get("expose")),
        ("confined", entry.get("confined")),
        ("network", entry.get("network")),
    )
    for flag_name, flag in flags:
        if flag is not None and not isinstance(flag, bool):
            raise MCPConfigError(f"MCP server {name!r}: {flag_name} must be true or false")
    command = entry.get("command", "")
    url = entry.get("url", "")
    if not isinstance(command, str) or not isinstance(url, str):
        raise MCPConfigError(f"MCP server {name!r}: command and url must be strings")
    return MCPServerConfig(
        name=name,
        transport=transport,
        command=command,
        args=entry.get("args", ()),
        env=entry.get("env", {}),
        url=url,
        headers=entry.get("headers", {}),
        enabled=enabled,
        always_load=bool(entry.get("alwaysLoad", False)),
        allow_tools=entry.get("allowTools", ()),
        deny_tools=entry.get("denyTools", ()),
        timeout=entry.get("timeout", 60.0),
        expose=entry.get("expose", True),
        confined=entry.get("confined", True),
        network=entry.get("network", False),
    )


def parse_mcp_servers_json(data: str | bytes | Mapping[str, Any]) -> list[MCPServerConfig]:
    """Read the ``{"mcpServers": {name: {...}}}`` shape Claude Desktop, Cursor and others use.

    Each entry is ``{"command", "args", "env"}`` (stdio) or ``{"url", "headers"}``
    (streamable HTTP), optionally with ``"type"``, ``"disabled"`` and our
    extensions ``"alwaysLoad"``, ``"allowTools"``, ``"denyTools"``, ``"timeout"``,
    ``"expose"``, ``"confined"`` (default true) and ``"network"`` (default false).
    A top-level ``"servers"`` key (VS Code) is accepted too. Raises
    :class:`MCPConfigError` naming the first bad server and field.
    """
    if isinstance(data, str | bytes):
        try:
            data = json.loads(data)
        except json.JSONDecodeError as exc:
            raise MCPConfigError(f"MCP servers JSON is not valid JSON: {exc}") from exc
    if not isinstance(data, Mapping):
        raise MCPConfigError('MCP servers JSON must be an object like {"mcpServers": {...}}')
    servers = data.get("mcpServers", data.get("servers"))
    if servers is None:
        raise MCPConfigError('MCP servers JSON needs a top-level "mcpServers" object')
    if not isinstance(servers, Mapping):
        raise MCPConfigError('"mcpServers" must be an object mapping names to servers')
    return [_entry_to_config(str(name), entry) for name, entry in servers.items()]
