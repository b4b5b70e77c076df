"""Turning the triton-ascend driver's per-kernel results into compile-gate feedback.

A failure shows what the LLM can act on: the kernel and its specialisation (the exact argument
types and constexprs the task's launch used), the grid, then

- front end: Triton's own message with its caret, located in candidate.py;
- triton-adapter-opt / bishengir-compile: only the ``error:`` lines, with MLIR locations turned
  into ``candidate.py:LINE`` plus that source line, and banner, note and temp-path noise dropped;
- a hint for the failures that dominate on Ascend (UB or L1 overflow, launch grid).

A pass is one line per specialisation: the level reached (HIVM, or an NPU binary with CANN), the
planned Unified Buffer / L1 footprint from the HIVM module, and whether it came from the cache.
"""

from __future__ import annotations

import re

from verifier.backends.toolrun import MAX_DIAGNOSTIC_CHARS

UB_BYTES = 192 * 1024  # Unified Buffer per AI core on Ascend 910B/910_93 (1572864 bits)
L1_BYTES = 512 * 1024  # L1 ("cbuf") per AI cube core (4194304 bits)
_LOC = re.compile(r'loc\("(?P<path>[^"]+)":(?P<line>\d+):(?P<col>\d+)\):\s*')
_HINTS = (
    ("ub overflow", "the kernel's live tiles exceed the 192 KB Unified Buffer: every BLOCK-element fp32 tile "
                    "takes 4*BLOCK bytes, each loaded tile is double-buffered, and temporaries (exp, casts) add "
                    "more; UB is addressed in 32-byte blocks, so a tile whose last dimension is not a multiple "
                    "of 8 fp32 elements is padded, and a transposed store pads every element to 32 bytes. Use a "
                    "smaller BLOCK, loop over the row or tensor inside the kernel, and keep the last tile "
                    "dimension contiguous."),
    ("cbuf overflow", "the tl.dot operand tiles exceed the 512 KB L1 buffer: use smaller BLOCK_M/N/K "
                      "(e.g. 128x128x64 in fp16, 64x64x64 in fp32) and loop over K."),
    ("programs;", "launch about as many programs as there are AI cores (tens) and loop inside the kernel."),
    ("unsupported datatype", "the Ascend vector unit has no float64 (and little int64): compute in fp32."),
    ("extra.cuda", "CUDA-only Triton modules do not exist in triton-ascend: use tl.math / tl.exp etc., or "
                   "triton.language.extra.ascend.libdevice."),
    ("cannot convert none", "a value is None, often a triton.language.extra.libdevice call (it resolves to CUDA/HIP "
                            "libraries): on Ascend use tl.math / tl.exp etc., or triton.language.extra.ascend.libdevice."),
)
_NOISE = ("External hivmc run fails", "Failed to run BiShengHIR")


def error_lines(text: str) -> list[str]:
    """The compiler's real error lines: "error:" (MLIR) and "LLVM ERROR:" (an abort), not the hand-over."""
    return [ln.strip() for ln in text.splitlines() if "error:" in ln.lower() and not any(n in ln for n in _NOISE)]


def hints(text: str) -> str:
    lowered = text.lower()
    return "".join(f"\nhint: {hint}" for key, hint in _HINTS if key in lowered)


def syntax_error(source: str) -> str:
    """A Python syntax error with the offending line and a caret ("" when the source parses)."""
    try:
        compile(source, "candidate.py", "exec", dont_inherit=True, flags=0x400)  # PyCF_ONLY_AST
    except SyntaxError as exc:
        text = (exc.text or "").rstrip("\n")
        caret = " " * max((exc.offset or 1) - 1, 0) + "^"
        return f"candidate.py line {exc.lineno}: SyntaxError: {exc.msg}\n    {text}\n    {caret}"
    return ""


def is_ascend_910(soc: str) -> bool:
    return soc.startswith("Ascend910")


def _kib(n: int) -> str:
    return f"{n / 1024:.0f} KB" if n >= 1024 else f"{n} B"


def passed_line(kernel: dict, soc: str) -> str:
    level = "NPU binary" if kernel.get("status") == "binary" else "HIVM ok"
    used = kernel.get("footprint") or {}
    parts = []
    if "ub" in used:
        parts.append(f"UB {_kib(used['ub'])}" + (f" of {_kib(UB_BYTES)}" if is_ascend_910(soc) else ""))
    if "cbuf" in used:
        parts.append(f"L1 {_kib(used['cbuf'])}" + (f" of {_kib(L1_BYTES)}" if is_ascend_910(soc) else ""))
    cached = ", cached" if kernel.get("cached") else ""
    plan = f", {', '.join(parts)} planned" if parts else ""
    return f"{kernel['kernel']}({kernel.get('spec', '')}) grid {tuple(kernel.get('grid') or ())}: {level}{plan}{cached}"


