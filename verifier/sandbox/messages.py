"""The typed messages between the monitor and its sandbox processes, parsed once and strictly.

Every frame (verifier.sandbox.channel) carries one of these. :func:`send` encodes a message object;
:func:`receive` turns a frame into exactly one typed object, checking every field's type, so no code
past this module reads a raw header. A frame that does not parse is a :class:`ChannelError`: from a
runner it is the candidate's process misbehaving, and the gate of the phase fails with that reason.
A message carries data, never a finding, a verdict or a path the monitor would act on.

Monitor <-> runner: Boot (monitor, first), Ready; Start (+ the arena's descriptor); BuildRequest,
BuildReply (a loader call at import: the actual sources and flags); Imported or LoadFailed; Init
(``get_init_inputs()`` values), Constructed or LoadFailed; Attach (+ the arena's descriptor); then
windows of calls, as often as the monitor likes: Stage/Staged (untimed), Run/Ran (timed), Collect/
Collected or Described (untimed), any of them answerable by CallFailed; Stop.
Monitor <-> reference worker: RefStart; RefInit; RefTrial per trial of the plan; RefWorkload;
RefDone; then Attach (+ descriptor), Draw/Drawn (a trial's or a timed call's inputs, into the arena)
and the same windows of calls as the runner's (the reference's own timed calls).
"""

from __future__ import annotations

from dataclasses import MISSING, asdict, dataclass, fields
from typing import Any, ClassVar

import numpy as np

from verifier.sandbox.channel import Channel, ChannelError, Frame


# ---- runner --------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Boot:
    KIND: ClassVar[str] = "boot"
    backend: str
    threads: int
    observer: str  # path of the native observer library ("": the Python fallback)
    device: str


@dataclass(frozen=True)
class Ready:
    KIND: ClassVar[str] = "ready"
    seccomp: bool
    seccomp_off: str  # why not, when not
    threads: int  # OS threads of the runner before candidate code (the baseline)
    observer: str  # "native" | "python"
    draw: str = ""  # a reference worker's timed inputs: "native fill" | "torch's generator" (verifier.sandbox.fast_fill)


@dataclass(frozen=True)
class Start:
    KIND: ClassVar[str] = "start"
    candidate: str
    dtype: str
    init_seed: int
    load_artifacts: bool  # False: builds are compiled and checked, never loaded here (no device)
    construct: bool  # False: stop after the import (the gates after compile cannot run here)
    context: dict  # Backend.compile_context(task) (JSON strings), for Backend.configure


@dataclass(frozen=True)
class BuildRequest:
    KIND: ClassVar[str] = "build"
    loader: str
    args: dict


@dataclass(frozen=True)
class BuildReply:
    KIND: ClassVar[str] = "built"
    ok: bool
    path: str = ""  # where the checked library lies (a directory only the monitor writes)
    error: str = ""


@dataclass(frozen=True)
class Imported:
    KIND: ClassVar[str] = "imported"
    builds: int


@dataclass(frozen=True)
class LoadFailed:
    KIND: ClassVar[str] = "load-failed"
    phase: str  # "import" | "construct"
    error: str


@dataclass(frozen=True)
class Init:
    KIND: ClassVar[str] = "init"
    values: list  # verifier.sandbox.values spec; tensors in ``arrays``
    arrays: tuple = ()


@dataclass(frozen=True)
class Constructed:
    KIND: ClassVar[str] = "constructed"


@dataclass(frozen=True)
class Stage:
    """Untimed: make the call inputs of one window ready, one set per call (``sets``: arena specs,
    verifier.sandbox.values.layout_spec). On the CPU the inputs stay where they are (tensors view the
    arena); on a device they are copied to it and the device's cache is flushed, all synchronized."""

    KIND: ClassVar[str] = "stage"
    sets: list


@dataclass(frozen=True)
class Staged:
    KIND: ClassVar[str] = "staged"


@dataclass(frozen=True)
class Run:
    """Timed by the monitor: forward on every staged set, one after the other, synchronized at the end;
    the outputs are kept (nothing is copied) until Collect."""

    KIND: ClassVar[str] = "run"
    count: int


@dataclass(frozen=True)
class Ran:
    KIND: ClassVar[str] = "ran"


@dataclass(frozen=True)
class Collect:
    """Untimed: the last Run's outputs copied into the arena from ``out_start``, call after call; with
    ``describe``, only where each lies in the peer's memory (Described), kept alive until the next Collect: the
    monitor copies them out while the peer is stopped (verifier.monitor.remote_outputs)."""

    KIND: ClassVar[str] = "collect"
    out_start: int
    describe: bool = False


@dataclass(frozen=True)
class Collected:
    KIND: ClassVar[str] = "collected"
    outputs: list  # per call of the window, its outputs' arena spec
    native_calls: int = 0  # native calls made during the window's forwards
    note: str = ""  # the backend's runtime note (verifier.backends.base.Backend.runtime_note)
    first_call_excess_ns: int = 0  # how much longer the window's first call took than its median call, by the
    # peer's own clock (verifier.sandbox.serve); read from the trusted reference worker only, never a runner's


@dataclass(frozen=True)
class Described:
    KIND: ClassVar[str] = "described"
    outputs: list  # per call of the window, its outputs' layouts in the peer's memory (offset: the address)
    native_calls: int = 0
    note: str = ""
    first_call_excess_ns: int = 0  # as Collected's


@dataclass(frozen=True)
class CallFailed:
    KIND: ClassVar[str] = "call-failed"
    error: str
    integrity: bool = False  # the runner's own contract checks (outputs not fresh), not an exception


@dataclass(frozen=True)
class Stop:
    KIND: ClassVar[str] = "stop"


