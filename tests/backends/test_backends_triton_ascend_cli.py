"""The triton-ascend toolchain from the command line: `evokernel toolchain list/install`, `evokernel
backends`, a missing or broken toolchain (one line with the install command, never a traceback), and
a scripted campaign on two triton-ascend tasks end to end (real build, real gates, real lake)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from build_jobs import compile_own

from verifier.backends.base import ToolchainMissing
from verifier.backends.scaffolds import fenced_blocks, scaffold_sections
from verifier.backends.triton_ascend import TritonAscendBackend
from verifier.backends.triton_ascend.toolchain import INSTALL_COMMAND, locate
from verifier.backends.triton_backend import triton_version
from verifier.toolchains import ToolchainError, toolchains_root

ROOT = Path(__file__).resolve().parents[2]
KERNELS = Path(__file__).resolve().parent / "triton_ascend_kernels"


def cli(*args: str, cwd: Path, xdg: Path | None = None, timeout: float = 600) -> subprocess.CompletedProcess:
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "PYTHONPATH": str(ROOT), "HOME": os.environ.get("HOME", str(cwd)),
           "PREFECT_HOME": str(cwd / "prefect"), "XDG_CACHE_HOME": str(xdg or toolchains_root().parents[1])}
    return subprocess.run([sys.executable, "-m", "cli.main", *args], capture_output=True, text=True, cwd=cwd,
                          env=env, timeout=timeout)


def test_toolchain_list_and_backends_name_versions_and_soc(triton_ascend, tmp_path):
    listed = cli("toolchain", "list", "--json", cwd=tmp_path)
    assert listed.returncode == 0, listed.stderr
    row = json.loads(listed.stdout)[0]
    assert row["installed"] and row["versions"]["triton-ascend"] == "3.2.0" and row["versions"]["ascendnpu-ir"] == "1.2.0"
    assert 400 * 2**20 < row["size_bytes"] < 1500 * 2**20
    line = next(ln for ln in cli("backends", cwd=tmp_path).stdout.splitlines() if ln.startswith("triton-ascend:"))
    assert f"compile yes (triton-ascend 3.2.0 for {triton_ascend.soc}, HIVM level (no CANN hivmc))" in line
    assert "latency no (needs torch_npu and an NPU)" in line


def test_missing_toolchain_is_one_line_with_the_install_command(tmp_path):
    empty = tmp_path / "xdg"
    line = next(ln for ln in cli("backends", cwd=tmp_path, xdg=empty).stdout.splitlines() if ln.startswith("triton-ascend:"))
    assert f"compile no (the triton-ascend toolchain is not installed (run `{INSTALL_COMMAND}`))" in line
    listed = cli("toolchain", "list", cwd=tmp_path, xdg=empty)
    assert listed.stdout.strip() == f"triton-ascend: not installed (run `{INSTALL_COMMAND}`)"
    backend = TritonAscendBackend()
    context = {"task_source": "", "toolchains": str(empty / "evokernel" / "toolchains"), "soc": "Ascend910B2"}
    with pytest.raises(ToolchainMissing) as refused:  # the machine's outcome, never the candidate's compile failure
        backend.compile_jobs((KERNELS / "vector_add.py").read_text(), context)
    assert refused.value.gate == "machine" and refused.value.reason == (
        f"triton-ascend: the triton-ascend toolchain is not installed (run `{INSTALL_COMMAND}`)")


def test_a_toolchain_gone_during_a_verification_is_compile_unavailable_the_machines_outcome(tmp_path):
    """The plan said compile runs, then the toolchain was gone when the monitor built (issue 39): the gate is
    "compile unavailable here", so the outcome is the machine's (no reward, no value update), not a failed compile."""
    from build_jobs import service
    from evokernel.agent.attribution import MACHINE, attribute_gates
    from verifier.monitor.compile_phase import CompileState, run_own_jobs
    from verifier.result import GateResult

    backend = TritonAscendBackend()
    context = {"task_source": "", "toolchains": str(tmp_path / "gone"), "soc": "Ascend910B2"}
    state = CompileState(service(backend, tmp_path / "cache", context=context))
    assert run_own_jobs(state, backend, (KERNELS / "vector_add.py").read_text(), context, 60) == {}
    gate = state.gate_or_none(0.5)
    assert gate.reason == (f"compile unavailable here: triton-ascend: the triton-ascend toolchain is not installed "
                           f"(run `{INSTALL_COMMAND}`)")
    assert attribute_gates((GateResult("hack", True, "", 0.0), gate), 1).owner == MACHINE


