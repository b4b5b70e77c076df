"""Building an Ascend C candidate with CANN into a private Python module (``custom_ops_lib``).

Both flows write the project under ``build_dir/<hash>/`` and produce
``lib/custom_ops_lib<EXT_SUFFIX>``; nothing is installed globally, so verifications can run in
parallel (research/backends.md 1.6-1.8).

direct-launch: ``bisheng -xasc --npu-arch=<arch>`` compiles each ``kernel/*.cpp`` (device code and
its ``<<<>>>`` launch wrapper), ``bisheng -xc++`` the ``binding/*.cpp`` pybind11 module against
torch and torch_npu, and ``bisheng -shared`` links them with CANN's runtime.

operator-project: ``msopgen gen`` creates the project from ``<op>.json``; the candidate's host
tiling/operator and kernel sources replace the generated ones; ``bash build.sh`` builds the
operator package (``ASCEND_CUSTOM_OPP_PATH`` unset); its ``custom_opp_*.run`` installs into
``build_dir/.../opp``; the binding ``CppExtension/csrc/op.cpp`` is compiled and linked against the
package's ``op_api`` (rpath set), instead of a global wheel.
"""

from __future__ import annotations

import hashlib
import sysconfig
from dataclasses import dataclass
from importlib.util import find_spec
from pathlib import Path
from typing import Callable

from verifier.backends.ascendc.candidate import AscendCCandidate
from verifier.backends.ascendc.diagnostics import stage_feedback
from verifier.backends.ascendc.toolchain import CannToolchain
from verifier.backends.toolrun import ToolRun, run_tool

MODULE_NAME = "custom_ops_lib"
RUNTIME_LIBS = ("ascendcl", "runtime", "tiling_api", "platform", "register", "c10", "torch", "torch_cpu",
                "torch_python", "torch_npu")


@dataclass(frozen=True)
class BuildResult:
    ok: bool
    feedback: str  # failed stage's feedback, or a one-line summary
    library: Path | None
    runs: tuple[ToolRun, ...]
    opp_vendor_dir: Path | None = None  # operator-project: value for ASCEND_CUSTOM_OPP_PATH


def project_dir(build_dir: Path, candidate: AscendCCandidate) -> Path:
    digest = hashlib.sha256(repr(candidate).encode()).hexdigest()[:20]
    return build_dir / f"ascendc-{digest}"


def write_files(candidate: AscendCCandidate, root: Path, prefix: str = "") -> None:
    for rel, text in candidate.files:
        if prefix and not rel.startswith(prefix):
            continue
        target = root / rel[len(prefix):] if prefix else root / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text)


def _torch_flags() -> tuple[list[str], list[str]]:
    """(-I flags, -L/-rpath flags) for torch, torch_npu and Python, found without importing torch_npu."""
    from torch.utils import cpp_extension

    includes = [*cpp_extension.include_paths(), sysconfig.get_paths()["include"]]
    libs = [str(Path(cpp_extension.include_paths()[0]).parent / "lib")]
    spec = find_spec("torch_npu")
    if spec is not None and spec.origin:
        npu_root = Path(spec.origin).parent
        includes.append(str(npu_root / "include"))
        libs.append(str(npu_root / "lib"))
    return [f"-I{p}" for p in includes], [flag for d in libs for flag in (f"-L{d}", f"-Wl,-rpath,{d}")]


def _objects(chain: CannToolchain, root: Path, sources: tuple[str, ...], language: str,
             extra: list[str]) -> list[tuple[str, tuple[str, ...], Path]]:
    """(stage, argv, object path) for each source file."""
    cann_inc = [f"-I{d}" for d in chain.include_dirs()]
    steps = []
    for rel in sources:
        obj = root / "obj" / (rel.replace("/", "__") + ".o")
        lang = ["-xasc", f"--npu-arch={chain.npu_arch}"] if language == "asc" else ["-xc++"]
        argv = (str(chain.bisheng), *lang, "-std=c++17", "-fPIC", "-O2", f"-I{root}", f"-I{root / Path(rel).parent}",
                *cann_inc, *extra, f"-DTORCH_EXTENSION_NAME={MODULE_NAME}", "-c", rel, "-o", str(obj))
        steps.append(("kernel" if language == "asc" else "binding", argv, obj))
    return steps


def link_argv(chain: CannToolchain, objects: list[Path], out: Path, lib_flags: list[str],
              extra_libs: tuple[str, ...] = ()) -> tuple[str, ...]:
    cann_libs = [flag for d in chain.lib_dirs() for flag in (f"-L{d}", f"-Wl,-rpath,{d}")]
    return (str(chain.bisheng), "-shared", "--cce-fatobj-link", *map(str, objects), "-o", str(out),
            *cann_libs, *lib_flags, *[f"-l{lib}" for lib in (*RUNTIME_LIBS, *extra_libs)])


