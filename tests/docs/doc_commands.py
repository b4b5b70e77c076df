"""The shell commands the documentation shows (README.md and docs/**/*.md), as argument lists.

Fenced ``bash``/``sh``/``console`` blocks give every command line (``\\`` continuations joined,
comments dropped, ``&&``/``;``/``&`` separating commands, redirections dropped); prose gives the
inline code spans that start a command of ours (``evokernel ...``, ``python -m benchmarks...``,
``make ...``). Leading ``VAR=value`` assignments are dropped. Each command keeps where it was shown,
so a failing check names the page and line.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SHELL_FENCES = {"bash", "sh", "shell", "console"}
INLINE_STARTS = ("evokernel ", "python -m benchmarks", ".venv/bin/python -m benchmarks", "make ", "prefect ")
# a span that starts with one of these and has an option is an `evokernel` command shown without its name
EVOKERNEL_COMMANDS = {"build", "verify", "lake", "campaign", "report", "prompt", "experiment", "toolchain",
                      "backends", "config", "demo"}
SCRIPT = re.compile(r"^benchmarks/\w+\.py ")  # `benchmarks/known_good_speedups.py --tasks ...`
SEPARATORS = {"&&", "||", ";", "&", "|"}
REDIRECTIONS = {">", ">>", "<", "2>", "2>&1"}
ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")


@dataclass(frozen=True)
class DocCommand:
    """One command as the documentation shows it: ``argv`` (program first), where, and whether it
    came from a fenced block (a full command line) or an inline span (often a fragment)."""

    argv: tuple[str, ...]
    page: str
    line: int
    inline: bool

    @property
    def text(self) -> str:
        return shlex.join(self.argv)

    @property
    def where(self) -> str:
        return f"{self.page}:{self.line}"


def doc_pages() -> list[Path]:
    return [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]


def doc_commands() -> list[DocCommand]:
    commands: list[DocCommand] = []
    for page in doc_pages():
        commands += _page_commands(page)
    return commands


def _page_commands(page: Path) -> list[DocCommand]:
    name = str(page.relative_to(ROOT))
    found: list[DocCommand] = []
    fence: str | None = None
    pending, pending_line = "", 0
    prose: list[tuple[int, str]] = []
    for number, line in enumerate(page.read_text().splitlines(), 1):
        if line.lstrip().startswith("```"):
            fence = None if fence is not None else line.strip().strip("`").strip().lower()
            continue
        if fence is None:
            prose.append((number, line))
        elif fence in SHELL_FENCES:
            pending_line = pending_line if pending else number
            if line.rstrip().endswith("\\"):
                pending += line.rstrip()[:-1] + " "
                continue
            found += [DocCommand(argv, name, pending_line, False) for argv in split_line(pending + line, True)]
            pending = ""
    return found + _inline_commands(prose, name)


def _inline_commands(prose: list[tuple[int, str]], page: str) -> list[DocCommand]:
    """Code spans of the prose that start one of our commands (a span may wrap onto the next line)."""
    text = "\n".join(line for _, line in prose)
    found = []
    for match in re.finditer(r"`([^`]+)`", text):
        span = " ".join(match.group(1).split())
        number = prose[text.count("\n", 0, match.start())][0]
        if span.split(" ")[0] in EVOKERNEL_COMMANDS and " --" in span:
            span = "evokernel " + span  # a fragment such as `lake query --as-of 42`
        if not (span.startswith(INLINE_STARTS) or ASSIGNMENT.match(span) or SCRIPT.match(span)):
            continue
        for alternative in _alternatives(span):
            found += [DocCommand(argv, page, number, True) for argv in split_line(alternative) if _ours(argv)]
    return found


def _alternatives(span: str) -> list[str]:
    """`lake init|query|stats` shows three commands: one span per alternative of its first a|b|c word."""
    match = re.search(r"(?<![\w'\"])([\w.-]+(?:\|[\w.-]+)+)", span)
    if not match:
        return [span]
    return [span[:match.start()] + choice + span[match.end():] for choice in match.group(1).split("|")]


def _ours(argv: tuple[str, ...]) -> bool:
    return argv[0] in ("evokernel", "make", "prefect") or "benchmarks" in " ".join(argv[:3])


def split_line(line: str, optional_brackets: bool = False) -> list[tuple[str, ...]]:
    """A shell line as its commands' argument lists (comments, redirections, assignments dropped;
    with ``optional_brackets``, the brackets of `[--tasks A,...]` too)."""
    lexer = shlex.shlex(line, posix=True, punctuation_chars=True)
    lexer.whitespace_split = True
    lexer.commenters = "#"
    commands: list[list[str]] = [[]]
    skip_next = False
    for token in lexer:
        if skip_next:
            skip_next = False
        elif token in SEPARATORS:
            commands.append([])
        elif token in REDIRECTIONS:
            skip_next = True
        elif optional_brackets and token.strip("[]") != token and token.strip("[]"):
            commands[-1].append(token.strip("[]"))
        else:
            commands[-1].append(token)
    return [tuple(_without_assignments(c)) for c in commands if _without_assignments(c)]


def _without_assignments(argv: list[str]) -> list[str]:
    start = 0
    while start < len(argv) and ASSIGNMENT.match(argv[start]) and argv[0] not in ("export",):
        start += 1
    return argv[start:]
