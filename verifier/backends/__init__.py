"""Backend registry: ``cpu``, ``cuda``, ``triton``, ``ascendc``, ``triton-ascend``, plus any registered
under the ``evokernel.backends`` entry-point group. Look backends up by name with
:func:`get_backend`; a name written as an entry-point value, ``package.module:Class``, loads that
class directly (how tests run a test-only backend inside the sandbox child, which sees no test-time
entry points)."""

from __future__ import annotations

from importlib import import_module
from importlib.metadata import entry_points

from verifier.backends.base import Backend

_BUILTIN = {
    "cpu": "verifier.backends.cpu:CpuBackend",
    "cuda": "verifier.backends.cuda:CudaBackend",
    "triton": "verifier.backends.triton_backend:TritonBackend",
    "ascendc": "verifier.backends.ascendc:AscendCBackend",
    "triton-ascend": "verifier.backends.triton_ascend:TritonAscendBackend",
}


def backend_names() -> tuple[str, ...]:
    extra = [ep.name for ep in entry_points(group="evokernel.backends") if ep.name not in _BUILTIN]
    return tuple(_BUILTIN) + tuple(sorted(extra))


def get_backend(name: str) -> Backend:
    target = _BUILTIN.get(name) or (name if ":" in name else None)
    if target is None:
        found = [ep for ep in entry_points(group="evokernel.backends") if ep.name == name]
        if not found:
            raise KeyError(f"unknown backend {name!r}; known: {', '.join(backend_names())}")
        return found[0].load()()
    module_name, _, class_name = target.partition(":")
    return getattr(import_module(module_name), class_name)()
