"""Loading KernelBench-format problem files: one :class:`Problem` per file, one-line errors otherwise.

A problem file defines ``class Model(nn.Module)``, ``get_inputs()``, ``get_init_inputs()`` and
module-level size constants. The loader parses it (syntax, required names, a ``CATEGORY`` tag or a
category inferred from the name), then executes it with PyTorch's ``meta`` device as the default
device, so ``get_inputs()`` and ``Model(*get_init_inputs())`` are checked without allocating the
real tensors (KernelBench's original sizes reach several GiB). Anything malformed becomes an error
line naming the file; :func:`load_problems` carries on with the other files.

Problem files are trusted code (the project's own, or a user's KernelBench checkout); candidates
never go through this module.
"""

from __future__ import annotations

import ast
import hashlib
import re
from dataclasses import dataclass
from pathlib import Path

from kernelbench_npu.categories import infer_category
from kernelbench_npu.instantiate import load_module, needs_real_values

REQUIRED_FUNCTIONS = ("get_inputs", "get_init_inputs")
_LEVEL_DIR = re.compile(r"^level(\d)$")


class ProblemError(ValueError):
    """A problem file is malformed; the message is one line and starts with the file's path."""


@dataclass(frozen=True)
class Problem:
    """A loaded problem file (original sizes)."""

    path: Path
    task_id: str  # e.g. "L1/019_relu" (bundled) or "KB-L1/19_ReLU" (a KernelBench checkout)
    level: int
    name: str  # the file stem
    category: str
    source: str
    source_sha256: str


@dataclass(frozen=True)
class LoadReport:
    """What a directory scan found: the problems that loaded and one error line per file that did not."""

    problems: tuple[Problem, ...]
    errors: tuple[str, ...]


def load_problem(path: str | Path, level: int | None = None, id_prefix: str = "", run: bool = True) -> Problem:
    """Load and check one problem file; raise :class:`ProblemError` (one line, naming the file).

    ``run=False`` skips executing the file (the builder runs that check in a worker process, where a
    hanging file cannot stall it)."""
    path = Path(path)
    try:
        source = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ProblemError(f"{path}: cannot read ({type(exc).__name__}: {exc})") from None
    tree = _parse(path, source)
    level = level if level is not None else _infer_level(path, tree)
    category = _category_tag(path, tree) or infer_category(path.stem, level)
    if run:
        check_runtime(path, source)
    return Problem(
        path=path, task_id=f"{id_prefix}L{level}/{path.stem}", level=level, name=path.stem,
        category=category, source=source, source_sha256=hashlib.sha256(source.encode()).hexdigest(),
    )


def load_problems(directory: str | Path, id_prefix: str = "", levels: tuple[int, ...] | None = None) -> LoadReport:
    """Load every problem under ``directory`` (its ``levelN/`` folders, or the files in it)."""
    problems, errors = [], []
    for path, level in problem_files(Path(directory), levels):
        try:
            problems.append(load_problem(path, level=level, id_prefix=id_prefix))
        except ProblemError as exc:
            errors.append(str(exc))
    return LoadReport(problems=tuple(problems), errors=tuple(errors))


def problem_files(directory: Path, levels: tuple[int, ...] | None = None) -> list[tuple[Path, int | None]]:
    """The problem files of a directory with their level, in a stable order.

    Accepts a KernelBench checkout (``DIR/KernelBench/levelN`` or ``DIR/levelN``) or a flat folder
    of files (their level then comes from a ``LEVEL`` constant in each file).
    """
    if not directory.is_dir():
        raise ProblemError(f"{directory}: not a directory")
    root = directory / "KernelBench" if (directory / "KernelBench").is_dir() else directory
    level_dirs = sorted(
        (int(m.group(1)), d) for d in root.iterdir() if d.is_dir() and (m := _LEVEL_DIR.match(d.name))
    )
    if not level_dirs:
        return [(p, None) for p in _py_files(root)]
    return [(p, lvl) for lvl, d in level_dirs if levels is None or lvl in levels for p in _py_files(d)]


def _py_files(directory: Path) -> list[Path]:
    return sorted(p for p in directory.iterdir() if p.suffix == ".py" and p.is_file() and p.name != "__init__.py")


