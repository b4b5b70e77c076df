"""Roofline positions: the arithmetic, the feedback line, plausibility by roofline before the ratio
bound, the workload counted on a reference, and the machine probe with its cache (real, here)."""

from __future__ import annotations

import json

import pytest
import torch

from verifier.gates.latency import PairedTimes, summarise
from verifier.machine_peaks import cache_path, machine_peaks
from verifier.roofline import MachinePeaks, Workload, position
from verifier.sandbox.workload import count_workload

PEAKS = MachinePeaks(backend="cpu", device="test", threads=2, bandwidth=((1_000, 100.0), (10**9, 24.0)),
                     compute_gflops=200.0)


def test_memory_bound_position_and_its_feedback_line():
    roof = position(Workload(bytes_moved=10**9, flops=10**8), seconds=1e9 / 9.12e9, peaks=PEAKS)
    assert roof.bound == "memory" and roof.fraction == pytest.approx(0.38) and not roof.implausible
    assert roof.line() == ("roofline: memory-bound (0.1 FLOP/byte); reaches 38% of measured memory "
                           "bandwidth (9.12 GB/s of 24 GB/s)")


def test_a_cache_sized_working_set_meets_the_cache_roof():
    roof = position(Workload(bytes_moved=4_000, flops=1_000), seconds=4_000 / 50e9, peaks=PEAKS)
    assert roof.roof_gbs == 100.0 and roof.fraction == pytest.approx(0.5)
    assert "for its 4 kB working set (50 GB/s of 100 GB/s from cache; 24 GB/s from memory)" in roof.line()


def test_a_window_of_fresh_inputs_that_outgrows_the_caches_meets_the_memory_roof():
    work = Workload(bytes_moved=4_000_000, flops=1_000_000, fresh_bytes=4_000_000)  # mse_loss's 4 MB a call
    alone = position(work, seconds=4e6 / 50e9, peaks=PEAKS)
    assert alone.roof_gbs == 100.0 and alone.window_bytes == 0
    roof = position(work, seconds=4e6 / 12e9, peaks=PEAKS, calls=250)  # 1 GB a window
    assert roof.roof_gbs == 24.0 and roof.window_bytes == 10**9 and roof.fraction == pytest.approx(0.5)
    assert roof.line() == ("roofline: memory-bound (0.25 FLOP/byte); reaches 50% of measured memory bandwidth "
                           "(12 GB/s of 24 GB/s; every call has fresh inputs, so a timed window's 1 GB come from memory)")


def test_parameters_count_once_in_a_window():
    work = Workload(bytes_moved=10**6 + 1_000, flops=10, fresh_bytes=1_000)  # a 1 MB weight, 1 kB a call
    roof = position(work, seconds=1e-4, peaks=PEAKS, calls=200)
    assert roof.window_bytes == 10**6 + 200 * 1_000 and roof.roof_gbs == 100.0
    assert "for its 1 MB a call (1.2 MB a timed window) working set (10 GB/s of 100 GB/s at that size; 24" in roof.line()
    unsplit = Workload(bytes_moved=10**6, flops=10)  # fresh bytes not counted apart: every byte is a call's
    assert position(unsplit, seconds=1e-4, peaks=PEAKS, calls=1_000).roof_gbs == 24.0


def test_the_latency_gate_puts_the_time_on_the_roof_of_its_windows():
    from verifier.gates.latency import WindowFacts

    work = Workload(bytes_moved=4_000_000, flops=10, fresh_bytes=4_000_000)
    result = summarise(_times(4e6 / 20e9 * 1e3, 0.4), 500, bound=10.0, workload=work, peaks=PEAKS,
                       facts=WindowFacts(calls_per_window=250))
    assert result.roofline.roof_gbs == 24.0 and not result.flagged
    # above the window's roof (60 GB/s against 24 from memory) but within one call's own (100 GB/s from cache):
    # the window's roof is an estimate from a probe, so it never flags an honest kernel by itself
    beyond_window = summarise(_times(4e6 / 60e9 * 1e3, 0.4), 500, bound=10.0, workload=work, peaks=PEAKS,
                              facts=WindowFacts(calls_per_window=250))
    assert not beyond_window.flagged and beyond_window.roofline.fraction == pytest.approx(2.5)
    flagged = summarise(_times(4e6 / 200e9 * 1e3, 0.4), 500, bound=10.0, workload=work, peaks=PEAKS,
                        facts=WindowFacts(calls_per_window=250))
    assert flagged.flagged and "implausible by roofline" in flagged.flag_reason  # 200 GB/s: beyond any level
    assert "(at least 0.04 ms; 200% of the roof)" in flagged.flag_reason


