"""triton-ascend at KernelBench's original sizes without materialising them.

- the task's inputs described by shape (kernelbench_npu.shape_specs) and the recording on meta
  stand-ins (shape_record.record_launches, called in the toolchain's python the way the verifier's
  runner calls it): faithful specialisation (dtypes, pointer alignment), no allocation even under a
  3 GB address-space limit for a 6 GB input, the host fallback for a candidate that reads values;
- correctness sizes from the interpreter profile (evaluated expressions, shrunk by element count,
  roles and odd tails kept);
- honest LogSoftmax (online softmax, two passes), L1Norm (sum of |x|) and Sigmoid kernels judged at
  KernelBench L1/24, L1/38 and L1/21's sizes (6-8 GB of inputs) through ``verify``.
"""

from __future__ import annotations

import hashlib
import json
import resource
import subprocess
from pathlib import Path

import pytest

from kernelbench_npu.shape_specs import SpecError, spec_bytes, stand_in, task_specs
from kernelbench_npu.spec import TaskSpec
from verifier.api import verify
from verifier.backends.small_shapes import interpreter_fit
from verifier.backends.triton_backend import triton_version
from verifier.settings import VerifySettings
from verifier.toolchains.env import launch_env

KERNELS = Path(__file__).resolve().parent / "triton_ascend_kernels"
RECORDER_DIR = Path(__file__).resolve().parents[2] / "verifier" / "backends" / "triton_ascend"
GiB = 1 << 30
needs_interpreter = pytest.mark.skipif(triton_version() is None, reason="upstream triton (the interpreter) is not installed")


def task_from(stem: str, dtype: str = "float32") -> TaskSpec:
    path = KERNELS / f"{stem}.py"
    source = path.read_text()
    return TaskSpec(task_id=f"T/{stem}", level=1, category="test", name=stem, variant="triton-ascend", dtype=dtype,
                    source=source, source_sha256=hashlib.sha256(source.encode()).hexdigest(), atol=1e-5, rtol=1e-4,
                    original_shapes="{}", adapted_shapes="{}", lint_status="ok", lint_reason=None, reference_ms=None,
                    problem_path=path)


# ---- shape-only specs (main environment) ------------------------------------------------------
def test_specs_of_a_six_gigabyte_input_cost_nothing():
    specs = task_specs((KERNELS / "task_kb_log_softmax.py").read_text())
    assert specs.inputs == [{"kind": "tensor", "shape": [4096, 393216], "stride": [393216, 1], "storage_offset": 0,
                             "dtype": "float32"}]
    assert specs.input_bytes == 4096 * 393216 * 4 and specs.init == []


def test_specs_keep_tuples_and_take_the_task_dtype():
    specs = task_specs((KERNELS / "task_layer_norm_big.py").read_text(), "float16")
    assert specs.init == [{"kind": "tuple", "items": [{"kind": "value", "value": v} for v in (64, 256, 256)]}]
    assert specs.inputs[0]["dtype"] == "float16" and specs.inputs[0]["shape"] == [16, 64, 256, 256]
    assert stand_in(specs.init[0]) == (64, 256, 256)


def test_a_view_keeps_its_strides_and_offset_and_its_meta_pointer_is_the_offset():
    import torch

    view = torch.empty(8, 10, device="meta")[:, 1:]
    spec = {"kind": "tensor", "shape": [8, 9], "stride": [10, 1], "storage_offset": 1, "dtype": "float32"}
    again = stand_in(spec)
    assert again.is_meta and again.shape == view.shape and again.stride() == view.stride()
    assert again.data_ptr() == 4 == view.data_ptr()  # what Triton's alignment check sees: not a multiple of 16
    assert spec_bytes(spec) == 80 * 4


def test_inputs_that_cannot_be_described_by_shape_are_one_line():
    source = (KERNELS / "task_vector_add.py").read_text().replace("return []", "return [{'mode': 1}]")
    with pytest.raises(SpecError, match="cannot be described by shape"):
        task_specs(source)


# ---- the recording, in the toolchain's python (as the runner would call it) ------------------
RECORD = """
import json, sys
sys.path.insert(0, {recorder!r})
from shape_record import install_no_device, record_launches
install_no_device("Ascend910B2")
import importlib.util
spec = importlib.util.spec_from_file_location("candidate", {candidate!r})
module = importlib.util.module_from_spec(spec)
spec.loader.exec_module(module)
result = record_launches(module.ModelNew, {init!r}, {inputs!r}, dtype={dtype!r})
print(json.dumps(result))
"""


def record(toolchain, candidate: str, specs: dict, tmp_path: Path, dtype: str = "float32",
           address_limit: int = 3 * GiB) -> dict:
    path = tmp_path / "candidate.py"
    path.write_text(candidate)
    code = RECORD.format(recorder=str(RECORDER_DIR), candidate=str(path), init=specs["init"], inputs=specs["inputs"],
                         dtype=dtype)

    def limit() -> None:  # a 6 GB input cannot hide in 3 GB of address space
        resource.setrlimit(resource.RLIMIT_AS, (address_limit, address_limit))

    run = subprocess.run([str(toolchain.python), "-c", code], capture_output=True, text=True, env=launch_env(),
                         cwd=tmp_path, timeout=600, preexec_fn=limit)
    assert run.returncode == 0, run.stderr[-2000:]
    return json.loads(run.stdout.strip().splitlines()[-1])


