"""Recording the candidate's kernel launches and running Triton's front end (toolchain side, sandboxed).

Runs in a child forked by :mod:`driver` inside the triton-ascend environment, under the sandbox's
seccomp filter (no exec, no fork, no sockets): only here does candidate code run. The candidate
is imported with triton-ascend's ``triton``, ``ModelNew`` is built from the task's
``get_init_inputs()`` and called once on the task's ``get_inputs()`` (the task as built: the
benchmark's original sizes). Every ``kernel[grid](...)`` goes to :func:`record_launch` instead of
a device: it binds the arguments exactly as triton-ascend's ``JITFunction.run`` does (signature
with pointer dtypes, the ``AttrsDescriptor`` specialisations, constexpr values, launch options),
evaluates the grid, and runs Triton's front end (AST -> TTIR, the ``ttir`` passes) for the NPU
target. Nothing executes: outputs stay uninitialised, which is fine, since only the launches are
wanted. ``@triton.autotune`` kernels record every config (up to ``max_configs``).

Each launch goes back to the parent as one JSON line: the kernel, its specialisation, the grid,
and either the TTIR text or the front-end error (Triton's caret message, mapped to the line of
``candidate.py``). The parent compiles the TTIR without ever importing the candidate.
"""

from __future__ import annotations

import importlib.util
import inspect
import json
import math
import os
import select
import signal
import sys
import time
import traceback
from pathlib import Path

MAX_PROGRAMS = 65535  # triton-ascend's launcher refuses larger grids (jit.py: "grid should be less than 65536")


class NoDevice:
    """The active Triton driver while recording: there is no device, and nothing may launch.

    ``@triton.autotune`` asks the driver for its benchmarker at decoration time, and triton-ascend's
    NPU driver would compile a CANN extension (a subprocess, which the sandbox kills)."""

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


class Recorder:
    def __init__(self, soc: str, write, max_configs: int) -> None:
        from triton.backends.compiler import GPUTarget
        from triton.compiler.compiler import make_backend

        self.target = GPUTarget("npu", soc, 0)
        self.backend = make_backend(self.target)
        self.write, self.max_configs = write, max_configs
        self.seen: set[str] = set()
        self.launches = 0
        self.group, self.group_active = 0, False

    def install(self) -> None:
        from triton.runtime import driver
        from triton.runtime.autotuner import Autotuner
        from triton.runtime.jit import JITFunction

        driver.set_active(NoDevice(self.target))  # the NPU driver would build a CANN extension
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
        options = self._launch_options(kwargs)
        shown = ", ".join([f"{k}={v}" for k, v in signature.items()] + [f"{k}={v!r}" for k, v in constants.items()
                                                                          if jit.params[_index(jit, k)].is_constexpr])
        key = f"{jit.fn.__qualname__}|{shown}|{sorted(options.items())}|{attrs.hash()}"
        if key in self.seen:
            return
        self.seen.add(key)
        entry = {"kind": "launch", "kernel": jit.fn.__name__, "spec": shown, "options": options,
                 "grid": self._grid(grid, bound_args), "group": self.group if self.group_active else None}
        entry["programs"] = programs = math.prod(entry["grid"])
        if programs > MAX_PROGRAMS:
            entry["launch_error"] = (f"grid {tuple(entry['grid'])} launches {programs} programs; triton-ascend "
                                     f"refuses more than {MAX_PROGRAMS} (use fewer, larger blocks, or loop inside "
                                     f"the kernel over a grid of about the number of AI cores)")
        entry.update(self._front_end(jit, signature, constants, attrs, options))
        self.write(entry)

    def _launch_options(self, kwargs: dict) -> dict:
        from dataclasses import fields

        options_type = type(self.backend.parse_options({}))
        names = {f.name for f in fields(options_type)}
        return {k: v for k, v in kwargs.items() if k in names and isinstance(v, (bool, int, float, str))}

    @staticmethod
    def _grid(grid, bound_args) -> list[int]:
        value = grid(bound_args) if callable(grid) else grid
        return [int(v) for v in (value if isinstance(value, (tuple, list)) else (value,))]

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


