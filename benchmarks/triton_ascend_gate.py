"""The triton-ascend compile gate without an NPU: seconds per candidate (cold: a fresh cache, so
the recorded launches go through triton-ascend and bishengir-compile; cached: the same candidate
again) on three bundled level-1 tasks at their original (NPU profile) sizes, and the diagnostics the
gate gives back for three realistic mistakes: a tile beyond the Unified Buffer, a transposed tile
whose rows are each padded to a 32-byte block, and float64 arithmetic the vector unit lacks.

Each compile is the backend's ``compile`` as the sandbox child calls it (recording, driver
subprocess in the toolchain environment, cache); wall seconds, so the load is printed.

Run: .venv/bin/python -m benchmarks.triton_ascend_gate [--repeats 3]
(needs the toolchain: ``evokernel toolchain install triton-ascend``)
"""

from __future__ import annotations

import argparse
import hashlib
import os
import statistics
import tempfile
import time
from pathlib import Path

from kernelbench_npu.spec import TaskSpec
from verifier.backends.scaffolds import fenced_blocks, scaffold_sections
from verifier.backends.triton_ascend import TritonAscendBackend

ROOT = Path(__file__).resolve().parents[1]
LEVEL1 = ROOT / "kernelbench_npu" / "problems" / "level1"
HEADER = "import torch\nimport torch.nn as nn\nimport triton\nimport triton.language as tl\n"

RELU = HEADER + '''
BLOCK = 8192


@triton.jit
def relu_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    for start in range(tl.program_id(0) * BLOCK, n, tl.num_programs(0) * BLOCK):
        mask = start + offs < n
        x = tl.load(x_ptr + start + offs, mask=mask, other=0.0)
        tl.store(y_ptr + start + offs, tl.maximum(x, 0.0), mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        x = x.contiguous()
        y = torch.empty_like(x)
        relu_kernel[(48,)](x, y, x.numel(), BLOCK=BLOCK)
        return y
'''
RMS_NORM = HEADER + '''
BLOCK = 1024  # one row of 1000 features per tile


@triton.jit
def rms_norm_kernel(x_ptr, w_ptr, y_ptr, n_rows, n_cols, eps, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    mask = offs < n_cols
    w = tl.load(w_ptr + offs, mask=mask, other=0.0)
    for row in range(tl.program_id(0), n_rows, tl.num_programs(0)):
        x = tl.load(x_ptr + row * n_cols + offs, mask=mask, other=0.0)
        scale = 1.0 / tl.sqrt(tl.sum(x * x, axis=0) / n_cols + eps)
        tl.store(y_ptr + row * n_cols + offs, x * scale * w, mask=mask)


class ModelNew(nn.Module):
    def __init__(self, features, eps=1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(features))

    def forward(self, x):
        x = x.contiguous()
        y = torch.empty_like(x)
        n_cols = x.shape[-1]
        rms_norm_kernel[(48,)](x, self.weight, y, x.numel() // n_cols, n_cols, self.eps, BLOCK=BLOCK)
        return y
'''
SOFTMAX_ONE_TILE = HEADER + '''

@triton.jit
def softmax_kernel(x_ptr, y_ptr, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + row * n_cols + offs, mask=offs < n_cols, other=-float("inf"))
    e = tl.exp(x - tl.max(x, axis=0))
    tl.store(y_ptr + row * n_cols + offs, e / tl.sum(e, axis=0), mask=offs < n_cols)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        y = torch.empty_like(x)
        softmax_kernel[(x.shape[0],)](x, y, x.shape[1], BLOCK=triton.next_power_of_2(x.shape[1]))
        return y
'''
TRANSPOSE_TASK = '''import torch
import torch.nn as nn

CATEGORY = "other"


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return x.t().contiguous()


def get_inputs():
    return [torch.randn(4096, 4096)]


def get_init_inputs():
    return []
'''
TRANSPOSE_TILED = HEADER + '''
TILE = 128


@triton.jit
def transpose_kernel(x_ptr, y_ptr, n, TILE: tl.constexpr):
    i = tl.program_id(0) * TILE + tl.arange(0, TILE)
    j = tl.program_id(1) * TILE + tl.arange(0, TILE)
    tile = tl.load(x_ptr + i[:, None] * n + j[None, :])
    tl.store(y_ptr + j[None, :] * n + i[:, None], tile)  # each element lands in its own 32-byte block


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        n = x.shape[0]
        y = torch.empty_like(x)
        transpose_kernel[(n // TILE, n // TILE)](x, y, n, TILE=TILE)
        return y
'''


