"""Checks of what a command was given, run before anything starts: no Prefect server, no lake, no
file is created until every input a command takes has passed.

Every command that takes an input checks it here, so the same input gets the same line everywhere
(verify, build --list/--explain, campaign, demo, prompt, report, the lake commands). A failed check
raises :class:`InputError`: one line that names the option (``--lake``), the file or the environment
variable at fault and what to do. Cheap checks come first; the few that need a heavy import (the
lake's DuckDB catalog, an LLM provider) run last, and only for the commands that need them anyway.
The lake checks are in :mod:`cli.inputs_lake`.
"""

from __future__ import annotations

import difflib
from pathlib import Path
from typing import TYPE_CHECKING, Iterable, Sequence

if TYPE_CHECKING:
    from evokernel.config import Settings
    from evokernel.llm.base import LLM
    from kernelbench_npu.spec import Build, TaskSpec


class InputError(ValueError):
    """A command's input is unusable; ``str(err)`` is one line naming the option, file or variable."""

    def __init__(self, message: str) -> None:
        super().__init__(" ".join(str(message).split()))


def split_list(values: Iterable[str] | None) -> list[str]:
    """Repeated options and comma-separated lists alike: ["a,b", "c"] -> ["a", "b", "c"]."""
    return [v.strip() for value in values or () for v in str(value).split(",") if v.strip()]


# ---- settings ---------------------------------------------------------------------------------
def settings(config_file: Path | None = None, **given) -> "Settings":
    """The effective settings; a bad value names its option, config key or EVOKERNEL_* variable."""
    from evokernel.config import ConfigError, load_settings

    if config_file is not None and not Path(config_file).is_file():
        what = "is a directory" if Path(config_file).is_dir() else "not found"
        raise InputError(f"--config {config_file}: {what} (a TOML settings file)")
    try:
        return load_settings(config_file, **given)
    except ConfigError as exc:
        raise InputError(str(exc)) from None


def choice(flag: str, value: str, allowed: Sequence[str]) -> str:
    if value not in allowed:
        raise InputError(f"{flag} {value}: expected one of {', '.join(allowed)}")
    return value


# ---- builds and tasks -------------------------------------------------------------------------
def build(path: Path, flag: str = "--build") -> "Build":
    """The benchmark build at ``path`` (manifest, build.json and problems all readable)."""
    from kernelbench_npu.spec import BuildError, load_build

    path = Path(path)
    if not path.exists():
        raise InputError(f"{flag} {path}: not found (make a build with `evokernel build --out {path}`)")
    if not path.is_dir():
        raise InputError(f"{flag} {path}: is a file, not a build directory (one made by `evokernel build`)")
    try:
        return load_build(path)
    except BuildError as exc:
        raise InputError(str(exc)) from None


def settings_backend(config: "Settings", build: "Build") -> str:
    """A command runs on its build's backend; a ``backend`` setting is only a check of it."""
    if config.backend and config.backend != build.backend:
        raise InputError(f"{build.root}/build.json: the build is for backend {build.backend!r}, but the settings "
                         f"ask for {config.backend!r} (drop EVOKERNEL_BACKEND / backend, or use a "
                         f"{config.backend} build)")
    return build.backend


def build_backend(build: "Build", backend_name: str, flag: str = "--backend") -> str:
    """A command verifies on its build's backend: another one would judge a task adapted for a
    different machine (a CPU-sized task under nvcc's sandbox, ...) and blame the candidate."""
    if backend_name != build.backend:
        raise InputError(f"{flag} {backend_name}: the build at {build.root} is for backend {build.backend!r} "
                         f"(leave {flag} out, or make a {backend_name} build: `evokernel build --backend "
                         f"{backend_name} --out DIR`)")
    return backend_name


def backend_toolchain(build: "Build", flag: str = "--build") -> None:
    """The toolchain the build's backend compiles with is on this machine: a campaign without it
    could not judge a single kernel (and a missing toolchain is never the candidate's fault)."""
    from verifier.backends import get_backend

    try:
        problem = get_backend(build.backend).toolchain_problem()
    except (KeyError, ImportError) as exc:
        raise InputError(f"{flag} {build.root}: backend {build.backend!r} is not available here ({exc})") from None
    if problem:
        raise InputError(f"{flag} {build.root}: the build is for backend {build.backend!r}, whose compile gate needs "
                         f"a toolchain this machine lacks: {problem}")


def _unknown_task(build: "Build", task_id: str, flag: str) -> InputError:
    ids = [t.task_id for t in build.tasks]
    close = difflib.get_close_matches(task_id, ids, n=3, cutoff=0.5)
    hint = f"did you mean {', '.join(close)}? " if close else f"ids look like {ids[0]}; " if ids else ""
    return InputError(f"{flag} {task_id}: not a task of the build at {build.root} ({len(ids)} tasks; {hint}"
                      f"`evokernel build --list --out {build.root}` lists them)")


def task(build: "Build", task_id: str, flag: str = "--task") -> "TaskSpec":
    """One task of the build (quarantined ones too: verify and prompt may look at them)."""
    for spec in build.tasks:
        if spec.task_id == task_id:
            return spec
    raise _unknown_task(build, task_id, flag)