def test_compute_bound_position():
    roof = position(Workload(bytes_moved=10**6, flops=10**10), seconds=0.5, peaks=PEAKS)
    assert roof.bound == "compute" and roof.fraction == pytest.approx(0.1)
    assert "reaches 10% of measured compute peak (20 GFLOP/s of 200 GFLOP/s)" in roof.line()


def test_faster_than_the_peaks_allow_is_implausible():
    work = Workload(bytes_moved=10**9, flops=10)
    assert not position(work, seconds=1 / 24 / 1.4, peaks=PEAKS).implausible  # within the probe margin
    roof = position(work, seconds=1 / 24 / 2, peaks=PEAKS)
    assert roof.implausible and "faster than this machine's measured peaks allow" in roof.implausible_reason()


def test_bandwidth_roof_is_the_probe_at_the_largest_working_set_not_above():
    assert PEAKS.bandwidth_at(10) == 100.0 and PEAKS.bandwidth_at(10**8) == 100.0
    assert PEAKS.bandwidth_at(10**9) == 24.0 and PEAKS.memory_gbs == 24.0
    with pytest.raises(ValueError):
        MachinePeaks(backend="cpu", device="x", threads=1, bandwidth=(), compute_gflops=1.0)


def _times(cand_ms, ref_ms, n=6):
    return PairedTimes((cand_ms,) * n, (ref_ms,) * n)


def test_roofline_flags_an_implausible_time_the_ratio_bound_lets_through():
    work = Workload(bytes_moved=10**9, flops=10)  # >= 41.7 ms at 24 GB/s
    result = summarise(_times(10.0, 30.0), 500, bound=10.0, workload=work, peaks=PEAKS)
    assert result.speedup == pytest.approx(3.0) and result.flagged
    assert "implausible by roofline" in result.flag_reason


def test_a_big_speedup_within_the_roofline_is_a_note_not_a_flag():
    work = Workload(bytes_moved=10**9, flops=10)
    result = summarise(_times(100.0, 2600.0), 500, bound=10.0, workload=work, peaks=PEAKS)
    assert not result.flagged and "exceeds the plausibility bound 10x, but is within" in result.note
    assert result.roofline.fraction == pytest.approx(1 / 2.4, rel=1e-3)


def test_without_peaks_the_ratio_bound_still_flags():
    result = summarise(_times(1.0, 30.0), 500, bound=10.0, workload=Workload(10**9, 10), peaks=None)
    assert result.flagged and "plausibility bound" in result.flag_reason and result.roofline is None


def test_workload_of_a_reference_counts_each_tensor_once():
    x = torch.randn(64, 300)
    linear = torch.nn.Sequential(torch.nn.Linear(300, 128), torch.nn.ReLU())
    work = count_workload(linear, [x])
    assert work.bytes_moved == 4 * (64 * 300 + 300 * 128 + 128 + 64 * 128)
    assert work.fresh_bytes == 4 * (64 * 300 + 64 * 128)  # the input and the output: new every call
    assert work.flops == 2 * 64 * 300 * 128 + 64 * 128  # addmm by FlopCounterMode's formula, relu one per element
    view = count_workload(_Flatten(), [x])  # the output aliases the input: nothing computed, bytes once
    assert view == Workload(bytes_moved=4 * 64 * 300, flops=0, fresh_bytes=4 * 64 * 300)


@pytest.mark.parametrize("model, shape", [
    (torch.nn.Conv2d(3, 8, 3, padding=1), (2, 3, 16, 16)),
    (torch.nn.Sequential(torch.nn.Linear(32, 16), torch.nn.GELU(), torch.nn.LayerNorm(16)), (4, 32)),
    (torch.nn.MultiheadAttention(16, 2, batch_first=True), None),
], ids=["conv", "linear_gelu_layernorm", "attention"])
def test_the_counter_agrees_with_torchs_flop_counter_on_what_it_has_formulas_for(model, shape):
    from torch.utils.flop_counter import FlopCounterMode

    inputs = [torch.randn(*shape)] if shape else [torch.randn(2, 5, 16)] * 3
    with torch.no_grad(), FlopCounterMode(display=False) as reference:
        model(*inputs)
    work = count_workload(model, inputs)
    assert work.flops >= reference.get_total_flops() > 0  # its formulas, plus one per element of the rest


