"""Triton's two run modes in one process: compiled (a GPU) or interpreted (no GPU), and what the
interpreter does in place of GPU-only machinery.

The mode is fixed when ``triton`` is first imported: ``TRITON_INTERPRET`` decides, at decoration
time, whether ``@triton.jit`` builds a compiled or an interpreted function, and triton's own
standard library (``tl.sum``, ``tl.max``, ``tl.zeros``... are ``@jit`` functions) is decorated once,
at that import. A process that imported triton compiled can therefore never run a kernel that
calls the standard library in the interpreter ("Cannot call @triton.jit'd outside of the scope
of a kernel"): :func:`use_mode` sets the flag and refuses a process whose triton is already in
the other mode, and the compile gate runs in a fork when the interpreter runs the kernels.

``@triton.autotune`` benchmarks its configs on a GPU. Under the interpreter there is nothing to
benchmark: :func:`rotate_autotune_configs` makes each new input take the next config instead
(:func:`turn_per_input` numbers ModelNew's distinct inputs; every launch in a forward call uses that
call's config, and a repeated input gets its config again, so a repeat-call comparison compares a
config with itself), the correctness trials check every config in turn at no extra cost, and
:func:`autotune_report` says which configs ran.
"""

from __future__ import annotations

import functools
import hashlib
import os
import sys
from collections import Counter
from typing import Any

LAUNCHES: dict[str, Counter] = {}  # autotuned kernel -> launches per config, under the interpreter
CONFIG_COUNTS: dict[str, int] = {}  # autotuned kernel -> configs it offered at its last launch
TURNS: dict[str, int] = {}  # fingerprint of a ModelNew input -> its config turn
CURRENT_TURN = [0]  # the turn of the forward call in progress (0 outside forward)


def interpreted_now() -> bool | None:
    """The mode of the triton imported in this process (None: not imported yet)."""
    if "triton.language" not in sys.modules:
        return None
    from triton.language import standard
    from triton.runtime.interpreter import InterpretedFunction

    return isinstance(standard.sum, InterpretedFunction)


def use_mode(interpret: bool) -> None:
    """Set TRITON_INTERPRET for every later ``@triton.jit``; raise if triton is already in the other mode."""
    os.environ["TRITON_INTERPRET"] = "1" if interpret else "0"
    current = interpreted_now()
    if current is not None and current != interpret:
        want, have = ("interpreted", "compiled") if interpret else ("compiled", "interpreted")
        raise RuntimeError(f"triton was already imported {have} in this process; {want} kernels need a "
                           "process whose first triton import saw that mode (the compile gate runs in a fork)")


def config_text(config: Any) -> str:
    """A config as the candidate wrote it: its keyword values, then warps and stages."""
    values = [f"{k}={v}" for k, v in config.kwargs.items()]
    values += [f"{k}={getattr(config, k)}" for k in ("num_warps", "num_stages") if getattr(config, k, None)]
    return ", ".join(values)


def rotate_autotune_configs() -> None:
    """Under the interpreter, ``Autotuner.run`` launches config k mod N for the k-th distinct input,
    without benchmarking; ``early_config_prune`` still applies (it drops configs invalid for the
    arguments)."""
    from triton.runtime.autotuner import Autotuner

    if getattr(Autotuner.run, "_evokernel_rotating", False):
        return

    def run_next_config(self, *args, **kwargs):
        self.nargs = dict(zip(self.arg_names, args))
        configs = self.configs
        if self.early_config_prune:
            configs = self.early_config_prune(self.configs, self.nargs, **kwargs)
            if not configs:
                raise RuntimeError("No valid autotuner configs after pruning: early_config_prune returned none")
        config = self.best_config = configs[CURRENT_TURN[0] % len(configs)]
        LAUNCHES.setdefault(self.base_fn.__name__, Counter())[config_text(config)] += 1
        CONFIG_COUNTS[self.base_fn.__name__] = len(configs)
        if config.pre_hook is not None:
            config.pre_hook({**self.nargs, **kwargs, **config.all_kwargs()})
        try:
            return self.fn.run(*args, **kwargs, **config.all_kwargs())
        finally:
            self.nargs = None

    run_next_config._evokernel_rotating = True
    Autotuner.run = run_next_config


def fingerprint(values: Any) -> str:
    """A digest of forward's arguments: tensor dtypes, shapes and bytes, other values by repr."""
    import torch

    digest = hashlib.blake2b(digest_size=16)
    for value in values:
        if isinstance(value, torch.Tensor):
            digest.update(f"{value.dtype}{tuple(value.shape)}".encode())
            digest.update(value.detach().reshape(-1).contiguous().view(torch.uint8).numpy().tobytes())
        else:
            digest.update(repr(value).encode())
    return digest.hexdigest()


def turn_per_input(model_cls: type) -> type:
    """Wrap ``model_cls.forward`` so each call first sets :data:`CURRENT_TURN` from its input."""
    forward = model_cls.forward
    if getattr(forward, "_evokernel_turns", False):
        return model_cls

    @functools.wraps(forward)
    def forward_with_turn(self, *args, **kwargs):
        CURRENT_TURN[0] = TURNS.setdefault(fingerprint([*args, *kwargs.values()]), len(TURNS))
        try:
            return forward(self, *args, **kwargs)
        finally:
            CURRENT_TURN[0] = 0

    forward_with_turn._evokernel_turns = True
    model_cls.forward = forward_with_turn
    return model_cls


def autotune_report(device: str = "a GPU") -> str:
    """One line per autotuned kernel that ran: which configs, how many launches each; "" if none.
    ``device``: what would benchmark the configs ("a GPU", "an NPU")."""
    lines = []
    for kernel, counts in sorted(LAUNCHES.items()):
        used = "; ".join(f"{config}: {n} launch{'es' if n > 1 else ''}" for config, n in counts.items())
        lines.append(f"@triton.autotune {kernel}: no benchmarking without {device}, each new input took the next "
                     f"config, {len(counts)} of {CONFIG_COUNTS[kernel]} ran ({used})")
    return "\n".join(lines)
