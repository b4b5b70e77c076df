"""Find the kernel in an LLM answer: exactly one fenced code block defining ``class ModelNew``.

A missing, wrong-language, ambiguous or truncated answer is not a crash: it yields a
:class:`CodeExtraction` with ``code=None`` and a one-line ``problem`` that the agent feeds back to
the LLM (the attempt then gets reward -1).

Rules, in order:
1. Blocks are Markdown fences (``` or ~~~, three or more); an unclosed last fence means the answer
   was cut off.
2. Blocks tagged with ``language`` (aliases: py/python3 for python) or untagged are candidates;
   among them the one(s) defining ``class ModelNew`` win, the last of several (models often
   correct themselves). A single candidate without ModelNew is a problem, not a guess.
3. Reasoning traces (``<think>…</think>``, as DeepSeek-R1 or Qwen3 emit them in the content) are
   dropped first: draft code inside them is not the answer; an unclosed one runs to the end.
4. finish_reason "length" is a problem unless a complete (closed) block defining ModelNew was
   found before the cut, since then only trailing prose was lost.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from evokernel.prompts.types import CodeExtraction

_FENCE = re.compile(r"^\s{0,3}(`{3,}|~{3,})\s*([\w+#.-]*)[^`]*$")
_MODELNEW = re.compile(r"^\s*class\s+ModelNew\b", re.MULTILINE)
_THINK = re.compile(r"<think>.*?(?:</think>|\Z)", re.DOTALL | re.IGNORECASE)
_ALIASES = {"python": {"python", "py", "python3", "py3"}}


@dataclass(frozen=True)
class _Block:
    language: str  # lower-case info string, "" if untagged
    code: str
    closed: bool


def _blocks(text: str) -> list[_Block]:
    blocks: list[_Block] = []
    fence, language, lines = None, "", []
    for line in text.splitlines():
        if fence is None:
            match = _FENCE.match(line)
            if match:
                fence, language, lines = match.group(1), match.group(2).lower(), []
        elif line.strip().startswith(fence[0] * len(fence)) and not line.strip().strip(fence[0]):
            blocks.append(_Block(language, "\n".join(lines).strip("\n") + "\n", True))
            fence = None
        else:
            lines.append(line)
    if fence is not None:
        blocks.append(_Block(language, "\n".join(lines).strip("\n") + "\n", False))
    return blocks


def _answer_format(language: str) -> str:
    return f"answer with one ```{language} block defining class ModelNew"


def extract_code(text: str, language: str = "python", finish_reason: str = "stop") -> CodeExtraction:
    """The code of the answer's ModelNew block, or a one-line problem for the LLM's feedback."""
    names = _ALIASES.get(language, {language})
    fmt = _answer_format(language)
    blocks = _blocks(_THINK.sub("", text))
    truncated = finish_reason == "length"
    complete = [b for b in blocks if b.closed and (b.language in names or not b.language)]
    winners = [b for b in complete if _MODELNEW.search(b.code)]
    if winners:  # a complete ModelNew block: anything cut off after it is not the kernel
        return CodeExtraction(code=winners[-1].code, problem=None)
    if truncated or (blocks and not blocks[-1].closed):
        why = "finish_reason=length" if truncated else "the last code block is never closed"
        return CodeExtraction(None, f"the answer was cut off before the kernel was complete ({why}); "
                                    f"{fmt}, shorter and without long explanations")
    if not blocks:
        return CodeExtraction(None, f"no code block found in the answer; {fmt}")
    if not complete:
        tags = ", ".join(sorted({f"```{b.language}" for b in blocks}))
        return CodeExtraction(None, f"found only {tags} code, no ```{language} block; {fmt} "
                                    "(other-language kernel source goes inside it as a string)")
    if not any(b.code.strip() for b in complete):
        return CodeExtraction(None, f"the ```{language} block is empty; {fmt}")
    return CodeExtraction(None, f"no ```{language} block defines class ModelNew "
                                f"({len(complete)} block(s) found); {fmt}")
