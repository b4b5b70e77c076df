"""The typed messages between the trusted parent and its sandbox processes, parsed once.

Every frame on a sandbox pipe (verifier.sandbox.channel) carries one of these. A sender builds a
message object and calls :func:`send`; the receiver's :func:`receive` checks framing and nonce
(channel) and turns the frame into exactly one typed object here, validating every field, so no
code past this module reads a raw header. A frame that does not parse is a :class:`ChannelError`
(a forged or corrupted result: the session treats it as a runtime integrity violation).

Parent -> child at start: ChildConfig (ReferenceConfig for the reference worker), read without a
nonce check since it carries the nonce. Child -> parent: CompileReport, LoadReport, TrialBatch
(correctness), Timing (latency, with the post-timing trials and the audited timed calls),
IntegrityViolation, CandidateError. Reference worker -> parent: ReferenceOutputs per trial,
ReferenceWorkload, then ReferenceDone. Parent -> child: Go (start timing); a child the parent
no longer needs is killed, not asked to stop.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields
from typing import Any, Callable, ClassVar

import numpy as np

from verifier.sandbox.channel import ChannelError, Message, read_message, write_message


@dataclass(frozen=True)
class TrialSpec:
    """What the child and the reference worker both need to make the same trials (bit for bit)."""

    task_source: str
    dtype: str  # the task's dtype: models, parameters and float inputs are built in it
    init_seed: int
    input_seed: int
    correctness_trials: int
    threads: int


@dataclass(frozen=True)
class ReferenceConfig:
    KIND: ClassVar[str] = "reference-config"
    nonce: str
    workdir: str
    trials: TrialSpec


@dataclass(frozen=True)
class ChildConfig:
    KIND: ClassVar[str] = "child-config"
    nonce: str
    workdir: str
    trials: TrialSpec
    candidate_source: str
    backend: str
    gates: tuple[str, ...]  # the gates the parent's plan runs here
    backend_context: tuple[tuple[str, str], ...]  # Backend.compile_context(task), for Backend.configure
    cache_dir: str
    atol: float
    rtol: float
    compile_timeout_s: float
    timeout_s: float
    latency_rounds: int
    calls_per_round: int
    warmup_calls: int
    memory_limit_mb: int
    file_size_limit_mb: int
    disabled_checks: tuple[str, ...] = ()  # static checks the user turned off (the build-policy checks too)


@dataclass(frozen=True)
class CompileReport:
    KIND: ClassVar[str] = "compile"
    ok: bool
    diagnostics: str
    seconds: float
    cached: bool = False
    compiled: bool = True  # False: no compiler ran here (the gate plan marks compile unavailable)
    note: str = ""  # what a passing compile reached or used (triton-ascend: HIVM; cuda: which headers)
    artifacts: tuple[tuple[str, str], ...] = ()  # (path in the build dir, sha256): for the compile cache
    policy: tuple[str, ...] = ()  # build-policy findings (verifier.gates.hack_build): a hack failure


@dataclass(frozen=True)
class LoadReport:
    """The candidate module imported and ModelNew constructed (or not, with the error)."""

    KIND: ClassVar[str] = "load"
    ok: bool
    seconds: float = 0.0
    error: str = ""
    seccomp: bool = False
    seccomp_off_reason: str = ""


@dataclass(frozen=True)
class TrialOutputs:
    """The candidate's outputs for one trial (arrays on the CPU, in output order)."""

    index: int
    kind: str  # "check" | "perturb" | "post" | "audit"
    distribution: str
    dtypes: tuple[str, ...]
    arrays: tuple[np.ndarray, ...]


@dataclass(frozen=True)
class TrialBatch:
    KIND: ClassVar[str] = "correctness"
    trials: tuple[TrialOutputs, ...]
    note: str = ""  # the backend's runtime note (Backend.runtime_note), shown with the correctness gate


@dataclass(frozen=True)
class Timing:
    """Per-round medians of interleaved calls, the trials recomputed after the timed loop and the
    outputs of the audited timed calls (verifier.sandbox.audit)."""

    KIND: ClassVar[str] = "latency"
    candidate_ms: tuple[float, ...]
    reference_ms: tuple[float, ...]
    post: tuple[TrialOutputs, ...]
    audit: tuple[TrialOutputs, ...] = ()


@dataclass(frozen=True)
class IntegrityViolation:
    KIND: ClassVar[str] = "integrity"
    reason: str