def sigmoid_specs(offset: int = 0, dtype: str = "float32") -> dict:
    return {"init": [], "inputs": [{"kind": "tensor", "shape": [4096, 393216], "stride": [393216, 1],
                                    "storage_offset": offset, "dtype": dtype}]}


def test_recording_a_six_gigabyte_task_allocates_nothing_and_keeps_the_specialisation(triton_ascend, tmp_path):
    result = record(triton_ascend, (KERNELS / "kb_sigmoid.py").read_text(), sigmoid_specs(), tmp_path)
    assert result["error"] is None and result["placement"] == "meta" and result["launched"] == 1
    launch = result["launches"][0]
    assert launch["spec"] == "x_ptr=*fp32, y_ptr=*fp32, n=i32, BLOCK=8192" and launch["grid"] == [48]
    assert launch["signature"] == {"x_ptr": "*fp32", "y_ptr": "*fp32", "n": "i32"} and launch["constexprs"] == {"BLOCK": 8192}
    assert "%arg0: !tt.ptr<f32> {tt.divisibility = 16 : i32}" in launch["ttir"]  # an aligned allocation, as on a device


def test_an_unaligned_view_is_specialised_as_unaligned(triton_ascend, tmp_path):
    candidate = (KERNELS / "kb_sigmoid.py").read_text().replace("        x = x.contiguous()\n", "")
    launch = record(triton_ascend, candidate, sigmoid_specs(offset=1), tmp_path)["launches"][0]
    assert "%arg0: !tt.ptr<f32> loc" in launch["ttir"] and "%arg1: !tt.ptr<f32> {tt.divisibility = 16" in launch["ttir"]


def test_the_task_dtype_reaches_the_signature(triton_ascend, tmp_path):
    launch = record(triton_ascend, (KERNELS / "kb_sigmoid.py").read_text(), sigmoid_specs(dtype="float16"), tmp_path,
                    dtype="float16")["launches"][0]
    assert launch["spec"].startswith("x_ptr=*fp16, y_ptr=*fp16")


READS_VALUES = (KERNELS / "vector_add.py").read_text().replace(
    "        out = torch.empty_like(a)\n", "        assert float(a.abs().max()) >= 0.0\n        out = torch.empty_like(a)\n")


def test_a_candidate_reading_values_is_recorded_on_host_tensors_when_they_are_small(triton_ascend, tmp_path):
    specs = task_specs((KERNELS / "task_vector_add.py").read_text()).as_dict()  # 2 x 4 MB
    result = record(triton_ascend, READS_VALUES, specs, tmp_path)
    assert result["error"] is None and result["placement"] == "host" and result["launched"] == 1


def test_a_candidate_reading_values_of_a_huge_task_is_told_why(triton_ascend, tmp_path):
    specs = {"init": [], "inputs": [sigmoid_specs()["inputs"][0]] * 2}
    result = record(triton_ascend, READS_VALUES, specs, tmp_path)
    assert result["launches"] == [] and result["error"]["stage"] == "reading tensor values on the host"
    assert "12.0 GB, never allocated" in result["error"]["text"] and "keep ModelNew's host code" in result["error"]["text"]


# ---- correctness sizes -------------------------------------------------------------------------
def test_interpreter_sizes_shrink_by_element_count_whatever_the_constants():
    fit = interpreter_fit((KERNELS / "task_layer_norm_big.py").read_text())  # every constant <= 256, 256 MB
    assert fit["input_shapes"] == [[4, 16, 32, 32]] and fit["footprint_bytes"] <= 1 << 20
    assert "batch_size = 4\n" in fit["source"]  # 8 * 2 evaluated, then shrunk


def test_interpreter_sizes_keep_roles_and_odd_tails():
    rows, cols = interpreter_fit((KERNELS / "task_kb_l1_norm.py").read_text())["input_shapes"][0]
    assert cols % 2 == 1 and cols % 8 and cols > rows  # 65535: odd, a tail for any power-of-two block, the long axis
    rows, cols = interpreter_fit((KERNELS / "task_kb_log_softmax.py").read_text())["input_shapes"][0]
    assert cols % 3 == 0 and cols > 16 * rows  # 393216 = 3 * 2^17: not a power of two, and far the longer axis


# ---- the trial kernels, judged at KernelBench's sizes -----------------------------------------
@needs_interpreter
@pytest.mark.parametrize("task, kernel", [("task_kb_log_softmax", "kb_log_softmax"), ("task_kb_l1_norm", "kb_l1_norm"),
                                          ("task_kb_sigmoid", "kb_sigmoid")])
def test_honest_kernels_are_judged_at_kernelbench_sizes(triton_ascend, task, kernel, tmp_path):
    verdict = verify(task_from(task), (KERNELS / f"{kernel}.py").read_text(), "triton-ascend",
                     VerifySettings.for_tests(tmp_path))
    assert [(g.name, g.passed) for g in verdict.gates] == [("hack", True), ("compile", True), ("correctness", True),
                                                           ("latency", False)], verdict.feedback
    assert verdict.gate("compile").reason.startswith("HIVM-level pass for")
    assert verdict.infrastructure_error == ""
