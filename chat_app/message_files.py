"""Files attached to a message: the list the composer appends, and reading it back.

The composer (``chat.js``) uploads each file into the person's workspace and appends
their paths to the message, so the model knows where to read them::

    <the person's text>

    Attached files (in my workspace):
    - uploads/notes.txt (1234 bytes)

The page shows that list as file chips in the sent message, and a message with no text
of its own takes its title from the file names. The list is the person's own text: it is
only ever shown as text, never trusted as a path.
"""

from __future__ import annotations

import dataclasses
import re

__all__ = ["ATTACHED_HEADER", "AttachedFile", "split_attached"]

ATTACHED_HEADER = "Attached files (in my workspace):"
_ITEM = re.compile(r"^- (?P<path>.+?) \((?P<size>\d+) bytes\)$")


@dataclasses.dataclass(frozen=True)
class AttachedFile:
    path: str
    size: int

    @property
    def name(self) -> str:
        return self.path.rsplit("/", 1)[-1]


def split_attached(text: str) -> tuple[str, list[AttachedFile]]:
    """The message's own text and its attached files (none when it ends in no such list).

    Only a list at the very end, in the composer's exact shape, counts: a message that
    merely quotes the header keeps all of its text.
    """
    head, sep, tail = text.rpartition(ATTACHED_HEADER)
    if not sep or (head and not head.endswith("\n")):
        return text, []
    lines = tail.strip("\n").split("\n")
    files = [_ITEM.match(line) for line in lines]
    if not lines or not all(files):
        return text, []
    return head.rstrip(), [AttachedFile(m["path"], int(m["size"])) for m in files if m]
