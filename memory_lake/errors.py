"""The one exception type of memory_lake: a one-line, user-facing message naming the path,
table or column at fault."""

from __future__ import annotations


class LakeError(Exception):
    """A lake problem: missing lake, bad rows, malformed query. ``str(err)`` is one line."""

    def __init__(self, message: str) -> None:
        super().__init__(" ".join(str(message).split()))
