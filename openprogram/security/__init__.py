"""Security helpers the built-in tools share: workspace confinement and URL safety."""

from openprogram.security.paths import PathOutsideWorkspace, resolve_in_workspace
from openprogram.security.urls import UnsafeURL, check_url, resolve_public_addresses

__all__ = [
    "PathOutsideWorkspace",
    "UnsafeURL",
    "check_url",
    "resolve_in_workspace",
    "resolve_public_addresses",
]
