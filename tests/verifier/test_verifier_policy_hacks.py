"""The Python policy on small adversarial candidates: torch compute, torch modules, numpy or files
reached through helpers, aliases, tables, wrappers, decorators, defaults, hooks, dynamic classes
and import-time code is rejected by the named check (the fixture corpus runs more such cases
through the whole verifier)."""

from __future__ import annotations

import pytest
from policy_snippets import HEAD

from verifier.gates.hack_python import run_python_checks

HACKS = {
    "alias_self": ("torch_compute_in_forward", """
def _impl(t):
    return t.clamp(min=0)
class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.impl = _impl
    def forward(self, x):
        return self.impl(x)
"""),
    "dispatch_torch": ("torch_compute_in_forward", """
OPS = [torch.relu]
class ModelNew(nn.Module):
    def forward(self, x):
        return OPS[0](x)
"""),
    "classmethod": ("torch_compute_in_forward", """
class ModelNew(nn.Module):
    @classmethod
    def _act(cls, t):
        return torch.sigmoid(t)
    def forward(self, x):
        return ModelNew._act(x)
"""),
    "decorator_factory": ("torch_compute_in_forward", """
def deco(n):
    def inner(f):
        def wrapper(*a):
            return F.gelu(f(*a))
        return wrapper
    return inner
@deco(3)
def _k(t):
    return t
class ModelNew(nn.Module):
    def forward(self, x):
        return _k(x)
"""),
    "super_forward": ("nn_module_called", """
class ModelNew(nn.ReLU):
    def forward(self, x):
        return super().forward(x)
"""),
    "lambda_init": ("torch_compute_in_forward", """
class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.act = lambda t: t.clamp(min=0)
    def forward(self, x):
        return self.act(x)
"""),
    "init_helper_reused": ("torch_compute_in_forward", """
def _prep(t):
    return torch.relu(t)
class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.w = _prep(torch.randn(3))
    def forward(self, x):
        return _prep(x)
"""),
    "partial": ("torch_compute_in_forward", """
class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.act = functools.partial(torch.clamp, min=0)
    def forward(self, x):
        return self.act(x)
"""),
    "from_import": ("torch_compute_in_forward", """
from torch import relu as r
class ModelNew(nn.Module):
    def forward(self, x):
        return r(x)
"""),
    "default_arg": ("torch_compute_in_forward", """
class ModelNew(nn.Module):
    def forward(self, x, act=torch.relu):
        return act(x)
"""),
    "add_module": ("nn_module_called", """
class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.add_module("act", nn.ReLU())
    def forward(self, x):
        return self.act(x)
"""),
    "instance_made_in_forward": ("torch_compute_in_forward", """
class K:
    def __init__(self, t):
        self.t = torch.relu(t)
class ModelNew(nn.Module):
    def forward(self, x):
        return K(x).t
"""),
    "type_self": ("torch_compute_in_forward", """
class ModelNew(nn.Module):
    def __init__(self, x=None):
        super().__init__()
        self.y = torch.relu(x) if x is not None else None
    def forward(self, x):
        return type(self)(x).y
"""),
    "nested_def": ("torch_compute_in_forward", """
class ModelNew(nn.Module):
    def forward(self, x):
        def inner(t):
            return t.exp()
        return inner(x)
"""),
    "hook": ("torch_compute_in_forward", """
class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.register_forward_hook(self._hook)
    def _hook(self, m, i, o):
        return torch.relu(o)
    def forward(self, x):
        return x
"""),
    "numpy_fwd": ("host_compute_in_forward", """
import numpy as np
class ModelNew(nn.Module):
    def forward(self, x):
        return torch.from_numpy(np.maximum(x.numpy(), 0))
"""),
    "verifier_counter": ("imports", """
import verifier.cpu_native as cn
class ModelNew(nn.Module):
    def forward(self, x):
        cn.CALLS[0] += 1
        return x
"""),
    "open_alias": ("forbidden_builtins", """
o = open
o("x", "w")
"""),
    "builtins_name": ("introspection", """
__builtins__["ev" + "al"]("1")
"""),
    "manual_seed_from": ("global_state", """
from torch import manual_seed
manual_seed(0)
"""),
    "storage_from_file": ("file_and_process_apis", """
s = torch.UntypedStorage.from_file("f", True, 16)
"""),
    "np_load_alias": ("file_and_process_apis", """
from numpy import load as L
w = L("w.npy", allow_pickle=True)
"""),
    "build_directory": ("file_and_process_apis", """
from torch.utils.cpp_extension import load_inline
ext = load_inline(name="e", cpp_sources="int f();", functions=["f"], build_directory="/tmp")
"""),
    "share_memory": ("file_and_process_apis", """
t = torch.zeros(4)
t.share_memory_()
"""),
    "unknown_receiver": ("torch_compute_in_forward", """
def _h(t):
    return t.sum()
class ModelNew(nn.Module):
    def forward(self, x):
        return _h(x)
"""),
    "bound_method_value": ("torch_compute_in_forward", """
class ModelNew(nn.Module):
    def forward(self, x):
        f = x.relu
        return f()
"""),
    "reduce_torch": ("torch_compute_in_forward", """
class ModelNew(nn.Module):
    def forward(self, x):
        return functools.reduce(torch.add, [x, x])
"""),
    "class_attr_forward": ("nn_module_called", """
class ModelNew(nn.Module):
    forward = staticmethod(torch.relu)
"""),
    "dunder_op": ("torch_compute_in_forward", """
class W:
    def __init__(self, t):
        self.t = t
    def __add__(self, o):
        return torch.add(self.t, o)
class ModelNew(nn.Module):
    def forward(self, x):
        return W(x) + 1
"""),
    "type3": ("forbidden_builtins", """
ModelNew = type("ModelNew", (nn.Module,), {"forward": lambda self, x: x})
"""),
    "cls_in_classmethod": ("torch_compute_in_forward", """
class K:
    def __init__(self):
        self.t = torch.randn(3).relu()
    @classmethod
    def make(cls):
        return cls()
class ModelNew(nn.Module):
    def forward(self, x):
        return K.make().t
"""),
    "hook_partial": ("patching", """
def _apply(fn, m, i, o):
    return fn(o)
class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.register_forward_hook(functools.partial(_apply, torch.relu))
"""),
    "weight_norm": ("patching", """
class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.utils.weight_norm(nn.Linear(2, 2))
"""),
    "torch_os": ("imports", """
torch.os.remove("x")
"""),
    "typing_sys": ("imports", """
import typing
typing.sys.modules["os"].remove("x")
"""),
    "dataclasses_builtins": ("imports", """
import dataclasses
dataclasses.builtins.exec("1")
"""),
    "typing_operator_attrgetter": ("imports", """
import typing
relu = typing.operator.attrgetter("relu")(torch)
"""),
    "cpp_extension_subprocess": ("imports", """
from torch.utils import cpp_extension
cpp_extension.subprocess.run(["true"])
"""),
    "lambda_returned_by_min": ("torch_compute_in_forward", """
ACT = min(lambda t: torch.relu(t), lambda t: t, key=lambda f: 0)
class ModelNew(nn.Module):
    def forward(self, x):
        return ACT(x)
"""),
    "inplace_method": ("torch_compute_in_forward", """
class ModelNew(nn.Module):
    def forward(self, x):
        y = torch.empty_like(x)
        y.copy_(x)
        return y.relu_()
"""),
    "hook_table": ("patching", """
class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self._forward_hooks[0] = self._post
    def _post(self, m, i, o):
        return o
"""),
    "star_import": ("imports", """
from torch import *
"""),
}


@pytest.mark.parametrize("name", sorted(HACKS))
def test_hack_is_rejected_by_its_check(name):
    check, body = HACKS[name]
    findings = run_python_checks(HEAD + body)
    assert check in {f.check for f in findings}, [f.line_text() for f in findings]


def test_unresolvable_receiver_says_so():
    body = """
def _h(t):
    return t.sum()
HANDLERS = [_h]
class ModelNew(nn.Module):
    def forward(self, x):
        return HANDLERS[0](x)
"""
    findings = run_python_checks(HEAD + body)
    assert any("cannot be resolved statically (parameter t)" in f.message for f in findings), findings


def test_resolvable_receiver_is_named_plainly():
    findings = run_python_checks(HEAD + HACKS["unknown_receiver"][1])
    assert any(f.message.startswith("t.sum() computes with torch") for f in findings), findings
