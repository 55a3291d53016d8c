"""Process-wide framework configuration: where data lives.

The framework imports nothing from Django. A host application (the web app, the
CLI, a script) calls :func:`configure` once; otherwise ``OPENPROGRAM_HOME`` or
``./var`` is used.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

__all__ = ["Config", "configure", "get_config"]


@dataclass(frozen=True)
class Config:
    home: Path
    results_dir: Path


def _default() -> Config:
    home = Path(os.environ.get("OPENPROGRAM_HOME") or "var").expanduser().resolve()
    return Config(home=home, results_dir=home / "results")


_config: Config | None = None


def configure(*, home: Path | str, results_dir: Path | str | None = None) -> Config:
    global _config
    home_path = Path(home).expanduser().resolve()
    _config = Config(
        home=home_path,
        results_dir=Path(results_dir).resolve() if results_dir else home_path / "results",
    )
    return _config


def get_config() -> Config:
    global _config
    if _config is None:
        _config = _default()
    return _config
