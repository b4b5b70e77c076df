"""Each piece of text once per prompt: what has been shown, and where.

A prompt is rendered top to bottom; every code block and item body shown is registered under a
label ("the start point", "memory item 2"...). A later item whose code (or, for an item without
code, whose body) hashes the same as something already shown becomes a one-line reference to it.
Items whose text is already part of the backend scaffold (the api_template items a lake is seeded
with: the scaffold itself, its worked example) are referred to the scaffold section instead. Code
close to code already shown is offered as a diff against it (:func:`ShownTexts.closest_diff`).
"""

from __future__ import annotations

import hashlib

from evokernel.prompts.shaping import code_diff, similarity

# Lines shorter than this ("}", "import torch") say nothing about where a text comes from.
_MIN_LINE = 12
# An item is "in the scaffold" when at least this share of its distinctive lines is there; below
# 1.0 so an item seeded from an older edition of the same scaffold still counts.
SCAFFOLD_COVERAGE = 0.9


def text_key(text: str | None) -> str | None:
    """The hash a text is compared by: trailing whitespace and blank edges do not count."""
    if not text or not text.strip():
        return None
    normalised = "\n".join(line.rstrip() for line in text.strip().splitlines())
    return hashlib.sha256(normalised.encode()).hexdigest()


def _distinctive_lines(text: str) -> set[str]:
    return {s for s in (line.strip() for line in text.splitlines()) if len(s) >= _MIN_LINE}


class ShownTexts:
    """What a prompt already holds, keyed by text hash, with a label saying where."""

    def __init__(self, scaffold: str = "") -> None:
        self._where: dict[str, str] = {}
        self._codes: list[tuple[str, str]] = []  # (label, code) of code shown in full or as a diff
        self._scaffold_lines = _distinctive_lines(scaffold)

    def where(self, text: str | None) -> str | None:
        key = text_key(text)
        return self._where.get(key) if key else None

    def add(self, text: str | None, label: str) -> None:
        key = text_key(text)
        if key and key not in self._where:
            self._where[key] = label

    def add_code(self, code: str | None, label: str) -> None:
        if code and code.strip() and not self.where(code):
            self._codes.append((label, code))
        self.add(code, label)

    def closest_diff(self, code: str) -> tuple[str, str] | None:
        """(label, diff) of the shown code that ``code`` is the shortest diff away from, if that diff
        is much shorter than the code (see shaping.code_diff)."""
        diffs = [(label, diff) for label, base in self._codes if (diff := code_diff(base, code)) is not None]
        return min(diffs, key=lambda pair: len(pair[1])) if diffs else None

    def nearest(self, code: str, least: float = 0.5) -> tuple[str, str] | None:
        """(label, code) of the shown code sharing the most lines with ``code``, if at least ``least``."""
        scored = [(similarity(base, code), label, base) for label, base in self._codes]
        best = max(scored, default=None)
        return (best[1], best[2]) if best and best[0] >= least else None

    def in_scaffold(self, *texts: str | None) -> bool:
        """True when the texts' distinctive lines are (nearly all) in the backend scaffold."""
        lines = set().union(*(_distinctive_lines(t) for t in texts if t))
        if not lines or not self._scaffold_lines:
            return False
        return len(lines & self._scaffold_lines) >= SCAFFOLD_COVERAGE * len(lines)


def repeat_of(body: str | None, code: str | None, shown: ShownTexts) -> str | None:
    """Where an item's text is already in the prompt ("the backend scaffold", "memory item 2", ...),
    or None when the item would be shown: its code (or, without code, its body) is already there, or
    all of it is in the scaffold. The renderer collapses such an item to a one-line reference; the
    agent's retrieval leaves it out so that no slot is spent on it."""
    code = code if code and code.strip() else None
    if shown.in_scaffold(body, code):
        return "the backend scaffold"
    if code:
        return shown.where(code)
    return shown.where(body)