def test_broken_toolchains_are_one_line_reasons(triton_ascend, tmp_path):
    fake = tmp_path / "toolchains" / "triton-ascend"
    fake.mkdir(parents=True)
    (fake / "toolchain.json").write_text("{not json")
    with pytest.raises(ToolchainError, match=r"is broken \(toolchain.json: .*reinstall with `evokernel toolchain install triton-ascend --force`"):
        locate(tmp_path / "toolchains")
    # a complete-looking environment whose python is not triton-ascend's: the driver dies, one line back
    manifest = json.loads((triton_ascend.env.root / "toolchain.json").read_text())
    (fake / "toolchain.json").write_text(json.dumps(manifest))
    (fake / "bin").mkdir()
    (fake / "bin" / "python").symlink_to(sys.executable)
    site = fake / "lib" / f"python{sys.version_info.major}.{sys.version_info.minor}" / "site-packages"
    ascend = site / "triton" / "backends" / "ascend"
    ascend.mkdir(parents=True)
    (ascend / "compiler.py").write_text("")
    tools = site / "ascendnpuir" / "bin"
    tools.mkdir(parents=True)
    (tools / "bishengir-compile").write_text("")
    (fake / "evokernel-bin").mkdir()
    (fake / "evokernel-bin" / "hivmc").write_text("")
    backend = TritonAscendBackend()
    context = {"task_source": (KERNELS / "task_vector_add.py").read_text(),
               "toolchains": str(tmp_path / "toolchains"), "soc": "Ascend910B2"}
    outcome = compile_own(backend, (KERNELS / "vector_add.py").read_text(), tmp_path / "cache", 120, context)
    assert not outcome.ok and len(outcome.diagnostics.splitlines()) == 1, outcome.diagnostics
    assert outcome.diagnostics.startswith(f"the triton-ascend toolchain at {fake} failed to run (")
    assert outcome.diagnostics.endswith(f"reinstall with `{INSTALL_COMMAND} --force`")
    assert "Traceback" not in outcome.diagnostics


def test_install_refuses_an_unknown_toolchain_in_one_line(tmp_path):
    result = cli("toolchain", "install", "triton-cpu", cwd=tmp_path, xdg=tmp_path / "xdg")
    assert result.returncode == 2
    assert result.stderr.strip() == "error: unknown toolchain 'triton-cpu' (known: triton-ascend)"


PROBLEM = '''"""{doc}"""

import torch
import torch.nn as nn

CATEGORY = "{category}"


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, {args}):
        return {body}


{sizes}


def get_inputs():
    return [{inputs}]


def get_init_inputs():
    return []
'''


def write_problems(root: Path) -> Path:
    level = root / "level1"
    level.mkdir(parents=True)
    (level / "1_VectorAdd.py").write_text(PROBLEM.format(
        doc="Elementwise sum of two vectors.", category="elementwise", args="a, b", body="a + b",
        sizes="n = 1048576", inputs="torch.randn(n), torch.randn(n)"))
    (level / "2_RowSoftmax.py").write_text(PROBLEM.format(
        doc="Softmax over the last dimension.", category="softmax", args="x", body="torch.softmax(x, dim=1)",
        sizes="batch_size = 64\ndim = 32768", inputs="torch.randn(batch_size, dim) * 4.0"))
    return root


def write_script(path: Path) -> Path:
    def answer(code: str) -> str:
        return f"Here is the kernel.\n\n```python\n{code}```\n"

    example = fenced_blocks(dict(scaffold_sections("triton-ascend"))["Worked example: row softmax"], "python")[0]
    distill = ('Lessons:\n```json\n[{"kind": "experience", "title": "tiles must fit the 192 KB UB", '
               '"body": "A tile beyond the Unified Buffer fails the compile gate: loop over smaller blocks."}]\n```\n')
    responses = {
        "KB-L1/1_VectorAdd": {"draft": [answer((KERNELS / "vector_add_ub_overflow.py").read_text()),
                                        answer((KERNELS / "vector_add.py").read_text())],
                              "refine": [answer((KERNELS / "vector_add_persistent.py").read_text())], "distill": [distill]},
        "KB-L1/2_RowSoftmax": {"draft": [answer((KERNELS / "softmax_one_tile.py").read_text()), answer(example)],
                               "refine": [answer(example.replace("BLOCK = 2048", "BLOCK = 1024"))], "distill": [distill]},
    }
    path.write_text(json.dumps({"label": "triton-ascend test script (scripted, not a model)", "responses": responses}))
    return path


