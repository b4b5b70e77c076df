"""NPU latency without an NPU: the event timer's order of work (flush, start, call, end), its
arithmetic, the profiler CSV parsing and the per-kernel summary, driven through the host
implementation of the device interface (host clock, host flush buffer, torch.profiler on the CPU).
The torch_npu implementation itself needs an Ascend host (README: "On an Ascend host")."""

from __future__ import annotations

import time

import pytest
import torch

from verifier.backends.ascendc.npu_timing import (FLUSH_BYTES, EventTimer, HostApi, KernelTime, attribute,
                                                   attribution_note, find_op_statistic, parse_op_statistic)

OP_STATISTIC = """\ufeffDevice_id,OP Type,Core Type,Count,Total Time(us),Min Time(us),Avg Time(us),Max Time(us),Ratio(%)
0,triton_softmax_kernel,AI_VECTOR_CORE,2,82.04,40.1,41.02,41.94,91.3
0,Add,AI_VECTOR_CORE,1,7.8,7.8,7.8,7.8,8.7
"""


class Logged(HostApi):
    """The host API, logging the order of the device work the timer queues."""

    def __init__(self, log: list) -> None:
        self.log = log

    def event(self):
        event, log = super().event(), self.log

        class Event:
            def record(self):
                log.append("event")
                event.record()

            def synchronize(self):
                event.synchronize()

            def elapsed_time(self, end):
                return event.elapsed_time(end.inner)

            inner = event

        return Event()

    def flush_buffer(self, nbytes: int):
        buffer, log = super().flush_buffer(nbytes), self.log

        class Flush:
            def zero_(self):
                log.append("flush")
                buffer.zero_()

        self.flush_bytes = buffer.numel() * buffer.element_size()
        return Flush()


def test_each_call_is_flushed_then_timed_between_two_events():
    log: list = []
    api = Logged(log)
    timer = EventTimer(api, flush_bytes=8 << 20)
    assert api.flush_bytes == 8 << 20
    ms = [timer(lambda: (log.append("call"), time.sleep(0.02))) for _ in range(2)]
    assert log == ["flush", "event", "call", "event"] * 2
    assert all(18.0 <= m < 1000.0 for m in ms), ms


def test_the_flush_is_not_inside_the_timed_interval():
    class SlowFlush(HostApi):
        def flush_buffer(self, nbytes):
            class Flush:
                def zero_(self):
                    time.sleep(0.2)

            return Flush()

    assert EventTimer(SlowFlush(), flush_bytes=1024)(lambda: None) < 100.0


def test_the_default_flush_is_twice_the_910b_l2():
    assert FLUSH_BYTES == 2 * 192 * 1024 * 1024


def test_op_statistic_rows_parse_into_kernel_times():
    kernels = parse_op_statistic(OP_STATISTIC)
    assert kernels == [KernelTime("triton_softmax_kernel", 2, 82.04, "AI_VECTOR_CORE"),
                       KernelTime("Add", 1, 7.8, "AI_VECTOR_CORE")]


def test_profiler_outputs_under_a_directory_are_found_and_merged(tmp_path):
    for step in ("a", "b"):
        folder = tmp_path / f"prof_{step}" / "ASCEND_PROFILER_OUTPUT"
        folder.mkdir(parents=True)
        (folder / "op_statistic.csv").write_text(OP_STATISTIC)
    merged = {k.name: k for k in find_op_statistic(tmp_path)}
    assert merged["triton_softmax_kernel"].calls == 4 and merged["Add"].total_us == pytest.approx(15.6)


def test_attribution_names_each_kernels_share_and_marks_foreign_work():
    note = attribution_note(parse_op_statistic(OP_STATISTIC))
    assert note == ("per-kernel attribution: triton_softmax_kernel 2 calls 82.0 us (91%); "
                    "Add 1 call 7.8 us (9%, not the candidate's kernel)")
    assert attribution_note([]) == "per-kernel attribution: the profiler saw no device kernel"


def test_attribution_profiles_one_warmed_up_call():
    a, b = torch.randn(256, 256), torch.randn(256, 256)
    calls = []
    kernels = attribute(HostApi(), lambda: calls.append(torch.mm(a, b)))
    assert len(calls) == 2  # a warm-up, then the profiled call
    assert kernels[0].name == "aten::mm" and kernels[0].calls == 1 and kernels[0].total_us > 0


def test_the_npu_api_needs_torch_npu():
    from importlib.util import find_spec

    from verifier.backends.ascendc.npu_timing import npu_api

    if find_spec("torch_npu") is not None:
        pytest.skip("torch_npu is installed here (an Ascend host): nothing to check")
    with pytest.raises(ModuleNotFoundError):
        npu_api()
