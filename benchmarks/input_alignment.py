"""Where an input lies in its page, and what that does to a streaming kernel (docs: How a kernel is timed).

The known-good ReLU kernel (kernelbench_npu/solutions/cpu, ``#pragma omp parallel for simd``) on a 32 MiB
float32 input, its output taken by torch as a user's call takes it (a fresh mapping: 64 bytes into a page),
timed in one process with the input at several offsets in its page, in private memory and in a shared-memory
file (as the verifier's arena is). An input on the page boundary puts every load 64 bytes behind the store
to the same offset in a page, and the core holds the load for that store (4K aliasing): the arena therefore
places a large tensor 64 bytes into a page, where torch's allocator puts a user's (verifier.sandbox.arena.place).

Run: .venv/bin/python -m benchmarks.input_alignment [--calls 60] [--offsets 0,64,1024,2048]
"""

from __future__ import annotations

import argparse
import mmap
import os
import statistics
import time

N = 128 * 65536  # L1/001_relu's input at the bundled size: 32 MiB of float32


def _relu_kernel():
    """The known-good solution's compiled kernel (kernelbench_npu/solutions/cpu/level1/001_relu.py: ``lib``)."""
    from kernelbench_npu.known_good import solution_source

    namespace: dict = {}
    exec(compile(solution_source("L1/001_relu"), "001_relu.py", "exec"), namespace)
    return namespace["lib"]


def _in_memfd(offset: int):
    import torch

    fd = os.memfd_create("evokernel-alignment")
    os.ftruncate(fd, N * 4 + (1 << 16))
    buffer = mmap.mmap(fd, N * 4 + (1 << 16))
    os.close(fd)
    x = torch.frombuffer(buffer, dtype=torch.float32)[offset // 4: offset // 4 + N]
    x.copy_(torch.randn(N))
    return x, buffer


def _private(offset: int):
    import torch

    base = torch.empty(N + (1 << 14))
    start = (-(base.data_ptr() % 4096) + offset) % 4096 // 4  # the input at ``offset`` in its page
    x = base[start: start + N]
    x.copy_(torch.randn(N))
    return x, base


def time_kernel(lib, inputs: list, calls: int) -> list[tuple[float, int]]:
    """Per input, the median ms a call and its outputs' offset in their page. The inputs take turns call by
    call (the machine's memory bandwidth moves by 20-30% from one second to the next here: blocks of calls
    would time the moment, not the offset); each call's output is freshly allocated and the one before kept,
    as a window keeps it."""
    import torch

    times: list[list[float]] = [[] for _ in inputs]
    kept, at = [], [0] * len(inputs)
    for k in range(calls):
        for i, x in enumerate(inputs):
            y = torch.empty_like(x)
            start = time.perf_counter()
            lib.relu(x, y, N)
            if k >= 3:
                times[i].append(time.perf_counter() - start)
            at[i] = y.data_ptr() % 4096
            kept = [*kept[-1:], y]
    return [(statistics.median(t) * 1e3, a) for t, a in zip(times, at)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=60, help="calls on each input, taking turns")
    parser.add_argument("--offsets", default="0,64,1024,2048", help="the input's offsets in its page, in bytes")
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()
    os.environ.setdefault("OMP_NUM_THREADS", str(args.threads))
    import torch

    torch.set_num_threads(args.threads)
    lib = _relu_kernel()
    print(f"load average {os.getloadavg()[0]:.1f}; the ReLU kernel on {N * 4 >> 20} MiB, {args.threads} threads, "
          f"{args.calls} calls on each input, taking turns")
    made = [(kind, make(int(offset))) for kind, make in (("private", _private), ("shared-memory file", _in_memfd))
            for offset in args.offsets.split(",")]
    timed = time_kernel(lib, [x for _, (x, _) in made], args.calls)
    for (kind, (x, _)), (ms, out_at) in zip(made, timed):
        print(f"  {kind:18s} input at {x.data_ptr() % 4096:5d} in its page, output at {out_at:5d}: {ms:6.2f} ms a call")


if __name__ == "__main__":
    main()
