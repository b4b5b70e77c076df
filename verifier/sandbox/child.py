"""The sandboxed child: compile, then (seccomp on) load the candidate, run the correctness trials
under the runtime integrity checks, and, when the parent says go, time candidate against
reference and recompute the post-timing trials.

Run as ``python -m verifier.sandbox.child IN_FD OUT_FD``. Every result goes to OUT_FD as a
nonce-tagged frame; stdout/stderr are only logs. The parent decides every gate.
"""

from __future__ import annotations

import os
import resource
import sys
import time
import traceback
from pathlib import Path

from verifier.sandbox.channel import read_message, write_message


def _limit(cfg: dict) -> None:
    mb = 1 << 20
    resource.setrlimit(resource.RLIMIT_AS, (cfg["memory_limit_mb"] * mb,) * 2)
    resource.setrlimit(resource.RLIMIT_FSIZE, (cfg["file_size_limit_mb"] * mb,) * 2)
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))


def candidate_error(exc: BaseException, limit: int = 6) -> str:
    """The exception with the candidate's own frames (what the LLM can act on)."""
    frames = [f for f in traceback.extract_tb(exc.__traceback__) if f.filename == "candidate.py"]
    where = "".join(f"  candidate.py line {f.lineno}: {(f.line or '').strip()}\n" for f in frames[-limit:])
    text = f"{type(exc).__name__}: {exc}".strip()
    return (where + text)[:2000]


class Child:
    def __init__(self, cfg: dict, out_fd: int, in_fd: int) -> None:
        self.cfg, self.out_fd, self.in_fd, self.nonce = cfg, out_fd, in_fd, cfg["nonce"]

    def send(self, header: dict, arrays: list = ()) -> None:
        write_message(self.out_fd, {**header, "nonce": self.nonce}, list(arrays))

    def run(self) -> None:
        import torch

        torch.set_num_threads(self.cfg["threads"])
        torch.set_num_interop_threads(1)
        from verifier.backends import get_backend

        from verifier.backends.base import CompileOutcome

        backend = get_backend(self.cfg["backend"])
        build_dir = Path(self.cfg["cache_dir"])
        gates = set(self.cfg.get("gates", ("compile", "correctness")))  # the parent's gate plan
        if "compile" in gates:
            outcome = backend.compile(self.cfg["candidate_source"], build_dir, self.cfg["compile_timeout_s"])
        else:  # no compiler here: the parent reports the gate as unavailable, correctness still runs
            outcome = CompileOutcome(True, "", 0.0)
        report = {"kind": "compile", "ok": outcome.ok, "diagnostics": outcome.diagnostics,
                  "seconds": outcome.seconds, "cached": outcome.cached}
        if outcome.ok:  # still no candidate code has run: these hashes and findings are the build's own
            report.update(build_report(outcome, backend, build_dir, tuple(self.cfg.get("disabled_checks", ()))))
        self.send(report)
        if outcome.ok and not report.get("policy") and "correctness" in gates:
            self.run_sandboxed(backend, build_dir)

    def run_sandboxed(self, backend, build_dir: Path) -> None:
        from verifier.sandbox import inputs as inp
        from verifier.sandbox import device_io, integrity, seccomp

        problem = inp.load_problem(self.cfg["task_source"])
        integrity.warm_up()
        backend.before_sandbox()
        backend.synchronize()  # initialises the device context (driver threads) before the snapshot
        exec_reason = backend.exec_after_load()  # per-backend policy, see Backend.exec_after_load
        seccomp_on = False if exec_reason else seccomp.install()
        snapshot = integrity.Snapshot()
        start = time.perf_counter()
        try:
            model_new_cls = backend.load(self.cfg["candidate_source"], build_dir)
            reference, candidate = inp.build_models(problem, [problem.Model, model_new_cls], self.cfg["init_seed"])
            device = device_io.device_of(backend)  # built on the CPU with the init seed, then placed
            reference, candidate = device_io.place_model(reference, device), device_io.place_model(candidate, device)
        except BaseException as exc:  # the candidate's import or constructor failed
            self.send({"kind": "load", "ok": False, "error": candidate_error(exc)})
            return
        self.send({"kind": "load", "ok": True, "seconds": time.perf_counter() - start, "seccomp": seccomp_on,
                   "seccomp_off_reason": exec_reason})
        if self.check_state(snapshot, "import and construction"):
            return
        from verifier.sandbox.trials import TrialRunner

        runner = TrialRunner(self, problem, candidate, reference, snapshot, backend)
        if runner.correctness() and self.wait_for_go():
            runner.latency(backend)

    def check_state(self, snapshot, phase: str) -> bool:
        changes = snapshot.changes()
        if changes:
            self.send({"kind": "integrity", "reason": f"process-global state changed during {phase}: "
                       f"{', '.join(changes[:4])}"})
        return bool(changes)

    def wait_for_go(self) -> bool:
        message = read_message(self.in_fd, time.monotonic() + self.cfg["timeout_s"], self.nonce)
        return message.kind == "go"


def build_report(outcome, backend, build_dir: Path, disabled: tuple[str, ...]) -> dict:
    """The compile report's trusted part: hashes of the built files (for the compile cache) and the
    build-policy findings (preprocessed code, included files, undefined symbols)."""
    from verifier.gates.hack_build import check_units
    from verifier.sandbox import isolation
    from verifier.sandbox.compile_cache import hash_artifacts

    roots = (*isolation.SYSTEM_READ_EXEC, *isolation.runtime_read_exec(backend.sandbox_paths()), str(build_dir))
    findings = check_units(outcome.units, roots, disabled)
    return {"artifacts": hash_artifacts(build_dir, outcome.artifacts),
            "policy": [f.line_text() for f in findings]}


def main(argv: list[str]) -> int:
    in_fd, out_fd = int(argv[1]), int(argv[2])
    cfg = read_message(in_fd, time.monotonic() + 120, None).header
    _limit(cfg)
    os.chdir(cfg["workdir"])
    Child(cfg, out_fd, in_fd).run()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
