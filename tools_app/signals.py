"""Signals other apps listen to when a user's tool profile changes name or goes away.

The chat stores the profile name a conversation uses; it connects to these to
follow a rename and to fall back to ``default`` after a delete. Both are sent
inside the service's transaction, so a receiver's writes commit or roll back with it.
"""

from __future__ import annotations

from django.dispatch import Signal

__all__ = ["tool_profile_deleted", "tool_profile_renamed"]

tool_profile_renamed = Signal()
"""Sent with ``owner``, ``old_name``, ``new_name``."""

tool_profile_deleted = Signal()
"""Sent with ``owner``, ``name``."""
