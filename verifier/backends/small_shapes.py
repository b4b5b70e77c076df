"""Small shapes for correctness in an interpreter (the triton backend without a GPU).

The Triton interpreter runs every program instance in numpy, ~1000x slower than the GPU, so a
KernelBench-sized task (16 x 16384, 4096^2 matmuls) would time out. The task is shrunk at its
source, identically for the reference worker and the candidate: every module-level assignment
``NAME = <int literal>`` with a value above :data:`SMALL_CAP` is halved while it stays even and
above the cap (16384 -> 256, 4096 -> 256, 1000 -> 250, 3000 -> 375; an odd 1001 stays). Halving
keeps odd factors, so "channels divisible by groups" style relations between literals survive,
and sizes derived in expressions (``dim * 2``) follow their shrunk inputs. Small constants
(batch 16, kernel_size 3, reduction dim 1) are never touched. Only literals change: the task's
code, dtypes, tolerances and input distributions are the same.
"""

from __future__ import annotations

import ast

SMALL_CAP = 256


def shrink_int(value: int, cap: int = SMALL_CAP) -> int:
    while value > cap and value % 2 == 0:
        value //= 2
    return value


def shrink_task_source(source: str, cap: int = SMALL_CAP) -> str:
    """The task source with its large module-level integer literals halved down towards cap."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return source  # the reference worker reports it
    lines = source.splitlines(keepends=True)
    edits: list[tuple[int, int, int, str]] = []  # (line, col, end_col, text), same-line literals only
    for node in tree.body:
        value = node.value if isinstance(node, (ast.Assign, ast.AnnAssign)) else None
        if (isinstance(value, ast.Constant) and type(value.value) is int and value.value > cap
                and value.lineno == value.end_lineno):
            small = shrink_int(value.value, cap)
            if small != value.value:
                edits.append((value.lineno - 1, value.col_offset, value.end_col_offset, str(small)))
    for line, col, end, text in sorted(edits, reverse=True):
        raw = lines[line].encode()
        lines[line] = (raw[:col] + text.encode() + raw[end:]).decode()
    return "".join(lines)
