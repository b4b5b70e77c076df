"""One way to turn a problem file into a model and inputs, used by everyone who runs a reference.

The loader's checks and the size profile (on PyTorch's ``meta`` device), the task lint, and the
verifier's sandbox child and reference worker all build a task through this module, so a task's
dtype reaches its parameters, its inputs and its reference everywhere:

- the model: ``torch.manual_seed(seed)`` before ``get_init_inputs()`` and again before
  ``Model(*init_inputs)`` (KernelBench's order, so ``Model`` and ``ModelNew`` built from one seed
  get bit-identical weights), eval mode, floating-point parameters and buffers cast to the dtype;
- the inputs: ``torch.manual_seed(seed)`` before ``get_inputs()``, floating-point tensors cast to
  the dtype, integer/bool tensors and Python scalars left as they are.

Problem files are trusted code (the project's own, or a user's KernelBench checkout).
"""

from __future__ import annotations

import random
import types
from dataclasses import dataclass
from pathlib import Path

DTYPES = ("float32", "float16", "bfloat16")


@dataclass(frozen=True)
class Instance:
    """A task ready to run: its reference model and one draw of its inputs."""

    model: object  # torch.nn.Module
    inputs: list


def load_module(source: str, path: str | Path = "problem.py") -> types.ModuleType:
    """Execute a problem's source as a fresh module (exceptions propagate)."""
    module = types.ModuleType(f"kernelbench_problem_{Path(path).stem}")
    module.__file__ = str(path)
    exec(compile(source, str(path), "exec"), module.__dict__)  # noqa: S102 - trusted problem files only
    return module


def torch_dtype(dtype: str):
    """The torch dtype of a dtype name ("float32", "float16", "bfloat16")."""
    import torch

    if dtype not in DTYPES:
        raise ValueError(f"dtype {dtype!r} unknown (choose from {', '.join(DTYPES)})")
    return getattr(torch, dtype)


def seed_all(seed: int) -> None:
    """Python's and torch's generators seeded. Without an accelerator only the CPU generator: the full
    ``torch.manual_seed`` also queues lazy seeds for CUDA, MPS and XPU, each with a formatted stack
    (1.4 ms a call, more than drawing a 2 MB input)."""
    import torch

    random.seed(seed)
    if torch.cuda.is_available():
        torch.manual_seed(seed)
    else:
        torch.random.default_generator.manual_seed(seed)


def cast(value, dtype: str):
    """Floating-point tensors take the task's dtype; integer/bool tensors and Python scalars stay."""
    import torch

    if isinstance(value, torch.Tensor) and value.is_floating_point():
        return value.to(torch_dtype(dtype))
    return value


def build_models(problem: types.ModuleType, model_classes: list[type], dtype: str, seed: int) -> list:
    """Each class built from the same seed and the same init inputs, in eval mode, cast to ``dtype``."""
    seed_all(seed)
    init_inputs = [cast(x, dtype) for x in problem.get_init_inputs()]
    models = []
    for cls in model_classes:
        seed_all(seed)
        models.append(cls(*init_inputs).eval().to(torch_dtype(dtype)))
    return models


def build_model(problem: types.ModuleType, dtype: str, seed: int):
    """The reference ``Model`` (see :func:`build_models`)."""
    return build_models(problem, [problem.Model], dtype, seed)[0]


def make_inputs(problem: types.ModuleType, dtype: str, seed: int) -> list:
    """``get_inputs()`` drawn under ``seed``, floating-point tensors cast to ``dtype``."""
    seed_all(seed)
    return [cast(x, dtype) for x in problem.get_inputs()]


def needs_real_values(exc: BaseException) -> bool:
    """True when ``exc`` says a meta tensor was asked for a value (``x.item()`` in ``__init__``)."""
    return isinstance(exc, RuntimeError) and "meta tensor" in str(exc)


def meta_instance(problem: types.ModuleType, dtype: str, seed: int) -> Instance:
    """The task on PyTorch's ``meta`` device: nothing allocated, except for a model whose
    ``__init__`` needs values (Swin's ``[x.item() for x in torch.linspace(...)]``): that one is
    built on the CPU, from the same seed, and moved to meta."""
    import torch

    try:
        with torch.device("meta"):
            return instantiate(problem, dtype, seed)
    except RuntimeError as exc:
        if not needs_real_values(exc):
            raise
    model = build_model(problem, dtype, seed).to("meta")
    with torch.device("meta"):
        return Instance(model, make_inputs(problem, dtype, seed))


def instantiate(problem: types.ModuleType, dtype: str, seed: int, input_seed: int | None = None) -> Instance:
    """The model (built under ``seed``) and inputs (drawn under ``input_seed``, default ``seed``).

    Inside ``with torch.device("meta"):`` nothing is allocated (the size profile's cost model)."""
    model = build_model(problem, dtype, seed)
    return Instance(model, make_inputs(problem, dtype, seed if input_seed is None else input_seed))
