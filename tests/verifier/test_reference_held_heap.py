"""A reference worker held for its task's next verification keeps its freed heap mapped up to
verifier.sandbox.reference_worker.HELD_HEAP_MOST (the next latency phase grows it to the same windows of outputs
again, then on pages already faulted in), and hands back all of a larger one.

Run in a child with the sandbox's allocator settings (verifier.sandbox.spawn.ALLOCATOR), as the worker runs: 40
blocks of 1 MiB allocated and freed as serve.CallServer.grow_heap does, the worker's release trim, then the same
blocks again, counting the pages faulted in: under a held size of 512 MiB, then of 16 MiB.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

from verifier.sandbox.spawn import ALLOCATOR

CHILD = textwrap.dedent(r"""
    import json, resource, sys
    import torch
    from verifier.sandbox import reference_worker

    torch.set_num_threads(1)

    def grow():
        blocks = [torch.empty(1 << 20, dtype=torch.uint8) for _ in range(40)]
        for block in blocks:
            block.numpy()[::4096] = 0
        del blocks

    faults = []
    grow()
    for held_mb in (512, 16):  # the default's order of size, then a size the 40 MiB exceed
        reference_worker.HELD_HEAP_MOST = held_mb << 20
        reference_worker._trim_heap()
        before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
        grow()
        faults.append(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)
    print(json.dumps(faults))
""")
PAGES = 40 * (1 << 20) // 4096


def test_a_heap_within_the_held_size_stays_mapped_and_a_larger_one_is_handed_back():
    env = {**os.environ, **ALLOCATOR, "PYTHONPATH": str(Path(__file__).resolve().parents[2]), "OMP_NUM_THREADS": "1"}
    out = subprocess.run([sys.executable, "-c", CHILD], env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    held, handed_back = json.loads(out.stdout.strip().splitlines()[-1])
    # what stays mapped is faulted in again only at the edges: 256-1,025 of the 10,240 pages in eight runs here
    # (2026-12-03; half of them at 1,024-1,025, which a tenth's bound failed once in CI), 10,241 handed back
    assert held < PAGES * 0.25, held
    assert handed_back > PAGES * 0.8, handed_back