def task(name: str, source: str) -> TaskSpec:
    return TaskSpec(task_id=f"L1/{name}", level=1, category="bench", name=name, variant="triton-ascend",
                    dtype="float32", source=source, source_sha256=hashlib.sha256(source.encode()).hexdigest(),
                    atol=1e-5, rtol=1e-4, original_shapes="{}", adapted_shapes="{}", lint_status="ok",
                    lint_reason=None, reference_ms=None, problem_path=LEVEL1 / f"{name}.py")


def bundled(name: str) -> TaskSpec:
    return task(name, (LEVEL1 / f"{name}.py").read_text())


def softmax_example() -> str:
    return fenced_blocks(dict(scaffold_sections("triton-ascend"))["Worked example: row softmax"], "python")[0]


class Outcome:
    """A compile gate outcome as this benchmark prints it (the monitor's build outcome)."""

    def __init__(self, built) -> None:
        self.ok = built.ok
        self.diagnostics = (built.note if built.ok else built.detail) or built.reason


def compile_once(spec: TaskSpec, source: str, cache: Path):
    """The compile gate as the monitor runs it: the driver as a build job in the confined builder."""
    from verifier.monitor.builds import BuildLimits, BuildService

    backend = TritonAscendBackend()
    context = backend.compile_context(spec)
    began = time.perf_counter()
    (job,) = backend.compile_jobs(source, context)
    built = BuildService(backend, context, cache, None, BuildLimits(2, 6144, 256, spec.dtype, ())).build(job, 600)
    return time.perf_counter() - began, Outcome(built)


def load() -> str:
    return " ".join(f"{x:.1f}" for x in os.getloadavg()) + f" on {os.cpu_count()} cores"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3, help="cold compiles per task (each in a fresh cache)")
    args = parser.parse_args()
    availability = TritonAscendBackend().availability()
    if not any(c.gate == "compile" and c.available for c in availability.gates):
        print(f"skipped: {availability.line()}")
        return
    print(f"load average at start: {load()}", flush=True)
    print("task | cold s (median) | cached s | compile gate says", flush=True)
    honest = [("001_relu", RELU), ("013_softmax", softmax_example()), ("016_rms_norm", RMS_NORM)]
    for name, source in honest:
        spec, cold, cached, outcome = bundled(name), [], 0.0, None
        for _ in range(args.repeats):
            with tempfile.TemporaryDirectory() as cache:
                seconds, outcome = compile_once(spec, source, Path(cache))
                cold.append(seconds)
                cached, again = compile_once(spec, source, Path(cache))
                assert again.ok == outcome.ok
        status = outcome.diagnostics.splitlines()[0] if outcome.ok else "FAILED: " + outcome.diagnostics[:300]
        print(f"L1/{name} | {statistics.median(cold):.2f} | {cached:.3f} | {status}   (load {load()})", flush=True)
    mistakes = [("a one-row tile beyond the Unified Buffer (L1/013_softmax, 32768 columns)", bundled("013_softmax"),
                 SOFTMAX_ONE_TILE),
                ("a 128x128 fp32 tile stored transposed (each element padded to 32 bytes)",
                 task("transpose", TRANSPOSE_TASK), TRANSPOSE_TILED),
                ("float64 arithmetic (L1/001_relu computed in fp64)", bundled("001_relu"),
                 RELU.replace("tl.maximum(x, 0.0)", "tl.maximum(x.to(tl.float64), 0.0).to(tl.float32)"))]
    for title, spec, source in mistakes:
        with tempfile.TemporaryDirectory() as cache:
            seconds, outcome = compile_once(spec, source, Path(cache))
        print(f"\n## {title}: {'passed' if outcome.ok else 'failed'} in {seconds:.1f} s\n{outcome.diagnostics.strip()}",
              flush=True)


if __name__ == "__main__":
    main()
