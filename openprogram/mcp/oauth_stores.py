"""Where OAuth signers keep one user's tokens and client registration for one server.

:class:`OAuthStore` is what every signer (:mod:`.oauth`, :mod:`.oauth_handoff`,
:mod:`.oauth_machine`, :mod:`.oauth_enterprise`) reads and writes; the web app's
is per user and sealed in the database. A store that also has
``get_dpop_key``/``set_dpop_key`` (a PEM) lets the signer use DPoP
(:mod:`.oauth_dpop`): a DPoP-bound token is useless without its key, so only a
store that keeps the key as long as the tokens may offer them.
"""

from __future__ import annotations

from typing import Any, Protocol

from mcp.shared.auth import OAuthClientInformationFull, OAuthToken

__all__ = ["MemoryOAuthStore", "OAuthStore", "PreRegisteredStore"]


class OAuthStore(Protocol):
    """Where one user's tokens and client registration for one server are kept."""

    async def get_tokens(self) -> OAuthToken | None: ...

    async def set_tokens(self, tokens: OAuthToken) -> None: ...

    async def get_client_info(self) -> OAuthClientInformationFull | None: ...

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None: ...


class MemoryOAuthStore:
    """An :class:`OAuthStore` in memory: for one process's life (CLI, conformance, tests)."""

    def __init__(self) -> None:
        self.tokens: OAuthToken | None = None
        self.client_info: OAuthClientInformationFull | None = None
        self.dpop_key: str | None = None

    async def get_tokens(self) -> OAuthToken | None:
        return self.tokens

    async def set_tokens(self, tokens: OAuthToken) -> None:
        self.tokens = tokens

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        return self.client_info

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        self.client_info = client_info

    # Keeping the DPoP key (PEM) lets the client use DPoP (openprogram.mcp.oauth_dpop).
    async def get_dpop_key(self) -> str | None:
        return self.dpop_key

    async def set_dpop_key(self, pem: str | None) -> None:
        self.dpop_key = pem


class PreRegisteredStore:
    """Always answers with the pre-registered client: the operator's settings are the truth."""

    def __init__(self, inner: OAuthStore, registration: OAuthClientInformationFull) -> None:
        self._inner = inner
        self._registration = registration

    async def get_tokens(self) -> OAuthToken | None:
        return await self._inner.get_tokens()

    async def set_tokens(self, tokens: OAuthToken) -> None:
        await self._inner.set_tokens(tokens)

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        return self._registration

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        await self._inner.set_client_info(client_info)

    def __getattr__(self, name: str) -> Any:
        # The DPoP key methods exactly when the inner store has them (see oauth_dpop).
        if name in ("get_dpop_key", "set_dpop_key"):
            return getattr(self._inner, name)
        raise AttributeError(name)
