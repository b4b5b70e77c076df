"""The runner: the one process that runs candidate code, holding nothing worth taking.

``python -m verifier.sandbox.candidate_runner CHANNEL_FD PAGE_FD``, started confined by the launcher
(namespaces, uid, Landlock: verifier.sandbox.isolation). Its own start-up, all before any candidate
code: import torch, set the thread budget, let the backend prepare (device context, interpreter
mode), load the ATen observer (verifier.sandbox.observer) onto the shared page ``PAGE_FD``, install the
runner's seccomp filter (verifier.sandbox.seccomp), answer Ready. A pooled runner then waits for its
candidate.

Then, driven by the monitor (verifier.sandbox.messages): Start brings the candidate's source; the
backend's loaders are replaced by ones that send each call's actual arguments to the
monitor (BuildRequest) and load only the library the monitor built, checked and placed; the candidate
is imported; Init brings ``get_init_inputs()``'s values and ModelNew is constructed; the observer is
armed; Attach brings the arena (shared memory); each Call runs ``forward`` on inputs viewing the arena
and copies the outputs into it.

What it does not hold: input seeds, reference outputs, the reference model, a timer that counts, any
comparison, anything about which call is checked. What it reports is data the monitor validates.
"""

from __future__ import annotations

import os
import sys
import time
import traceback

from verifier.sandbox import messages as msg
from verifier.sandbox.arena import Arena
from verifier.sandbox.channel import Channel

MAX_IN = 64 << 20  # the largest message a runner accepts (the candidate's source, init values)
NO_DEADLINE = 7 * 24 * 3600.0


def candidate_error(exc: BaseException, limit: int = 6) -> str:
    """The exception with the candidate's own frames (what the LLM can act on)."""
    frames = [f for f in traceback.extract_tb(exc.__traceback__) if f.filename.endswith("candidate.py")]
    where = "".join(f"  candidate.py line {f.lineno}: {(f.line or '').strip()}\n" for f in frames[-limit:])
    return (where + f"{type(exc).__name__}: {exc}".strip())[:2000]


def os_thread_count() -> int:
    return len(os.listdir("/proc/self/task"))


class Runner:
    def __init__(self, channel: Channel, page_fd: int) -> None:
        self.channel, self.page_fd = channel, page_fd
        self.arena: Arena | None = None
        self.model = None
        self.backend = None

    def receive(self, *expect: type):
        return msg.receive(self.channel, time.monotonic() + NO_DEADLINE, MAX_IN, expect, keep_fds=True)

    def send(self, message) -> None:
        msg.send(self.channel, message)

    # ---- start-up: trusted code only --------------------------------------------------------------
    def boot(self) -> None:
        boot, _ = self.receive(msg.Boot)
        import torch

        torch.set_num_threads(boot.threads)
        torch.set_num_interop_threads(1)
        from verifier.backends import get_backend
        from verifier.sandbox import seccomp
        from verifier.sandbox.observer import RunnerObserver

        self.backend = get_backend(boot.backend)
        if boot.device != "cpu":
            # the device the monitor found: started now, or the runner fails with the driver's error (never a
            # silent fallback to the CPU: Triton's interpreter would run the kernel there)
            from verifier.backends.device_sync import start_device

            start_device(boot.device)
        self.backend.before_sandbox()
        self.backend.synchronize()  # device context (driver threads) before the filter
        self.observer = RunnerObserver(Arena.attach(self.page_fd), boot.observer)
        import verifier.sandbox.torch_values  # noqa: F401 - everything the calls need, imported now
        off = self.backend.exec_after_load()
        on = False if off else seccomp.install(seccomp.RUNNER)
        self.send(msg.Ready(on, off or ("" if on else "no seccomp filter on this platform"), os_thread_count(),
                            "native" if self.observer.native is not None else "python"))

    # ---- one candidate -----------------------------------------------------------------------------
    def run(self) -> None:
        start, _ = self.receive(msg.Start)
        self.backend.configure(dict(start.context))
        from verifier.sandbox.loaders import BuildClient

        client = BuildClient(self.channel, load=start.load_artifacts)
        self.backend.install_loaders(client)
        try:
            model_new = self.backend.load(start.candidate, os.getcwd())
        except BaseException as exc:  # the candidate's import failed (its builds' verdicts are the monitor's)
            self.send(msg.LoadFailed("import", candidate_error(exc)))
            return
        self.send(msg.Imported(client.count))
        if not start.construct:
            self.receive(msg.Stop)
            return
        init, _ = self.receive(msg.Init)
        if not self.construct(model_new, init, start):
            return
        client.closed = True  # builds happen at import and construction, never in forward
        self.send(msg.Constructed())
        self.observer.arm()
        self.serve()

    def construct(self, model_new: type, init: msg.Init, start: msg.Start) -> bool:
        from kernelbench_npu import instantiate
        from verifier.sandbox.torch_values import decode_torch

        try:
            values = [instantiate.cast(v, start.dtype) for v in decode_torch(init.values, list(init.arrays))]
            instantiate.seed_all(start.init_seed)
            model = model_new(*values).eval().to(instantiate.torch_dtype(start.dtype))
            self.model = model.to(self.backend.device())
        except BaseException as exc:
            self.send(msg.LoadFailed("construct", candidate_error(exc)))
            return False
        return True

    def serve(self) -> None:
        from verifier import cpu_native
        from verifier.sandbox.serve import CallServer

        CallServer(self.channel, self.model, self.backend.device(), self.backend.synchronize, self.arena,
                   calls=lambda: cpu_native.CALLS[0], note=self.backend.runtime_note,
                   flush=getattr(self.backend, "flush_cache", None)).serve()


def main(argv: list[str]) -> int:
    runner = Runner(Channel.from_fd(int(argv[1])), int(argv[2]))
    runner.boot()
    runner.run()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
