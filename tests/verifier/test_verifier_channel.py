"""The monitor's channels and shared memory with real sockets and memory files: frames, descriptors,
limits, strict parsing, sealed arenas, and what a hostile peer can and cannot make the monitor do."""

from __future__ import annotations

import fcntl
import os
import socket
import time

import numpy as np
import pytest
import torch

from verifier.sandbox import messages as msg
from verifier.sandbox.arena import Arena, ArenaError, TensorLayout, plan
from verifier.sandbox.channel import Channel, ChannelClosed, ChannelError, ChannelTimeout, encode, socket_pair
from verifier.sandbox.torch_values import arena_values, decode_torch, encode_torch, write_outputs
from verifier.sandbox.values import HostTensor, layout_spec, layouts_in


@pytest.fixture
def pair():
    a, b = socket_pair()
    yield Channel(a), Channel(b)
    a.close()
    b.close()


def _soon() -> float:
    return time.monotonic() + 5


def test_frames_roundtrip_arrays_and_header(pair):
    ours, theirs = pair
    arrays = [np.arange(6, dtype=np.float32).reshape(2, 3), np.array([True, False]), np.array(2.5, np.float32),
              np.arange(6, dtype=np.int64).reshape(2, 3).T]
    theirs.send({"kind": "x", "v": 3}, arrays)
    frame = ours.receive(_soon())
    assert frame.kind == "x" and frame.header["v"] == 3
    assert np.array_equal(frame.arrays[0], arrays[0]) and frame.arrays[1].dtype == np.bool_
    assert frame.arrays[2].shape == () and frame.arrays[2] == 2.5  # a scalar output (a loss) stays 0-d
    assert np.array_equal(frame.arrays[3], arrays[3])  # a transposed view travels as its values


def test_descriptors_travel_only_when_asked_for(pair):
    ours, theirs = pair
    fd = os.memfd_create("t")
    theirs.send({"kind": "x"}, fds=(fd,))
    frame = ours.receive(_soon(), keep_fds=True)
    assert len(frame.fds) == 1 and os.fstat(frame.fds[0]).st_ino == os.fstat(fd).st_ino
    theirs.send({"kind": "y"}, fds=(fd,))  # a hostile peer's descriptors are closed on arrival
    before = len(os.listdir("/proc/self/fd"))
    assert ours.receive(_soon()).fds == [] and len(os.listdir("/proc/self/fd")) == before
    for x in (fd, *frame.fds):
        os.close(x)


@pytest.mark.parametrize("raw, match", [
    (encode({"kind": "x"}, [np.zeros(1000, np.float64)]), "refused"),
    (encode({"kind": "x"}, [np.zeros(2)]).replace(b'"float64"', b'"object" '), "dtype"),
    ((16).to_bytes(8, "little") + (100).to_bytes(8, "little") + b"{}{}{}{}", "malformed"),  # header overruns
    ((14).to_bytes(8, "little") + (6).to_bytes(8, "little") + b"[1, 2]", "malformed"),  # not an object
])
def test_oversized_malformed_and_foreign_frames_are_refused(pair, raw, match):
    ours, theirs = pair
    theirs.sock.sendall(raw)
    with pytest.raises(ChannelError, match=match):
        ours.receive(_soon(), max_bytes=1000)


def test_timeout_and_end_of_stream_are_told_apart(pair):
    ours, theirs = pair
    with pytest.raises(ChannelTimeout):
        ours.receive(time.monotonic() + 0.2)
    theirs.close()
    with pytest.raises(ChannelClosed):
        ours.receive(_soon())


def test_messages_parse_strictly(pair):
    ours, theirs = pair
    msg.send(theirs, msg.Collected([[{"t": "int", "v": 1}]], 3, "note"))
    done, _ = msg.receive(ours, _soon(), 1 << 20, (msg.Collected,))
    assert done == msg.Collected([[{"t": "int", "v": 1}]], 3, "note")
    theirs.send({"kind": "collected", "outputs": "not a list", "native_calls": 1})
    with pytest.raises(ChannelError, match="malformed collected"):
        msg.receive(ours, _soon(), 1 << 20)
    theirs.send({"kind": "verdict", "passed": True})
    with pytest.raises(ChannelError, match="unexpected message kind"):
        msg.receive(ours, _soon(), 1 << 20)
    msg.send(theirs, msg.Ran())
    with pytest.raises(ChannelError, match="unexpected ran"):
        msg.receive(ours, _soon(), 1 << 20, (msg.Collected,))
    theirs.send({"kind": "ran"}, [np.zeros(1)])
    with pytest.raises(ChannelError, match="unexpected arrays"):
        msg.receive(ours, _soon(), 1 << 20)


