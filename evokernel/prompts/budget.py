"""Section size budgets of a prompt, and what a prompt reports about its sections.

Every budgeted section of a draft or refine prompt has a size limit in characters (about four
characters a token). A section over its limit is cut, and the cut is stated in the prompt where it
happens: a text section loses its tail, an item section leaves out its last items whole (a kernel
cut in half helps no one). :class:`SectionSize` records what each section came to, so
``evokernel prompt`` can show it.
"""

from __future__ import annotations

from dataclasses import dataclass
CHARS_PER_TOKEN = 4  # the same estimate as evokernel.llm.base.estimate_tokens

# Characters per section; None = never cut (the task itself, the system rules).
SECTION_BUDGETS: dict[str, int | None] = {
    "system": None,
    "reference program": None,
    "backend scaffold": 9_000,
    "start point": 12_000,
    "earlier refinements": 6_000,
    "retrieved memory": 9_000,
    "verifier feedback": 2_000,
}


def estimate_tokens(chars: int) -> int:
    return chars // CHARS_PER_TOKEN


def _size(chars: int) -> str:
    return f"{chars:,} characters ≈ {estimate_tokens(chars):,} tokens"


@dataclass(frozen=True)
class SectionSize:
    """One section of a built prompt: its size and what was left out of it."""

    name: str
    chars: int
    budget_chars: int | None  # None: the section is never cut
    cut_chars: int = 0  # characters of text cut by the budget
    items_shown: int = 0  # items rendered in full
    items_collapsed: int = 0  # repeats shown as a one-line reference
    items_left_out: int = 0  # items left out whole by the budget

    @property
    def tokens(self) -> int:
        return estimate_tokens(self.chars)


@dataclass(frozen=True)
class Fitted:
    """A section's text after its budget, with its size record."""

    text: str
    size: SectionSize


def fit_text(name: str, text: str) -> Fitted:
    """The text, cut at the section's budget with the cut stated."""
    budget = SECTION_BUDGETS[name]
    text = text.strip()
    if budget is None or len(text) <= budget:
        return Fitted(text, SectionSize(name, len(text), budget))
    cut = len(text) - budget
    kept = text[:budget].rstrip() + (f"\n… [cut: {_size(cut)} more; this section's budget is "
                                     f"{budget:,} characters]")
    return Fitted(kept, SectionSize(name, len(kept), budget, cut_chars=cut))


class BlockSection:
    """An item section filled in order: a block is kept while it fits the budget; from the first
    one that does not, the rest are left out whole and the section says so. The first block is
    always kept (each item is capped on its own, below any section budget)."""

    def __init__(self, name: str) -> None:
        self.name, self.budget = name, SECTION_BUDGETS[name]
        self._kept: list[str] = []
        self._used = self._shown = self._collapsed = self._left = self._left_chars = 0

    def offer(self, block: str, collapsed: bool) -> bool:
        """Keep the block if it fits; returns whether it was kept."""
        cost = len(block) + 2
        if self._left or (self._kept and self.budget is not None and self._used + cost > self.budget):
            self._left, self._left_chars = self._left + 1, self._left_chars + cost
            return False
        self._kept.append(block)
        self._used += cost
        self._collapsed += collapsed
        self._shown += not collapsed
        return True

    def fitted(self, empty: str) -> Fitted:
        blocks = list(self._kept) or [empty]
        if self._left:
            blocks.append(f"[{self._left} more item(s) left out ({_size(self._left_chars)}) to keep this "
                          f"section within its budget of {self.budget:,} characters]")
        text = "\n\n".join(blocks)
        return Fitted(text, SectionSize(self.name, len(text), self.budget, cut_chars=self._left_chars,
                                        items_shown=self._shown, items_collapsed=self._collapsed,
                                        items_left_out=self._left))
