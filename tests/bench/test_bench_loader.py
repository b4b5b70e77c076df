"""Loader and categories: bundled problems, a KernelBench checkout, one-line errors for bad files."""

from __future__ import annotations

from collections import Counter

import pytest

from bench_fixtures import GOOD_MATMUL, GOOD_RELU, write_checkout
from kernelbench_npu.categories import infer_category
from kernelbench_npu.loader import ProblemError, load_problem, load_problems
from kernelbench_npu.plan import BUNDLED_DIR

ISSUE_L1_COVERAGE = ("activation", "reduction", "softmax", "normalization", "matmul", "convolution",
                     "pooling", "scan", "loss")


def test_bundled_set_has_the_promised_size_and_coverage():
    report = load_problems(BUNDLED_DIR)
    assert report.errors == ()
    per_level = Counter(p.level for p in report.problems)
    assert per_level[1] >= 25 and per_level[2] >= 12 and per_level[3] >= 3
    assert len(report.problems) >= 40
    l1_categories = {p.category for p in report.problems if p.level == 1}
    assert set(ISSUE_L1_COVERAGE) <= l1_categories
    assert all(p.category.startswith("fusion-") for p in report.problems if p.level == 2)
    ids = [p.task_id for p in report.problems]
    assert "L1/001_relu" in ids and len(set(ids)) == len(ids)


def test_bundled_names_cover_the_issue_list():
    names = " ".join(p.name for p in load_problems(BUNDLED_DIR).problems)
    for needed in ("layer_norm", "rms_norm", "batch_norm", "group_norm", "matmul_square", "matmul_batched",
                   "transposed", "matvec", "conv1d", "conv2d", "depthwise", "conv_transpose2d", "cumsum",
                   "log_softmax", "mlp_block", "transformer_block", "residual_conv_block"):
        assert needed in names, needed


def test_kernelbench_checkout_ids_levels_and_inferred_categories(tmp_path):
    root = write_checkout(tmp_path, {"level1/19_ReLU.py": GOOD_RELU, "level1/2_Standard_matrix_multiplication_.py": GOOD_MATMUL,
                                     "level2/12_Gemm_Multiply_LeakyReLU.py": GOOD_MATMUL, "level3/1_MLP.py": GOOD_RELU})
    report = load_problems(root, id_prefix="KB-")
    got = {p.task_id: (p.level, p.category) for p in report.problems}
    assert got == {"KB-L1/19_ReLU": (1, "activation"), "KB-L1/2_Standard_matrix_multiplication_": (1, "matmul"),
                   "KB-L2/12_Gemm_Multiply_LeakyReLU": (2, "fusion-matmul"), "KB-L3/1_MLP": (3, "network")}


@pytest.mark.parametrize("stem, level, category", [
    ("41_Max_Pooling_1D", 1, "pooling"), ("23_Softmax", 1, "softmax"), ("36_RMSNorm_", 1, "normalization"),
    ("89_cumsum", 1, "scan"), ("100_HingeLoss", 1, "loss"), ("53_Min_reduction_over_a_dimension", 1, "reduction"),
    ("67_conv_standard_1D", 1, "convolution"), ("97_ScaledDotProductAttention", 1, "attention"),
    ("5_Matrix_scalar_multiplication", 1, "matmul"), ("21_Sigmoid", 1, "activation"),
    ("1_Conv2D_ReLU_BiasAdd", 2, "fusion-convolution"),
])
def test_category_inference_from_kernelbench_names(stem, level, category):
    assert infer_category(stem, level) == category


BAD_FILES = {
    "syntax.py": ("def broken(:\n", "syntax error at line 1"),
    "no_model.py": (GOOD_RELU.replace("class Model", "class Other"), "missing class Model"),
    "no_inputs.py": (GOOD_RELU.replace("def get_inputs", "def other_inputs"), "missing function get_inputs()"),
    "raises.py": (GOOD_RELU.replace("return [torch.randn(batch_size, dim)]", "raise ValueError('boom')"),
                  "get_inputs() raised ValueError: boom"),
    "wrong_type.py": (GOOD_RELU.replace("return [torch.randn(batch_size, dim)]", "return torch.randn(2)"),
                      "get_inputs() returned a Tensor, expected a list"),
    "wrong_item.py": (GOOD_RELU.replace("return [torch.randn(batch_size, dim)]", "return ['text']"),
                      "get_inputs()[0] is a str"),
    "not_module.py": (GOOD_RELU.replace("class Model(nn.Module)", "class Model").replace("super().__init__()", "pass"),
                      "Model is not a torch.nn.Module"),
    "bad_init.py": (GOOD_RELU.replace("def get_init_inputs():\n    return []", "def get_init_inputs():\n    return [1, 2]"),
                    "Model(*get_init_inputs()) failed"),
    "import_error.py": ("import not_a_module_anywhere\n" + GOOD_RELU, "executing the file failed: ModuleNotFoundError"),
}


def test_malformed_files_give_one_line_errors_naming_the_file_and_the_rest_still_load(tmp_path):
    level_dir = tmp_path / "level1"
    level_dir.mkdir()
    for name, (text, _) in BAD_FILES.items():
        (level_dir / name).write_text(text)
    (level_dir / "fine.py").write_text(GOOD_RELU)
    report = load_problems(tmp_path)
    assert [p.name for p in report.problems] == ["fine"]
    assert len(report.errors) == len(BAD_FILES)
    by_file = {e.split(":", 1)[0]: e for e in report.errors}
    for name, (_, expected) in BAD_FILES.items():
        error = by_file[str(level_dir / name)]
        assert "\n" not in error and expected in error, error


def test_flat_folder_needs_a_level(tmp_path):
    (tmp_path / "a.py").write_text(GOOD_RELU)
    (tmp_path / "b.py").write_text("LEVEL = 2\nCATEGORY = \"custom-op\"\n" + GOOD_RELU)
    report = load_problems(tmp_path)
    assert [(p.task_id, p.category) for p in report.problems] == [("L2/b", "custom-op")]
    assert "level unknown" in report.errors[0]
    with pytest.raises(ProblemError, match="not a directory"):
        load_problems(tmp_path / "missing")


def test_load_problem_hashes_the_source(tmp_path):
    path = tmp_path / "level1" / "7_X.py"
    path.parent.mkdir()
    path.write_text(GOOD_RELU)
    first = load_problem(path)
    path.write_text(GOOD_RELU + "\n# changed\n")
    assert load_problem(path).source_sha256 != first.source_sha256
