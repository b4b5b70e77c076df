"""Issue 23, "bad input" of the runner: candidates whose process dies at each phase, hangs, floods its
result channel or answers garbage on it (complete candidates, a load_c ReLU; static checks off).

``gate`` is the gate of the phase where it happens (load is part of the compile gate); ``also``
lists other gates that may fail instead for channel abuse (a malformed frame is a runtime
integrity failure: the hack gate). ``timeout_s`` is the verification's run-time budget (a hang
costs all of it).
"""

from __future__ import annotations

from dataclasses import dataclass

TEMPLATE = '''import gc
import os
import struct
import sys
import time

import torch
import torch.nn as nn
from verifier.cpu_native import load_c

SOURCE = r"""
extern "C" void relu(const float* x, float* y, long n) {{
    for (long i = 0; i < n; ++i) y[i] = x[i] > 0.0f ? x[i] : 0.0f;
}}
extern "C" void crash() {{ *(volatile int*)0 = 1; }}
"""

lib = load_c(SOURCE, {{"relu": "const float*, float*, int64", "crash": ""}})
CHECKED_CALLS = 7  # 5 trials, trial 0 repeated, the in-place probe: the calls after these are timed
{at_import}


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.calls = 0

    def forward(self, x):
        self.calls += 1
        {in_forward}
        x = x.contiguous()
        y = torch.empty_like(x)
        lib.relu(x, y, x.numel())
        return y
'''
CHANNEL = "int(sys.argv[1])"  # the runner is `python -m verifier.sandbox.candidate_runner CHANNEL_FD PAGE_FD`


@dataclass(frozen=True)
class RunnerCase:
    name: str
    covers: str
    gate: str
    at_import: str = ""
    in_forward: str = "pass"
    also: tuple[str, ...] = ()
    timeout_s: float = 30.0
    z23: str = "runner"

    @property
    def source(self) -> str:
        return TEMPLATE.format(at_import=self.at_import, in_forward=self.in_forward)


CASES = (
    RunnerCase("dies_at_load_exit", "exits (code 3) while importing", "compile", at_import="os._exit(3)"),
    RunnerCase("dies_at_load_segfault", "segfaults in native code while importing", "compile", at_import="lib.crash()"),
    RunnerCase("dies_in_correctness", "exits (code 4) in its first forward", "correctness", in_forward="os._exit(4)"),
    RunnerCase("dies_in_latency", "exits (code 5) at its first timed call", "latency",
               in_forward="if self.calls > CHECKED_CALLS:\n            os._exit(5)"),
    RunnerCase("hangs_at_load", "spins forever while importing", "compile", at_import="while True:\n    pass",
               timeout_s=12.0),
    RunnerCase("hangs_in_latency", "spins forever at its first timed call", "latency",
               in_forward="while self.calls > CHECKED_CALLS:\n            pass", timeout_s=12.0),
    RunnerCase("floods_its_channel", "announces a 1 GiB frame on its result channel, then stalls", "compile",
               at_import=f"os.write({CHANNEL}, struct.pack('<Q', 1 << 30))\ntime.sleep(3600)", also=("hack",),
               timeout_s=12.0),
    RunnerCase("answers_garbage", "writes random bytes on its result channel, then goes on", "compile",
               at_import=f"os.write({CHANNEL}, os.urandom(4096))", also=("hack",)),
    RunnerCase("answers_garbage_in_a_well_formed_frame", "a well-formed frame on its channel whose fields are "
               "garbage (an Imported that claims builds it never asked for, an array of 2^40 elements)", "compile",
               also=("hack",),
               at_import=("from verifier.sandbox import channel\n"
                          f"os.write({CHANNEL}, channel.encode({{'kind': 'imported', 'builds': 'many', "
                          "'arrays': [{'dtype': 'float32', 'shape': [1 << 40]}]}))")),
)
