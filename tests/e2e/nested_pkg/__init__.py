"""A program package for the nested-card browser test: an Agent tool that calls a tool.

``relay(word)`` is an Agent method tool; it asks the model ``/shout_word {json}``, so
with the offline model its nested run calls ``shout_word`` once, and that call reaches
the chat with ``parent_call_id`` set to the relay's call.
"""

from __future__ import annotations

import json

from openprogram import Agent, function

__all__ = ["PROGRAM_ENTRIES", "Relay", "relay", "shout_word"]


@function
def shout_word(word: str) -> str:
    """Shout a word back in capitals.

    Args:
        word: The word to shout.
    """
    return f"{word.upper()}!"


class Relay(Agent):
    method_options = {"relay": {"tool": True, "name": "relay"}}

    async def relay(self, word: str) -> str:
        """Have the model shout a word through the shout_word tool.

        Args:
            word: The word to pass on.
        """
        return await self.arun("/shout_word " + json.dumps({"word": word}), allow=["shout_word"])


relay = Relay()
PROGRAM_ENTRIES = [relay.relay, shout_word]