@pytest.mark.slow
@pytest.mark.timeout(1800)  # ~3 min on a quiet 2-core machine (Prefect start-up, 6 verifications); 6+ min loaded
@pytest.mark.skipif(triton_version() is None, reason="upstream triton (the interpreter) is not installed")
def test_scripted_campaign_on_two_triton_ascend_tasks(triton_ascend, tmp_path, prefect_home):
    built = cli("build", "--backend", "triton-ascend", "--source", str(write_problems(tmp_path / "src")),
                "--no-bundled", "--levels", "1", "--out", str(tmp_path / "build"), "--quiet", cwd=tmp_path)
    assert built.returncode == 0, built.stderr[-2000:]
    (tmp_path / "campaign.toml").write_text('backend = "triton-ascend"\n')
    ran = cli("campaign", "--build", str(tmp_path / "build"), "--lake", str(tmp_path / "lake"), "--llm",
              f"scripted:{write_script(tmp_path / 'script.json')}", "--budget", "3", "--config",
              str(tmp_path / "campaign.toml"), cwd=tmp_path, timeout=1500)
    assert ran.returncode == 0, ran.stderr[-3000:]
    summary = ran.stdout[ran.stdout.index("\ncampaign "):]  # after the progress bar
    rows = {ln.split()[0]: ln.split() for ln in summary.splitlines() if ln.startswith("KB-L1/")}
    assert set(rows) == {"KB-L1/1_VectorAdd", "KB-L1/2_RowSoftmax"}
    for task, row in rows.items():  # task attempts feasible first best-ms speedup stop...
        # no blind refinement: latency is not measured here, so the task ends at its feasible draft
        assert row[1:4] == ["2", "True", "1"], (task, ran.stdout)
        assert "latency is not measured on this machine" in " ".join(row), ran.stdout
    query = cli("lake", "query", "--lake", str(tmp_path / "lake"), "--format", "json",
                "select task_id, iteration, failed_gate, feedback from attempts order by task_id, iteration", cwd=tmp_path)
    attempts = [json.loads(line) for line in query.stdout.splitlines() if line.strip()]
    assert [a["failed_gate"] for a in attempts] == ["compile", "latency"] * 2
    for first in (attempts[0], attempts[2]):
        assert "ub overflow, requires" in first["feedback"] and "1572864 bits available" in first["feedback"]
    for feasible in (attempts[1], attempts[3]):
        assert feasible["feedback"].startswith("RESULT: passed every gate this machine can run"), feasible
        assert "FAILED" not in feasible["feedback"]
        assert "[compile] ok: HIVM-level pass for Ascend910B2" in feasible["feedback"]
        assert "[correctness] ok" in feasible["feedback"]
        assert "latency unavailable here: needs torch_npu and an NPU" in feasible["feedback"]


CONFIGURED = PROBLEM.format(doc="Scaled copy, configured by a dict (which no shape spec describes).",
                            category="elementwise", args="x", body="x * self.scale", sizes="n = 4096",
                            inputs="torch.randn(n)").replace(
    "    def __init__(self):\n        super().__init__()\n",
    "    def __init__(self, config):\n        super().__init__()\n        self.scale = config['scale']\n").replace(
    "def get_init_inputs():\n    return []", "def get_init_inputs():\n    return [{'scale': 2.0}]")


@pytest.mark.timeout(1200)
@pytest.mark.skipif(triton_version() is None, reason="upstream triton (the interpreter) is not installed")
def test_build_checks_each_tasks_verification_path_and_explain_shows_the_gates_here(triton_ascend, tmp_path):
    source = write_problems(tmp_path / "src")
    (source / "level1" / "3_Configured.py").write_text(CONFIGURED)
    built = cli("build", "--backend", "triton-ascend", "--source", str(source), "--no-bundled", "--levels", "1",
                "--out", str(tmp_path / "build"), cwd=tmp_path)
    assert built.returncode == 0, built.stderr[-2000:]
    assert "dry recording of 2 tasks at their own sizes" in built.stdout
    softmax = cli("build", "--backend", "triton-ascend", "--out", str(tmp_path / "build"), "--explain",
                  "KB-L1/2_RowSoftmax", cwd=tmp_path).stdout
    gates = softmax[softmax.index("  gates here"):].splitlines()
    assert gates[0].startswith("  gates here     compile: runs here: triton-ascend 3.2.0 for")
    assert "dry recording at the task's sizes: 1 probe launch(es) on shape-only inputs (0.01 GiB never allocated)" in gates[0]
    assert gates[1].strip() == ("correctness: runs here: upstream Triton's interpreter at 16x8192 "
                                "(the sizes the reference was linted at)")
    assert gates[2].strip() == "latency: unavailable here: this machine: needs torch_npu and an NPU"
    configured = cli("build", "--backend", "triton-ascend", "--out", str(tmp_path / "build"), "--explain",
                     "KB-L1/3_Configured", cwd=tmp_path).stdout
    assert "verdict        quarantined: the compile gate cannot record this task by shape: " \
           "a dict cannot be described by shape" in configured


def test_install_without_the_package_index_is_one_line_and_leaves_nothing(tmp_path):
    env_keys = {"PIP_INDEX_URL": "http://127.0.0.1:9/simple", "PIP_EXTRA_INDEX_URL": "", "PIP_FIND_LINKS": "",
                "PIP_CONFIG_FILE": os.devnull, "PIP_RETRIES": "0", "PIP_TIMEOUT": "2", "PIP_NO_CACHE_DIR": "1"}
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "PYTHONPATH": str(ROOT), "HOME": str(tmp_path),
           "XDG_CACHE_HOME": str(tmp_path / "xdg"), **env_keys}
    result = subprocess.run([sys.executable, "-m", "cli.main", "toolchain", "install", "triton-ascend"],
                            capture_output=True, text=True, cwd=tmp_path, env=env, timeout=300)
    assert result.returncode == 2
    assert result.stderr.startswith("error: pip could not install triton-ascend==3.2.0"), result.stderr
    assert len(result.stderr.strip().splitlines()) == 1 and "Traceback" not in result.stderr
    left = sorted(p.name for p in (tmp_path / "xdg" / "evokernel" / "toolchains").iterdir())
    assert left == [".triton-ascend.lock"]  # no half-made environment
