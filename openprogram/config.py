"""Process-wide framework configuration: where data lives.

The framework imports nothing from Django. A host application (the web app, the
CLI, a script) calls :func:`configure` once; otherwise :func:`default_home` is used.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from openprogram.security.sandbox_limits import SandboxLimits

__all__ = ["Config", "configure", "default_home", "get_config"]


@dataclass(frozen=True)
class Config:
    home: Path
    results_dir: Path
    workspaces_dir: Path | None = None
    """Per-user workspaces live below this; None means ``home / "workspaces"``."""
    workspace: Path | None = None
    """One shared workspace for every user (a single-user desktop pointing at a project)."""
    allow_shell: bool = True
    """The bash tool's layer-4 gate; the web app turns it off when it binds beyond loopback."""
    searxng_url: str = ""
    search_api_key: str = ""
    """A Brave Search API key (``BRAVE_API_KEY`` in the environment works too)."""
    web_fetch_allow_hosts: tuple[str, ...] = ()
    """``host`` or ``host:port`` entries that may be fetched even on private addresses."""
    web_fetch_max_bytes: int = 2_000_000
    web_fetch_timeout: float = 20.0
    sandbox_network: bool = False
    """Whether shell commands may reach the network (the sandbox has none by default)."""
    shell_staff_only: bool = False
    """Offer ``bash`` only to staff (the turn's ``can_use`` context says ``is_staff``)."""
    bwrap: str = "bwrap"
    """The bubblewrap binary that confines every process a tool starts."""
    sandbox_limits: SandboxLimits = field(default_factory=SandboxLimits)
    """Memory, CPU, processes, file size and /tmp of each sandboxed call."""
    workspace_quota_bytes: int = 2 * 1024**3
    """Disk space one workspace may take (security/workspace_quota.py); 0: no quota."""
    sandbox_uid: int = 65534
    sandbox_gid: int = 65534
    """Who sandboxed processes are on the host when the server runs as root (else the
    server's own user): never root."""
    sandbox_pool: int = 1
    """Launchers kept parked in a fresh cgroup (security/sandbox_pool.py); 0: none."""


_CHECKOUT = Path(__file__).resolve().parents[1]


def default_home() -> Path:
    """Where data lives unless ``OPENPROGRAM_HOME`` says otherwise.

    A source checkout (``manage.py`` beside the packages) keeps its data in the checkout's
    ``var/``; an installed wheel, whose packages sit in site-packages, in
    ``$XDG_DATA_HOME/openprogram`` (``~/.local/share/openprogram`` when unset).
    """
    explicit = os.environ.get("OPENPROGRAM_HOME", "").strip()
    if explicit:
        return Path(explicit).expanduser().resolve()
    if (_CHECKOUT / "manage.py").is_file():
        return _CHECKOUT / "var"
    data = os.environ.get("XDG_DATA_HOME", "").strip() or "~/.local/share"
    return (Path(data).expanduser() / "openprogram").resolve()


def _default() -> Config:
    home = default_home()
    return Config(home=home, results_dir=home / "results")


_config: Config | None = None


def configure(
    *,
    home: Path | str,
    results_dir: Path | str | None = None,
    workspaces_dir: Path | str | None = None,
    workspace: Path | str | None = None,
    allow_shell: bool = True,
    searxng_url: str = "",
    search_api_key: str = "",
    web_fetch_allow_hosts: tuple[str, ...] | list[str] = (),
    web_fetch_max_bytes: int = 2_000_000,
    web_fetch_timeout: float = 20.0,
    sandbox_network: bool = False,
    shell_staff_only: bool = False,
    bwrap: str = "bwrap",
    sandbox_limits: SandboxLimits | None = None,
    workspace_quota_bytes: int = 2 * 1024**3,
    sandbox_uid: int = 65534,
    sandbox_gid: int = 65534,
    sandbox_pool: int = 1,
) -> Config:
    global _config
    home_path = Path(home).expanduser().resolve()
    _config = Config(
        home=home_path,
        results_dir=Path(results_dir).resolve() if results_dir else home_path / "results",
        workspaces_dir=Path(workspaces_dir).expanduser().resolve() if workspaces_dir else None,
        workspace=Path(workspace).expanduser().resolve() if workspace else None,
        allow_shell=allow_shell,
        searxng_url=searxng_url,
        search_api_key=search_api_key,
        web_fetch_allow_hosts=tuple(web_fetch_allow_hosts),
        web_fetch_max_bytes=web_fetch_max_bytes,
        web_fetch_timeout=web_fetch_timeout,
        sandbox_network=sandbox_network,
        shell_staff_only=shell_staff_only,
        bwrap=bwrap,
        sandbox_limits=sandbox_limits or SandboxLimits(),
        workspace_quota_bytes=workspace_quota_bytes,
        sandbox_uid=sandbox_uid,
        sandbox_gid=sandbox_gid,
        sandbox_pool=sandbox_pool,
    )
    return _config


def get_config() -> Config:
    global _config
    if _config is None:
        _config = _default()
    return _config
