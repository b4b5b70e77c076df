"""Text shaping for prompts: the scaffold without its worked example (refining), code shown as a diff
against code already in the prompt, and the verifier's run of "[gate] ok" lines on one line.

Each keeps the information and drops what the model already has: a refine prompt's start point is a
complete kernel for the very task, so the scaffold's generic example adds nothing; a refinement that
changed two lines of the start point is clearer as those two lines.
"""

from __future__ import annotations

import difflib
import re

_HEADING = re.compile(r"^## ")
_EXAMPLE = re.compile(r"\bexample\b", re.IGNORECASE)
_OK_LINE = re.compile(r"^\[([\w .-]+)\] ok$")
DIFF_SHARE = 0.5  # a diff is shown instead of the code when it is at most this share of the code's size
EXAMPLE_LEFT_OUT = ("(Left out when refining: the start point below is a complete kernel for this task "
                    "that passed every gate.)")


def _level2_sections(text: str) -> list[list[str]]:
    """The text's lines grouped at level-2 headings ("## ...") outside code fences."""
    sections: list[list[str]] = [[]]
    fenced = False
    for line in text.splitlines():
        if line.lstrip().startswith("```"):
            fenced = not fenced
        if not fenced and _HEADING.match(line):
            sections.append([])
        sections[-1].append(line)
    return sections


def without_worked_example(scaffold: str) -> str:
    """The scaffold with each level-2 section whose heading names an example reduced to its heading
    and a note; unchanged if there is none."""
    parts = []
    for lines in _level2_sections(scaffold):
        if lines and _HEADING.match(lines[0]) and _EXAMPLE.search(lines[0]):
            parts.append(f"{lines[0]}\n{EXAMPLE_LEFT_OUT}\n")
        else:
            parts.append("\n".join(lines))
    return "\n".join(parts).strip()


def code_diff(base: str, code: str, share: float = DIFF_SHARE) -> str | None:
    """A unified diff turning ``base`` into ``code`` (2 lines of context, no file header), or None
    when it would be longer than ``share`` of the code itself."""
    diff = list(difflib.unified_diff(base.strip().splitlines(), code.strip().splitlines(), lineterm="", n=2))[2:]
    text = "\n".join(diff)
    return text if text and len(text) <= share * len(code.strip()) else None


def similarity(base: str, code: str) -> float:
    """The share of lines the two codes have in common (difflib's ratio over lines)."""
    return difflib.SequenceMatcher(None, base.strip().splitlines(), code.strip().splitlines(), autojunk=False).ratio()


def elide_unchanged(base: str, code: str, label: str, context: int = 2) -> str:
    """``code`` with each run of lines identical to ``base`` (beyond ``context`` lines at its ends)
    replaced by one line saying so: every line that differs from ``base`` is kept."""
    old, new = base.strip().splitlines(), code.strip().splitlines()
    out: list[str] = []
    for tag, _i1, _i2, j1, j2 in difflib.SequenceMatcher(None, old, new, autojunk=False).get_opcodes():
        lines = new[j1:j2]
        if tag == "equal" and len(lines) > 2 * context + 1:
            head, tail = lines[:context] if j1 > 0 else [], lines[-context:] if j2 < len(new) else []
            hidden = len(lines) - len(head) - len(tail)
            out += [*head, f"… {hidden} line(s) as in {label} …", *tail]
        else:
            out += lines
    return "\n".join(out)


def compact_ok_lines(text: str) -> str:
    """Consecutive "[gate] ok" lines as one: "[hack, compile, correctness] ok"."""
    out: list[str] = []
    run: list[str] = []
    for line in text.splitlines() + [""]:
        match = _OK_LINE.match(line.strip())
        if match:
            run.append(match.group(1))
            continue
        if run:
            out.append(f"[{', '.join(run)}] ok")
            run = []
        out.append(line)
    return "\n".join(out[:-1])
