"""verifier.monitor.remote_outputs on a real, stopped process: the outputs a peer describes are copied out of its
memory into the arena, strided ones too, and every description that breaks the outputs' contract (overlapping
outputs, an output in an arena, an earlier window's storage, an address not mapped, a malformed layout, more than
the output region holds) is refused before or by the read, naming what was wrong. A call not checked in full is
read as runs of elements at the places drawn for the round, and the comparison (verifier.monitor.output_checks)
reads exactly those elements, whichever side was read how. The peers' side (verifier.sandbox.serve: Collect with
``describe``) is tested at the end."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap

import numpy as np
import pytest
import torch

from verifier.gates.correctness import Tolerance
from verifier.monitor.output_checks import mismatch
from verifier.monitor.remote_outputs import RUN, RUNS, Reads, RemoteOutputs, RemoteReadError, Sampled, readable
from verifier.sandbox import messages as msg
from verifier.sandbox.arena import Arena
from verifier.sandbox.serve import CallServer

CHILD = textwrap.dedent(r"""
    import mmap, os, sys
    import numpy as np
    a = np.arange(1 << 20, dtype=np.float32)                 # 4 MiB: read on two threads
    b = (np.arange(12, dtype=np.float32) * -1.5).reshape(3, 4)
    fd = os.memfd_create("evokernel-arena")
    os.ftruncate(fd, 1 << 16)
    arena = mmap.mmap(fd, 1 << 16)
    arena_at = np.frombuffer(arena, np.uint8).ctypes.data
    print(a.ctypes.data, b.ctypes.data, arena_at, flush=True)
    os.kill(os.getpid(), 19)                                  # SIGSTOP: read while stopped, as a peer is
    sys.stdin.readline()
