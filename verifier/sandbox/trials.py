"""The child's correctness and timing phases over the shared input plan (verifier.sandbox.inputs).

Device-aware through the Backend interface: inputs are made on the CPU from the secret seed and
placed on ``backend.device()`` (:mod:`verifier.sandbox.device_io`); the candidate's outputs are
checked there after ``backend.synchronize()`` and copied to the CPU for the parent's comparison
with the reference worker's CPU outputs; timing goes through ``backend.timer()`` (CUDA events
and an L2 flush on a GPU, a synchronized wall clock on the CPU).
"""

from __future__ import annotations

import torch

from verifier.sandbox import audit, device_io, integrity
from verifier.sandbox import inputs as inp
from verifier.sandbox import messages as msg
from verifier.sandbox.child import candidate_error
from verifier.sandbox.timer import Audit, time_interleaved


class TrialRunner:
    def __init__(self, child, problem, candidate, reference, snapshot, backend) -> None:
        self.child, self.problem, self.candidate, self.reference = child, problem, candidate, reference
        self.snapshot, self.cfg, self.backend = snapshot, child.cfg, backend
        self.device = device_io.device_of(backend)
        self.seed = self.cfg.trials.input_seed
        self.plan = inp.plan(self.cfg.trials.correctness_trials)
        self.kept: list[tuple[torch.Tensor, torch.Tensor]] = []  # earlier outputs, kept alive
        self.base_thread_count = integrity.os_thread_count()

    def inputs(self, trial: inp.Trial, seed: int | None = None) -> tuple[list, list]:
        """(host inputs made from the seed, the same inputs placed on the backend's device)."""
        host = inp.make_inputs(self.problem, self.seed if seed is None else seed, trial)
        return host, device_io.place(host, self.device)

    def call(self, inputs: list) -> list[torch.Tensor]:
        outputs = integrity.guarded_call(self.candidate, inputs, self.kept, self.device, self.backend.synchronize)
        self.kept.extend((o, o.clone()) for o in outputs)
        self.kept = self.kept[-8:]
        return outputs

    def fail(self, kind: str, phase: str, exc: BaseException) -> bool:
        if isinstance(exc, integrity.IntegrityError):
            self.child.send(msg.IntegrityViolation(f"{exc} ({phase})"))
        else:
            self.child.send(msg.CandidateError(kind, candidate_error(exc)))
        return False

    def correctness(self) -> bool:
        """Run every check trial and the perturbation probe; send outputs; True if sent."""
        results = []
        first = None
        for trial in [t for t in self.plan if t.kind in ("check", "perturb")]:
            try:
                if trial.kind == "perturb":
                    host, inputs = first
                    inp.perturb_in_place(host, self.seed)  # as the reference worker does, on the CPU
                    device_io.refresh(inputs, host)  # same device storage, new values
                else:
                    host, inputs = self.inputs(trial)
                outputs = self.call(inputs)
                if trial.index == 0:
                    first = host, inputs
                    integrity.check_late_writes(outputs, self.backend.synchronize)
                    again = self.call([x.clone() if isinstance(x, torch.Tensor) else x for x in inputs])
                    if any(not _close(a, b, self.cfg) for a, b in zip(outputs, again)):
                        raise integrity.IntegrityError("two calls on the same input gave different outputs (nondeterministic)")
            except BaseException as exc:
                return self.fail("correctness", f"trial {trial.index}, {trial.distribution} inputs", exc)
            results.append(_outputs(trial, outputs))
        if self.child.check_state(self.snapshot, "correctness") or self.check_threads("correctness"):
            return False
        self.child.send(msg.TrialBatch(tuple(results), self.backend.runtime_note()))
        return True

    def check_threads(self, phase: str) -> bool:
        count = integrity.os_thread_count()
        allowed = self.base_thread_count + self.cfg.trials.threads
        if count > allowed:
            self.child.send(msg.IntegrityViolation(f"{count} OS threads after {phase}, at most {allowed} "
                                                   "allowed (no threads beyond the OpenMP pool)"))
            return True
        return False

    def latency(self, backend) -> None:
        cfg = self.cfg

        def fresh(counter: int) -> list:  # made on the CPU and placed before the timer starts
            return self.inputs(inp.Trial(counter, "check", "normal"), inp.derive_seed(self.seed, "timing"))[1]

        def run_candidate(inputs: list):
            with torch.no_grad():
                return self.candidate(*inputs)

        def run_reference(inputs: list):
            with torch.no_grad():
                return self.reference(*inputs)

        timed_calls = cfg.latency_rounds * cfg.calls_per_round
        audited = audit.audited_calls(audit.audit_trials(self.plan), timed_calls, self.seed)
        audit_run = Audit({call: device_io.place(inp.inputs_for(self.problem, self.seed, trial), self.device)
                             for call, trial in audited.items()}, device_io.overwrite)
        try:
            times = time_interleaved(run_candidate, run_reference, fresh, backend.timer(), cfg.latency_rounds,
                                     cfg.calls_per_round, cfg.warmup_calls, inp.derive_seed(self.seed, "order"),
                                     audit_run)
            self.backend.synchronize()
            audits = tuple(self.audited_outputs(trial, audit_run.kept[call]) for call, trial in audited.items())
        except BaseException as exc:
            self.fail("latency", "timing", exc)
            return
        if self.child.check_state(self.snapshot, "timing") or self.check_threads("timing"):
            return
        post = []
        for trial in [t for t in self.plan if t.kind == "post"]:
            try:
                outputs = self.call(self.inputs(trial)[1])
            except BaseException as exc:
                self.fail("latency", f"post-timing trial {trial.index}", exc)
                return
            post.append(_outputs(trial, outputs))
        self.child.send(msg.Timing(times.candidate_ms, times.reference_ms, tuple(post), audits))

    def audited_outputs(self, trial: inp.Trial, result) -> msg.TrialOutputs:
        """An audited call's outputs (kept while timing, read only now), typed for the parent."""
        outputs = integrity.as_outputs(result)
        for i, out in enumerate(outputs):
            if type(out) is not torch.Tensor or not device_io.on_device(out, self.device):
                raise integrity.IntegrityError(f"audited timed call: output {i} is not a plain tensor on {self.device}")
        return _outputs(trial, outputs)


def _close(a: torch.Tensor, b: torch.Tensor, cfg: msg.ChildConfig) -> bool:
    """Repeat calls must agree within the task tolerance (OpenMP reductions may reorder sums)."""
    if a.shape != b.shape or a.dtype != b.dtype:
        return False
    return torch.allclose(a.double(), b.double(), rtol=cfg.rtol, atol=cfg.atol, equal_nan=True)


def _outputs(trial: inp.Trial, outputs: list[torch.Tensor]) -> msg.TrialOutputs:
    """The trial's outputs copied to the host as numpy, typed for the parent."""
    return msg.TrialOutputs(trial.index, trial.kind, trial.distribution,
                            tuple(str(o.dtype).removeprefix("torch.") for o in outputs),
                            tuple(inp.to_numpy(device_io.to_host(o)) for o in outputs))
