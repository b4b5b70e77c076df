"""The framed, nonce-checked result channel (never pickle, never stdout)."""

from __future__ import annotations

import os
import time

import numpy as np
import pytest

from verifier.sandbox.channel import ChannelClosed, ChannelError, ChannelTimeout, encode, read_message, write_message


def _pipe_with(data: bytes):
    r, w = os.pipe()
    os.write(w, data)
    os.close(w)
    return r


def test_roundtrip_keeps_arrays_and_header():
    r, w = os.pipe()
    arrays = [np.arange(6, dtype=np.float32).reshape(2, 3), np.array([True, False])]
    write_message(w, {"kind": "x", "nonce": "n1", "v": 3}, arrays)
    msg = read_message(r, time.monotonic() + 5, "n1")
    assert msg.kind == "x" and msg.header["v"] == 3
    assert np.array_equal(msg.arrays[0], arrays[0]) and msg.arrays[1].dtype == np.bool_
    os.close(r)
    os.close(w)


def test_wrong_nonce_is_refused():
    r = _pipe_with(encode({"kind": "verdict", "nonce": "forged"}))
    with pytest.raises(ChannelError, match="nonce"):
        read_message(r, time.monotonic() + 5, "real")


def test_object_dtype_is_refused():
    frame = encode({"nonce": "n"}, [np.zeros(2)]).replace(b'"float64"', b'"object" ')
    r = _pipe_with(frame)
    with pytest.raises(ChannelError):
        read_message(r, time.monotonic() + 5, "n")


def test_closed_and_silent_channels():
    r = _pipe_with(b"")
    with pytest.raises(ChannelClosed):
        read_message(r, time.monotonic() + 5, "n")
    r2, w2 = os.pipe()
    with pytest.raises(ChannelTimeout):
        read_message(r2, time.monotonic() + 0.2, "n")
    os.close(w2)


def test_oversized_frame_is_refused():
    r = _pipe_with((1 << 40).to_bytes(8, "little"))
    with pytest.raises(ChannelError, match="refused"):
        read_message(r, time.monotonic() + 5, "n")


def test_typed_messages_round_trip_and_malformed_frames_are_refused():
    from verifier.sandbox import messages as msg

    r, w = os.pipe()
    trial = msg.TrialOutputs(3, "check", "normal", ("float32",), (np.arange(4, dtype=np.float32),))
    sent = [msg.CompileReport(True, "", 0.5, cached=True), msg.TrialBatch((trial,), "configs: BLOCK=64"),
            msg.Timing((1.0, 2.0), (2.0, 3.0), (trial,)), msg.IntegrityViolation("x"), msg.Go()]
    for message in sent:
        msg.send(w, "n", message)
    got = [msg.receive(r, time.monotonic() + 5, "n") for _ in sent]
    assert [type(m) for m in got] == [type(m) for m in sent]
    assert got[0] == sent[0] and got[3] == sent[3]
    assert got[1].trials[0].index == 3 and got[1].trials[0].arrays[0].tolist() == [0.0, 1.0, 2.0, 3.0]
    assert got[1].note == "configs: BLOCK=64"
    assert got[2].candidate_ms == (1.0, 2.0) and got[2].post[0].dtypes == ("float32",)
    write_message(w, {"kind": "compile", "nonce": "n", "ok": True})  # fields missing
    with pytest.raises(ChannelError, match="malformed compile"):
        msg.receive(r, time.monotonic() + 5, "n")
    write_message(w, {"kind": "correctness", "nonce": "n", "trials": [{"index": 0, "kind": "check",
                      "distribution": "normal", "dtypes": ["float32"], "count": 2}]})  # claims absent arrays
    with pytest.raises(ChannelError, match="malformed correctness"):
        msg.receive(r, time.monotonic() + 5, "n")
    write_message(w, {"kind": "surprise", "nonce": "n"})
    with pytest.raises(ChannelError, match="unexpected message kind"):
        msg.receive(r, time.monotonic() + 5, "n")
    os.close(r)
    os.close(w)
