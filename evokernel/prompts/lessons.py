"""What a past kernel teaches, in a few lines. A failed one: the gate it failed, the error, the line
the verifier points at, and what fixed it when a later attempt of its task passed that gate, instead
of its code (its code is mostly what worked elsewhere, the lesson is the difference; evokernel.agent.
lessons reads the facts from the lake). A working one keeps its code, and its verdict is cut to what
it measured (speedup, roofline, a flag by what was found): the feedback it got then spoke to the model
that wrote it. Pure text: no lake, no verifier.
"""

from __future__ import annotations

import difflib
import re

MAX_FIX_LINES = 12  # a fix that changes more lines is a rewrite: named, not shown
_ERROR = re.compile(r"^\s*(?:\S+:\d+:\d+: )?(?:fatal )?error: .*$", re.MULTILINE)
_COMPILER_SNIPPET = re.compile(r"^\s*(\d+) \| (.*\S.*)$", re.MULTILINE)
_FAILED = re.compile(r"^\[(\w+)\] FAILED: (.*)$", re.MULTILINE)
_ATEN_OPS = re.compile(r"aten::(\w+)")
_LINE_NUMBER = re.compile(r"\bline (\d+)\b")


def failure_lesson(gate: str | None, feedback: str | None, code: str | None,
                   fix_iteration: int | None = None, fix_code: str | None = None) -> str:
    """The lesson of a failed kernel (see the module doc), a few lines of text."""
    feedback, code = feedback or "", code or ""
    lines = [f"failed at the {gate or 'generation'} gate: {error_line(feedback)}"]
    culprit = culprit_line(feedback, code)
    if culprit:
        lines.append(f"the line it points at: `{culprit}`")
    if fix_iteration is not None and fix_code:
        lines.append(fix_text(code, fix_code, fix_iteration, gate or "that"))
    else:
        lines.append("no later attempt of that task passed this gate")
    return "\n".join(lines)


def measured_summary(feedback: str) -> str:
    """A working kernel's verdict as a memory item shows it: its latency and roofline lines, and a flag
    by what was found (its first clause), without the pass marks or what it told that kernel's author."""
    kept = []
    for line in (raw.strip() for raw in feedback.splitlines()):
        if line.startswith(("latency:", "roofline:")):
            kept.append(line)
        elif line.startswith("flag:"):
            kept.append(line.split(";")[0])
    return "\n".join(kept) or feedback.strip()


def error_line(feedback: str) -> str:
    """The verifier's reason, or the compiler's first error line when it names one."""
    error = _ERROR.search(feedback)
    if error:
        return " ".join(error.group(0).split())
    failed = _FAILED.search(feedback)
    if failed:
        return failed.group(2).strip()
    first = feedback.strip().splitlines()
    return first[0].strip() if first else "(no feedback recorded)"


def culprit_line(feedback: str, code: str) -> str | None:
    """The source line the verifier points at: the compiler's snippet, a line number it names, or the
    first line of code calling an ATen operator the runtime check observed."""
    snippet = _COMPILER_SNIPPET.search(feedback)
    if snippet:
        return snippet.group(2).strip()
    code_lines = code.splitlines()
    number = _LINE_NUMBER.search(feedback)
    if number and 0 < int(number.group(1)) <= len(code_lines):
        return code_lines[int(number.group(1)) - 1].strip()
    for op in _ATEN_OPS.findall(feedback):
        pattern = re.compile(rf"\b{re.escape(op)}\s*\(")
        hit = next((line.strip() for line in code_lines if pattern.search(line)), None)
        if hit:
            return hit
    return None


def fix_text(failed: str, fixed: str, fix_iteration: int, gate: str) -> str:
    """The lines a later attempt changed to pass the gate, as a diff (a rewrite is named, not shown)."""
    diff = list(difflib.unified_diff(failed.strip().splitlines(), fixed.strip().splitlines(), lineterm="", n=0))
    changed = [line for line in diff[2:] if not line.startswith("@@")]
    if not changed:
        return f"iteration {fix_iteration} passed the {gate} gate with the same code"
    if len(changed) > MAX_FIX_LINES:
        return f"iteration {fix_iteration} passed the {gate} gate after a rewrite ({len(changed)} lines changed)"
    body = "\n".join(changed)
    return f"fixed in iteration {fix_iteration} (passed the {gate} gate) by:\n```diff\n{body}\n```"
