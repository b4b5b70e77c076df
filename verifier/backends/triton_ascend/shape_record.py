"""Recording a candidate's kernel launches on inputs that are never allocated (toolchain side).

The entry point is :func:`record_launches`. It runs in whatever process has imported the candidate
with triton-ascend's ``triton`` (today the sandboxed fork of :mod:`driver_record`; the verifier's
confined runner may call it the same way): it needs only the standard library, torch and
triton-ascend, starts no process, opens no file and returns plain JSON-able data.

    record_launches(model_new, init_specs, input_specs, *, soc="Ascend910B2", dtype="float32",
                    max_configs=8, seed=0, host_limit_bytes=HOST_LIMIT_BYTES, on_launch=None) -> dict

- ``model_new``: the candidate's ``ModelNew`` class.
- ``init_specs`` / ``input_specs``: the task's ``get_init_inputs()`` and ``get_inputs()`` as specs
  (``kernelbench_npu.shape_specs``: ``{"kind": "tensor", "shape", "stride", "storage_offset",
  "dtype"}``, ``{"kind": "tuple"|"list", "items"}``, ``{"kind": "value", "value"}``), already in
  the task's dtype; ints, floats and tuples arrive as values.
- ``dtype``: the task's dtype; ``ModelNew`` is cast to it (``.eval().to(dtype)``) as the verifier does.

``ModelNew`` is built and called inside ``torch.device("meta")``: its parameters and every tensor
its ``forward`` makes without an explicit device are meta tensors too, so nothing the size of the
task is ever allocated. A meta tensor's ``data_ptr()`` is its byte offset from a null base, so
Triton's alignment specialisation (``data_ptr() % 16``) is the one an aligned device allocation
gives, views included. Every ``kernel[grid](...)`` goes to :class:`Recorder` instead of a device:
it binds the arguments exactly as triton-ascend's ``JITFunction.run`` does, evaluates the grid and
runs Triton's front end (AST -> TTIR) for the NPU target. Nothing executes.

Only a candidate whose host code reads tensor values (``x.item()``, ``bool(t)``) cannot run on meta
tensors. Then the recording starts over on host tensors (``torch.rand`` floats, zero integers,
ModelNew built on the CPU) when the inputs hold at most ``host_limit_bytes``; beyond that the
error says why (stage "reading tensor values on the host").

The result: ``{"launches": [entry, ...], "launched": N, "error": None | {"stage", "text",
"launches"}, "placement": "meta" | "host"}``. Each entry (also passed to ``on_launch`` as soon as
it is made, so a caller streaming them loses nothing if the process dies later): ``kernel``,
``spec`` (one line: argument types and constexprs), ``signature`` ({arg: type}), ``constexprs``
({name: value}, JSON values or their repr), ``options`` (launch options), ``grid``, ``programs``,
``group`` (the autotuned launch a config belongs to, else None), and either ``ttir`` (text) or
``front_end_error`` (Triton's caret message, with ``line`` in the candidate's file), plus
``launch_error`` for a grid triton-ascend refuses.
"""

from __future__ import annotations

import inspect
import json
import math
import traceback
from typing import Callable, Sequence

MAX_PROGRAMS = 65535  # triton-ascend's launcher refuses larger grids (jit.py: "grid should be less than 65536")
HOST_LIMIT_BYTES = 512 << 20  # inputs materialised for a candidate that reads values, at most
CANDIDATE_FILE = "candidate.py"


class NoDevice:
    """The active Triton driver while recording: there is no device, and nothing may launch.

    ``@triton.autotune`` asks the driver for its benchmarker at decoration time, and triton-ascend's
    NPU driver would compile a CANN extension (a subprocess)."""

    def __init__(self, target) -> None:
        self.target = target

    def get_current_target(self):
        return self.target

    def get_current_device(self) -> int:
        return 0

    def get_current_stream(self, device: int | None = None) -> int:
        return 0

    def get_benchmarker(self):
        def never(*_args, **_kwargs):
            raise RuntimeError("no device while recording launches")

        return never


def install_no_device(soc: str) -> None:
    """Make triton-ascend's driver the recording stand-in (before the candidate is imported:
    ``@triton.autotune`` asks the driver at decoration time)."""
    from triton.backends.compiler import GPUTarget
    from triton.runtime import driver

    driver.set_active(NoDevice(GPUTarget("npu", soc, 0)))


