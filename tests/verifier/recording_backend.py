"""A test-only backend: the CPU backend with device() "cpu" that records, in a log file in its
build dir, every call of the Backend device hooks the sandbox child makes (synchronize, timer,
each timed call) and the device of every tensor handed to the candidate's forward.

Loaded inside the sandbox child through the registry as
``tests.verifier.recording_backend:RecordingBackend`` (an entry-point style name).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable

import torch

from verifier.backends.base import CompileOutcome
from verifier.backends.cpu import CpuBackend

NAME = "tests.verifier.recording_backend:RecordingBackend"
LOG = "device-hooks.log"


class RecordingBackend(CpuBackend):
    log_path: Path | None = None

    def record(self, event: str) -> None:
        if self.log_path is not None:
            with open(self.log_path, "a") as log:
                log.write(event + "\n")

    def compile(self, candidate_source: str, build_dir: Path, timeout_s: float) -> CompileOutcome:
        self.log_path = build_dir / LOG
        self.record("compile")
        return super().compile(candidate_source, build_dir, timeout_s)

    def load(self, candidate_source: str, build_dir: Path) -> type:
        model_new = super().load(candidate_source, build_dir)
        backend = self

        class Recorded(model_new):
            def forward(self, *args):
                devices = [str(a.device) for a in args if isinstance(a, torch.Tensor)]
                params = [str(p.device) for p in self.parameters()]
                backend.record("forward " + " ".join(devices) + " | " + " ".join(params))
                return super().forward(*args)

        return Recorded

    def device(self) -> str:
        self.record("device")
        return "cpu"

    def synchronize(self) -> None:
        self.record("sync")

    def timer(self) -> Callable[[Callable[[], Any]], float]:
        self.record("timer")
        inner = super().timer()

        def time_once(fn: Callable[[], Any]) -> float:
            self.record("timed")
            return inner(fn)

        return time_once


def read_log(build_dir: Path) -> list[str]:
    return (build_dir / LOG).read_text().splitlines()
