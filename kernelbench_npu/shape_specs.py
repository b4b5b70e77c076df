"""Shape-only descriptions of a task's inputs: what a compile recording needs, never the values.

Compiling a kernel launch needs its specialisation (argument dtypes, pointer alignment, integer
arguments, constexprs) and its grid, which follow from shapes, strides, dtypes and Python scalars,
never from tensor values. :func:`task_specs` runs ``get_init_inputs()`` and ``get_inputs()`` on
PyTorch's ``meta`` device (seeded and cast to the task's dtype exactly as
:mod:`kernelbench_npu.instantiate` does for the real inputs), so a 6.4 GB KernelBench input costs
nothing, and describes each value as plain JSON:

- a tensor: ``{"kind": "tensor", "shape": [...], "stride": [...], "storage_offset": 0, "dtype": "float32"}``;
- a tuple or list: ``{"kind": "tuple" | "list", "items": [spec, ...]}`` (LayerNorm's
  ``get_init_inputs() -> [(64, 256, 256)]``);
- anything else (int, float, bool, str, None): ``{"kind": "value", "value": v}``.

The consumer that turns specs back into stand-ins (meta tensors, or host tensors when a candidate
reads values) is the triton-ascend recording (``verifier/backends/triton_ascend/shape_record.py``),
which runs in the toolchain's environment; :func:`stand_in` here is the same mapping for this
environment (the build's dry check and the tests use it).
"""

from __future__ import annotations

from dataclasses import dataclass

from kernelbench_npu.instantiate import cast, load_module, needs_real_values, seed_all

SPEC_KINDS = ("tensor", "tuple", "list", "value")


class SpecError(RuntimeError):
    """The task's inputs cannot be described without their values (one line, names the function)."""


@dataclass(frozen=True)
class TaskSpecs:
    """The task's init inputs and inputs as shape-only specs (JSON-able lists)."""

    init: list
    inputs: list

    @property
    def input_bytes(self) -> int:
        """Bytes the inputs would hold if materialised (what the specs save)."""
        return sum(spec_bytes(s) for s in self.inputs)

    def as_dict(self) -> dict:
        return {"init": self.init, "inputs": self.inputs}


def spec_of(value) -> dict:
    """The JSON spec of one value (see the module docstring)."""
    import torch

    if isinstance(value, torch.Tensor):
        return {"kind": "tensor", "shape": list(value.shape), "stride": list(value.stride()),
                "storage_offset": int(value.storage_offset()), "dtype": str(value.dtype).removeprefix("torch.")}
    if isinstance(value, (tuple, list)):
        return {"kind": "tuple" if isinstance(value, tuple) else "list", "items": [spec_of(v) for v in value]}
    if value is None or isinstance(value, (bool, int, float, str)):
        return {"kind": "value", "value": value}
    raise SpecError(f"a {type(value).__name__} cannot be described by shape (tensors, numbers, tuples only)")


def spec_bytes(spec: dict) -> int:
    """Bytes of the tensors a spec describes (their storage extent)."""
    import torch

    if spec["kind"] == "tensor":
        extent = 1 + sum((n - 1) * s for n, s in zip(spec["shape"], spec["stride"])) if all(spec["shape"]) else 0
        return (spec["storage_offset"] + extent) * torch.empty((), dtype=getattr(torch, spec["dtype"])).element_size()
    if spec["kind"] in ("tuple", "list"):
        return sum(spec_bytes(s) for s in spec["items"])
    return 0


def stand_in(spec: dict, device: str = "meta"):
    """The value a spec describes: tensors as uninitialised tensors on ``device`` (``meta``: never
    allocated), everything else as itself."""
    import torch

    kind = spec["kind"]
    if kind == "tensor":
        dtype = getattr(torch, spec["dtype"])
        size = spec["storage_offset"] + (1 + sum((n - 1) * s for n, s in zip(spec["shape"], spec["stride"]))
                                         if all(spec["shape"]) else 0)
        storage = torch.empty(size, dtype=dtype, device=device)
        return storage.as_strided(spec["shape"], spec["stride"], spec["storage_offset"])
    if kind in ("tuple", "list"):
        items = [stand_in(s, device) for s in spec["items"]]
        return tuple(items) if kind == "tuple" else items
    if kind == "value":
        return spec["value"]
    raise SpecError(f"unknown spec kind {kind!r} (expected one of {', '.join(SPEC_KINDS)})")


def task_specs(source: str, dtype: str = "float32", seed: int = 0, path: str = "problem.py") -> TaskSpecs:
    """Specs of ``get_init_inputs()`` and ``get_inputs()`` at the task's own sizes, made on the meta
    device (nothing allocated). Raises SpecError when either function needs real values."""
    import torch

    module = load_module(source, path)
    specs = []
    for name in ("get_init_inputs", "get_inputs"):
        try:
            with torch.device("meta"):
                seed_all(seed)
                values = [cast(x, dtype) for x in getattr(module, name)()]
        except Exception as exc:  # noqa: BLE001 - one line naming the function
            why = "needs tensor values" if needs_real_values(exc) else "failed"
            raise SpecError(f"{name}() {why} on the meta device: {type(exc).__name__}: "
                            f"{str(exc).strip().splitlines()[0][:200] if str(exc).strip() else ''}") from None
        specs.append([spec_of(v) for v in values])
    return TaskSpecs(*specs)
