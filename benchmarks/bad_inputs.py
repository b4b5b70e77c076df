"""Time to fail of every bad input of issue 27: each runs the real `evokernel` command in a fresh process
and is timed from start to exit (wall and CPU seconds), with the lines it printed and its one error
line. Target: well under 1 s where no heavy import is needed (all but the lake-opening cases).

Run: .venv/bin/python -m benchmarks.bad_inputs [--build DIR] [--json out.json]
(without --build, a two-task cpu build is made first in a temporary directory).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RELU = ('import torch\nimport torch.nn as nn\n\nCATEGORY = "activation"\n\n\nclass Model(nn.Module):\n'
        '    def forward(self, x):\n        return torch.relu(x)\n\n\nbatch_size = 8\ndim = 4099\n\n\n'
        'def get_inputs():\n    return [torch.randn(batch_size, dim)]\n\n\ndef get_init_inputs():\n    return []\n')


def make_build(scratch: Path) -> Path:
    """A one-task cpu build (KB-L1/1_ReLU) in ``scratch``."""
    from kernelbench_npu.build import build_benchmark

    (scratch / "src" / "level1").mkdir(parents=True)
    (scratch / "src" / "level1" / "1_ReLU.py").write_text(RELU)
    build_benchmark("cpu", sources=[scratch / "src"], levels=(1,), out=scratch / "build", include_bundled=False)
    return scratch / "build"


def _inputs(build: Path, scratch: Path) -> dict[str, str]:
    corrupt, empty = scratch / "corrupt-build", scratch / "empty-build"
    for copy, content in ((corrupt, b"not parquet"), (empty, b"")):
        shutil.copytree(build, copy)
        (copy / "manifest.parquet").write_bytes(content)
    (scratch / "a-file").write_text("x")
    (scratch / "damaged").mkdir()
    (scratch / "damaged" / "catalog.sqlite").write_text("garbage")
    (scratch / "candidate-dir").mkdir()
    (scratch / "empty.py").write_text("")
    (scratch / "nul.py").write_bytes(b"import torch\x00\n")
    from memory_lake import Lake, NewItem

    with Lake.create(scratch / "cuda-lake", "cuda") as lake:
        lake.add_items([NewItem(kind="experience", backend="cuda", title="t", body="b", task_id="KB-L1/1_ReLU")])
    return {"build": str(build), "corrupt": str(corrupt), "empty": str(empty), "file": str(scratch / "a-file"),
            "damaged": str(scratch / "damaged"), "cuda_lake": str(scratch / "cuda-lake"), "dir": str(scratch / "candidate-dir"),
            "empty_py": str(scratch / "empty.py"), "nul_py": str(scratch / "nul.py"), "new": str(scratch / "new-lake"),
            "relu": str(ROOT / "kernelbench_npu" / "solutions" / "cpu" / "level1" / "001_relu.py")}


CAMPAIGN = "campaign --build {build} --lake {new} --llm scripted:demo"
CASES = {
    "unknown task id (campaign)": CAMPAIGN + " --tasks KB-L1/19_ReLU",
    "unknown task id (verify)": "verify --build {build} --task L1/001_relu --candidate {relu}",
    "unknown task id (build --explain)": "build --explain KB-L1/2_Relu --out {build}",
    "unknown --llm provider": "campaign --build {build} --lake {new} --llm foo:bar",
    "missing API key": "campaign --build {build} --lake {new} --llm openai:gpt-4o-mini",
    "lake path is a file (campaign)": "campaign --build {build} --lake {file} --llm scripted:demo",
    "lake path is a file (lake init)": "lake init --lake {file} --backend cpu",
    "lake path is a file (report)": "report --lake {file} --out {new}-report",
    "corrupt catalog (campaign)": "campaign --build {build} --lake {damaged} --llm scripted:demo",
    "corrupt catalog (report)": "report --lake {damaged} --out {new}-report",
    "corrupt manifest (verify)": "verify --build {corrupt} --task KB-L1/1_ReLU --candidate {relu}",
    "empty manifest (build --explain)": "build --explain KB-L1/1_ReLU --out {empty}",
    "corrupt manifest (campaign)": "campaign --build {corrupt} --lake {new} --llm scripted:demo",
    "corrupt manifest (prompt)": "prompt --build {corrupt} --task KB-L1/1_ReLU --lake {new}",
    "--budget 0": CAMPAIGN + " --budget 0",
    "candidate is a directory": "verify --build {build} --task KB-L1/1_ReLU --candidate {dir}",
    "empty candidate": "verify --build {build} --task KB-L1/1_ReLU --candidate {empty_py}",
    "candidate with NUL bytes": "verify --build {build} --task KB-L1/1_ReLU --candidate {nul_py}",
    "lake export --kinds unknown": "lake export --lake {cuda_lake} --out {new}.parquet --kinds traces",
    "lake export --exclude-tasks typo (a note)": "lake export --lake {cuda_lake} --out {new}.parquet --exclude-tasks KB-L1/1_Relu",
    "cuda lake, cpu campaign": "campaign --build {build} --lake {cuda_lake} --llm scripted:demo",
    "unreachable endpoint (llm check)": "llm check --llm openai-compatible:m@http://127.0.0.1:9/v1",
}


def run_case(command: str, cwd: Path) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("EVOKERNEL_", "OPENAI_", "ANTHROPIC_"))}
    env.update(PREFECT_HOME=str(cwd / "prefect"), EVOKERNEL_LLM_MAX_RETRIES="0", PYTHONPATH=str(ROOT))
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "cli.main", *command.split()], capture_output=True, text=True,
                          cwd=cwd, env=env, timeout=600)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    lines = [line for line in (done.stdout + done.stderr).splitlines() if line.strip()]
    message = next((line for line in reversed(lines) if line.startswith(("error:", "note:"))), lines[-1] if lines else "")
    return {"exit": done.returncode, "wall_s": round(wall, 2),
            "cpu_s": round(after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime, 2),
            "lines": len(lines), "message": message,
            "prefect_started": any((cwd / "prefect").rglob("*.db")) if (cwd / "prefect").exists() else False}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--build", default=None, help="a cpu build whose tasks include KB-L1/1_ReLU")
    parser.add_argument("--json", default=None)
    args = parser.parse_args()
    one, five, _ = os.getloadavg()
    print(f"load average {one:.1f} (1 min) / {five:.1f} (5 min) on {os.cpu_count()} cores")
    rows = {}
    with tempfile.TemporaryDirectory(prefix="bad-inputs-") as tmp:
        scratch = Path(tmp)
        build = Path(args.build) if args.build else make_build(scratch)
        values = _inputs(build, scratch)
        for name, template in CASES.items():
            rows[name] = row = run_case(template.format(**values), scratch)
            print(f"{name:44s} exit {row['exit']}  {row['wall_s']:6.2f} s wall  {row['cpu_s']:5.2f} s cpu  "
                  f"{row['lines']:2d} line(s){'  PREFECT STARTED' if row['prefect_started'] else ''}  {row['message']}",
                  flush=True)
            shutil.rmtree(scratch / "prefect", ignore_errors=True)
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=2))


if __name__ == "__main__":
    main()
