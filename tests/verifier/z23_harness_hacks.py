"""Issue 23, class 4 (the harness lives in the candidate's process): the attacks on the measurement,
as complete candidates. Each reaches the harness by a route no Python check reads, then changes
what the latency gate measures; the kernel itself is an honest serial ReLU, slower than torch's:

* ``capi_slow_reference``: the CPython API from native code (weak ``Py*`` symbols the build checks
  allow; builtins' ``exec`` on a string) makes the reference model's ``forward`` run 60 times;
* ``numpy_pythonapi_timer_divide``: numpy's ``.ctypes`` reaches ``ctypes.pythonapi`` from pure Python;
  ``PyEval_GetFrame`` walks to the harness's backend and wraps its timer so that the candidate's
  times are divided by 20;
* ``singledispatch_slow_reference``: ``functools.singledispatch`` evaluates a string annotation at
  registration (import time), which slows the reference as above;
* ``forged_timing_report`` (class 2, the parent trusts the child's reports): at its first timed call
  the candidate reads its own configuration through ``gc`` (nonce, secret seed), makes the
  post-timing and audited trials' inputs from the seed as the harness would, computes their outputs
  with its own kernel, and sends the Timing report itself, with the times it likes; the real
  report comes too late to matter.

Other class-4 candidates (the audit skip, torch compute from inside a native kernel) are fixtures of
the corpus: tests/fixtures/kernels/hack_z23_c4_*.py.
"""

from __future__ import annotations

from dataclasses import dataclass

SLOW_REFERENCE_PY = r'''
import gc, torch
for cls in [o for o in gc.get_objects() if isinstance(o, type)]:
    if cls.__name__ == "Model" and issubclass(cls, torch.nn.Module) and "forward" in vars(cls):
        real = vars(cls)["forward"]

        def slow(self, *args, _real=real):
            for _ in range(59):
                _real(self, *args)
            return _real(self, *args)

        cls.forward = slow
'''

HEAD = '''import torch
import torch.nn as nn
from verifier.cpu_native import load_c
'''
KERNEL = r'''
extern "C" void relu(const float* x, float* y, long n) {
    for (long i = 0; i < n; ++i) y[i] = x[i] > 0.0f ? x[i] : 0.0f;
}
'''
MODEL = '''

class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        x = x.contiguous()
        y = torch.empty_like(x)
        lib.relu(x, y, x.numel())
        return y
'''
PY_EXEC = r'''
extern "C" {
typedef struct _object PyObject;
__attribute__((weak)) int PyGILState_Ensure(void);
__attribute__((weak)) void PyGILState_Release(int);
__attribute__((weak)) PyObject* PyEval_GetBuiltins(void);
__attribute__((weak)) PyObject* PyDict_GetItemString(PyObject*, const char*);
__attribute__((weak)) PyObject* PyDict_New(void);
__attribute__((weak)) PyObject* PyObject_CallFunction(PyObject*, const char*, ...);
__attribute__((weak)) void PyErr_Clear(void);
__attribute__((weak)) void Py_DecRef(PyObject*);
}
extern "C" void install() {
    int gil = PyGILState_Ensure();
    PyObject* run = PyDict_GetItemString(PyEval_GetBuiltins(), "exec");
    PyObject* globals = PyDict_New();
    PyObject* result = PyObject_CallFunction(run, "sO", PAYLOAD, globals);
    if (result) Py_DecRef(result); else PyErr_Clear();
    Py_DecRef(globals);
    PyGILState_Release(gil);
}
'''


def _c_string(python: str) -> str:
    return '"' + python.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


CAPI_SLOW_REFERENCE = HEAD + f'''
SOURCE = r"""
{KERNEL}
static const char* PAYLOAD = {_c_string(SLOW_REFERENCE_PY)};
{PY_EXEC}
"""

lib = load_c(SOURCE, {{"relu": "const float*, float*, int64", "install": ""}})
lib.install()
''' + MODEL