def _parse(path: Path, source: str) -> ast.Module:
    try:
        tree = ast.parse(source, filename=str(path))
    except SyntaxError as exc:
        raise ProblemError(f"{path}: syntax error at line {exc.lineno}: {exc.msg}") from None
    defined = _top_level_names(tree)
    if "Model" not in defined or not isinstance(defined["Model"], ast.ClassDef):
        raise ProblemError(f"{path}: missing class Model")
    for name in REQUIRED_FUNCTIONS:
        if not isinstance(defined.get(name), ast.FunctionDef):
            raise ProblemError(f"{path}: missing function {name}()")
    return tree


def _top_level_names(tree: ast.Module) -> dict[str, ast.AST]:
    names: dict[str, ast.AST] = {}
    for node in tree.body:
        if isinstance(node, (ast.ClassDef, ast.FunctionDef)):
            names[node.name] = node
        elif isinstance(node, ast.Assign):
            for target in node.targets:
                if isinstance(target, ast.Name):
                    names[target.id] = node
    return names


def _literal_constant(tree: ast.Module, name: str):
    node = _top_level_names(tree).get(name)
    if isinstance(node, ast.Assign):
        try:
            return ast.literal_eval(node.value)
        except ValueError:
            return None
    return None


def _infer_level(path: Path, tree: ast.Module) -> int:
    match = _LEVEL_DIR.match(path.parent.name)
    if match:
        return int(match.group(1))
    level = _literal_constant(tree, "LEVEL")
    if isinstance(level, int) and not isinstance(level, bool) and 1 <= level <= 4:
        return level
    raise ProblemError(f"{path}: level unknown (put the file in a levelN/ folder or set LEVEL = 1..4)")


def _category_tag(path: Path, tree: ast.Module) -> str | None:
    node = _top_level_names(tree).get("CATEGORY")
    if node is None:
        return None
    value = _literal_constant(tree, "CATEGORY")
    if not isinstance(value, str) or not re.fullmatch(r"[a-z0-9][a-z0-9_-]*", value):
        raise ProblemError(f"{path}: CATEGORY must be a lower-case string literal like \"activation\"")
    return value


def check_runtime(path: Path, source: str) -> None:
    """Run the module and its two input functions on the meta device (a model whose ``__init__`` needs
    real values is built on the CPU); raise ProblemError on misuse."""
    import torch

    try:
        module = load_module(source, path)
    except Exception as exc:  # noqa: BLE001 - any failure of a problem file is reported, not raised
        raise ProblemError(f"{path}: executing the file failed: {_one_line(exc)}") from None
    model_cls = getattr(module, "Model", None)
    if not (isinstance(model_cls, type) and issubclass(model_cls, torch.nn.Module)):
        raise ProblemError(f"{path}: Model is not a torch.nn.Module subclass")
    with torch.device("meta"):
        init_inputs = _call(path, module, "get_init_inputs")
        inputs = _call(path, module, "get_inputs")
        if not inputs:
            raise ProblemError(f"{path}: get_inputs() returned no inputs")
        for i, value in enumerate(inputs):
            if not isinstance(value, (torch.Tensor, int, float, bool)):
                raise ProblemError(f"{path}: get_inputs()[{i}] is a {type(value).__name__}, expected a tensor or number")
        try:
            model_cls(*init_inputs)
            return
        except Exception as exc:  # noqa: BLE001
            if not needs_real_values(exc):
                raise ProblemError(f"{path}: Model(*get_init_inputs()) failed: {_one_line(exc)}") from None
    try:  # __init__ asks a tensor for its value (x.item()): build the model for real on the CPU
        model_cls(*_call(path, module, "get_init_inputs"))
    except Exception as exc:  # noqa: BLE001
        raise ProblemError(f"{path}: Model(*get_init_inputs()) failed: {_one_line(exc)}") from None


def _call(path: Path, module, name: str) -> list:
    try:
        value = getattr(module, name)()
    except Exception as exc:  # noqa: BLE001
        raise ProblemError(f"{path}: {name}() raised {_one_line(exc)}") from None
    if not isinstance(value, (list, tuple)):
        raise ProblemError(f"{path}: {name}() returned a {type(value).__name__}, expected a list")
    return list(value)


def _one_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0][:200]}" if text else type(exc).__name__