""")


@pytest.fixture(scope="module")
def child():
    proc = subprocess.Popen([sys.executable, "-c", CHILD], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    a, b, arena_at = (int(x) for x in proc.stdout.readline().split())
    yield proc.pid, a, b, arena_at
    os.kill(proc.pid, signal.SIGCONT)
    proc.communicate("\n", timeout=30)


def _tensor(address: int, shape, stride, dtype: str = "float32") -> dict:
    return {"t": "tensor", "offset": address, "shape": list(shape), "stride": list(stride), "dtype": dtype}


def _read(pid: int, described: list, arena: Arena | None = None) -> tuple[list, Arena]:
    arena = arena or Arena.create(16 << 20)
    return RemoteOutputs(pid).read(described, len(described), arena, 4096), arena


def test_outputs_are_copied_out_of_the_stopped_process_into_the_arena(child):
    pid, a, b, _ = child
    assert readable(pid)
    spec, arena = _read(pid, [[_tensor(a, (1 << 20,), (1,))], [_tensor(b, (4, 3), (1, 4))]])
    (big,), (strided,) = ([arena.borrow(_layout(d)) for d in call] for call in spec)
    assert np.array_equal(big, np.arange(1 << 20, dtype=np.float32))
    assert np.array_equal(strided, (np.arange(12, dtype=np.float32) * -1.5).reshape(3, 4).T)  # a transposed view
    assert spec[0][0]["offset"] >= 4096 and spec[1][0]["offset"] >= spec[0][0]["offset"] + (4 << 20)


def _layout(item: dict):
    from verifier.sandbox.arena import TensorLayout

    return TensorLayout.from_json(item)


@pytest.mark.parametrize("described, kind, words", [
    ([[_tensor(0, (8,), (1,))], [_tensor(0, (8,), (1,))]], "integrity", "another output of the window"),
    ([[_tensor(1 << 40, (8,), (1,))]], "malformed", "an address it has not mapped"),
    ([[_tensor(4096, (8,), (-1,))]], "malformed", "negative shape, stride or offset"),
    ([[_tensor(4096, (8,), (1,), "object")]], "malformed", "not allowed"),
    ([[_tensor(4096, (8,), (1,))], []], "malformed", "one list per call"),
])
def test_a_description_out_of_protocol_is_refused(child, described, kind, words):
    pid, a, *_ = child
    described = [[dict(d, offset=a if d["offset"] == 0 else d["offset"]) for d in call] for call in described]
    with pytest.raises(RemoteReadError) as refused:
        RemoteOutputs(pid).read(described, 1 if len(described) == 2 and not described[1] else len(described),
                                Arena.create(1 << 20), 0)
    assert refused.value.kind == kind and words in str(refused.value)


def test_one_call_may_return_one_tensor_twice_but_two_calls_may_not_share_it(child):
    pid, a, b, _ = child
    spec, arena = _read(pid, [[_tensor(b, (12,), (1,)), _tensor(b, (3, 4), (4, 1))]])
    assert np.array_equal(arena.borrow(_layout(spec[0][1])).reshape(-1), arena.borrow(_layout(spec[0][0])))
    with pytest.raises(RemoteReadError, match="another output of the window"):
        _read(pid, [[_tensor(b, (12,), (1,))], [_tensor(b, (12,), (1,))]])


def test_an_output_in_an_arena_or_on_an_earlier_windows_storage_is_refused(child):
    pid, a, b, arena_at = child
    with pytest.raises(RemoteReadError, match="the arena its inputs are in") as refused:
        _read(pid, [[_tensor(arena_at + 64, (8,), (1,))]])
    assert refused.value.kind == "integrity"
    remote, arena = RemoteOutputs(pid), Arena.create(1 << 20)
    remote.read([[_tensor(b, (12,), (1,))]], 1, arena, 0)
    with pytest.raises(RemoteReadError, match="an earlier window's output"):
        remote.read([[_tensor(b + 16, (4,), (1,))]], 1, arena, 0)


def test_outputs_larger_than_the_output_region_are_refused(child):
    pid, a, *_ = child
    with pytest.raises(RemoteReadError, match="larger than the task's outputs allow"):
        RemoteOutputs(pid).read([[_tensor(a, (1 << 20,), (1,))]], 1, Arena.create(1 << 20), 4096)


def test_a_call_not_checked_in_full_is_read_as_runs_at_the_places_drawn(child):
    pid, a, b, _ = child
    half = 1 << 19  # two calls, one half of ``a`` each: the second is checked in full
    reads = Reads.drawn(3, frozenset({1}), np.random.default_rng(7))
    arena = Arena.create(16 << 20)
    spec = RemoteOutputs(pid).read([[_tensor(a, (half,), (1,))], [_tensor(a + 4 * half, (512, 1024), (1024, 1))],
                                    [_tensor(b, (3, 4), (4, 1))]], 3, arena, 4096, reads)
    runs = Sampled.of(spec[0][0])
    assert runs is not None and runs.shape == (half,) and len(runs.starts) == RUNS
    assert all(0 <= start <= half - RUN for start in runs.starts) and len(set(runs.starts)) > 1
    assert spec[0][0]["shape"] == [RUNS * RUN]  # only the runs were copied, one after another
    assert np.array_equal(arena.borrow(_layout(spec[0][0])), np.arange(half, dtype=np.float32)[runs.indices()])
    assert Sampled.of(spec[1][0]) is None and Sampled.of(spec[2][0]) is None  # checked in full; too small for runs
    assert np.array_equal(arena.borrow(_layout(spec[1][0])).reshape(-1), np.arange(half, 2 * half, dtype=np.float32))


def test_an_output_that_is_not_row_major_is_read_whole(child):
    pid, a, *_ = child
    reads = Reads.drawn(1, frozenset(), np.random.default_rng(1))
    arena = Arena.create(16 << 20)
    spec = RemoteOutputs(pid).read([[_tensor(a, (1024, 1024), (1, 1024))]], 1, arena, 4096, reads)
    assert Sampled.of(spec[0][0]) is None
    assert np.array_equal(arena.borrow(_layout(spec[0][0])), np.arange(1 << 20, dtype=np.float32).reshape(1024, 1024).T)


def test_the_comparison_reads_the_runs_elements_whichever_side_was_read_how():
    whole = np.arange(1 << 16, dtype=np.float32).reshape(64, 1024)
    runs = Sampled((64, 1024), tuple(range(0, RUNS * 4000, 4000)))
    read = whole.reshape(-1)[runs.indices()].copy()
    tol = Tolerance(1e-5, 1e-5, 0.0)
    assert mismatch((read,), (read.copy(),), tol, None, (runs,), (runs,)) == ""
    assert mismatch((read,), (whole,), tol, None, (runs,), (None,)) == ""  # the reference read whole
    wrong = read.copy()
    wrong[RUN + 3] = -1.0  # one element of the second run
    assert "expected" in mismatch((wrong,), (whole,), tol, None, (runs,), (None,))
    assert "expected" in mismatch((whole,), (wrong,), tol, None, (None,), (runs,))
    other = Sampled((32, 2048), runs.starts)
    assert mismatch((read,), (read,), tol, None, (other,), (runs,)) == "output 0 has shape (32, 2048), expected (64, 1024)"


def test_a_process_that_does_not_exist_is_not_readable():
    assert not readable(2 ** 22 + 7)


def test_a_peer_describes_where_its_outputs_lie_and_keeps_them_until_its_next_collect():
    server = CallServer(None, lambda x: torch.relu(x), "cpu", lambda: None)
    server.staged = [[torch.randn(256)] for _ in range(3)]
    assert isinstance(server.run(3), msg.Ran)
    outputs = [out for (out,) in server.outputs]
    described = server.collect(0, describe=True)
    assert isinstance(described, msg.Described)
    assert [d[0]["offset"] for d in described.outputs] == [o.data_ptr() for o in outputs]
    assert described.outputs[0][0] == _tensor(outputs[0].data_ptr(), (256,), (1,))
    server.staged = [[torch.randn(256)]]
    server.run(1)  # never freed in a timed Run: alive while the next window's outputs are made
    assert [o for (o,) in server.described] == outputs and server.kept == []
    later = server.outputs[0][0]
    assert all(later.data_ptr() != o.data_ptr() for o in outputs)
    server.collect(0, describe=True)
    assert server.described == [[later]]


def test_a_peer_describes_only_plain_tensors():
    server = CallServer(None, lambda x: (torch.relu(x), 2.0), "cpu", lambda: None)
    server.staged = [[torch.randn(8)]]
    server.run(1)
    with pytest.raises(TypeError, match="output 1 is a float, not a plain torch.Tensor"):
        server.collect(0, describe=True)
