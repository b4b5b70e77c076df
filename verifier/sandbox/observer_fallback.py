"""The runner's observer where the native one cannot be built: a Python ``TorchDispatchMode``, entered
for good once armed, counting into the same shared page (verifier.sandbox.observer).

Weaker than the native observer: it sees what reaches the dispatcher's Python mode (Python and C++
callers alike), but Python code that reaches the interpreter's internals can pop it, and operators
below the dispatcher's Python key (composites decomposed before it) are not seen. The verdict warns
"runtime observation in Python only" wherever it is used.
"""

from __future__ import annotations

import struct

from torch.utils._python_dispatch import TorchDispatchMode


class DispatchCounter(TorchDispatchMode):
    def __init__(self, page, head: struct.Struct, name_bytes: int, name_slots: int) -> None:
        super().__init__()
        self.page, self.head, self.name_bytes, self.name_slots = page, head, name_bytes, name_slots
        self.total = self.forbidden = 0

    @classmethod
    def _should_skip_dynamo(cls) -> bool:
        return False  # no torch.compile here; skipping would import torch._dynamo

    def arm(self) -> None:
        magic = self.head.unpack(bytes(self.page[: self.head.size]))[0]
        self.page[: self.head.size] = self.head.pack(magic, 0, 0, 1)
        self.__enter__()

    def own(self) -> tuple[str, ...]:
        """The namespaces the monitor proved the candidate's (any other non-aten namespace is torch's)."""
        from verifier.sandbox.observer import OWN_OFFSET, OWN_SLOTS

        raw = (bytes(self.page[OWN_OFFSET + k * self.name_bytes: OWN_OFFSET + (k + 1) * self.name_bytes])
               for k in range(OWN_SLOTS))
        return tuple(n for n in (r.split(b"\0")[0].decode(errors="replace") for r in raw) if n)

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        from verifier.sandbox.observer import ALLOWED_OPS

        name, namespace = func._overloadpacket.__name__, func.namespace
        self.total += 1
        if not (name in ALLOWED_OPS if namespace == "aten" else namespace in self.own()):
            if self.forbidden < self.name_slots:
                start = self.head.size + self.forbidden * self.name_bytes
                raw = f"{namespace}::{name}".encode()[: self.name_bytes - 1]
                self.page[start: start + self.name_bytes] = raw.ljust(self.name_bytes, b"\0")
            self.forbidden += 1
        magic = self.head.unpack(bytes(self.page[: self.head.size]))[0]
        self.page[: self.head.size] = self.head.pack(magic, self.total, self.forbidden, 1)
        return func(*args, **(kwargs or {}))
