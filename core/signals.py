"""Signals the composition root sends and apps receive, so the root imports no app for them."""

from __future__ import annotations

from django.dispatch import Signal

__all__ = ["server_starting"]

server_starting = Signal()
"""Sent once when the server starts serving (``openprogram_site.startup``).

Apps connect their start-up work in ``AppConfig.ready``. Receivers must not block start-up.
"""
