"""What the static policy leaves to the runner: torch compute reached through helpers, aliases,
dispatch tables, decorators, nn layers, hooks, dunders and RNG is not refused from names any more
(names rejected honest code); each such candidate really computes with torch in ``forward``, and
the sandbox's ATen observer records it on the first call. These are the cases the lead's runner
observation must keep catching."""

from __future__ import annotations

import types

import pytest
import torch
from policy_snippets import RUNTIME_HEAD, RUNTIME_OBSERVED

from verifier.gates.hack_python import run_python_checks
from verifier.sandbox.integrity import ALLOWED_ATEN, AtenTrace


def _model(name: str) -> torch.nn.Module:
    module = types.ModuleType(f"runtime_case_{name}")
    exec(compile(RUNTIME_HEAD + RUNTIME_OBSERVED[name], f"{name}.py", "exec"), module.__dict__)
    return module.ModelNew()


@pytest.mark.parametrize("name", sorted(RUNTIME_OBSERVED))
def test_torch_compute_behind_names_passes_the_static_policy_and_is_observed(name):
    assert run_python_checks(RUNTIME_HEAD + RUNTIME_OBSERVED[name]) == []
    model = _model(name)
    x = torch.randn(4, 4)
    trace = AtenTrace()
    with torch.no_grad(), trace:
        model(x)
    assert trace.forbidden, f"{name}: no ATen compute observed"
    assert all(op.removeprefix("aten::") not in ALLOWED_ATEN for op in trace.forbidden)
