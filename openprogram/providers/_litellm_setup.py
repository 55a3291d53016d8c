"""The one place litellm is imported: lazily and offline-safe.

litellm costs seconds and ~200 MB to import and, unless told otherwise, fetches its
model cost map over the network at import time. So nothing imports it at module
level: :func:`load_litellm` does, on the first real model call, after setting
``LITELLM_LOCAL_MODEL_COST_MAP`` and before any callback could phone home.
"""

from __future__ import annotations

import asyncio
import logging
import os
import threading
from types import ModuleType

__all__ = ["load_litellm", "load_litellm_async"]

_lock = threading.Lock()
_litellm: ModuleType | None = None


def load_litellm() -> ModuleType:
    """Import and configure litellm once; later calls return the same module."""
    global _litellm
    if _litellm is not None:
        return _litellm
    with _lock:
        if _litellm is None:
            os.environ["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"
            os.environ.setdefault("LITELLM_TELEMETRY", "False")
            import litellm

            # Callbacks and telemetry are the parts of litellm that reach the network
            # on their own; a self-hosted app must not do that behind the user's back.
            litellm.telemetry = False
            litellm.success_callback = []
            litellm.failure_callback = []
            litellm.callbacks = []
            litellm.suppress_debug_info = True
            if not os.environ.get("LITELLM_LOG"):
                # litellm logs every completion at INFO; that is noise in a server log or a terminal chat.
                for name in ("LiteLLM", "LiteLLM Router", "LiteLLM Proxy"):
                    logging.getLogger(name).setLevel(logging.WARNING)
            litellm.drop_params = True
            _litellm = litellm
    return _litellm


async def load_litellm_async() -> ModuleType:
    """:func:`load_litellm` off the event loop, so the first import never stalls a server."""
    if _litellm is not None:
        return _litellm
    return await asyncio.to_thread(load_litellm)