# ---- reference worker ------------------------------------------------------------------------------------
@dataclass(frozen=True)
class RefStart:
    KIND: ClassVar[str] = "ref-start"
    task_source: str
    dtype: str
    init_seed: int
    input_seed: int
    correctness_trials: int
    threads: int
    device: str = "cpu"  # where the reference's timed calls run (its outputs for the trials: the CPU)
    count_workload: bool = True  # False: the monitor knows this task's workload already (no RefWorkload)


@dataclass(frozen=True)
class RefInit:
    KIND: ClassVar[str] = "ref-init"
    values: list
    arrays: tuple = ()


@dataclass(frozen=True)
class RefTrial:
    """One trial of the plan: its inputs, the reference outputs, the trivial predictors' errors and
    the float64 corrections (verifier.gates.fp64_check)."""

    KIND: ClassVar[str] = "ref-trial"
    index: int
    kind: str
    distribution: str
    input_bytes: int  # arena bytes the trial's inputs take (verifier.sandbox.values.layout_spec)
    output_dtypes: tuple
    trivial: tuple  # per output: {predictor: error}
    fp64_work: float = 1.0
    fp64_note: str = ""
    fp64_count: int = 0
    arrays: tuple = ()  # the outputs, then the fp64 corrections


@dataclass(frozen=True)
class RefWorkload:
    KIND: ClassVar[str] = "ref-workload"
    bytes_moved: int
    flops: int
    fresh_bytes: int = 0  # inputs and outputs (verifier.roofline.Workload)


@dataclass(frozen=True)
class RefDone:
    KIND: ClassVar[str] = "ref-done"


@dataclass(frozen=True)
class RefReleased:
    """The reference worker's answer to Stop: its verification is over, and whether it dropped everything
    of it (its arena unmapped) and waits for another RefStart (verifier.monitor.pool reuses it)."""

    KIND: ClassVar[str] = "ref-released"
    reusable: bool


@dataclass(frozen=True)
class Attach:
    """The arena's descriptor rides on this frame. ``draws``: a reference worker's second arena, where Draw
    puts the timed rounds' input sets (the monitor reads them there: no copy of a round's sets)."""

    KIND: ClassVar[str] = "attach"
    size: int
    draws: bool = False


@dataclass(frozen=True)
class Draw:
    """Put input sets into the arena: per item ``[index, timing, start]``, trial ``index`` of the plan
    (``timing`` False) or the fresh inputs of timed call ``index``, placed from byte ``start``; into the
    draw arena (Attach ``draws``) when ``draws``."""

    KIND: ClassVar[str] = "draw"
    items: list
    draws: bool = False


@dataclass(frozen=True)
class Drawn:
    KIND: ClassVar[str] = "drawn"
    sets: list  # per item, its arena spec


KEPT_OUTPUTS = 8  # earlier windows' outputs a peer keeps alive: a fresh output must not land on their storage
# (verifier.sandbox.serve), so a peer's allocator holds a window's outputs and these before it is steady


MESSAGES = {cls.KIND: cls for cls in (Boot, Ready, Start, BuildRequest, BuildReply, Imported, LoadFailed, Init,
                                      Constructed, Stage, Staged, Run, Ran, Collect, Collected, Described, CallFailed, Stop,
                                      RefStart, RefInit, RefTrial, RefWorkload, RefDone, RefReleased, Attach, Draw, Drawn)}
_TYPES = {"str": str, "int": int, "float": (int, float), "bool": bool, "dict": dict, "list": list, "tuple": (list, tuple)}


def send(channel: Channel, message: Any, fds: tuple[int, ...] = ()) -> None:
    header = {k: v for k, v in asdict(message).items() if k != "arrays"}
    arrays = list(getattr(message, "arrays", ()))
    channel.send({**header, "kind": message.KIND}, arrays, fds)


def receive(channel: Channel, deadline: float, max_bytes: int, expect: tuple[type, ...] = (),
            keep_fds: bool = False) -> tuple[Any, list[int]]:
    """(the next message, the descriptors that came with it). ChannelError if it does not parse or is
    not one of ``expect`` (when given)."""
    frame = channel.receive(deadline, max_bytes, keep_fds)
    try:
        message = parse(frame)
        if expect and not isinstance(message, expect):
            raise ChannelError(f"unexpected {message.KIND} message")
    except BaseException:
        for fd in frame.fds:
            _close(fd)
        raise
    return message, frame.fds


def parse(frame: Frame) -> Any:
    cls = MESSAGES.get(frame.kind)
    if cls is None:
        raise ChannelError(f"unexpected message kind {frame.kind!r}"[:120])
    values = {}
    for f in fields(cls):
        if f.name == "arrays":
            values["arrays"] = tuple(frame.arrays)
            continue
        if f.name not in frame.header:
            if f.default is not MISSING or f.default_factory is not MISSING:
                continue
            raise ChannelError(f"malformed {frame.kind} message (no {f.name})")
        value = frame.header[f.name]
        wanted = _TYPES[f.type if isinstance(f.type, str) else f.type.__name__]
        if not isinstance(value, wanted) or (f.type in ("int", "float") and isinstance(value, bool)):
            raise ChannelError(f"malformed {frame.kind} message ({f.name})")
        values[f.name] = tuple(value) if f.type == "tuple" else float(value) if f.type == "float" else value
    if frame.arrays and not any(f.name == "arrays" for f in fields(cls)):
        raise ChannelError(f"malformed {frame.kind} message (unexpected arrays)")
    return cls(**values)


def _close(fd: int) -> None:
    import os

    try:
        os.close(fd)
    except OSError:
        pass


def arrays_of(*groups: list[np.ndarray]) -> tuple:
    return tuple(a for group in groups for a in group)
