"""The Ascend C candidate container: one Python block holding ModelNew plus the project's files.

The LLM answers with ONE ```python block (the agent's extractor wants exactly that) that defines

    ASCENDC_FORMAT = "direct-launch"      # or "operator-project"
    ASCENDC_OP = "relu_custom"            # snake_case operator name
    ASCENDC_FILES = {"kernel/relu_custom.cpp": r'''...''', ...}   # relative path -> file text
    class ModelNew(nn.Module): ...        # imports custom_ops_lib, the module the build produces

The three constants are read from the AST (never executed). Paths must be relative, forward-slash,
without ``..``, absolute parts or odd characters; each format has required files (below).
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass

from verifier.static_values import SourceExtractionError, resolve_static

FORMATS = ("direct-launch", "operator-project")
MAX_FILES, MAX_TOTAL_BYTES = 32, 512 * 1024
ALLOWED_SUFFIXES = (".cpp", ".cc", ".h", ".hpp", ".asc", ".json")
_PATH_PART = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.-]*$")
_OP_NAME = re.compile(r"^[a-z][a-z0-9_]{0,62}$")


class AscendCFormatError(ValueError):
    """The candidate container is malformed; the message names the field or path."""


@dataclass(frozen=True)
class AscendCCandidate:
    format: str
    op_name: str  # snake_case, e.g. relu_custom
    files: tuple[tuple[str, str], ...]  # (relative path, text), sorted by path

    @property
    def op_pascal(self) -> str:
        return "".join(part.capitalize() for part in self.op_name.split("_"))

    def paths(self) -> tuple[str, ...]:
        return tuple(p for p, _ in self.files)

    def under(self, folder: str, suffixes: tuple[str, ...] = (".cpp", ".cc", ".asc")) -> tuple[str, ...]:
        return tuple(p for p in self.paths() if p.startswith(folder + "/") and p.endswith(suffixes))


def validate_relative_path(path: object) -> str:
    """Return the path if it is a safe relative path inside the project, else raise."""
    if not isinstance(path, str) or not path:
        raise AscendCFormatError(f"ASCENDC_FILES: key {path!r} is not a non-empty string path")
    if path.startswith(("/", "~")) or re.match(r"^[A-Za-z]:", path) or "\\" in path:
        raise AscendCFormatError(f"ASCENDC_FILES: {path!r}: absolute paths are not allowed (use a relative path)")
    parts = path.split("/")
    if ".." in parts:
        raise AscendCFormatError(f"ASCENDC_FILES: {path!r}: '..' is not allowed (paths stay inside the project)")
    for part in parts:
        if part in ("", ".") or not _PATH_PART.match(part):
            raise AscendCFormatError(f"ASCENDC_FILES: {path!r}: bad path component {part!r} "
                                     "(letters, digits, '_', '-', '.'; no empty parts)")
    if not path.endswith(ALLOWED_SUFFIXES):
        raise AscendCFormatError(f"ASCENDC_FILES: {path!r}: file type not allowed ({', '.join(ALLOWED_SUFFIXES)})")
    return path


def required_files(fmt: str, op: str) -> tuple[str, ...]:
    if fmt == "operator-project":
        return (f"{op}.json", f"op_host/{op}_tiling.h", f"op_host/{op}.cpp", f"op_kernel/{op}.cpp",
                "CppExtension/csrc/op.cpp")
    return ()


def _constants(tree: ast.Module) -> dict[str, ast.expr]:
    found = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            found[node.targets[0].id] = node.value
    return found


def _static(consts: dict[str, ast.expr], name: str) -> object:
    if name not in consts:
        raise AscendCFormatError(f"{name}: not defined at module level (see the scaffold's candidate format)")
    try:
        return resolve_static(consts[name], consts)
    except SourceExtractionError as exc:
        raise AscendCFormatError(f"{name}: {exc} (write it as a literal)") from None


def parse_candidate(candidate_source: str) -> AscendCCandidate:
    """Read and validate the container without executing it; raise AscendCFormatError."""
    try:
        tree = ast.parse(candidate_source)
    except SyntaxError as exc:
        raise AscendCFormatError(f"line {exc.lineno}: Python syntax error: {exc.msg}") from None
    if not any(isinstance(n, ast.ClassDef) and n.name == "ModelNew" for n in tree.body):
        raise AscendCFormatError("ModelNew: the candidate defines no class ModelNew")
    consts = _constants(tree)
    fmt, op, files = (_static(consts, n) for n in ("ASCENDC_FORMAT", "ASCENDC_OP", "ASCENDC_FILES"))
    if fmt not in FORMATS:
        raise AscendCFormatError(f"ASCENDC_FORMAT: {fmt!r} is not one of {', '.join(FORMATS)}")
    if not isinstance(op, str) or not _OP_NAME.match(op):
        raise AscendCFormatError(f"ASCENDC_OP: {op!r} must be a snake_case name like 'relu_custom'")
    if not isinstance(files, dict) or not files:
        raise AscendCFormatError("ASCENDC_FILES: must be a non-empty dict of relative path -> file text")
    if len(files) > MAX_FILES:
        raise AscendCFormatError(f"ASCENDC_FILES: {len(files)} files, at most {MAX_FILES}")
    checked = {validate_relative_path(path): text for path, text in files.items()}
    for path, text in checked.items():
        if not isinstance(text, str):
            raise AscendCFormatError(f"ASCENDC_FILES: {path!r}: content must be a string")
    if sum(len(t.encode()) for t in checked.values()) > MAX_TOTAL_BYTES:
        raise AscendCFormatError(f"ASCENDC_FILES: more than {MAX_TOTAL_BYTES // 1024} KB of sources")
    missing = [p for p in required_files(fmt, op) if p not in checked]
    if missing:
        raise AscendCFormatError(f"ASCENDC_FILES: {fmt} needs {', '.join(missing)}")
    candidate = AscendCCandidate(fmt, op, tuple(sorted(checked.items())))
    if fmt == "direct-launch" and not (candidate.under("kernel") and candidate.under("binding")):
        raise AscendCFormatError("ASCENDC_FILES: direct-launch needs kernel/<name>.cpp (device code and its "
                                 "launch wrapper) and binding/<name>.cpp (the pybind11 module)")
    return candidate
