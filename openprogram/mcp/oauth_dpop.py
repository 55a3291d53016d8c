"""DPoP (RFC 9449, MCP SEP-1932): access tokens bound to a key only this client holds.

A bearer token works for whoever copies it; a DPoP-bound token also needs a
fresh proof, signed with the client's private key, on every request. When the
authorization server says it accepts DPoP proofs (``ES256`` in its
``dpop_signing_alg_values_supported``), :class:`openprogram.mcp.oauth.Guarded`
proves possession at the token endpoint, presents a bound token as
``Authorization: DPoP <token>`` with a proof per request (``ath`` = the
token's hash), and answers a server's ``use_dpop_nonce`` challenge once with
a new proof carrying its nonce.

A bound token is worth nothing without its key, so DPoP is only used with an
:class:`~openprogram.mcp.oauth_stores.OAuthStore` that keeps the key next to the
tokens (``get_dpop_key`` / ``set_dpop_key``, PEM); with any other store the
client stays on bearer tokens, which a restart does not lose.
"""

from __future__ import annotations

import base64
import hashlib
import json
import secrets
import time
from collections.abc import AsyncGenerator
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import httpx2
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.asymmetric.utils import decode_dss_signature
from mcp.client.auth import OAuthClientProvider
from mcp.shared.auth import OAuthMetadata

__all__ = ["DPoPHooks", "DPoPKey", "DPoPState", "nonce_challenge"]

ALGORITHM = "ES256"
_METADATA_PATHS = ("/.well-known/oauth-authorization-server", "/.well-known/openid-configuration")


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def _htu(url: str) -> str:
    """The proof's ``htu``: the request URL without query and fragment (RFC 9449 §4.2)."""
    parts = urlsplit(url)
    return urlunsplit((parts.scheme, parts.netloc, parts.path, "", ""))


class DPoPKey:
    """A P-256 key pair that signs DPoP proofs."""

    def __init__(self, private_key: ec.EllipticCurvePrivateKey | None = None) -> None:
        self._key = private_key or ec.generate_private_key(ec.SECP256R1())

    @classmethod
    def from_pem(cls, pem: str) -> DPoPKey:
        key = serialization.load_pem_private_key(pem.encode("ascii"), password=None)
        if not isinstance(key, ec.EllipticCurvePrivateKey):
            raise ValueError("a DPoP key must be an EC P-256 private key")
        return cls(key)

    def to_pem(self) -> str:
        return self._key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        ).decode("ascii")

    @property
    def public_jwk(self) -> dict[str, str]:
        numbers = self._key.public_key().public_numbers()
        return {
            "kty": "EC",
            "crv": "P-256",
            "x": _b64(numbers.x.to_bytes(32, "big")),
            "y": _b64(numbers.y.to_bytes(32, "big")),
        }

    def proof(
        self, method: str, url: str, *, access_token: str | None = None, nonce: str | None = None
    ) -> str:
        """A fresh proof JWT for one request (new ``jti`` every time)."""
        header = {"typ": "dpop+jwt", "alg": ALGORITHM, "jwk": self.public_jwk}
        claims: dict[str, Any] = {
            "jti": secrets.token_urlsafe(24),
            "htm": method.upper(),
            "htu": _htu(url),
            "iat": int(time.time()),
        }
        if access_token is not None:
            claims["ath"] = _b64(hashlib.sha256(access_token.encode("ascii")).digest())
        if nonce is not None:
            claims["nonce"] = nonce
        signing_input = ".".join(
            _b64(json.dumps(part, separators=(",", ":")).encode()) for part in (header, claims)
        )
        r, s = decode_dss_signature(
            self._key.sign(signing_input.encode("ascii"), ec.ECDSA(hashes.SHA256()))
        )
        return f"{signing_input}.{_b64(r.to_bytes(32, 'big') + s.to_bytes(32, 'big'))}"


def nonce_challenge(response: httpx2.Response) -> str | None:
    """The nonce a ``use_dpop_nonce`` answer asks for (RFC 9449 §8 token endpoint, §9 resource)."""
    nonce = response.headers.get("dpop-nonce")
    if not nonce or response.status_code not in (400, 401):
        return None
    if 'error="use_dpop_nonce"' in response.headers.get("www-authenticate", ""):
        return nonce
    try:
        body = json.loads(response.content)
    except (ValueError, httpx2.ResponseNotRead):
        return None
    return nonce if isinstance(body, dict) and body.get("error") == "use_dpop_nonce" else None


