"""The Python policy on small adversarial candidates: the refusals that are certain (forbidden
modules reached through aliases and re-exports, files, patching, hooks, introspection that reaches
frames or raw memory, strings evaluated as code, global torch state, host compute on tensor data,
the harness's names) are rejected by the named check, also through constant getattr, ``global``
rebinding and a dead-looking ``__main__`` block that is not dead. Torch compute hidden behind
names is the runner's to observe (test_verifier_policy_runtime)."""

from __future__ import annotations

import pytest
from policy_snippets import HEAD

from verifier.gates.hack_python import run_python_checks

HACKS = {
    "numpy_fwd": ("host_compute_in_forward", """
import numpy as np
class ModelNew(nn.Module):
    def forward(self, x):
        return torch.from_numpy(np.maximum(x.numpy(), 0))
"""),
    "numpy_through_helper": ("host_compute_in_forward", """
import numpy as np
def _host(t):
    return np.tanh(t)
class ModelNew(nn.Module):
    def forward(self, x):
        return torch.as_tensor(_host(x))
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
    "reads_the_verifiers_seed": ("global_state", """
SEED = torch.initial_seed()
"""),
    "side_stream": ("global_state", """
class ModelNew(nn.Module):
    def forward(self, x):
        with torch.cuda.stream(torch.cuda.Stream()):
            return x
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
    "constant_getattr_is_an_attribute": ("file_and_process_apis", """
SAVE = getattr(torch, "save")
"""),
    "computed_getattr": ("forbidden_builtins", """
class ModelNew(nn.Module):
    def forward(self, x):
        return getattr(torch, "re" + "lu")(x)
"""),
    "type3": ("forbidden_builtins", """
ModelNew = type("ModelNew", (nn.Module,), {"forward": lambda self, x: x})
"""),
    "hook": ("patching", """
class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.register_forward_hook(self._hook)
    def _hook(self, m, i, o):
        return torch.relu(o)
    def forward(self, x):
        return x
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
    "hook_table": ("patching", """
class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self._forward_hooks[0] = self._post
    def _post(self, m, i, o):
        return o
"""),
    "global_rebinding_patches_torch": ("patching", """
def _grab():
    global M
    M = torch
_grab()
M.relu = lambda t: t
"""),
    "torch_os": ("imports", """
torch.os.remove("x")
"""),
    "typing_sys": ("imports", """
import typing
typing.sys.modules["os"].remove("x")
"""),
    "enum_builtins_alias": ("imports", """
import enum
enum.bltns.exec("1")
"""),
    "enum_sys": ("imports", """
import enum
enum.sys.modules["os"].remove("x")
"""),
    "dataclasses_builtins": ("imports", """
import dataclasses
dataclasses.builtins.exec("1")
"""),
    "dataclasses_private_exec": ("imports", """
import dataclasses
f = dataclasses._create_fn("f", (), ["return 1"])
"""),
    "typing_operator_attrgetter": ("imports", """
import typing
relu = typing.operator.attrgetter("relu")(torch)
"""),
    "cpp_extension_subprocess": ("imports", """
from torch.utils import cpp_extension
cpp_extension.subprocess.run(["true"])
"""),
    "star_import": ("imports", """
from torch import *
"""),
    "torch_internals_import": ("imports", """
import torch._C as C
"""),
    "string_annotation_code": ("string_evaluation", """
import typing
def f(x: "__import__('os').getpid()") -> None:
    return None
class ModelNew(nn.Module):
    def forward(self, x):
        return x
"""),
    "singledispatch_annotation": ("string_evaluation", """
@functools.singledispatch
def g(x):
    return x
@g.register
def _(x: "[c for c in ().__class__.__base__.__subclasses__()]"):
    return x
"""),
    "computed_attrgetter": ("string_evaluation", """
import operator
name = "__glo" + "bals__"
G = operator.attrgetter(name)(functools.reduce)
"""),
    "type_hints": ("string_evaluation", """
import typing
class K:
    a: "int"
H = typing.get_type_hints(K)
"""),
    "numpy_ctypes_pythonapi": ("introspection", """
import numpy as np
api = np.zeros(1).ctypes._ctypes.pythonapi
"""),
    "traceback_frames": ("introspection", """
class Catch:
    def __enter__(self):
        return self
    def __exit__(self, kind, value, tb):
        self.globals = tb.tb_frame.f_back.f_globals
        return True
"""),
    "generator_frame": ("introspection", """
def gen():
    yield 1
FRAME = gen().gi_frame
"""),
    "annotations_written": ("introspection", """
def f(x):
    return x
f.__annotations__["x"] = "__import__('os')"
"""),
    "harness_model_unbound": ("no_reference_reuse", """
class ModelNew(Model):
    pass
"""),
    "harness_inputs_unbound": ("no_reference_reuse", """
class ModelNew(nn.Module):
    def forward(self, x):
        return get_inputs()[0]
"""),
    "main_block_made_live": ("imports", """
__name__ = "__main__"
if __name__ == "__main__":
    import os
"""),
    "self_test_helper_also_called_at_import": ("imports", """
def main():
    import os
    return os.getpid()
PID = main()
if __name__ == "__main__":
    main()
"""),
    "try_fallback": ("no_try_fallback", """
class ModelNew(nn.Module):
    def forward(self, x):
        try:
            return lib.relu(x)
        except Exception:
            return torch.relu(x)
"""),
}


@pytest.mark.parametrize("name", sorted(HACKS))
def test_hack_is_rejected_by_its_check(name):
    check, body = HACKS[name]
    findings = run_python_checks(HEAD + body)
    assert check in {f.check for f in findings}, [f.line_text() for f in findings]


def test_host_compute_names_what_reaches_numpy():
    findings = run_python_checks(HEAD + HACKS["numpy_fwd"][1])
    messages = [f.message for f in findings if f.check == "host_compute_in_forward"]
    assert any(m.startswith("np.maximum (= numpy.maximum) on tensor data") for m in messages), messages
    assert any(m.startswith("x.numpy() hands tensor data") for m in messages), messages
