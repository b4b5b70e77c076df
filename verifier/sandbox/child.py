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
from dataclasses import replace
from pathlib import Path

from verifier.sandbox import messages as msg


def _limit(cfg: msg.ChildConfig) -> None:
    mb = 1 << 20
    resource.setrlimit(resource.RLIMIT_AS, (cfg.memory_limit_mb * mb,) * 2)
    resource.setrlimit(resource.RLIMIT_FSIZE, (cfg.file_size_limit_mb * mb,) * 2)
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))


def candidate_error(exc: BaseException, limit: int = 6) -> str:
    """The exception with the candidate's own frames (what the LLM can act on)."""
    frames = [f for f in traceback.extract_tb(exc.__traceback__) if f.filename == "candidate.py"]
    where = "".join(f"  candidate.py line {f.lineno}: {(f.line or '').strip()}\n" for f in frames[-limit:])
    text = f"{type(exc).__name__}: {exc}".strip()
    return (where + text)[:2000]


class Child:
    def __init__(self, cfg: msg.ChildConfig, out_fd: int, in_fd: int) -> None:
        self.cfg, self.out_fd, self.in_fd, self.nonce = cfg, out_fd, in_fd, cfg.nonce

    def send(self, message) -> None:
        msg.send(self.out_fd, self.nonce, message)

    def run(self) -> None:
        import torch

        torch.set_num_threads(self.cfg.trials.threads)
        torch.set_num_interop_threads(1)
        from verifier.backends import get_backend

        backend = get_backend(self.cfg.backend)
        backend.configure(dict(self.cfg.backend_context))
        build_dir = Path(self.cfg.cache_dir)
        if "compile" in self.cfg.gates:
            outcome = backend.compile(self.cfg.candidate_source, build_dir, self.cfg.compile_timeout_s)
            report = msg.CompileReport(outcome.ok, outcome.diagnostics, outcome.seconds, outcome.cached,
                                       note=outcome.note)
        else:  # no compiler here: the parent reports the gate as unavailable, correctness still runs
            report = msg.CompileReport(True, "", 0.0, compiled=False)
        if report.ok and report.compiled:  # still no candidate code has run: the build's own hashes and findings
            report = replace(report, **build_report(outcome, backend, build_dir, self.cfg.disabled_checks))
        self.send(report)
        if report.ok and not report.policy and "correctness" in self.cfg.gates:
            self.run_sandboxed(backend, build_dir)

    def run_sandboxed(self, backend, build_dir: Path) -> None:
        from verifier.sandbox import inputs as inp
        from verifier.sandbox import device_io, integrity, seccomp

        problem = inp.load_problem(self.cfg.trials.task_source)
        integrity.warm_up()
        backend.before_sandbox()
        backend.synchronize()  # initialises the device context (driver threads) before the snapshot
        exec_reason = backend.exec_after_load()  # per-backend policy, see Backend.exec_after_load
        seccomp_on = False if exec_reason else seccomp.install()
        snapshot = integrity.Snapshot()
        start = time.perf_counter()
        try:
            model_new_cls = backend.load(self.cfg.candidate_source, build_dir)
            reference, candidate = inp.build_models(problem, [problem.Model, model_new_cls], self.cfg.trials.init_seed)
            device = device_io.device_of(backend)  # built on the CPU with the init seed, then placed
            reference, candidate = device_io.place_model(reference, device), device_io.place_model(candidate, device)
        except BaseException as exc:  # the candidate's import or constructor failed
            self.send(msg.LoadReport(False, error=candidate_error(exc)))
            return
        self.send(msg.LoadReport(True, time.perf_counter() - start, seccomp=seccomp_on, seccomp_off_reason=exec_reason))
        if self.check_state(snapshot, "import and construction"):
            return
        from verifier.sandbox.trials import TrialRunner

        runner = TrialRunner(self, problem, candidate, reference, snapshot, backend)
        if runner.correctness() and self.wait_for_go():
            runner.latency(backend)

    def check_state(self, snapshot, phase: str) -> bool:
        changes = snapshot.changes()
        if changes:
            self.send(msg.IntegrityViolation(f"process-global state changed during {phase}: {', '.join(changes[:4])}"))
        return bool(changes)

    def wait_for_go(self) -> bool:
        return isinstance(msg.receive(self.in_fd, time.monotonic() + self.cfg.timeout_s, self.nonce), msg.Go)


def build_report(outcome, backend, build_dir: Path, disabled: tuple[str, ...]) -> dict[str, tuple]:
    """The compile report's trusted part: hashes of the built files (for the compile cache) and the
    build-policy findings (preprocessed code, included files, undefined symbols)."""
    from verifier.gates.hack_build import check_units
    from verifier.sandbox import isolation
    from verifier.sandbox.compile_cache import hash_artifacts

    roots = (*isolation.SYSTEM_READ_EXEC, *isolation.runtime_read_exec(backend.sandbox_paths()), str(build_dir))
    findings = check_units(outcome.units, roots, disabled)
    return {"artifacts": tuple(sorted(hash_artifacts(build_dir, outcome.artifacts).items())),
            "policy": tuple(f.line_text() for f in findings)}


def main(argv: list[str]) -> int:
    in_fd, out_fd = int(argv[1]), int(argv[2])
    cfg = msg.receive(in_fd, time.monotonic() + 120, None)
    if not isinstance(cfg, msg.ChildConfig):
        raise SystemExit(f"expected a child configuration, got {cfg.KIND}")
    _limit(cfg)
    os.chdir(cfg.workdir)
    Child(cfg, out_fd, in_fd).run()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
