"""A peer grows its heap before the first window of a larger layout (verifier.sandbox.serve.CallServer.grow_heap),
so the windows' outputs reuse faulted pages from the first window on, instead of after a few untimed rounds.

Run in a child with the sandbox's allocator settings (verifier.sandbox.spawn.ALLOCATOR), as a peer runs: a window
of 40 ReLU outputs of 1 MiB each, the window before kept alive until the next Collect, as the latency phase does.
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
    from verifier.sandbox import serve
    from verifier.sandbox.serve import CallServer

    torch.set_num_threads(1)
    grow = sys.argv[1] == "grow"
    server = CallServer(None, torch.relu, "cpu", lambda: None)
    x = torch.randn(1 << 18)
    server.staged = [[x]]
    server.run(1)
    server.collect(0, describe=True)  # the correctness phase's one-call windows: the outputs' sizes known
    server.grow_heap(1)
    assert server.grown_for == 1  # never for a one-call window
    sets = [[torch.randn(1 << 18)] for _ in range(40)]
    server.staged = sets
    if grow:
        server.grow_heap(40)
    faults = []
    for _ in range(4):
        before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
        server.run(40)
        faults.append(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)
        server.collect(0, describe=True)  # frees the window before's outputs, keeps this one's
    if grow:
        server.grow_heap(40)
        assert server.grown_for == 40  # a layout grown for already: nothing more
    print(json.dumps(faults))
""")


def _faults(mode: str) -> list[int]:
    env = {**os.environ, **ALLOCATOR, "PYTHONPATH": str(Path(__file__).resolve().parents[2]), "OMP_NUM_THREADS": "1"}
    out = subprocess.run([sys.executable, "-c", CHILD, mode], env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_a_grown_heap_serves_the_first_windows_outputs_from_faulted_pages():
    plain, grown = _faults("plain"), _faults("grow")
    pages = 40 * (1 << 20) // 4096  # one window's outputs
    assert plain[0] > pages * 0.8 and plain[1] > pages * 0.8, plain  # a heap growing by a window at a time
    assert max(grown) < pages * 0.1, grown  # from the first window on: at most stray pages
