"""A test-only backend: the CPU backend driven through the device protocol (Prime, Call, Collect:
verifier.sandbox.serve), printing every device hook the runner calls (synchronize, the cache flush)
and the device of every tensor handed to the candidate's forward (and a checksum of the first one's
bytes), onto the runner's log.

Loaded inside the runner through the registry as ``tests.verifier.recording_backend:RecordingBackend``
(an entry-point style name).
"""

from __future__ import annotations

import zlib

import torch

from verifier.backends.cpu import CpuBackend

NAME = "tests.verifier.recording_backend:RecordingBackend"


def record(event: str) -> None:
    print(f"hook {event}", flush=True)


class RecordingBackend(CpuBackend):
    def staged_calls(self) -> bool:
        return True  # what a GPU backend does, here on the CPU

    def load(self, candidate_source: str, workdir: str) -> type:
        model_new = super().load(candidate_source, workdir)

        class Recorded(model_new):
            def forward(self, *args):
                devices = [str(a.device) for a in args if isinstance(a, torch.Tensor)]
                params = [str(p.device) for p in self.parameters()]
                record("forward " + " ".join(devices) + " | " + " ".join(params) + f" | {_checksum(args[0])}")
                return super().forward(*args)

        return Recorded

    def synchronize(self) -> None:
        record("sync")

    def flush_cache(self) -> None:
        record("flush")


def _checksum(tensor: torch.Tensor) -> int:
    return zlib.crc32(tensor.numpy().tobytes())


def read_log(text: str) -> list[str]:
    return [line.removeprefix("hook ") for line in text.splitlines() if line.startswith("hook ")]