class DPoPState:
    """One signer's DPoP: its key (kept by the store), whether its token is bound, nonces."""

    def __init__(self, store: Any) -> None:
        self._store = store
        self.key: DPoPKey | None = None
        self.bound = False
        self._nonces: dict[str, str] = {}
        self._algorithms: dict[str, list[str]] = {}
        """Issuer → its ``dpop_signing_alg_values_supported`` (the SDK's model drops the field)."""

    @property
    def possible(self) -> bool:
        """Whether the store can keep a key (else bearer tokens only; see module doc)."""
        return hasattr(self._store, "get_dpop_key") and hasattr(self._store, "set_dpop_key")

    async def load(self) -> None:
        """The stored key; a stored key means the stored token is bound to it."""
        pem = await self._store.get_dpop_key() if self.possible else None
        self.key = DPoPKey.from_pem(pem) if pem else None
        self.bound = self.key is not None

    def note_metadata(self, response: httpx2.Response) -> None:
        """Read what an authorization server's metadata document says about DPoP."""
        try:
            document = json.loads(response.content)
        except ValueError:
            return
        if not isinstance(document, dict) or not isinstance(document.get("issuer"), str):
            return
        algorithms = document.get("dpop_signing_alg_values_supported")
        if isinstance(algorithms, list):
            self._algorithms[document["issuer"].rstrip("/")] = [str(a) for a in algorithms]

    def offered(self, metadata: OAuthMetadata | None) -> bool:
        """Whether the server whose (validated) metadata this is takes our proofs."""
        if metadata is None or not self.possible:
            return False
        return ALGORITHM in self._algorithms.get(str(metadata.issuer).rstrip("/"), [])

    def sign_token_request(self, request: httpx2.Request, metadata: OAuthMetadata | None) -> None:
        """Prove possession at the token endpoint, when the server takes proofs."""
        if not self.offered(metadata):
            return
        self.key = self.key or DPoPKey()
        request.headers["DPoP"] = self.key.proof(
            request.method, str(request.url), nonce=self._nonce_for(request)
        )

    async def token_issued(self, response: httpx2.Response) -> httpx2.Response:
        """Note whether the new token is bound; the response as the SDK reads it (``Bearer``).

        The SDK's token model knows only bearer tokens; the binding lives here
        and, with the key, in the store.
        """
        try:
            body = json.loads(await response.aread())
        except ValueError:
            return response
        if not isinstance(body, dict) or "access_token" not in body:
            return response
        bound = str(body.get("token_type", "")).lower() == "dpop" and self.key is not None
        if self.possible:
            await self._store.set_dpop_key(self.key.to_pem() if bound and self.key else None)
        self.bound = bound
        if not bound:
            return response
        body["token_type"] = "Bearer"
        headers = {k: v for k, v in response.headers.items() if k.lower() != "content-length"}
        return httpx2.Response(
            response.status_code, headers=headers, json=body, request=response.request
        )

    def authorize(self, request: httpx2.Request, access_token: str) -> bool:
        """Present a bound token with a fresh proof; False when the token is a bearer token."""
        if not self.bound or self.key is None:
            return False
        request.headers["Authorization"] = f"DPoP {access_token}"
        request.headers["DPoP"] = self.key.proof(
            request.method,
            str(request.url),
            access_token=access_token,
            nonce=self._nonce_for(request),
        )
        return True

    def answer_nonce(self, request: httpx2.Request, response: httpx2.Response) -> bool:
        """After a ``use_dpop_nonce`` answer: re-sign ``request`` with the nonce; False if not one.

        Only once per nonce, so a server repeating its challenge cannot loop us.
        """
        nonce = nonce_challenge(response)
        origin = self._origin(request)
        if nonce is None or self.key is None or "DPoP" not in request.headers:
            return False
        if self._nonces.get(origin) == nonce:
            return False
        self._nonces[origin] = nonce
        scheme, _, token = request.headers.get("Authorization", "").partition(" ")
        request.headers["DPoP"] = self.key.proof(
            request.method,
            str(request.url),
            access_token=token if scheme == "DPoP" else None,
            nonce=nonce,
        )
        return True

    def _nonce_for(self, request: httpx2.Request) -> str | None:
        return self._nonces.get(self._origin(request))

    @staticmethod
    def _origin(request: httpx2.Request) -> str:
        return f"{request.url.scheme}://{request.url.netloc.decode('ascii')}"


class DPoPHooks(OAuthClientProvider):
    """The SDK provider's token and header steps, with DPoP where the server offers it.

    A base of :class:`openprogram.mcp.oauth.Guarded`, so every guarded signer has it.
    """

    @property
    def dpop(self) -> DPoPState:
        state = self.__dict__.get("_dpop_state")
        if state is None:
            state = self.__dict__["_dpop_state"] = DPoPState(self.context.storage)
        return state

    async def _initialize(self) -> None:
        await super()._initialize()
        await self.dpop.load()

    def _add_auth_header(self, request: httpx2.Request) -> None:
        tokens = self.context.current_tokens
        if tokens is None or not self.dpop.authorize(request, tokens.access_token):
            super()._add_auth_header(request)

    async def _exchange_token_authorization_code(
        self, auth_code: str, code_verifier: str
    ) -> httpx2.Request:
        request = await super()._exchange_token_authorization_code(auth_code, code_verifier)
        self.dpop.sign_token_request(request, self.context.oauth_metadata)
        return request

    async def _refresh_token(self) -> httpx2.Request:
        request = await super()._refresh_token()
        self.dpop.sign_token_request(request, self.context.oauth_metadata)
        return request

    async def _handle_token_response(self, response: httpx2.Response) -> None:
        if response.status_code in (200, 201):
            response = await self.dpop.token_issued(response)
        await super()._handle_token_response(response)

    async def _handle_refresh_response(self, response: httpx2.Response) -> bool:
        if response.status_code == 200:
            response = await self.dpop.token_issued(response)
        return await super()._handle_refresh_response(response)

    async def _auth_flow(
        self, request: httpx2.Request
    ) -> AsyncGenerator[httpx2.Request, httpx2.Response]:
        # A server that wants a nonce answers a proof without one with use_dpop_nonce:
        # send the same request once more with a new proof carrying it (RFC 9449 §8, §9).
        flow = super()._auth_flow(request)
        try:
            outgoing = await flow.__anext__()
            while True:
                response = yield outgoing
                if (
                    outgoing is not request
                    and response.status_code == 200
                    and any(part in outgoing.url.path for part in _METADATA_PATHS)
                ):
                    await response.aread()
                    self.dpop.note_metadata(response)
                if "DPoP" in outgoing.headers:
                    if outgoing is not request:
                        await response.aread()  # a token endpoint's small JSON answer
                    if self.dpop.answer_nonce(outgoing, response):
                        response = yield outgoing
                outgoing = await flow.asend(response)
        except StopAsyncIteration:
            return
        finally:
            await flow.aclose()
