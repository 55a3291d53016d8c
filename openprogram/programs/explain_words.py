"""Words for people: an explain-trace row's (layer, reason) as a sentence a user can act on.

The trace's reasons are written for developers ("L2b: not in the profile list").
The Programs page, the chat's "why not offered" and the API show this sentence
first and keep the layer code and the raw reason for those who want them. Every
reason the resolution walk writes (``policy``, ``_selection``) has a sentence
here; a reason this module does not know (a layer-4 gate's own message, a future
layer) is shown as is, after a short lead-in for its layer.
"""

from __future__ import annotations

import re

__all__ = ["DISABLED_REASON", "POLICY_REASON", "disabled_reason", "plain_reason", "policy_reason"]

DISABLED_REASON = "globally disabled"
"""The layer-5 reason for a global disable; with the admin's words: ``globally disabled: …``."""

POLICY_REASON = "denied by policy"
"""The layer-5 reason for a team policy removal: ``denied by policy: <the rule in words>``."""

_ADMIN_OFF = "Turned off for everyone by an admin"
_EXACT: dict[tuple[str | None, str], str] = {
    ("L2", "not exposed (expose=False)"): "An internal helper: never offered to the model",
    ("L2b", "not in the profile list"): "Not in this profile",
    ("L2b", "not in the toolset list"): "Not in the agent profile's toolset",
    ("L2b", "toolset 'none' offers no tools"): "Tools are switched off for this chat",
    ("L2b", "profile 'none' offers no tools"): "This profile offers no tools",
    ("L3", "unsafe_in plan"): "Not allowed in plan mode",
    ("L3", "not in the agent profile toolset list"): "Not among the agent profile's tools",
    ("L5", DISABLED_REASON): _ADMIN_OFF,
    ("L5", "in the deny list"): "Switched off for this chat (web search switch or agent profile)",
    ("L5", "not in the allow list"): "Not among the agent profile's allowed tools",
    ("L5", "withheld: the turn is unattended"): "Held back: nobody is there to answer this turn",
    ("L6", "no deferred tools are offered"): "Not needed: no offered tool loads on demand",
}
_NAMED = re.compile(r"^not in (profile|toolset|agent profile toolset) '(?P<name>.+)'$")
_NAMED_WORDS = {
    "profile": "Not in the profile “{}”",
    "toolset": "Not in the toolset “{}”",
    "agent profile toolset": "Not among the tools of the agent profile's toolset “{}”",
}
_LEAD_IN = {"L4": "Can't run right now", "L3": "Not allowed here", "L5": "Switched off"}


def disabled_reason(admin_reason: str) -> str:
    """The trace's reason for a global disable, carrying the admin's words when given."""
    admin_reason = " ".join(admin_reason.split())
    return f"{DISABLED_REASON}: {admin_reason}" if admin_reason else DISABLED_REASON


def policy_reason(rule_words: str) -> str:
    """The trace's reason for a tool the team policy removes, naming the deciding rule."""
    return f"{POLICY_REASON}: {rule_words}"


def plain_reason(layer: str | None, reason: str) -> str:
    """One sentence for people; the layer code stays in the trace for the curious."""
    exact = _EXACT.get((layer, reason))
    if exact is not None:
        return exact
    if layer == "L5" and reason.startswith(f"{DISABLED_REASON}: "):
        return f"{_ADMIN_OFF}: {reason.removeprefix(f'{DISABLED_REASON}: ')}"
    if layer == "L5" and reason.startswith(f"{POLICY_REASON}: "):
        return (
            f"Not allowed for you by the team policy: {reason.removeprefix(f'{POLICY_REASON}: ')}"
        )
    named = _NAMED.match(reason)
    if named:
        return _NAMED_WORDS[named.group(1)].format(named.group("name"))
    if layer == "L3" and reason.startswith("unsafe_in "):
        return f"Not allowed when the request comes from {reason.removeprefix('unsafe_in ')!r}"
    lead = _LEAD_IN.get(layer or "")
    return f"{lead}: {reason}" if lead else reason[:1].upper() + reason[1:]
