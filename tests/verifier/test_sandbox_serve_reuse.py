"""A window's outputs must be fresh tensors (verifier.sandbox.serve.CallServer.reuse): the sorted check
that serves honest windows in one pass finds every problem the pair-by-pair check names, with its words."""

from __future__ import annotations

import torch

from verifier.sandbox.serve import KEEP, CallServer


def _server() -> CallServer:
    server = CallServer.__new__(CallServer)
    server.kept = []
    return server


def _window(calls: int, n: int = 64) -> tuple[list[list], list[list]]:
    inputs = [[torch.randn(n)] for _ in range(calls)]
    return [[torch.relu(x)] for (x,) in inputs], inputs


def test_a_window_of_fresh_outputs_passes_and_its_last_outputs_are_kept():
    server = _server()
    outputs, inputs = _window(256)
    assert server.reuse(outputs, inputs) == ""
    assert [id(t) for t in server.kept] == [id(o[0]) for o in outputs[-KEEP:]]
    later, later_inputs = _window(3)
    assert server.reuse(later, later_inputs) == ""
    assert len(server.kept) == KEEP and server.kept[-1] is later[-1][0]


def test_a_static_output_buffer_is_named_at_its_second_call():
    buffer = torch.empty(64)
    inputs = [[torch.randn(64)] for _ in range(200)]
    outputs = [[torch.clamp(x, min=0, out=buffer)] for (x,) in inputs]
    assert "reuses the storage of an earlier output" in _server().reuse(outputs, inputs)


def test_an_output_on_an_earlier_windows_kept_storage_is_named():
    server = _server()
    outputs, inputs = _window(4)
    assert server.reuse(outputs, inputs) == ""
    again = [[outputs[-1][0][:32]]]  # a view of the last window's output, still alive
    assert "reuses the storage of an earlier output" in server.reuse(again, [[torch.randn(64)]])


def test_an_output_that_views_its_input_is_named_before_anything_else():
    inputs = [[torch.randn(64)] for _ in range(10)]
    outputs = [[torch.relu(x)] for (x,) in inputs]
    outputs[7] = [inputs[7][0][1:]]
    assert _server().reuse(outputs, inputs) == "output 0 aliases an input (outputs must be fresh tensors)"


def test_one_call_may_return_the_same_tensor_twice_and_non_tensors():
    inputs = [[torch.randn(64), 3] for _ in range(5)]
    outputs = [[y, y, 1.5] for y in (torch.relu(x) for x, _ in inputs)]
    server = _server()
    assert server.reuse(outputs, inputs) == ""
    assert server.kept[-1] is outputs[-1][1]


def test_empty_outputs_share_no_storage():
    inputs = [[torch.randn(64)] for _ in range(5)]
    outputs = [[torch.empty(0)] for _ in inputs]
    assert _server().reuse(outputs, inputs) == ""
