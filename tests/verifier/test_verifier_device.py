"""The sandbox child is device-aware through the Backend interface (device, synchronize, timer).

End to end with a test-only backend whose device() is "cpu" but which records the hooks the child
calls; unit checks of the placement helpers and the per-call contract on a foreign device (the
"meta" device stands in for a GPU); the CUDA backend's extension-call counting with a fake
load_inline.
"""

from __future__ import annotations

import shutil
import sys
import types
from pathlib import Path

import pytest
import torch
from recording_backend import LOG, NAME, read_log
from verifier_taskutil import make_task

from verifier.api import verify
from verifier.sandbox import device_io, integrity
from verifier.sandbox.workspace import Workspace
from verifier.settings import VerifySettings

ROOT = Path(__file__).resolve().parents[2]
BACKENDS = ROOT / "verifier" / "backends"
EXAMPLE_TASK = (BACKENDS / "cpu_example_task.txt").read_text()
EXAMPLE_CANDIDATE = (BACKENDS / "cpu_example_candidate.txt").read_text()


def test_child_places_inputs_syncs_and_times_through_the_backend_hooks(tmp_path, monkeypatch):
    monkeypatch.syspath_prepend(str(ROOT))  # the parent resolves the backend name too
    settings = VerifySettings.for_tests(tmp_path / "cache")
    close = Workspace.close

    def keep_log(workspace, report=None):  # the child's build dir is private and removed with it
        shutil.copy(workspace.build_dir / LOG, tmp_path / LOG)
        return close(workspace, report)

    monkeypatch.setattr(Workspace, "close", keep_log)
    verdict = verify(make_task(EXAMPLE_TASK, "example/linear_relu", tmp_path), EXAMPLE_CANDIDATE, NAME, settings)
    assert verdict.passed, verdict.feedback
    log = read_log(tmp_path)
    forwards = [e for e in log if e.startswith("forward ")]
    assert forwards and all(e.split(" ", 1)[1].replace("|", "").split() == ["cpu"] * 3 for e in forwards)
    first_forward = log.index(forwards[0])
    assert "sync" in log[:first_forward] and "device" in log[:first_forward]  # context set up, models placed
    assert log.count("timer") == 1
    timed = settings.warmup_calls * 2 + settings.latency_rounds * 2 * settings.calls_per_round
    assert log.count("timed") == timed
    after_timing = log[len(log) - log[::-1].index("timed"):]
    assert any(e.startswith("forward ") for e in after_timing)  # post-timing trials ran after the loop
    guarded = len(forwards) - timed // 2  # candidate calls outside the timed loop, each followed by a sync
    assert log.count("sync") >= 2 * timed + guarded + 1


def test_place_moves_tensors_to_the_device_and_back_on_the_cpu_is_the_identity():
    x, scale = torch.randn(4), 3
    same = device_io.place([x, scale], torch.device("cpu"))
    assert same[0] is x and same[1] == 3
    moved = device_io.place([x, scale], torch.device("meta"))
    assert moved[0].device.type == "meta" and moved[1] == 3
    host = [x.clone().add_(1.0)]
    device_io.refresh(same, host)
    assert torch.equal(x, host[0])
    assert device_io.to_host(x) is not None and device_io.to_host(x).device.type == "cpu"


def test_on_device_matches_type_and_index_when_named():
    t = torch.empty(1)
    assert device_io.on_device(t, torch.device("cpu"))
    assert not device_io.on_device(t, torch.device("meta"))


class _Native(torch.nn.Module):
    def forward(self, x):
        from verifier import cpu_native

        cpu_native.CALLS[0] += 1
        return torch.empty_like(x)


def test_outputs_off_the_backend_device_are_rejected_after_a_synchronize():
    syncs = []
    x = torch.randn(3)
    outputs = integrity.guarded_call(_Native(), [x], [], torch.device("cpu"), lambda: syncs.append(1))
    assert outputs[0].shape == x.shape and syncs == [1]
    with pytest.raises(integrity.IntegrityError, match="is on cpu, expected meta"):
        integrity.guarded_call(_Native(), [x], [], torch.device("meta"), lambda: syncs.append(1))
    assert syncs == [1, 1]


def test_late_write_check_synchronizes_before_comparing():
    syncs = []
    integrity.check_late_writes([torch.zeros(2)], lambda: syncs.append(1), delay_s=0.0)
    assert syncs == [1]


def test_cuda_backend_counts_load_inline_extension_calls(monkeypatch):
    from torch.utils import cpp_extension

    from verifier import cpu_native
    from verifier.backends import cuda

    fake = types.ModuleType("fake_ext")
    fake.relu = lambda t: t
    fake.SIZE = 4
    monkeypatch.setattr(cpp_extension, "load_inline", lambda *a, **k: fake)
    cuda.count_extension_calls()
    cuda.count_extension_calls()  # idempotent: wrapped once
    ext = cpp_extension.load_inline(name="x", cpp_sources="")
    before = cpu_native.CALLS[0]
    assert ext.relu(5) == 5 and ext.SIZE == 4
    assert cpu_native.CALLS[0] == before + 1
    assert "torch.utils.cpp_extension" in sys.modules
