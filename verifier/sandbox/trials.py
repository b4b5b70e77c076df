"""The child's correctness and timing phases over the shared input plan (verifier.inputs)."""

from __future__ import annotations

import time

import torch

from verifier import inputs as inp
from verifier.gates.latency import time_interleaved
from verifier.sandbox import integrity
from verifier.sandbox.child import candidate_error


class TrialRunner:
    def __init__(self, child, problem, candidate, reference, snapshot) -> None:
        self.child, self.problem, self.candidate, self.reference = child, problem, candidate, reference
        self.snapshot, self.cfg = snapshot, child.cfg
        self.seed = self.cfg["input_seed"]
        self.plan = inp.plan(self.cfg["correctness_trials"])
        self.kept: list[tuple[torch.Tensor, torch.Tensor]] = []  # earlier outputs, kept alive
        self.base_thread_count = integrity.os_thread_count()

    def call(self, inputs: list) -> list[torch.Tensor]:
        outputs = integrity.guarded_call(self.candidate, inputs, self.kept)
        self.kept.extend((o, o.clone()) for o in outputs)
        self.kept = self.kept[-8:]
        return outputs

    def fail(self, kind: str, phase: str, exc: BaseException) -> bool:
        if isinstance(exc, integrity.IntegrityError):
            self.child.send({"kind": "integrity", "reason": f"{exc} ({phase})"})
        else:
            self.child.send({"kind": "error", "phase": kind, "error": candidate_error(exc)})
        return False

    def correctness(self) -> bool:
        """Run every check trial and the perturbation probe; send outputs; True if sent."""
        metas, arrays = [], []
        first_inputs = None
        for trial in [t for t in self.plan if t.kind in ("check", "perturb")]:
            try:
                if trial.kind == "perturb":
                    inputs = first_inputs
                    inp.perturb_in_place(inputs, self.seed)  # same storage, new values
                else:
                    inputs = inp.make_inputs(self.problem, self.seed, trial)
                outputs = self.call(inputs)
                if trial.index == 0:
                    first_inputs = inputs
                    integrity.check_late_writes(outputs)
                    again = self.call([x.clone() if isinstance(x, torch.Tensor) else x for x in inputs])
                    if any(not _close(a, b, self.cfg) for a, b in zip(outputs, again)):
                        raise integrity.IntegrityError("two calls on the same input gave different outputs (nondeterministic)")
            except BaseException as exc:
                return self.fail("correctness", f"trial {trial.index}, {trial.distribution} inputs", exc)
            metas.append(_meta(trial, outputs))
            arrays.extend(inp.to_numpy(o) for o in outputs)
        if self.child.check_state(self.snapshot, "correctness") or self.check_threads("correctness"):
            return False
        self.child.send({"kind": "correctness", "trials": metas}, arrays)
        return True

    def check_threads(self, phase: str) -> bool:
        count = integrity.os_thread_count()
        allowed = self.base_thread_count + self.cfg["threads"]
        if count > allowed:
            self.child.send({"kind": "integrity", "reason": f"{count} OS threads after {phase}, at most {allowed} "
                             "allowed (no threads beyond the OpenMP pool)"})
            return True
        return False

    def latency(self, backend) -> None:
        cfg = self.cfg

        def fresh(counter: int) -> list:
            return inp.make_inputs(self.problem, inp.derive_seed(self.seed, "timing"), inp.Trial(counter, "check", "normal"))

        def run_candidate(inputs: list) -> None:
            with torch.no_grad():
                self.candidate(*inputs)

        def run_reference(inputs: list) -> None:
            with torch.no_grad():
                self.reference(*inputs)

        try:
            times = time_interleaved(run_candidate, run_reference, fresh, backend.timer(), cfg["latency_rounds"],
                                     cfg["calls_per_round"], cfg["warmup_calls"], inp.derive_seed(self.seed, "order"))
        except BaseException as exc:
            self.fail("latency", "timing", exc)
            return
        if self.child.check_state(self.snapshot, "timing") or self.check_threads("timing"):
            return
        metas, arrays = [], []
        for trial in [t for t in self.plan if t.kind == "post"]:
            try:
                outputs = self.call(inp.make_inputs(self.problem, self.seed, trial))
            except BaseException as exc:
                self.fail("latency", f"post-timing trial {trial.index}", exc)
                return
            metas.append(_meta(trial, outputs))
            arrays.extend(inp.to_numpy(o) for o in outputs)
        self.child.send({"kind": "latency", "candidate_ms": list(times.candidate_ms),
                         "reference_ms": list(times.reference_ms), "calls_per_round": cfg["calls_per_round"],
                         "trials": metas}, arrays)


def _close(a: torch.Tensor, b: torch.Tensor, cfg: dict) -> bool:
    """Repeat calls must agree within the task tolerance (OpenMP reductions may reorder sums)."""
    if a.shape != b.shape or a.dtype != b.dtype:
        return False
    return torch.allclose(a.double(), b.double(), rtol=cfg["rtol"], atol=cfg["atol"], equal_nan=True)


def _meta(trial, outputs: list[torch.Tensor]) -> dict:
    return {"index": trial.index, "kind": trial.kind, "distribution": trial.distribution,
            "outputs": [{"dtype": str(o.dtype).removeprefix("torch."), "shape": list(o.shape)} for o in outputs]}