def failure_text(kernel: dict, candidate_source: str) -> str:
    """Feedback for one failed specialisation."""
    head = f"kernel {kernel['kernel']}({kernel.get('spec', '')}), grid {tuple(kernel.get('grid') or ())}"
    stage = kernel.get("stage", "")
    message = str(kernel.get("message", ""))
    if stage == "front end":
        where = f" at candidate.py line {kernel['line']}" if kernel.get("line") else ""
        body = f"Triton front end{where}:\n{message}"
    elif stage == "launch":
        body = f"launch: {message}"
    else:
        tool = "triton-adapter-opt (TTIR -> linalg/HIVM)" if stage == "ttadapter" else "bishengir-compile (HIVM)"
        body = f"{tool}:\n{compiler_errors(message, candidate_source)}"
    return f"{head}\n{body}{hints(message)}"


def compiler_errors(text: str, candidate_source: str) -> str:
    """The ``error:`` lines of triton-adapter-opt / bishengir output, located in candidate.py."""
    source_lines = candidate_source.splitlines()
    kept: list[str] = []
    for line in error_lines(text):
        match = _LOC.search(line)
        message = _LOC.sub("", line)
        if match and match["path"].endswith("candidate.py"):
            number = int(match["line"])
            kept.append(f"candidate.py:{number}: {message}")
            if 0 < number <= len(source_lines):
                kept.append(f"    {source_lines[number - 1].strip()}")
        else:
            kept.append(message)
    if not kept:  # no error line: keep the tail, without a crash's stack dump
        kept = [ln for ln in text.splitlines() if ln.strip() and not ln.lstrip().startswith(("#", "[INFO]", "///"))][-8:]
    return "\n".join(dict.fromkeys(kept))[:MAX_DIAGNOSTIC_CHARS]


def tolerated(kernels: list[dict]) -> list[dict]:
    """Failed @triton.autotune configs of a launch where another config compiled: triton's autotuner
    skips configs that fail to compile, so on the device they cost nothing but compile time."""
    passing_groups = {k["group"] for k in kernels if k.get("group") is not None and k.get("status") != "failed"}
    return [k for k in kernels if k.get("status") == "failed" and k.get("group") in passing_groups]


def summarise(kernels: list[dict], candidate_source: str, soc: str, full_compile: bool) -> tuple[bool, str]:
    """(ok, text) of the compile gate from the driver's per-kernel results."""
    skipped = tolerated(kernels)
    failed = [k for k in kernels if k.get("status") == "failed" and k not in skipped]
    if failed:
        text = "\n\n".join(failure_text(k, candidate_source) for k in failed[:4])
        more = f"\n\n... and {len(failed) - 4} more failing kernel specialisations" if len(failed) > 4 else ""
        first = failed[0]
        headline = _headline(first)
        return False, f"{headline}\n{text}{more}"[:MAX_DIAGNOSTIC_CHARS]
    level = (f"compiled to an NPU binary for {soc} with CANN's hivmc" if full_compile else
             f"HIVM-level pass for {soc}: bishengir-compile ran the HFusion/HIVM pipeline up to CANN's hivmc "
             f"(not installed here: no NPU binary)")
    plans = [f"{k['kernel']} UB {_kib(k['footprint']['ub'])}" for k in kernels if (k.get("footprint") or {}).get("ub")]
    head = level + (f"; planned {', '.join(dict.fromkeys(plans))}" if plans else "")
    if is_ascend_910(soc) and plans:
        head += f" of {_kib(UB_BYTES)}"
    lines = [passed_line(k, soc) for k in kernels if k not in skipped]
    lines += [f"{k['kernel']}({k.get('spec', '')}): autotune config rejected (the autotuner skips it): "
              f"{_headline(k).split(': ', 1)[-1]}" for k in skipped]
    return True, "\n".join([head] + lines)


def _headline(kernel: dict) -> str:
    """The one-line reason: the first real error of the first failing kernel."""
    stage, message = kernel.get("stage", ""), str(kernel.get("message", ""))
    if stage in ("front end", "launch"):
        last = [ln for ln in message.splitlines() if ln.strip()]
        summary = last[-1] if last else stage
    else:
        errors = [_LOC.sub("", ln) for ln in error_lines(message)]
        summary = errors[0] if errors else "compiler failed"
    return f"kernel {kernel['kernel']} ({stage}): {summary}"[:300]