class Recorder:
    """Replaces ``JITFunction.run`` and ``Autotuner.run`` while installed; one entry per distinct launch."""

    def __init__(self, soc: str, on_launch: Callable[[dict], None], max_configs: int) -> None:
        from triton.backends.compiler import GPUTarget
        from triton.compiler.compiler import make_backend

        self.target = GPUTarget("npu", soc, 0)
        self.backend = make_backend(self.target)
        self.on_launch, self.max_configs = on_launch, max_configs
        self.entries: list[dict] = []
        self.seen: set[str] = set()
        self.launches = 0
        self.group, self.group_active = 0, False

    def install(self) -> None:
        from triton.runtime.autotuner import Autotuner
        from triton.runtime.jit import JITFunction

        install_no_device(self.target.arch)
        recorder = self

        def run(jit, *args, grid, warmup, **kwargs):
            recorder.record_launch(jit, args, grid, kwargs)

        def tuned_run(tuner, *args, **kwargs):
            recorder.group += 1  # configs of one autotuned launch: the device skips those that fail
            recorder.group_active = True
            try:
                for config in list(tuner.configs)[: recorder.max_configs]:
                    tuner.fn.run(*args, **kwargs, **config.all_kwargs())
            finally:
                recorder.group_active = False

        JITFunction.run = run
        Autotuner.run = tuned_run

    def record_launch(self, jit, args: tuple, grid, kwargs: dict) -> None:
        self.launches += 1
        kwargs["debug"] = kwargs.get("debug", False)
        if jit.binder is None:
            jit.create_binder(self.backend)
        if getattr(jit, "bishengir_option", None):
            kwargs.update(jit.bishengir_option)
        bound_args, sig_and_spec, _constexprs, _values, _excess = jit.binder(*args, **kwargs)
        bound_vals = tuple(bound_args.values())
        sigkeys = [jit.params[i].name for i in jit.non_constexpr_indices]
        signature = {k: ("*i8" if v == "none" else v) for k, v in zip(sigkeys, sig_and_spec[: len(sigkeys)])}
        attrs = self.backend.get_attrs_descriptor(jit.params, bound_vals)
        constant_params = attrs.get_constants()
        constants = {p.name: v for v, p in zip(bound_vals, jit.params)
                     if p.is_constexpr or p.num in constant_params or v is None}
        constexprs = {k: v for k, v in constants.items() if jit.params[_index(jit, k)].is_constexpr}
        options = self._launch_options(kwargs)
        shown = ", ".join([f"{k}={v}" for k, v in signature.items()] + [f"{k}={v!r}" for k, v in constexprs.items()])
        key = f"{jit.fn.__qualname__}|{shown}|{sorted(options.items())}|{attrs.hash()}"
        if key in self.seen:
            return
        self.seen.add(key)
        entry = {"kind": "launch", "kernel": jit.fn.__name__, "spec": shown, "signature": signature,
                 "constexprs": {k: _jsonable(v) for k, v in constexprs.items()}, "options": options,
                 "grid": _grid(grid, bound_args), "group": self.group if self.group_active else None}
        entry["programs"] = programs = math.prod(entry["grid"])
        if programs > MAX_PROGRAMS:
            entry["launch_error"] = (f"grid {tuple(entry['grid'])} launches {programs} programs; triton-ascend "
                                     f"refuses more than {MAX_PROGRAMS} (use fewer, larger blocks, or loop inside "
                                     f"the kernel over a grid of about the number of AI cores)")
        entry.update(self._front_end(jit, signature, constants, attrs, options))
        self.entries.append(entry)
        self.on_launch(entry)

    def _launch_options(self, kwargs: dict) -> dict:
        from dataclasses import fields

        options_type = type(self.backend.parse_options({}))
        names = {f.name for f in fields(options_type)}
        return {k: v for k, v in kwargs.items() if k in names and isinstance(v, (bool, int, float, str))}

    def _front_end(self, jit, signature, constants, attrs, options) -> dict:
        from triton._C.libtriton import ir
        from triton.compiler import ASTSource
        from triton.compiler.errors import CompilationError

        src = ASTSource(jit, signature, constants, attrs)
        parsed = self.backend.parse_options(dict(options, **src.parse_options()))
        context = ir.context()
        ir.load_dialects(context)
        self.backend.load_dialects(context)
        try:
            module = src.make_ir(parsed, self.backend.get_codegen_implementation(), self.backend.get_module_map(),
                                 context)
            stages: dict = {}
            self.backend.add_stages(stages, parsed)
            ttir = stages["ttir"](module, {"hash": src.hash(), "target": self.target, **parsed.__dict__})
            return {"ttir": str(ttir)}
        except CompilationError as exc:
            line = _def_line(jit) + int(getattr(exc.node, "lineno", 1)) - 1
            return {"front_end_error": str(exc).strip(), "line": line}
        except Exception as exc:  # the front end's own passes raise plain errors too
            return {"front_end_error": f"{type(exc).__name__}: {exc}".strip()}


def _index(jit, name: str) -> int:
    return next(i for i, p in enumerate(jit.params) if p.name == name)


def _grid(grid, bound_args) -> list[int]:
    value = grid(bound_args) if callable(grid) else grid
    return [int(v) for v in (value if isinstance(value, (tuple, list)) else (value,))]


def _jsonable(value):
    try:
        json.dumps(value)
        return value
    except (TypeError, ValueError):
        return repr(value)


def _def_line(jit) -> int:
    """The line of ``def`` in the candidate's file (Triton counts lines from there)."""
    lines, start = inspect.getsourcelines(jit.fn)
    offset = next((i for i, text in enumerate(lines) if text.lstrip().startswith("def ")), 0)
    return start + offset


