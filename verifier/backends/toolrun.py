"""Running external build tools (nvcc, g++, bisheng, msopgen, build.sh) for the GPU/NPU backends.

One owner for: the invocation of a build tool (through the shared runner, kernelbench_npu.child_process)
with a wall-clock timeout and a private environment,
the typed :class:`ToolRun` record of one invocation, and trimming compiler output to what an
LLM can act on (errors first, header noise and warnings from third-party headers dropped).
"""

from __future__ import annotations

import os
import re
import shlex
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping, Sequence

from kernelbench_npu.child_process import run_to_end

MAX_DIAGNOSTIC_CHARS = 4000
MAX_DIAGNOSTIC_LINES = 40
_ERROR_LINE = re.compile(r"(\berror\b|\bError\b|fatal|undefined reference|uses too much|Traceback|Exception)")


@dataclass(frozen=True)
class ToolRun:
    """One finished (or killed) tool invocation."""

    argv: tuple[str, ...]
    cwd: str
    returncode: int  # -9 style negative when killed; 124 on timeout
    stdout: str
    stderr: str
    seconds: float
    timed_out: bool = False

    @property
    def ok(self) -> bool:
        return self.returncode == 0 and not self.timed_out

    def command_line(self) -> str:
        return " ".join(shlex.quote(a) for a in self.argv)

    def report(self) -> str:
        """MultiKernelBench-style stage report: exit code, then stdout and stderr."""
        head = f"$ {self.command_line()}\nExit Code {self.returncode}" + (" (timed out)" if self.timed_out else "")
        return f"{head}\n[STDOUT]\n{self.stdout.strip()}\n[STDERR]\n{self.stderr.strip()}"


def run_tool(argv: Sequence[str | os.PathLike], cwd: Path, timeout_s: float,
             env: Mapping[str, str] | None = None, unset: Sequence[str] = ()) -> ToolRun:
    """Run argv in its own process group (kernelbench_npu.child_process); kill the whole group on timeout."""
    full_env = dict(os.environ if env is None else env)
    for key in unset:
        full_env.pop(key, None)
    args = tuple(str(a) for a in argv)
    done = run_to_end(args, cwd, timeout_s, full_env)
    return ToolRun(args, str(cwd), done.returncode, done.stdout, done.stderr, done.seconds, timed_out=done.timed_out)


def trim_diagnostics(text: str, strip_prefixes: Sequence[str] = (), max_lines: int = MAX_DIAGNOSTIC_LINES,
                     max_chars: int = MAX_DIAGNOSTIC_CHARS) -> str:
    """Keep what matters for a fix: error lines with a little context, private paths shortened.

    Warnings are dropped when errors exist (torch's headers emit dozens under nvcc). Without
    error lines, the tail of the output is kept (a crash message is usually last).
    """
    for prefix in sorted(strip_prefixes, key=len, reverse=True):
        if prefix:
            text = text.replace(prefix.rstrip("/") + "/", "")
    lines = [ln for ln in text.splitlines() if ln.strip()]
    error_at = [i for i, ln in enumerate(lines) if _ERROR_LINE.search(ln) and "warning" not in ln.lower()]
    if error_at:
        keep: list[int] = []
        for i in error_at:
            for j in range(i, min(i + 3, len(lines))):  # the error, its source line and caret
                if j not in keep and (j == i or "warning" not in lines[j].lower()):
                    keep.append(j)
        lines = [lines[i] for i in keep]
    else:
        lines = lines[-max_lines:]
    kept = "\n".join(lines[:max_lines])
    if len(kept) > max_chars:
        kept = kept[: max_chars - 20] + "\n... (trimmed)"
    return kept
