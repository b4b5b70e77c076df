"""Instructions no kernel needs, found in the built object by disassembly.

A raw system call written as inline assembly (``syscall``, ``sysenter``, ``int $0x80``), however its
text is spelled (macros, token pasting), references no symbol, so the undefined-symbol judgement
(verifier.gates.native_symbols) cannot see it; the instruction itself is in the object. libc's own
system calls live in libc, never in a kernel's object, so one there is refused (under the check that
owns inline assembly, ``c_inline_asm_and_load_hooks``). Where no ``objdump`` is installed the check is
skipped: Landlock and seccomp confine such code at run time regardless.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

from verifier.gates.hack_python import Finding

CHECK = "c_inline_asm_and_load_hooks"
_RAW_CALL = re.compile(r"^\s*([0-9a-f]+):\s+(syscall|sysenter|int\s+\$0x80)\b", re.M)


def system_call_findings(path: str | Path, label: str, disabled: tuple[str, ...] = ()) -> list[Finding]:
    """One finding for the object at ``path`` if its code holds a raw system call instruction."""
    tool = shutil.which("objdump")
    if CHECK in disabled or tool is None:
        return []
    try:
        listing = subprocess.run([tool, "-d", "--no-show-raw-insn", str(path)], capture_output=True, text=True,
                                 timeout=120).stdout
    except (OSError, subprocess.SubprocessError):
        return []
    found = _RAW_CALL.search(listing)
    if found is None:
        return []
    return [Finding(CHECK, f"{label}: the built code holds a raw system call instruction ({found.group(2)} at "
                           f"0x{found.group(1)}), which is not allowed (system calls go through the allowed libraries)")]