def runnable_tasks(build: "Build", task_ids: Sequence[str], flag: str = "--tasks") -> tuple[str, ...]:
    """The named tasks, each in the build and not quarantined (a campaign can run it)."""
    for task_id in task_ids:
        spec = task(build, task_id, flag)
        if spec.quarantined:
            raise InputError(f"{flag} {task_id}: quarantined in the build at {build.root} ({spec.lint_reason}); "
                             "a campaign cannot verify it")
    if not task_ids and not build.tasks:
        raise InputError(f"--build {build.root}: the manifest lists no tasks; nothing to run")
    if not task_ids and not build.runnable():
        raise InputError(f"--build {build.root}: every task is quarantined; nothing to run")
    return tuple(task_ids)


def backend(name: str, flag: str = "--backend") -> str:
    """A registered backend name (the built-ins and the ``evokernel.backends`` entry points)."""
    from verifier.backends import backend_names

    if name not in backend_names():
        raise InputError(f"{flag} {name}: unknown backend (known: {', '.join(backend_names())})")
    return name


# ---- candidates -------------------------------------------------------------------------------
def candidate_source(path: Path, flag: str = "--candidate") -> str:
    """The candidate's source text: a readable, non-empty UTF-8 Python file without NUL bytes."""
    path = Path(path)
    if path.is_dir():
        raise InputError(f"{flag} {path}: is a directory; give the candidate's .py file (class ModelNew)")
    if not path.exists():
        raise InputError(f"{flag} {path}: no such file")
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise InputError(f"{flag} {path}: cannot read it ({exc.strerror or exc})") from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(f"{flag} {path}: not UTF-8 text (byte 0x{data[exc.start]:02x} at offset {exc.start}); "
                         "a candidate is Python source") from None
    if "\x00" in text:
        offset = text.index("\x00")
        line = text.count("\n", 0, offset) + 1
        column = offset - (text.rfind("\n", 0, offset) + 1) + 1
        raise InputError(f"{flag} {path}: line {line}, column {column}: a NUL byte; a candidate is Python "
                         "source text (was a binary file given?)")
    if not text.strip():
        raise InputError(f"{flag} {path}: the file is empty; a candidate is a Python file defining class "
                         "ModelNew (see verifier/backends/cpu_scaffold.md for the format)")
    return text


# ---- LLM providers ----------------------------------------------------------------------------
def llm(spec: str, config: "Settings", flag: str = "--llm") -> "LLM":
    """The provider for ``spec``, made without a request: the prefix is known, the model named, the
    API key's variable set, a scripted file readable."""
    from evokernel.llm.pricing import PriceTableError
    from evokernel.llm.registry import LLMConfigError, make_llm

    try:
        return make_llm(spec, config)
    except LLMConfigError as exc:
        raise InputError(f"{flag} {exc}") from None
    except PriceTableError as exc:  # LLM_PRICES: names the variable itself
        raise InputError(str(exc)) from None


def llm_endpoint(provider: "LLM", flag: str = "--llm") -> None:
    """The provider's endpoint answers (one GET with a short timeout, evokernel.llm.reach): an
    unreachable one is said before anything starts, not after a server start and the retries."""
    from evokernel.llm.reach import endpoint_problem

    problem = endpoint_problem(provider)
    if problem:
        raise InputError(f"{flag} {provider.spec}: {problem}; nothing was started")


# ---- lake export filters ----------------------------------------------------------------------
ITEM_KINDS = ("api_template", "experience", "trace", "best_practice")  # memory_lake.schema.ITEM_KINDS


def item_kinds(kinds: Sequence[str]) -> None:
    """Each --kinds value names an item kind (checked without opening the lake)."""
    for kind in kinds:
        if kind not in ITEM_KINDS:
            raise InputError(f"--kinds {kind}: not an item kind (kinds: {', '.join(ITEM_KINDS)})")


def export_filters(lake, exclude_tasks: Sequence[str], kinds: Sequence[str]) -> list[str]:
    """An unknown --kinds name is an error; a filter value that matches no item of the lake is said
    (one note line each, returned), never ignored without a word: a typo in a test task's id would
    otherwise export the memory it was meant to leave out. (Excluding a task the lake never saw is
    legitimate: a whole test split is excluded, attempted or not.)"""
    item_kinds(kinds)
    if not exclude_tasks and not kinds:
        return []
    present = lake.query("SELECT DISTINCT kind, task_id FROM items").to_pylist()
    held_kinds = sorted({row["kind"] for row in present})
    notes = [f"--kinds {kind}: the lake holds no item of this kind (it holds {', '.join(held_kinds) or 'none'})"
             for kind in kinds if kind not in held_kinds]
    held_tasks = sorted({row["task_id"] for row in present if row["task_id"]})
    for task_id in exclude_tasks:
        if task_id not in held_tasks:
            close = difflib.get_close_matches(task_id, held_tasks, n=3, cutoff=0.5)
            hint = f"; did you mean {', '.join(close)}?" if close else ""
            notes.append(f"--exclude-tasks {task_id}: no item of the lake belongs to this task, nothing left out "
                         f"for it{hint}")
    return notes
