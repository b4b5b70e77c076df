"""Ascend C builds and availability without hardware: the real build code (what the monitor's builder
runs, verifier.backends.ascendc.build_job) runs stub CANN tools (written by the test onto a fake CANN
root / PATH) that record their command lines."""

from __future__ import annotations

import sysconfig
from pathlib import Path

import pytest

from cann_stubs import candidate, install_stub_cann, read_log, scaffold_example
from verifier.backends.ascendc import AscendCBackend
from verifier.backends.ascendc.build import BUILDERS, project_dir
from verifier.backends.ascendc.candidate import parse_candidate
from verifier.backends.ascendc.toolchain import locate_cann, toolchain_problem
from verifier.backends.base import ToolchainMissing

ROOT_VARS = ("ASCEND_HOME_PATH", "ASCEND_TOOLKIT_HOME", "ASCEND_INSTALL_PATH", "ASCEND_CANN_PACKAGE_PATH")


class Built:
    def __init__(self, result) -> None:
        self.ok, self.diagnostics = result.ok, result.feedback
        self.artifacts = (str(result.library),) if result.library else ()


def build(source: str, build_dir: Path, timeout_s: float) -> Built:
    """What the builder does for an Ascend C candidate (verifier.backends.ascendc.build_job.main)."""
    candidate = parse_candidate(source)
    return Built(BUILDERS[candidate.format](candidate, locate_cann(), project_dir(build_dir, candidate), timeout_s))


@pytest.fixture
def stub_cann(tmp_path, monkeypatch):
    root = install_stub_cann(tmp_path / "cann")
    log = tmp_path / "stub.log"
    for var in ROOT_VARS:
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("ASCEND_HOME_PATH", str(root))
    monkeypatch.setenv("STUB_LOG", str(log))
    monkeypatch.setenv("ASCEND_CUSTOM_OPP_PATH", "/global/vendors/should-not-leak")
    return root, log


def test_direct_launch_command_lines(stub_cann, tmp_path):
    root, log = stub_cann
    outcome = build(scaffold_example(), tmp_path / "build", 60)
    assert outcome.ok, outcome.diagnostics
    calls = read_log(log)
    assert [c["tool"] for c in calls] == ["bisheng", "bisheng", "bisheng"]
    kernel, binding, link = (c["argv"] for c in calls)
    assert kernel[:2] == ["-xasc", "--npu-arch=dav-2201"] and "kernel/relu_custom.cpp" in kernel
    assert f"-I{root}/compiler/tikcpp/include" in kernel
    assert binding[0] == "-xc++" and "binding/relu_custom.cpp" in binding
    assert any(a.startswith("-I") and a.endswith("torch/include") for a in binding)
    assert "-DTORCH_EXTENSION_NAME=custom_ops_lib" in binding
    assert link[:2] == ["-shared", "--cce-fatobj-link"] and "-lascendcl" in link and "-ltorch_npu" in link
    library = Path(link[link.index("-o") + 1])
    assert library.name == "custom_ops_lib" + sysconfig.get_config_var("EXT_SUFFIX")
    assert outcome.artifacts == (str(library),) and library.is_file()


def test_soc_version_selects_the_npu_arch(stub_cann, tmp_path, monkeypatch):
    monkeypatch.setenv("SOC_VERSION", "Ascend310P3")
    _, log = stub_cann
    assert build(scaffold_example(), tmp_path / "b", 60).ok
    assert read_log(log)[0]["argv"][1] == "--npu-arch=dav-2002"


def test_compiler_errors_become_feedback_with_project_paths(stub_cann, tmp_path):
    _, log = stub_cann
    bad = scaffold_example().replace("AscendC::Relu(y, x, tileLen);", "AscendC::NO_SUCH_API(y, x, tileLen);")
    outcome = build(bad, tmp_path / "build", 60)
    assert not outcome.ok
    assert "ascendc kernel failed (exit 1)" in outcome.diagnostics
    assert "kernel/relu_custom.cpp:" in outcome.diagnostics and str(tmp_path) not in outcome.diagnostics
    assert "no member named 'NO_SUCH_API'" in outcome.diagnostics
    assert "hint: the API does not exist in AscendC" in outcome.diagnostics
    assert len(read_log(log)) == 1  # stopped at the first failing stage


OP_FILES = ('{"add_custom.json": "[]", "op_host/add_custom_tiling.h": "// t", "op_host/add_custom.cpp": "// h", '
            '"op_kernel/add_custom.cpp": KERNEL, "CppExtension/csrc/op.cpp": "// bind"}')


