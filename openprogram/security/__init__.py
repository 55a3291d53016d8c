"""Security helpers the built-in tools share: workspace file access and URL safety."""

from openprogram.security.urls import UnsafeURL, check_url, resolve_public_addresses
from openprogram.security.workspace_fs import WorkspacePathRefused

__all__ = [
    "UnsafeURL",
    "WorkspacePathRefused",
    "check_url",
    "resolve_public_addresses",
]