@dataclass(frozen=True)
class CandidateError:
    """The candidate raised (forward or constructor); ``error`` holds its own frames."""

    KIND: ClassVar[str] = "error"
    phase: str
    error: str


@dataclass(frozen=True)
class Fp64Reference:
    """The float64 run of the reference for one trial (verifier.gates.fp64_check).

    ``corrections[k]`` is ``r64 - r`` for output k as float32 (empty where output k is not a float);
    no corrections at all when the float64 model could not run, with the reason in ``note``."""

    corrections: tuple[np.ndarray, ...] = ()
    work: float = 1.0  # input and parameter elements per output element
    note: str = ""


@dataclass(frozen=True)
class ReferenceOutputs:
    KIND: ClassVar[str] = "reference"
    index: int
    dtypes: tuple[str, ...]
    arrays: tuple[np.ndarray, ...]
    trivial: tuple[dict[str, float], ...]  # per output: errors of trivial predictors (zeros, mean, copy)
    fp64: Fp64Reference = Fp64Reference()


@dataclass(frozen=True)
class ReferenceWorkload:
    """What one call of the task must do (verifier.sandbox.workload), for the roofline position."""

    KIND: ClassVar[str] = "workload"
    bytes_moved: int
    flops: int


@dataclass(frozen=True)
class ReferenceDone:
    KIND: ClassVar[str] = "done"


@dataclass(frozen=True)
class Go:
    KIND: ClassVar[str] = "go"


def send(fd: int, nonce: str, message: Any) -> None:
    """Encode ``message`` and write it as one nonce-tagged frame."""
    header, arrays = _ENCODERS.get(type(message), _plain)(message)
    write_message(fd, {**header, "kind": message.KIND, "nonce": nonce}, arrays)


def receive(fd: int, deadline: float, nonce: str | None) -> Any:
    """Read one frame and parse it into its message type (ChannelError if it does not parse).

    ``nonce=None`` only for the configuration a sandbox process reads first (it brings the nonce)."""
    return parse(read_message(fd, deadline, nonce))


def parse(frame: Message) -> Any:
    decoder = _DECODERS.get(frame.kind)
    if decoder is None:
        raise ChannelError(f"unexpected message kind {frame.kind!r}")
    try:
        return decoder(frame.header, list(frame.arrays))
    except (KeyError, TypeError, ValueError, IndexError) as exc:
        raise ChannelError(f"malformed {frame.kind} message ({type(exc).__name__})") from None


# ---- encoding --------------------------------------------------------------------------------
def _plain(message: Any) -> tuple[dict, list]:
    return asdict(message), []


def _trial_meta(trial: TrialOutputs) -> dict:
    return {"index": trial.index, "kind": trial.kind, "distribution": trial.distribution,
            "dtypes": list(trial.dtypes), "count": len(trial.arrays)}


def _encode_trials(trials: tuple[TrialOutputs, ...]) -> tuple[list[dict], list[np.ndarray]]:
    return [_trial_meta(t) for t in trials], [a for t in trials for a in t.arrays]


def _encode_batch(message: TrialBatch) -> tuple[dict, list]:
    metas, arrays = _encode_trials(message.trials)
    return {"trials": metas, "note": message.note}, arrays


def _encode_timing(message: Timing) -> tuple[dict, list]:
    metas, arrays = _encode_trials(message.post)
    audit_metas, audit_arrays = _encode_trials(message.audit)
    return {"candidate_ms": list(message.candidate_ms), "reference_ms": list(message.reference_ms),
            "post": metas, "audit": audit_metas}, arrays + audit_arrays


def _encode_reference(message: ReferenceOutputs) -> tuple[dict, list]:
    fp64 = message.fp64
    return ({"index": message.index, "dtypes": list(message.dtypes), "trivial": [dict(t) for t in message.trivial],
             "fp64": {"count": len(fp64.corrections), "work": fp64.work, "note": fp64.note}},
            list(message.arrays) + list(fp64.corrections))


_ENCODERS: dict[type, Callable[[Any], tuple[dict, list]]] = {
    TrialBatch: _encode_batch, Timing: _encode_timing, ReferenceOutputs: _encode_reference,
}


# ---- decoding (strict: every field typed, array counts must add up) --------------------------
def _text(value: object) -> str:
    if not isinstance(value, str):
        raise TypeError("expected a string")
    return value