def test_a_task_s_workload_is_counted_once_per_process():
    from verifier.monitor import reference
    from verifier.sandbox import messages as msg

    start = msg.RefStart("print(1)", "float32", 1, 2, 5, 1)
    key = reference._workload_key(start)
    assert key == reference._workload_key(msg.RefStart("print(1)", "float32", 7, 8, 5, 2))  # seeds: the same shapes
    assert key != reference._workload_key(msg.RefStart("print(1)", "float64", 1, 2, 5, 1))
    assert msg.RefStart("print(1)", "float32", 1, 2, 5, 1).count_workload  # the worker counts unless told


def test_counting_a_workload_does_not_import_torch_dynamo():
    """A dispatch mode's first op imports torch._dynamo (1-2 s of CPU in every fresh reference worker)
    unless the mode's class opts out when it is defined; the count needs no torch.compile."""
    import subprocess
    import sys

    code = ("import sys, torch\n"
            "from verifier.sandbox.workload import count_workload\n"
            "model = torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.GELU(), torch.nn.LayerNorm(8))\n"
            "work = count_workload(model, [torch.randn(4, 8)])\n"
            "print(work.flops > 0, 'torch._dynamo' in sys.modules)\n")
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr[-2000:]
    assert run.stdout.split() == ["True", "False"], run.stdout


class _Flatten(torch.nn.Module):
    def forward(self, x):
        return x.reshape(-1)


def test_machine_peaks_are_probed_once_then_cached(tmp_path):
    first = machine_peaks("cpu", 1, directory=tmp_path)
    assert first.source == "probed" and first.peaks is not None, first.problem
    peaks = first.peaks
    assert peaks.compute_gflops > 0 and peaks.memory_gbs > 0 and peaks.load_average >= 0
    sizes = [size for size, _ in peaks.bandwidth]
    assert sizes == sorted(sizes) and sizes[-1] > 250e6  # well beyond any last-level cache here
    again = machine_peaks("cpu", 1, directory=tmp_path)
    assert again.source == "cached" and again.peaks == peaks
    path = cache_path("cpu", 1, tmp_path)
    assert json.loads(path.read_text())["threads"] == 1
    path.write_text("{not json")  # a damaged cache file is probed again, never an error
    assert machine_peaks("cpu", 1, directory=tmp_path).source == "probed"


def test_a_backend_that_cannot_time_here_has_no_peaks_and_says_why(tmp_path):
    lookup = machine_peaks("cuda", 2, directory=tmp_path)
    if torch.cuda.is_available():
        pytest.skip("a GPU is present: the cuda backend probes for real")
    assert lookup.peaks is None and "no latency measurement here" in lookup.problem


def test_the_device_probe_measures_through_torch_on_any_device():
    """The default probe of GPU/NPU backends, run here on torch's CPU device with small sizes."""
    from verifier.backends import device_probe

    peaks = device_probe.probe("test", "cpu", lambda: None, 1, working_sets=(3 << 20, 12 << 20), matmul_n=256)
    assert [size for size, _ in peaks.bandwidth] == [(3 << 20) // 12 * 12, (12 << 20) // 12 * 12]
    assert peaks.memory_gbs > 0 and peaks.compute_gflops > 0 and peaks.device.startswith("cpu")


def test_the_probe_has_a_point_at_twice_the_last_level_cache():
    from verifier.backends import cpu_probe

    sizes = cpu_probe.working_sets()
    assert list(sizes) == sorted(set(sizes)) and 2 * cpu_probe._last_level_cache() in sizes


def test_a_roof_near_the_memory_roof_reads_as_memory():
    peaks = MachinePeaks(backend="cpu", device="test", threads=2,
                         bandwidth=((1_000, 100.0), (64 << 20, 27.0), (256 << 20, 24.0)), compute_gflops=200.0)
    roof = position(Workload(bytes_moved=4_000_000, flops=10, fresh_bytes=4_000_000), seconds=4e6 / 12e9,
                    peaks=peaks, calls=20)  # an 80 MB window: the 64 MB point, 27 GB/s
    assert roof.roof_gbs == 27.0 and "of measured memory bandwidth (12 GB/s of 27 GB/s; every call" in roof.line()
