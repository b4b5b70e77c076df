"""Run a test script in a fresh Python process and read back the JSON it prints last.

Triton's run mode (compiled or interpreted) is fixed at its first import in a process
(verifier.backends.triton_modes), as it is in the sandbox child: tests that import triton
interpreted run here, so the pytest worker stays free of triton for the compile tests.
The script is a file, not ``-c`` code: ``@triton.jit`` reads its kernels' source from disk.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def run_fresh(script: str, tmp_path: Path, timeout_s: float = 300) -> dict:
    path = tmp_path / "fresh_script.py"
    path.write_text(textwrap.dedent(script))
    done = subprocess.run([sys.executable, str(path)], capture_output=True, text=True, timeout=timeout_s, cwd=ROOT)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])
