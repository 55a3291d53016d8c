"""The 2025-03-26 discovery path: which issuer an MCP server's own origin may name.

A server without protected-resource metadata (RFC 9728) is a 2025-03-26 server:
the client takes the MCP server's origin as its authorization server and reads
``<origin>/.well-known/oauth-authorization-server``. RFC 8414 §3.3 wants that
document's ``issuer`` to be exactly the origin; servers of that era with an
authorization server mounted under a path (``<origin>/oauth``) name that path.

:class:`openprogram.mcp.oauth.Guarded` accepts such an issuer on this path only,
and only when the issuer and every endpoint the document names are on the MCP
server's own origin. That grants nothing new: the only party whose document is
read here controls the origin's root, so it could equally name the origin itself
(with endpoints anywhere) and pass the strict check; and the RFC 9207 ``iss`` of
the authorization response is still compared with the document's issuer. An
issuer or endpoint on any other origin is refused, and on the RFC 9728 path
(where the resource names its authorization server) the issuer must match
exactly, as before.
"""

from __future__ import annotations

import json

import httpx2
from mcp.client.auth.utils import (
    build_oauth_authorization_server_metadata_discovery_urls,
    build_protected_resource_metadata_discovery_urls,
    extract_resource_metadata_from_www_auth,
    handle_protected_resource_response,
    issuers_match,
)
from mcp.shared.auth import OAuthMetadata
from pydantic import ValidationError

from openprogram.mcp.oauth_urls import origin_of, origin_url

__all__ = [
    "LegacyMetadataRefused",
    "legacy_issuer_alias",
    "legacy_metadata_url",
    "resource_metadata_not_found",
]


class LegacyMetadataRefused(Exception):
    """The origin's metadata names its own issuer but points somewhere else."""


def legacy_metadata_url(server_url: str) -> str:
    """Where a 2025-03-26 client reads the authorization server's metadata (the SDK's URL)."""
    return build_oauth_authorization_server_metadata_discovery_urls(None, server_url)[0]


async def resource_metadata_not_found(
    outgoing: httpx2.Request, response: httpx2.Response, challenge: httpx2.Response, server_url: str
) -> bool:
    """Whether ``outgoing`` was the last protected-resource metadata URL and found nothing.

    Then the SDK takes the 2025-03-26 path next. Should the SDK ever try other
    URLs, this says False and the strict issuer check simply applies.
    """
    candidates = build_protected_resource_metadata_discovery_urls(
        extract_resource_metadata_from_www_auth(challenge), server_url
    )
    if outgoing.url != httpx2.URL(candidates[-1]):
        return False
    if response.status_code >= 500 or response.status_code == 429:
        return False  # the SDK stops there: an outage says nothing about the metadata
    return await handle_protected_resource_response(response) is None


def legacy_issuer_alias(server_url: str, response: httpx2.Response) -> str | None:
    """The issuer to expect from the origin's metadata ``response``, when not the origin itself.

    None: no usable document, the issuer is the origin (the SDK's own case), or
    it is on another origin (the SDK then refuses it as an issuer mismatch).
    Raises :class:`LegacyMetadataRefused` for a same-origin issuer whose document
    names an endpoint on another origin.
    """
    if response.status_code != 200:
        return None
    try:
        document = json.loads(response.content)
        issuer = str(OAuthMetadata.model_validate(document).issuer)
    except (ValueError, ValidationError):
        return None
    origin = origin_of(server_url)
    bare = origin_url(server_url)
    if issuers_match(issuer.rstrip("/"), bare) or origin_of(issuer) != origin:
        return None
    elsewhere = sorted(
        f"{key} {value}"
        for key, value in document.items()
        if (key.endswith("_endpoint") or key == "jwks_uri")
        and isinstance(value, str)
        and origin_of(value) != origin
    )
    if elsewhere:
        raise LegacyMetadataRefused(
            f"Authorization server metadata issuer mismatch: {issuer} is not {bare}, and a "
            f"2025-03-26 server's own issuer under a path is accepted only with every endpoint "
            f"on its origin; this one names {', '.join(elsewhere)}"
        )
    return issuer
