"""Cyclic garbage collection in a serving process: long-lived objects leave the scanned heap.

Why: CPython's full (generation 2) collection walks every tracked container in the
process. After start-up that is ~177,000 objects (Django, apps, URL patterns, tool
catalog), and ~330,000 once the first model call has imported litellm (~150,000 more),
and it runs whenever a quarter as many objects again survived the younger generations —
which a burst of turns does. One such pass took 104 ms in ``python -m bench concurrency``
(17 % of the server's CPU during 100 offline turns) and 283 ms in ``python -m bench
streaming_load`` (9 % of it for 100 streaming turns), stalling the event loop for every
socket meanwhile; the streaming profile charged it to whatever allocated at that moment
(``asyncio.Event.__init__``). See docs/benchmarks.md §5a "GC pass" for the measurements.

What: :func:`gc_freeze_long_lived` moves everything alive at the end of start-up into
the permanent generation (``gc.freeze()``), which collections never scan, and does the
same once more after a full collection whenever many modules were imported since the
last freeze (litellm's lazy import on the first model call, an MCP SDK, a program
package). Young objects — a turn's — are collected exactly as before.

Memory stays bounded: a frozen object is never freed if it later becomes cyclic
garbage, but freezes happen once at start-up and then at most once per
``_MODULES_PER_REFREEZE`` newly imported modules (a finite set), each holding at most
what was alive then. No ``gc.collect()`` runs first: start-up leaves ~120 unreachable
objects, and a full collection would add ~0.1 s to start-up.
"""

from __future__ import annotations

import gc
import sys
from typing import Any

__all__ = ["gc_freeze_long_lived"]

_MODULES_PER_REFREEZE = 50
"""Newly imported modules that make the next full collection's survivors long-lived.

litellm brings ~2,500; a stray lazy import of one standard-library module should not."""


class _RefreezeAfterImports:
    """A ``gc.callbacks`` entry: after a full collection, freeze if modules were imported."""

    def __init__(self) -> None:
        self.modules_at_freeze = len(sys.modules)

    def freeze(self) -> None:
        gc.freeze()
        self.modules_at_freeze = len(sys.modules)

    def __call__(self, phase: str, info: dict[str, Any]) -> None:
        if phase != "stop" or info["generation"] != 2:
            return
        # The collection has finished: the survivors are what an import left behind
        # (module globals, classes, functions) plus whatever was alive then.
        if len(sys.modules) - self.modules_at_freeze >= _MODULES_PER_REFREEZE:
            self.freeze()


def gc_freeze_long_lived() -> None:
    """Freeze the start-up heap now and after later heavy imports; idempotent."""
    if any(isinstance(callback, _RefreezeAfterImports) for callback in gc.callbacks):
        return
    refreeze = _RefreezeAfterImports()
    refreeze.freeze()
    gc.callbacks.append(refreeze)