def candidate_frames(exc: BaseException) -> str:
    """The exception with the candidate's own frames (what the LLM can act on)."""
    frames = [f for f in traceback.extract_tb(exc.__traceback__) if f.filename.endswith(CANDIDATE_FILE)]
    where = "".join(f"  {CANDIDATE_FILE} line {f.lineno}: {(f.line or '').strip()}\n" for f in frames[-4:])
    return (where + f"{type(exc).__name__}: {exc}").strip()[:2000]


# ---- stand-ins for the specs (the consumer of kernelbench_npu.shape_specs' format) ----------------
def _extent(spec: dict) -> int:
    if not all(spec["shape"]):
        return spec["storage_offset"]
    return spec["storage_offset"] + 1 + sum((n - 1) * s for n, s in zip(spec["shape"], spec["stride"]))


def spec_bytes(spec: dict) -> int:
    import torch

    if spec["kind"] == "tensor":
        return _extent(spec) * torch.empty((), dtype=getattr(torch, spec["dtype"]), device="meta").element_size()
    return sum(spec_bytes(s) for s in spec.get("items", ()))


def stand_in(spec: dict, placement: str = "meta"):
    """A spec's value: a meta tensor (never allocated), or on the host a ``torch.rand`` float /
    zero integer tensor with the same shape, strides, offset and dtype; other values as themselves."""
    import torch

    kind = spec["kind"]
    if kind == "tensor":
        dtype = getattr(torch, spec["dtype"])
        if placement == "meta":
            storage = torch.empty(_extent(spec), dtype=dtype, device="meta")
        elif dtype.is_floating_point:
            storage = torch.rand(_extent(spec)).to(dtype)
        else:
            storage = torch.zeros(_extent(spec), dtype=dtype)
        return storage.as_strided(spec["shape"], spec["stride"], spec["storage_offset"])
    if kind in ("tuple", "list"):
        items = [stand_in(s, placement) for s in spec["items"]]
        return tuple(items) if kind == "tuple" else items
    if kind == "value":
        return spec["value"]
    raise ValueError(f"unknown spec kind {kind!r}")


def _needs_values(exc: BaseException) -> bool:
    """True when a meta tensor was asked for its data (``.item()``, ``bool()``, ``.tolist()``, a copy out)."""
    text = str(exc).lower()
    return isinstance(exc, (RuntimeError, NotImplementedError)) and "meta" in text and (
        "data" in text or "item" in text or "meta tensor" in text)


def _attempt(model_new: type, init_specs, input_specs, dtype: str, recorder: Recorder, placement: str, seed: int):
    """One recording; returns the error dict, or None when forward returned."""
    import torch

    torch.manual_seed(seed)
    stage = "building ModelNew(*get_init_inputs())"
    try:
        with torch.device("meta") if placement == "meta" else torch.device("cpu"):
            init = [stand_in(s, placement) for s in init_specs]
            model = model_new(*init).eval().to(getattr(torch, dtype))
            inputs = [stand_in(s, placement) for s in input_specs]
            stage = "running ModelNew.forward on the task's input shapes (launches recorded, not executed)"
            with torch.no_grad():
                model(*inputs)
    except BaseException as exc:  # noqa: BLE001 - the candidate's failure is the result
        if isinstance(exc, (KeyboardInterrupt, SystemExit)):
            raise
        return {"stage": stage, "text": candidate_frames(exc), "launches": recorder.launches,
                "needs_values": placement == "meta" and _needs_values(exc)}
    return None


def record_launches(model_new: type, init_specs: Sequence[dict], input_specs: Sequence[dict], *,
                    soc: str = "Ascend910B2", dtype: str = "float32", max_configs: int = 8, seed: int = 0,
                    host_limit_bytes: int = HOST_LIMIT_BYTES,
                    on_launch: Callable[[dict], None] | None = None) -> dict:
    """Record every launch of ``model_new``'s forward on the specs (see the module docstring)."""
    sink = on_launch or (lambda _entry: None)
    recorder = Recorder(soc, sink, max_configs)
    recorder.install()
    error = _attempt(model_new, init_specs, input_specs, dtype, recorder, "meta", seed)
    placement = "meta"
    if error is not None and error.pop("needs_values"):
        held = sum(spec_bytes(s) for s in list(init_specs) + list(input_specs))
        if held <= host_limit_bytes:
            placement = "host"
            recorder = Recorder(soc, sink, max_configs)
            recorder.install()
            error = _attempt(model_new, init_specs, input_specs, dtype, recorder, "host", seed)
            if error is not None:
                error.pop("needs_values")
        else:
            error = {"stage": "reading tensor values on the host", "launches": recorder.launches,
                     "text": (f"{error['text']}\nThe compile gate records launches on shape-only inputs at the "
                              f"task's sizes ({held / 2**30:.1f} GB, never allocated); host code that reads tensor "
                              f"values (.item(), bool(t), .tolist()) needs them materialised. On an NPU each such "
                              f"read also stalls the stream: keep ModelNew's host code to shapes, strides and "
                              f"dtypes.")}
    return {"launches": recorder.entries, "launched": recorder.launches, "error": error, "placement": placement}
