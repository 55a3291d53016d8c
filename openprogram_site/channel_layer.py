"""The single-process channel layer: Channels' in-memory layer with its per-message costs cut.

A streaming turn sends a group message every ~20 ms, and every tab's consumer receives
it. Channels' ``InMemoryChannelLayer`` scans every channel and group for expired
messages on each send and each receive (O(sockets) per message, so O(sockets²) for a
busy server), and sends to a group through one task per member gathered with
``as_completed``. Under 100 streaming chats that was a fifth of the server's CPU. Here
the scan runs at most once a second (``openprogram_site.daphne_patches.ThrottledCleanUp``,
the one override of a private method; messages expire after ``expiry``, 60 s: a second
more changes nothing) and a group's members are sent to in turn, in order. Messages,
capacity (``ChannelFull`` dropped for that member, as before) and expiry behave as in
Channels' layer; delivery is Channels' own (each consumer's queue and receive task).
"""

from __future__ import annotations

from channels.layers import InMemoryChannelLayer

from openprogram_site.daphne_patches import ThrottledCleanUp

__all__ = ["LocalChannelLayer"]


class LocalChannelLayer(ThrottledCleanUp, InMemoryChannelLayer):
    """See the module docstring; configured in ``CHANNEL_LAYERS`` without Redis."""
