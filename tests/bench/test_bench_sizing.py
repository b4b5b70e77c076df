"""The meta-device cost model and the shape-preserving size profile (KernelBench-shaped problems)."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench_fixtures import GOOD_MATMUL, problem
from kernelbench_npu.cost import CostError, estimate_cost
from kernelbench_npu.loader import check_runtime, load_problems
from kernelbench_npu.plan import BUNDLED_DIR
from kernelbench_npu.sizing import fit_to_budget, halve
from kernelbench_npu.variants import CPU_2CORE

MiB = 1 << 20


def _fit(source: str):
    return fit_to_budget(source, CPU_2CORE.target_ms, CPU_2CORE.keep_below_ms, CPU_2CORE.memory_bytes)


def _dims(fit) -> dict:
    return {d.key: (d.original, d.adapted) for d in fit.dims}


@pytest.mark.parametrize("value, times, expected", [
    (8192, 3, 1024),  # powers of two divide exactly (group counts keep dividing channels)
    (393216, 5, 12288),  # 3 * 2^17: the factor 3 stays
    (4095, 2, 1025),  # awkward stays awkward: odd, and not a multiple of 8
    (8205, 4, 513),
    (224, 3, 28),
    (1000, 3, 125),
])
def test_halving_keeps_structure(value, times, expected):
    assert halve(value, times) == expected


def test_cost_model_counts_matmul_flops_without_allocating():
    cost = estimate_cost(GOOD_MATMUL)
    assert cost.flops == 2 * 48 * 40 * 33
    assert cost.output_shape == (48, 33) and cost.input_shapes == ((48, 40), (40, 33))
    huge = GOOD_MATMUL.replace("m = 48\nk = 40\nn = 33", "m = 200000\nk = 200000\nn = 200000")
    assert estimate_cost(huge).footprint_bytes > 400e9  # 480 GB "allocated" on the meta device


def test_recurrent_layers_are_costed_without_tracing_every_timestep():
    lstm = problem("return self.rnn(x)[0][:, -1]", init="self.rnn = nn.LSTM(64, 128, num_layers=2, batch_first=True)",
                   inputs="[torch.rand(batch_size, seq_len, 64)]", consts="batch_size = 8\nseq_len = 4096")
    cost = estimate_cost(lstm)
    assert cost.ops < 50 and cost.output_shape == (8, 128)
    assert cost.flops == 8 * 4096 * 2 * 512 * ((64 + 128) + (128 + 128))


GEMM = problem("return self.fc(x)", init="self.fc = nn.Linear(in_features, out_features)",
               inputs="[torch.rand(batch_size, in_features)]",
               consts="batch_size = 1024\nin_features = 8192\nout_features = 8192")
SOFTMAX = problem("return torch.softmax(x, dim=1)", inputs="[torch.rand(batch_size, dim)]",
                  consts="batch_size = 4096\ndim = 393216")


def test_a_large_gemm_shrinks_in_balance_and_stays_a_gemm():
    fit = _fit(GEMM)
    sizes = {k: v[1] for k, v in _dims(fit).items()}
    assert fit.cost.estimated_ms <= CPU_2CORE.target_ms and fit.balance <= 2.0
    assert min(sizes["batch_size"], sizes["in_features"], sizes["out_features"]) >= 64  # not a GEMV
    assert sizes["in_features"] == sizes["out_features"]  # equal sizes stay equal


def test_softmax_keeps_a_long_row_and_many_rows():
    fit = _fit(SOFTMAX)
    batch, dim = _dims(fit)["batch_size"][1], _dims(fit)["dim"][1]
    assert fit.balance <= 2.0 and batch >= 64 and dim >= 4096


def test_constant_expressions_tuples_and_input_literals_are_shrunk():
    conv = problem("return self.conv(x)", init="self.conv = nn.Conv2d(3, 96, 11, stride=4, padding=2)",
                   inputs="[torch.rand(batch_size, 3, 224, 224)]", consts="batch_size = 64 * 4")
    fit = _fit(conv)
    assert fit.cost.estimated_ms <= CPU_2CORE.target_ms and fit.balance <= 2.0
    assert "torch.rand(batch_size, 3, 224, 224)" not in fit.source and fit.adapted["batch_size"] < 256


def test_sizes_the_model_ties_together_move_together():
    # HingeLoss-style: batch_size must equal input_shape[0] (the target broadcasts against it)
    tied = problem("return torch.mean(torch.clamp(1 - x * rest[0], min=0))",
                   inputs="[torch.rand(batch_size, *input_shape), torch.rand(batch_size)]",
                   consts="batch_size = 32768\ninput_shape = (32768,)")
    fit = _fit(tied)
    assert fit.cost.estimated_ms <= CPU_2CORE.target_ms
    assert fit.adapted["batch_size"] == fit.adapted["input_shape[0]"] < 32768


def test_a_size_the_architecture_fixes_is_pinned_with_the_reason():
    flatten = problem("return self.fc(torch.flatten(x, 1))", init="self.fc = nn.Linear(150528, 10)  # 3 * 224 * 224",
                      inputs="[torch.rand(batch_size, 3, 224, 224)]", consts="batch_size = 4096")
    fit = _fit(flatten)
    notes = {d.key: d.note for d in fit.dims}
    assert fit.adapted["batch_size"] < 4096
    assert all("pinned: the model does not run with 112" in notes[k] for k in notes if k.startswith("get_inputs") and
               fit.original[k] == 224)


VGG_LIKE = problem(
    "return self.fc(torch.flatten(self.pool(torch.relu(self.conv2(torch.relu(self.conv1(x))))), 1))",
    init="self.conv1 = nn.Conv2d(3, 256, kernel_size=3, padding=1)\nself.conv2 = nn.Conv2d(256, 512, 3, padding=1)\n"
         "self.pool = nn.MaxPool2d(32)\nself.fc = nn.Linear(512 * 8 * 8, 4096)",
    inputs="[torch.rand(batch_size, 3, 256, 256)]", consts="batch_size = 64")


def test_layer_widths_in_the_model_shrink_together_and_pinned_networks_stop_within_budget():
    fit = fit_to_budget(VGG_LIKE, CPU_2CORE.target_ms, CPU_2CORE.keep_below_ms, CPU_2CORE.memory_bytes,
                        budget_ms=CPU_2CORE.budget_ms)
    widths = {d.original: d.adapted for d in fit.dims if d.key.startswith("Model.__init__")}
    assert set(widths) == {256, 512, 4096} and all(widths[w] < w for w in widths)  # 3 and the kernel: not sites
    assert f"nn.Linear({widths[512]} * 8 * 8, {widths[4096]})" in fit.source  # 512 shrank in the conv and the fc
    spatial = [d for d in fit.dims if d.role == "spatial"]
    assert spatial and all(d.adapted == 256 and d.note.startswith("pinned") for d in spatial)  # fixed by the 8 * 8
    assert "to the first sizes within" in fit.note and 4 < fit.cost.estimated_ms <= 250  # not crushed to the floors
    assert widths[512] > 8


def test_floors_keep_the_operator_class_and_say_so():
    small_k = problem("return x @ rest[0]", inputs="[torch.rand(M, K), torch.rand(K, N)]",
                      consts="M = 32768\nN = 32768\nK = 64")
    fit = _fit(small_k)
    k = next(d for d in fit.dims if d.key == "K")
    assert k.adapted == 64 and "below twice its floor" in k.note  # a small-K GEMM stays small-K, never K < 64


def test_a_file_that_cannot_run_on_meta_raises_cost_error():
    with pytest.raises(CostError, match="item"):
        _fit(problem("return x * float(x.sum().item())"))


def test_every_bundled_problem_fits_the_cpu_profile():
    for p in load_problems(BUNDLED_DIR).problems:
        fit = _fit(p.source)
        assert fit.cost.estimated_ms <= CPU_2CORE.keep_below_ms, p.task_id
        assert fit.cost.footprint_bytes <= CPU_2CORE.memory_bytes, p.task_id


def test_a_model_whose_init_asks_a_tensor_for_its_value_is_checked_and_costed():
    # Swin: dpr = [x.item() for x in torch.linspace(0, rate, depth)] in __init__ (no value on the meta device)
    swin_like = problem("return self.fc(x) * self.rate", init="self.rate = torch.linspace(0, 1, 3)[1].item()\n"
                        "self.fc = nn.Linear(dim, dim)", consts="batch_size = 4096\ndim = 4096")
    check_runtime(Path("swin_like.py"), swin_like)
    fit = _fit(swin_like)
    assert fit.cost.flops < 2 * 4096 ** 3 and fit.cost.estimated_ms <= CPU_2CORE.target_ms


MAX_POOL = problem("return self.pool(x)", init="self.pool = nn.MaxPool2d(kernel_size=2, stride=2)",
                   inputs="[torch.rand(batch_size, channels, height, width)]",
                   consts="batch_size = 32\nchannels = 64\nheight = 512\nwidth = 512")


def test_the_cpu_profile_never_shrinks_a_task_below_its_working_set_floor():
    from kernelbench_npu.sizing import fit_profile

    without = fit_to_budget(MAX_POOL, CPU_2CORE.target_ms, CPU_2CORE.keep_below_ms, CPU_2CORE.memory_bytes)
    fit = fit_profile(MAX_POOL, CPU_2CORE)
    assert CPU_2CORE.min_bytes == MiB
    # 655 kB without the floor; with it, the last sizes on the way above 1 MiB (not the first ones)
    assert without.cost.footprint_bytes < MiB <= fit.cost.footprint_bytes < 4 * MiB
    assert "back to the last sizes with at least 1 MiB" in fit.note
    tiny = MAX_POOL.replace("batch_size = 32\nchannels = 64\nheight = 512\nwidth = 512",
                            "batch_size = 2\nchannels = 4\nheight = 16\nwidth = 16")
    assert _dims(fit_profile(tiny, CPU_2CORE)) == _dims(fit_to_budget(tiny, 4.0, 20.0, 64 * MiB))  # written small: kept