def _def_line(jit) -> int:
    """The line of ``def`` in candidate.py (Triton counts lines from there)."""
    lines, start = inspect.getsourcelines(jit.fn)
    offset = next((i for i, text in enumerate(lines) if text.lstrip().startswith("def ")), 0)
    return start + offset


def _load(path: Path, name: str):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def _candidate_frames(exc: BaseException) -> str:
    frames = [f for f in traceback.extract_tb(exc.__traceback__) if f.filename.endswith("candidate.py")]
    where = "".join(f"  candidate.py line {f.lineno}: {(f.line or '').strip()}\n" for f in frames[-4:])
    return (where + f"{type(exc).__name__}: {exc}").strip()[:2000]


def record(workdir: Path, request: dict, write) -> None:
    """The forked child's whole job; every outcome is written as JSON lines, never raised."""
    import torch

    recorder = Recorder(request["soc"], write, int(request.get("max_configs", 8)))
    recorder.install()
    torch.manual_seed(int(request.get("seed", 0)))
    sys.path.insert(0, str(workdir))
    stage = "importing the task"
    try:
        problem = _load(workdir / "task.py", "evokernel_task")
        stage = "importing the candidate"
        candidate = _load(workdir / "candidate.py", "candidate")
        stage = "building ModelNew from get_init_inputs()"
        model = candidate.ModelNew(*problem.get_init_inputs())
        inputs = problem.get_inputs()
        stage = "running ModelNew.forward on get_inputs() (launches recorded, not executed)"
        with torch.no_grad():
            model(*inputs)
    except BaseException as exc:  # noqa: BLE001 - the candidate's failure is the result
        write({"kind": "error", "stage": stage, "text": _candidate_frames(exc), "launches": recorder.launches})
        return
    write({"kind": "done", "launches": recorder.launches})


def run_forked(workdir: Path, request: dict, seccomp_path: str) -> tuple[list[dict], str]:
    """Fork, sandbox and record; returns the child's JSON lines and, if it died, why."""
    read_fd, write_fd = os.pipe()
    pid = os.fork()
    if pid == 0:  # child: never returns
        os.close(read_fd)
        out = os.fdopen(write_fd, "w", buffering=1)
        code = 0
        try:
            if seccomp_path:
                _load(Path(seccomp_path), "evokernel_seccomp").install("runner")
            record(workdir, request, lambda entry: out.write(json.dumps(entry, default=repr) + "\n"))
            out.flush()
        except BaseException:  # noqa: BLE001
            code = 3
        os._exit(code)
    os.close(write_fd)
    return _collect(pid, read_fd, float(request.get("record_timeout_s", 120)))


def _collect(pid: int, read_fd: int, timeout_s: float) -> tuple[list[dict], str]:
    chunks, deadline = [], time.monotonic() + timeout_s
    while True:
        ready, _, _ = select.select([read_fd], [], [], max(0.0, deadline - time.monotonic()))
        if not ready:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            os.close(read_fd)
            return _parse(b"".join(chunks)), f"recording timed out after {timeout_s:.0f} s (an endless loop in forward?)"
        chunk = os.read(read_fd, 1 << 16)
        if not chunk:
            break
        chunks.append(chunk)
    os.close(read_fd)
    _, status = os.waitpid(pid, 0)
    died = ""
    if os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        died = ("the candidate made a forbidden system call (process creation, exec, signals) and was killed"
                if sig == signal.SIGSYS else f"the recording process died with signal {signal.Signals(sig).name}")
    elif os.WEXITSTATUS(status) != 0:
        died = f"the recording process exited with code {os.WEXITSTATUS(status)}"
    return _parse(b"".join(chunks)), died


def _parse(data: bytes) -> list[dict]:
    entries = []
    for line in data.decode(errors="replace").splitlines():
        try:
            entries.append(json.loads(line))
        except ValueError:
            continue  # a torn last line from a killed child
    return entries
