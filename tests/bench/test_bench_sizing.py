"""Size constants, source rewriting, the meta-device cost model and the cpu size profile."""

from __future__ import annotations

import pytest

from bench_fixtures import GOOD_MATMUL, problem
from kernelbench_npu.loader import load_problems
from kernelbench_npu.plan import BUNDLED_DIR
from kernelbench_npu.sizing import (MIN_DIM, estimate_cost, fit_to_target, rewrite_constants, scale_value,
                                    size_constants)
from kernelbench_npu.variants import alignment_note, tolerances, variant_for, VariantError

SOURCE = '''import torch
batch_size = 64  # the batch
shape = (128, 4095)
kernel_size = 3
scale = 0.5
derived = batch_size * 2
flag = True
'''


def test_size_constants_are_the_int_literals_only():
    assert size_constants(SOURCE) == {"batch_size": 64, "shape": (128, 4095), "kernel_size": 3}


def test_rewrite_changes_only_the_literals():
    new = rewrite_constants(SOURCE, {"batch_size": 8, "shape": (16, 511)})
    assert new == SOURCE.replace("= 64  #", "= 8  #").replace("(128, 4095)", "(16, 511)")
    assert size_constants(new)["shape"] == (16, 511)


@pytest.mark.parametrize("name, value, factor, expected", [
    ("batch_size", 128, 0.125, 16),
    ("batch_size", 128, 0.001, 2),  # batch floor
    ("dim", 4095, 0.25, 1025),  # awkward stays awkward (1024 would be a multiple of 8)
    ("dim", 4096, 0.3, 1232),  # multiples of 8 stay multiples of 8
    ("dim", 64, 0.01, MIN_DIM),  # never below the floor
    ("kernel_size", 11, 0.5, 11),  # below the scalable threshold
    ("shape", (32, 1025), 0.5, (16, 513)),
])
def test_scale_value_rules(name, value, factor, expected):
    assert scale_value(name, value, factor) == expected


def test_cost_model_counts_matmul_flops_without_allocating():
    cost = estimate_cost(GOOD_MATMUL)
    assert cost.flops == 2 * 48 * 40 * 33
    assert cost.output_shape == (48, 33) and cost.input_shapes == ((48, 40), (40, 33))
    huge = GOOD_MATMUL.replace("m = 48\nk = 40\nn = 33", "m = 200000\nk = 200000\nn = 200000")
    assert estimate_cost(huge).footprint_bytes > 400e9  # 480 GB "allocated" on the meta device


def test_fit_shrinks_batch_first_and_keeps_geometry():
    source = problem("return self.conv(x)", init="self.conv = nn.Conv2d(32, 32, kernel_size, padding=1)",
                     inputs="[torch.randn(batch_size, 32, height, width)]",
                     consts="batch_size = 64\nkernel_size = 3\nheight = 255\nwidth = 256")
    fitted = fit_to_target(source, target_ms=4.0, keep_below_ms=20.0)
    assert fitted.cost.estimated_ms <= 4.0
    assert fitted.constants["batch_size"] == 2 and fitted.constants["kernel_size"] == 3
    assert fitted.constants["height"] % 2 == 1 and fitted.constants["width"] % 8 == 0
    assert fitted.constants["height"] >= MIN_DIM


def test_every_bundled_problem_fits_the_cpu_profile():
    variant = variant_for("cpu")
    for p in load_problems(BUNDLED_DIR).problems:
        fitted = fit_to_target(p.source, variant.target_ms, variant.keep_below_ms, path=str(p.path))
        assert fitted.cost.estimated_ms <= variant.keep_below_ms, p.task_id
        assert fitted.cost.footprint_bytes <= variant.lint_memory_budget_bytes, p.task_id


def test_tolerances_per_dtype_are_scale_aware():
    assert tolerances("float32", 0.5) == (1e-5, 1e-4)
    assert tolerances("float32", 3.2) == (4e-5, 1e-4)
    assert tolerances("float32", 1e6) == (1e-4, 1e-4)
    assert tolerances("float16", 1.0) == (1e-2, 1e-2)


def test_variants_and_alignment_notes():
    assert variant_for("cpu").size_profile == "cpu-2core"
    asc = variant_for("ascendc", ["fp32", "fp16"])
    assert asc.dtypes == ("float32", "float16") and asc.alignment_bytes == 32 and asc.size_profile == "original"
    assert "unaligned" in alignment_note([(4, 4095)], (4, 4095), "float32", 32)
    assert alignment_note([(4, 16)], (4, 8), "float32", 32).startswith("aligned")
    assert alignment_note([(4, 8)], (4, 8), "float32", None) == ""
    with pytest.raises(VariantError, match="not supported"):
        variant_for("ascendc", ["bf16"])
    with pytest.raises(VariantError, match="unknown"):
        variant_for("tpu")
