"""Every runtime test starts from an empty registry and its own results directory.

``clean_registry`` restores whatever was registered (the shipped tools) afterwards.
"""

from __future__ import annotations

import pytest

from openprogram import config
from openprogram.programs.registry import reset_registry


@pytest.fixture(autouse=True)
def _isolated(clean_registry, tmp_path, monkeypatch):
    monkeypatch.setattr(
        config, "_config", config.Config(home=tmp_path, results_dir=tmp_path / "results")
    )
    reset_registry()
