"""`evokernel verify` on a hand-made build: exit codes 0/1/2 and the --json object."""

from __future__ import annotations

import hashlib
import json

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner
from verifier_taskutil import FIXTURES, TASKS

from cli.main import app


@pytest.fixture()
def build_dir(tmp_path):
    root = tmp_path / "build"
    (root / "problems").mkdir(parents=True)
    source = (TASKS / "relu.py").read_text()
    (root / "problems" / "relu.py").write_text(source)
    row = dict(task_id="L1/relu", level=1, category="activation", name="relu",
               source_sha256=hashlib.sha256(source.encode()).hexdigest(), variant="cpu", dtype="float32",
               original_shapes="{}", adapted_shapes="{}", atol=1e-4, rtol=1e-4, lint_status="ok",
               lint_reason=None, reference_ms=0.1, problem_file="relu.py")
    pq.write_table(pa.Table.from_pylist([row]), root / "manifest.parquet")
    (root / "build.json").write_text(json.dumps({"build_hash": "test", "backend": "cpu"}))
    return root


def _run(*args):
    return CliRunner().invoke(app, ["verify", *args])


def test_passing_candidate_exits_0_with_json(build_dir, monkeypatch, verify_cache):
    monkeypatch.setenv("XDG_CACHE_HOME", str(verify_cache.parents[1]))  # its verifier cache is the run's
    result = _run("--build", str(build_dir), "--task", "L1/relu", "--candidate",
                  str(FIXTURES / "honest_relu_omp.py"), "--rounds", "5", "--json")
    assert result.exit_code == 0, result.output
    payload = json.loads(result.output)
    assert payload["passed"] is True and payload["failed_gate"] is None
    assert [g["name"] for g in payload["gates"]] == ["hack", "compile", "correctness", "latency"]
    assert payload["latency"]["speedup"] > 0 and "speedup" in payload["feedback"]
    spent, gate = payload["latency"]["time"], payload["gates"][-1]
    assert spent["windows_s"] > 0 and spent["drawing_s"] > 0 and spent["staging_s"] > 0 and spent["checking_s"] > 0
    top = ("windows_s", "drawing_s", "staging_s", "checking_s", "spares_s", "other_s")
    assert sum(spent[k] for k in top) == pytest.approx(gate["seconds"], rel=0.01)  # every second of the gate, once
    parts = [spent[k] for k in ("inputs_s", "stage_s", "settle_s", "outputs_s")]  # what staging went on (outputs:
    # read by the monitor where it may read the sides' memory, else each side copies its own inside its Collect)
    assert all(p > 0 for p in parts[:3]) and parts[3] >= 0 and sum(parts) < spent["staging_s"], spent
    assert spent["rounds_played"] >= 2 + 5  # the calibration's and the counted rounds at least


def test_failing_gate_exits_1(build_dir):
    result = _run("--build", str(build_dir), "--task", "L1/relu", "--candidate",
                  str(FIXTURES / "hack_d1_patch_torch.py"), "--json")
    assert result.exit_code == 1
    assert json.loads(result.output)["failed_gate"] == "hack"


def test_usage_errors_exit_2(build_dir, tmp_path):
    missing_task = _run("--build", str(build_dir), "--task", "L1/nope", "--candidate", str(FIXTURES / "honest_relu_omp.py"))
    assert missing_task.exit_code == 2 and "L1/nope" in missing_task.output
    missing_file = _run("--build", str(build_dir), "--task", "L1/relu", "--candidate", str(tmp_path / "none.py"))
    assert missing_file.exit_code == 2 and "none.py" in missing_file.output
    not_a_build = _run("--build", str(tmp_path), "--task", "L1/relu", "--candidate", str(FIXTURES / "honest_relu_omp.py"))
    assert not_a_build.exit_code == 2 and "manifest.parquet" in not_a_build.output