def _decode_trials(metas: list, arrays: list[np.ndarray]) -> tuple[tuple[TrialOutputs, ...], list[np.ndarray]]:
    trials = []
    for meta in metas:
        count = int(meta["count"])
        if count < 0 or count > len(arrays):
            raise ValueError("array count")
        taken, arrays = arrays[:count], arrays[count:]
        dtypes = tuple(_text(d) for d in meta["dtypes"])
        if len(dtypes) != count:
            raise ValueError("dtype count")
        trials.append(TrialOutputs(int(meta["index"]), _text(meta["kind"]), _text(meta["distribution"]),
                                   dtypes, tuple(taken)))
    return tuple(trials), arrays


def _decode_batch(header: dict, arrays: list) -> TrialBatch:
    trials, rest = _decode_trials(header["trials"], arrays)
    if rest:
        raise ValueError("unclaimed arrays")
    return TrialBatch(trials, _text(header["note"]))


def _decode_timing(header: dict, arrays: list) -> Timing:
    post, rest = _decode_trials(header["post"], arrays)
    audit, rest = _decode_trials(header["audit"], rest)
    if rest:
        raise ValueError("unclaimed arrays")
    return Timing(tuple(float(x) for x in header["candidate_ms"]), tuple(float(x) for x in header["reference_ms"]),
                  post, audit)


def _decode_reference(header: dict, arrays: list) -> ReferenceOutputs:
    dtypes = tuple(_text(d) for d in header["dtypes"])
    trivial = tuple({_text(k): float(v) for k, v in dict(t).items()} for t in header["trivial"])
    fp64 = dict(header["fp64"])
    count = int(fp64["count"])
    if count not in (0, len(dtypes)) or len(dtypes) + count != len(arrays):
        raise ValueError("array count")
    outputs, corrections = arrays[:len(dtypes)], arrays[len(dtypes):]
    return ReferenceOutputs(int(header["index"]), dtypes, tuple(outputs), trivial,
                            Fp64Reference(tuple(corrections), float(fp64["work"]), _text(fp64["note"])))


def _fields_of(cls: type, header: dict) -> dict:
    names = {f.name for f in fields(cls)}
    missing = names - set(header)
    if missing:
        raise KeyError(sorted(missing)[0])
    return {name: header[name] for name in names}


def _decode_config(cls: type) -> Callable[[dict, list], Any]:
    def decode(header: dict, _arrays: list) -> Any:
        values = _fields_of(cls, header)
        values["trials"] = TrialSpec(**_fields_of(TrialSpec, dict(values["trials"])))
        if "gates" in values:
            values["gates"] = tuple(_text(g) for g in values["gates"])
        if "disabled_checks" in values:
            values["disabled_checks"] = tuple(_text(c) for c in values["disabled_checks"])
        if "backend_context" in values:
            values["backend_context"] = tuple((_text(k), _text(v)) for k, v in values["backend_context"])
        return cls(**values)
    return decode


_DECODERS: dict[str, Callable[[dict, list], Any]] = {
    ChildConfig.KIND: _decode_config(ChildConfig),
    ReferenceConfig.KIND: _decode_config(ReferenceConfig),
    CompileReport.KIND: lambda h, _a: CompileReport(bool(h["ok"]), _text(h["diagnostics"]), float(h["seconds"]),
                                                    bool(h["cached"]), bool(h["compiled"]), _text(h["note"]),
                                                    tuple((_text(p), _text(d)) for p, d in h["artifacts"]),
                                                    tuple(_text(line) for line in h["policy"])),
    LoadReport.KIND: lambda h, _a: LoadReport(bool(h["ok"]), float(h["seconds"]), _text(h["error"]),
                                              bool(h["seccomp"]), _text(h["seccomp_off_reason"])),
    TrialBatch.KIND: _decode_batch,
    Timing.KIND: _decode_timing,
    IntegrityViolation.KIND: lambda h, _a: IntegrityViolation(_text(h["reason"])),
    CandidateError.KIND: lambda h, _a: CandidateError(_text(h["phase"]), _text(h["error"])),
    ReferenceOutputs.KIND: _decode_reference,
    ReferenceWorkload.KIND: lambda h, _a: ReferenceWorkload(int(h["bytes_moved"]), int(h["flops"])),
    ReferenceDone.KIND: lambda _h, _a: ReferenceDone(),
    Go.KIND: lambda _h, _a: Go(),
}
