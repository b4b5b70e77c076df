"""The input distributions a task is verified under, shared by the verifier and the task lint.

The verifier cycles its correctness trials through :data:`DISTRIBUTIONS`; the lint judges whether
a task is trivial under exactly the same draws (a task whose output is trivial only under its own
``torch.rand`` inputs is verifiable: the other distributions catch an identity or a constant).

``task`` keeps what ``get_inputs()`` drew. The others redraw every floating-point tensor (same
shape and dtype) from a standard normal scaled or folded; integer/bool tensors (targets, masks,
indices) and Python scalars are never redrawn.
"""

from __future__ import annotations

DISTRIBUTIONS = ("task", "normal", "large", "small", "negative")
_SCALE = {"normal": 1.0, "large": 1e3, "small": 1e-3}


def redraw(value, distribution: str, generator, normal=None):
    """``value`` redrawn from ``distribution`` with ``generator`` (a ``torch.Generator``). ``normal``: another
    source of the standard normals, ``normal(shape)`` -> a new float32 tensor, or None where it does not draw
    that shape (the verifier's native fill, verifier.sandbox.fast_fill); the generator draws the rest."""
    import torch

    if distribution not in DISTRIBUTIONS:
        raise ValueError(f"distribution {distribution!r} unknown (choose from {', '.join(DISTRIBUTIONS)})")
    if distribution == "task" or not (isinstance(value, torch.Tensor) and value.is_floating_point()):
        return value
    base = normal(tuple(value.shape)) if normal is not None else None
    if base is None:
        base = torch.randn(value.shape, generator=generator, dtype=torch.float32)
    # in place: the values of -|x| - 1e-3 and x * scale, without a second tensor of the input's size
    base = base.abs_().neg_().sub_(1e-3) if distribution == "negative" else base.mul_(_SCALE[distribution])
    return base.to(value.dtype).contiguous()


def redraw_all(values: list, distribution: str, generator) -> list:
    return [redraw(v, distribution, generator) for v in values]
