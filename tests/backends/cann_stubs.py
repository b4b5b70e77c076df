"""Stub CANN tools for the Ascend C tests: tiny scripts that record their argv (one JSON line per
call in $STUB_LOG) and behave like the real tool enough for the build to proceed: bisheng writes
its -o file, or prints a clang-style error when a source contains NO_SUCH_API; msopgen creates a
project whose build.sh makes a custom_opp_*.run installer."""

from __future__ import annotations

import json
import stat
from pathlib import Path

from verifier.backends.scaffolds import fenced_blocks, scaffold_sections

_RECORD = '''#!/usr/bin/env python3
import json, os, sys
with open(os.environ["STUB_LOG"], "a") as log:
    log.write(json.dumps({"tool": os.path.basename(sys.argv[0]), "argv": sys.argv[1:], "cwd": os.getcwd(),
                          "custom_opp": os.environ.get("ASCEND_CUSTOM_OPP_PATH")}) + "\\n")
'''

BISHENG = _RECORD + '''
args = sys.argv[1:]
for src in [a for a in args if a.endswith((".cpp", ".asc"))]:
    text = open(src).read()
    if "NO_SUCH_API" in text:
        line = text[: text.index("NO_SUCH_API")].count("\\n") + 1
        print(f"{os.path.abspath(src)}:{line}:9: error: no member named 'NO_SUCH_API' in namespace 'AscendC'",
              file=sys.stderr)
        print("1 error generated.", file=sys.stderr)
        sys.exit(1)
if "-o" in args:
    out = args[args.index("-o") + 1]
    os.makedirs(os.path.dirname(out) or ".", exist_ok=True)
    open(out, "w").write("stub object")
'''

BUILD_SH = '''#!/usr/bin/env bash
python3 - <<'PY'
import json, os
with open(os.environ["STUB_LOG"], "a") as log:
    log.write(json.dumps({"tool": "build.sh", "argv": [], "cwd": os.getcwd(),
                          "custom_opp": os.environ.get("ASCEND_CUSTOM_OPP_PATH")}) + "\\n")
PY
grep -q NO_SUCH_API op_kernel/*.cpp && { echo "[ERROR] op_kernel/x.cpp:4:3: error: no member named 'NO_SUCH_API'"; exit 1; }
mkdir -p build_out
cat > build_out/custom_opp_ubuntu_x86_64.run <<'RUN'
#!/usr/bin/env bash
dest="${1#--install-path=}"
mkdir -p "$dest/vendors/customize/op_api/lib" "$dest/vendors/customize/op_api/include"
echo "$@" > "$dest/installed_with.txt"
RUN
chmod +x build_out/custom_opp_ubuntu_x86_64.run
'''

MSOPGEN = _RECORD + '''
args = sys.argv[1:]
out = args[args.index("-out") + 1]
for sub in ("op_host", "op_kernel", "framework"):
    os.makedirs(os.path.join(out, sub), exist_ok=True)
open(os.path.join(out, "op_kernel", "generated.cpp"), "w").write("// generated")
open(os.path.join(out, "build.sh"), "w").write(BUILD_SH)
'''


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    path.chmod(path.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)


def install_stub_cann(root: Path, with_msopgen: bool = True) -> Path:
    """A fake CANN root with bin/bisheng (and bin/msopgen); returns the root."""
    _write(root / "bin" / "bisheng", BISHENG)
    if with_msopgen:
        _write(root / "bin" / "msopgen", MSOPGEN.replace("BUILD_SH", repr(BUILD_SH)))
    (root / "lib64").mkdir(parents=True, exist_ok=True)
    return root


def read_log(log: Path) -> list[dict]:
    return [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []


def scaffold_example() -> str:
    body = dict(scaffold_sections("ascendc"))["Worked example: ReLU, direct-launch"]
    return fenced_blocks(body, "python")[0]


def candidate(files: str, fmt: str = "direct-launch", op: str = "relu_custom") -> str:
    return (f"import torch.nn as nn\nASCENDC_FORMAT = {fmt!r}\nASCENDC_OP = {op!r}\nASCENDC_FILES = {files}\n"
            "class ModelNew(nn.Module):\n    pass\n")