def test_operator_project_runs_msopgen_build_install_and_a_private_binding(stub_cann, tmp_path):
    _, log = stub_cann
    source = 'KERNEL = "// kernel"\n' + candidate(OP_FILES, fmt="operator-project", op="add_custom")
    outcome = build(source, tmp_path / "build", 60)
    assert outcome.ok, outcome.diagnostics
    calls = read_log(log)
    assert [c["tool"] for c in calls] == ["msopgen", "build.sh", "bisheng", "bisheng"]
    assert calls[0]["argv"] == ["gen", "-i", "add_custom.json", "-c", "ai_core-Ascend910B2", "-lan", "cpp",
                                "-out", "AddCustom"]
    assert calls[1]["custom_opp"] is None and calls[1]["cwd"].endswith("AddCustom")  # unset for build.sh
    project = Path(calls[1]["cwd"])
    assert (project / "op_kernel" / "add_custom.cpp").read_text() == "// kernel"
    assert (project / "op_host" / "add_custom_tiling.h").is_file()
    opp = project.parent / "opp"
    assert (opp / "installed_with.txt").read_text().strip() == f"--install-path={opp}"  # private, not global
    link = calls[3]["argv"]
    assert "-lcust_opapi" in link and f"-Wl,-rpath,{opp}/vendors/customize/op_api/lib" in link


def test_operator_project_build_failure_is_reported(stub_cann, tmp_path):
    source = 'KERNEL = "NO_SUCH_API"\n' + candidate(OP_FILES, fmt="operator-project", op="add_custom")
    outcome = build(source, tmp_path / "build", 60)
    assert not outcome.ok and "ascendc build.sh failed (exit 1)" in outcome.diagnostics
    assert "no member named 'NO_SUCH_API'" in outcome.diagnostics


def test_no_cann_means_unavailable_and_never_compiled(tmp_path, monkeypatch):
    for var in ROOT_VARS:
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("PATH", str(tmp_path))  # no bisheng anywhere
    monkeypatch.setenv("HOME", str(tmp_path))
    availability = AscendCBackend().availability()
    if Path("/usr/local/Ascend").exists():
        pytest.skip("this machine has a CANN install")
    assert not availability.available
    assert availability.line().startswith("ascendc: unavailable: CANN toolkit not found")
    with pytest.raises(ToolchainMissing, match="ascendc: CANN toolkit not found"):  # the machine's, not the candidate's
        AscendCBackend().compile_jobs(scaffold_example(), {})
    with pytest.raises(RuntimeError, match="ascendc: unavailable"):
        AscendCBackend().load(scaffold_example(), str(tmp_path / "b"))


def test_cann_without_torch_npu_compiles_but_is_unavailable(stub_cann):
    root, _ = stub_cann
    availability = AscendCBackend().availability()
    assert not availability.available and "torch_npu is not installed" in availability.reason
    gates = {g.gate: g for g in availability.gates}
    assert gates["compile"].available and not gates["correctness"].available and not gates["latency"].available


def test_bisheng_found_on_path_and_root_variables_in_order(tmp_path, monkeypatch):
    for var in ROOT_VARS:
        monkeypatch.delenv(var, raising=False)
    tools = install_stub_cann(tmp_path / "onpath", with_msopgen=False) / "bin"
    chain = locate_cann({"PATH": str(tools), "HOME": str(tmp_path)})
    assert chain.bisheng == tools / "bisheng" and chain.msopgen is None and toolchain_problem(chain) == ""
    first, second = install_stub_cann(tmp_path / "a"), install_stub_cann(tmp_path / "b")
    chain = locate_cann({"ASCEND_TOOLKIT_HOME": str(second), "ASCEND_HOME_PATH": str(first), "PATH": ""})
    assert chain.root == first and chain.bisheng == first / "bin" / "bisheng"
    empty = tmp_path / "empty"
    empty.mkdir()
    chain = locate_cann({"ASCEND_HOME_PATH": str(empty), "PATH": ""})
    assert "bisheng (CANN's Ascend C compiler) not found" in toolchain_problem(chain)


def test_seed_items_teach_the_programming_model():
    items = AscendCBackend().seed_items()
    text = "\n".join(i.body for i in items)
    for concept in ("GlobalTensor", "LocalTensor", "TPipe", "TQue", "CopyIn", "Compute", "CopyOut",
                    "Tiling data", "32-byte"):
        assert concept in text, concept
    assert all(i.title.startswith("Ascend C: ") for i in items) and len(items) >= 4
