"""DPoP proofs (RFC 9449) and when the client binds its tokens to its key."""

from __future__ import annotations

import base64
import hashlib
import json
import time

import httpx2
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.asymmetric.utils import encode_dss_signature
from mcp.shared.auth import OAuthMetadata

from openprogram.mcp.oauth_dpop import DPoPKey, DPoPState, nonce_challenge
from openprogram.mcp.oauth_stores import MemoryOAuthStore

ISSUER = "https://as.example.com"
METADATA = OAuthMetadata.model_validate(
    {
        "issuer": ISSUER,
        "authorization_endpoint": f"{ISSUER}/authorize",
        "token_endpoint": f"{ISSUER}/token",
    }
)


def _unb64(part: str) -> bytes:
    return base64.urlsafe_b64decode(part + "=" * (-len(part) % 4))


def _verified(proof: str) -> tuple[dict, dict]:
    """Header and claims of a proof whose signature verifies with the key it embeds."""
    header_part, claims_part, signature_part = proof.split(".")
    header = json.loads(_unb64(header_part))
    jwk = header["jwk"]
    public = ec.EllipticCurvePublicNumbers(
        int.from_bytes(_unb64(jwk["x"]), "big"),
        int.from_bytes(_unb64(jwk["y"]), "big"),
        ec.SECP256R1(),
    ).public_key()
    raw = _unb64(signature_part)
    signature = encode_dss_signature(
        int.from_bytes(raw[:32], "big"), int.from_bytes(raw[32:], "big")
    )
    public.verify(signature, f"{header_part}.{claims_part}".encode(), ec.ECDSA(hashes.SHA256()))
    return header, json.loads(_unb64(claims_part))


def _token_response(token_type: str) -> httpx2.Response:
    body = {"access_token": "tok-1", "token_type": token_type, "expires_in": 60}
    return httpx2.Response(200, json=body, request=httpx2.Request("POST", f"{ISSUER}/token"))


def _state_that_saw_metadata(store: object) -> DPoPState:
    state = DPoPState(store)
    document = {"issuer": ISSUER, "dpop_signing_alg_values_supported": ["ES256"]}
    state.note_metadata(httpx2.Response(200, json=document))
    return state


def test_a_proof_is_signed_by_the_public_key_it_carries_and_names_the_request() -> None:
    key = DPoPKey()

    header, claims = _verified(key.proof("post", "https://mcp.example.com/mcp?x=1#f"))

    assert header["typ"] == "dpop+jwt" and header["alg"] == "ES256"
    assert "d" not in header["jwk"]
    assert claims["htm"] == "POST"
    assert claims["htu"] == "https://mcp.example.com/mcp"
    assert abs(claims["iat"] - time.time()) < 5
    assert "ath" not in claims and "nonce" not in claims


def test_a_proof_for_a_token_carries_its_hash_and_the_nonce_and_is_never_reused() -> None:
    key = DPoPKey()

    _, first = _verified(key.proof("GET", "https://mcp.example.com/mcp", access_token="tok-1"))
    _, second = _verified(key.proof("GET", "https://mcp.example.com/mcp", nonce="n-1"))

    expected = base64.urlsafe_b64encode(hashlib.sha256(b"tok-1").digest()).rstrip(b"=").decode()
    assert first["ath"] == expected
    assert second["nonce"] == "n-1"
    assert first["jti"] != second["jti"]


def test_a_key_survives_the_store_as_pem() -> None:
    key = DPoPKey()

    assert DPoPKey.from_pem(key.to_pem()).public_jwk == key.public_jwk


def test_only_a_use_dpop_nonce_answer_is_a_nonce_challenge() -> None:
    resource = httpx2.Response(
        401, headers={"WWW-Authenticate": 'DPoP error="use_dpop_nonce"', "DPoP-Nonce": "rs-1"}
    )
    token_endpoint = httpx2.Response(
        400, headers={"DPoP-Nonce": "as-1"}, json={"error": "use_dpop_nonce"}
    )
    other = httpx2.Response(400, headers={"DPoP-Nonce": "as-1"}, json={"error": "invalid_grant"})

    assert nonce_challenge(resource) == "rs-1"
    assert nonce_challenge(token_endpoint) == "as-1"
    assert nonce_challenge(other) is None
    assert nonce_challenge(httpx2.Response(401, headers={"WWW-Authenticate": "DPoP"})) is None


def test_a_store_that_cannot_keep_the_key_keeps_the_client_on_bearer_tokens() -> None:
    class TokensOnly:
        async def get_tokens(self) -> None: ...

    state = _state_that_saw_metadata(TokensOnly())
    request = httpx2.Request("POST", f"{ISSUER}/token")

    state.sign_token_request(request, METADATA)

    assert not state.offered(METADATA)
    assert "DPoP" not in request.headers


async def test_a_bound_token_keeps_its_key_in_the_store_and_is_presented_with_a_proof() -> None:
    store = MemoryOAuthStore()
    state = _state_that_saw_metadata(store)
    token_request = httpx2.Request("POST", f"{ISSUER}/token")
    state.sign_token_request(token_request, METADATA)

    for_sdk = await state.token_issued(_token_response("DPoP"))
    call = httpx2.Request("POST", "https://mcp.example.com/mcp")

    assert "DPoP" in token_request.headers
    assert json.loads(for_sdk.content)["token_type"] == "Bearer"  # the SDK's model
    assert state.bound and store.dpop_key == state.key.to_pem()
    assert state.authorize(call, "tok-1")
    assert call.headers["Authorization"] == "DPoP tok-1"
    _, claims = _verified(call.headers["DPoP"])
    assert claims["htu"] == "https://mcp.example.com/mcp" and "ath" in claims

    await state.token_issued(_token_response("Bearer"))

    assert not state.bound and store.dpop_key is None
    assert not state.authorize(httpx2.Request("POST", "https://mcp.example.com/mcp"), "tok-2")


async def test_a_nonce_challenge_is_answered_once_per_nonce() -> None:
    state = _state_that_saw_metadata(MemoryOAuthStore())
    request = httpx2.Request("POST", f"{ISSUER}/token")
    state.sign_token_request(request, METADATA)
    challenge = httpx2.Response(
        400, headers={"DPoP-Nonce": "as-1"}, json={"error": "use_dpop_nonce"}
    )

    assert state.answer_nonce(request, challenge)
    _, claims = _verified(request.headers["DPoP"])
    assert claims["nonce"] == "as-1"
    assert not state.answer_nonce(request, challenge)