def _run_steps(steps, root: Path, timeout_s: float, runs: list[ToolRun], strip: tuple[str, ...]) -> str:
    """Run (stage, argv, _) steps in order; return the first failure's feedback ("" when all pass)."""
    for stage, argv, _ in steps:
        run = run_tool(argv, root, timeout_s)
        runs.append(run)
        if not run.ok:
            return stage_feedback(stage, run, strip)
    return ""


def build_direct_launch(candidate: AscendCCandidate, chain: CannToolchain, root: Path, timeout_s: float) -> BuildResult:
    write_files(candidate, root)
    (root / "obj").mkdir(exist_ok=True)
    (root / "lib").mkdir(exist_ok=True)
    includes, lib_flags = _torch_flags()
    steps = _objects(chain, root, candidate.under("kernel"), "asc", []) + \
        _objects(chain, root, candidate.under("binding"), "c++", includes)
    runs: list[ToolRun] = []
    failure = _run_steps(steps, root, timeout_s, runs, (str(root),))
    if failure:
        return BuildResult(False, failure, None, tuple(runs))
    library = root / "lib" / f"{MODULE_NAME}{sysconfig.get_config_var('EXT_SUFFIX')}"
    failure = _run_steps([("link", link_argv(chain, [o for _, _, o in steps], library, lib_flags), None)],
                         root, timeout_s, runs, (str(root),))
    if failure:
        return BuildResult(False, failure, None, tuple(runs))
    return BuildResult(True, f"built {library.name} with bisheng ({chain.npu_arch})", library, tuple(runs))


def build_operator_project(candidate: AscendCCandidate, chain: CannToolchain, root: Path,
                           timeout_s: float) -> BuildResult:
    op, pascal = candidate.op_name, candidate.op_pascal
    runs: list[ToolRun] = []
    strip = (str(root),)
    root.mkdir(parents=True, exist_ok=True)
    (root / f"{op}.json").write_text(dict(candidate.files)[f"{op}.json"])
    if chain.msopgen is None:
        return BuildResult(False, "ascendc operator-project: msopgen not found (CANN's operator project "
                                  "generator); use the direct-launch format", None, ())
    gen = ("msopgen", (str(chain.msopgen), "gen", "-i", f"{op}.json", "-c", f"ai_core-{chain.soc}", "-lan", "cpp",
                       "-out", pascal), None)
    failure = _run_steps([gen], root, timeout_s, runs, strip)
    if failure:
        return BuildResult(False, failure, None, tuple(runs))
    project = root / pascal
    for rel, text in candidate.files:
        if rel.startswith(("op_host/", "op_kernel/")):
            (project / rel).parent.mkdir(parents=True, exist_ok=True)
            (project / rel).write_text(text)
    build = run_tool(("bash", "build.sh"), project, timeout_s, unset=("ASCEND_CUSTOM_OPP_PATH",))
    runs.append(build)
    if not build.ok:
        return BuildResult(False, stage_feedback("build.sh", build, strip), None, tuple(runs))
    packages = sorted((project / "build_out").glob("custom_opp_*.run"))
    if not packages:
        return BuildResult(False, "ascendc build.sh succeeded but produced no build_out/custom_opp_*.run",
                           None, tuple(runs))
    opp = root / "opp"
    failure = _run_steps([("install", ("bash", str(packages[0]), f"--install-path={opp}"), None)],
                         root, timeout_s, runs, strip)
    if failure:
        return BuildResult(False, failure, None, tuple(runs))
    return _build_op_binding(candidate, chain, root, opp / "vendors" / "customize", timeout_s, runs)


def _build_op_binding(candidate: AscendCCandidate, chain: CannToolchain, root: Path, vendor: Path,
                      timeout_s: float, runs: list[ToolRun]) -> BuildResult:
    write_files(candidate, root / "CppExtension", "CppExtension/")
    for sub in ("obj", "lib"):
        (root / sub).mkdir(exist_ok=True)
    includes, lib_flags = _torch_flags()
    op_api = vendor / "op_api"
    steps = _objects(chain, root, ("CppExtension/csrc/op.cpp",), "c++", [*includes, f"-I{op_api / 'include'}"])
    library = root / "lib" / f"{MODULE_NAME}{sysconfig.get_config_var('EXT_SUFFIX')}"
    link = link_argv(chain, [o for _, _, o in steps], library,
                     [*lib_flags, f"-L{op_api / 'lib'}", f"-Wl,-rpath,{op_api / 'lib'}"], ("cust_opapi",))
    failure = _run_steps([*steps, ("link", link, None)], root, timeout_s, runs, (str(root),))
    if failure:
        return BuildResult(False, failure, None, tuple(runs))
    return BuildResult(True, f"built operator package {candidate.op_pascal} and {library.name}", library,
                       tuple(runs), opp_vendor_dir=vendor)


BUILDERS: dict[str, Callable[..., BuildResult]] = {
    "direct-launch": build_direct_launch,
    "operator-project": build_operator_project,
}