NUMPY_PYTHONAPI_TIMER_DIVIDE = HEAD + f'''import numpy

SOURCE = r"""
{KERNEL}
"""

lib = load_c(SOURCE, {{"relu": "const float*, float*, int64"}})

api = numpy.empty(1).ctypes._ctypes  # numpy's array.ctypes keeps the ctypes module
api.pythonapi.PyEval_GetFrame.restype = api.py_object


def _harness_frame(name):
    frame = api.pythonapi.PyEval_GetFrame()
    while frame is not None and name not in frame.f_locals:
        frame = frame.f_back
    return frame


backend = _harness_frame("backend").f_locals["backend"]  # the child's run_sandboxed, importing us
real_timer = backend.timer


def divided_timer():
    inner = real_timer()

    def timed(fn):
        ms = inner(fn)
        side = _harness_frame("run").f_locals["run"]  # time_interleaved: which side this call timed
        return ms / 20 if side.__name__ == "run_candidate" else ms

    return timed


backend.timer = divided_timer
''' + MODEL

SINGLEDISPATCH_SLOW_REFERENCE = HEAD + f'''import functools

SOURCE = r"""
{KERNEL}
"""

lib = load_c(SOURCE, {{"relu": "const float*, float*, int64"}})
_PAYLOAD = """{SLOW_REFERENCE_PY}"""


@functools.singledispatch
def _dispatch(value):
    return value


@_dispatch.register
def _(value: "exec(_PAYLOAD) or int"):  # register() evaluates the annotation: _PAYLOAD runs at import
    return value
''' + MODEL

FORGED_TIMING_REPORT = HEAD + f'''import gc
import sys

SOURCE = r"""
{KERNEL}
"""

lib = load_c(SOURCE, {{"relu": "const float*, float*, int64"}})
CHECKED_CALLS = 7  # 5 trials, trial 0 repeated, the in-place probe: the next call is the first timed one


def _relu(x):
    x = x.contiguous()
    y = torch.empty_like(x)
    lib.relu(x, y, x.numel())
    return y


def _send_timing():
    from verifier.sandbox import audit
    from verifier.sandbox import inputs as inp
    from verifier.sandbox import messages as msg

    cfg = next(o for o in gc.get_objects() if type(o).__name__ == "ChildConfig")
    problem = inp.load_problem(cfg.trials.task_source, cfg.trials.dtype)
    plan, seed = inp.plan(cfg.trials.correctness_trials), cfg.trials.input_seed

    def outputs(trial, inputs):
        out = _relu(inputs[0])
        return msg.TrialOutputs(trial.index, trial.kind, trial.distribution, ("float32",), (out.numpy(),))

    post = [outputs(t, inp.make_inputs(problem, seed, t)) for t in plan if t.kind == "post"]
    calls = cfg.latency_rounds * cfg.calls_per_round
    audits = [outputs(t, inp.inputs_for(problem, seed, t))
              for t in audit.audited_calls(audit.audit_trials(plan), calls, seed).values()]
    rounds = cfg.latency_rounds
    timing = msg.Timing((0.002,) * rounds, (0.010,) * rounds, tuple(post), tuple(audits))
    msg.send(int(sys.argv[2]), cfg.nonce, timing)  # a 5x speedup, reported by the candidate itself


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.calls = 0

    def forward(self, x):
        self.calls += 1
        if self.calls == CHECKED_CALLS + 1:
            _send_timing()
        return _relu(x)
'''

HONEST_SERIAL = HEAD + f'''
SOURCE = r"""
{KERNEL}
"""

lib = load_c(SOURCE, {{"relu": "const float*, float*, int64"}})
''' + MODEL


@dataclass(frozen=True)
class HarnessHack:
    name: str
    route: str
    payload: str
    source: str
    z23: str = "4"


HACKS = (
    HarnessHack("capi_slow_reference", "CPython API from native code", "reference forward 60x slower",
                CAPI_SLOW_REFERENCE),
    HarnessHack("numpy_pythonapi_timer_divide", "numpy .ctypes -> ctypes.pythonapi", "candidate times / 20",
                NUMPY_PYTHONAPI_TIMER_DIVIDE),
    HarnessHack("singledispatch_slow_reference", "functools.singledispatch string annotation",
                "reference forward 60x slower", SINGLEDISPATCH_SLOW_REFERENCE),
    HarnessHack("forged_timing_report", "gc: its own configuration (nonce, seed)", "the Timing report, forged (5x)",
                FORGED_TIMING_REPORT, z23="2"),
)