def test_a_sealed_arena_cannot_be_resized_by_its_peer():
    arena = Arena.create(10_000)
    peer = Arena.attach(os.dup(arena.fd))
    assert peer.size == arena.size and fcntl.fcntl(arena.fd, fcntl.F_GET_SEALS) & fcntl.F_SEAL_SHRINK
    with pytest.raises(PermissionError):
        os.ftruncate(peer.fd, 0)  # would fault the monitor's mapping
    with pytest.raises(PermissionError):
        os.ftruncate(peer.fd, arena.size * 2)
    arena.close()
    peer.close()
    unsealed = os.memfd_create("plain")
    os.ftruncate(unsealed, 4096)
    with pytest.raises(ArenaError, match="not sealed"):
        Arena.attach(unsealed)


def test_layouts_outside_the_arena_are_refused():
    arena = Arena.create(4096)
    with pytest.raises(ArenaError):
        arena.read(TensorLayout(4000, (100,), (1,), "float32"))
    with pytest.raises(ArenaError):
        arena.read(TensorLayout(0, (2, 2), (1, -1), "float32"))
    with pytest.raises(ArenaError):
        layouts_in([{"t": "tensor", "offset": 0, "shape": [1 << 40], "stride": [1], "dtype": "float32"}], arena.size)
    arena.close()


def test_placing_values_leaves_no_reference_cycle_behind():
    """The drawn input sets a layout places are freed as soon as the caller drops them, not when the cyclic
    collector next runs: a reference worker's heap would otherwise grow by a round's inputs at a time, and
    its timed outputs fault fresh pages in (docs/timing.md, "A/A")."""
    import gc
    import weakref

    from verifier.sandbox.values import Shaped

    class Payload:  # stands for a drawn tensor
        pass

    payload = Payload()
    freed = weakref.ref(payload)
    value = Shaped((4, 2), "float32", payload)
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        spec, placed, end = layout_spec([[value, 3], (value,)], 64)
        assert [layout.offset for layout, _ in placed] == [64, 128] and end == 192
        assert spec[0]["t"] == "seq" and spec[0]["items"][1] == {"t": "int", "v": 3}
        del spec, placed, value, payload
        assert freed() is None
    finally:
        if was_enabled:
            gc.enable()


def test_inputs_view_the_arena_and_outputs_are_copied_into_it():
    x = HostTensor(np.arange(12, dtype=np.float32).reshape(3, 4), "float32")
    spec, placed, end = layout_spec([x, 7, (1.5, None)])
    arena = Arena.create(end + 4096)
    for layout, value in placed:
        arena.write(layout, value.array)
    values = arena_values(spec, arena)
    assert torch.equal(values[0], torch.arange(12, dtype=torch.float32).view(3, 4)) and values[1:] == [7, (1.5, None)]
    values[0][0, 0] = 99.0  # the same memory: what the candidate writes, the monitor sees
    assert arena.read(placed[0][0])[0, 0] == 99.0
    out = write_outputs([values[0] * 2, torch.tensor([1, 2], dtype=torch.bfloat16)], arena, end)
    layouts = layouts_in(out, arena.size)
    assert arena.read(layouts[0])[0, 1] == 2.0 and arena.read(layouts[1]).tolist() == [1.0, 2.0]
    with pytest.raises(ValueError, match="larger than"):
        write_outputs([torch.zeros(1 << 20)], arena, end)
    del values
    arena.close()


def test_values_roundtrip_torch_and_refuse_what_cannot_travel():
    arrays: list = []
    spec = encode_torch([torch.ones(2, dtype=torch.bfloat16), 3, [True, "s"]], arrays)
    back = decode_torch(spec, arrays)
    assert back[0].dtype == torch.bfloat16 and back[1:] == [3, [True, "s"]]
    with pytest.raises(TypeError):
        encode_torch([object()], [])
    with pytest.raises(ValueError):
        decode_torch([{"t": "tensor", "dtype": "float32", "i": 5}], arrays)


def test_plan_aligns_every_tensor():
    layouts, end = plan([((3,), "float32"), ((5, 7), "float64")], start=1)
    assert all(lay.offset % 64 == 0 for lay in layouts) and end % 64 == 0


def test_socket_pair_hands_out_an_inheritable_peer_end():
    ours, theirs = socket_pair()
    assert not ours.get_inheritable() and theirs.get_inheritable()
    assert ours.family == socket.AF_UNIX
    ours.close()
    theirs.close()
