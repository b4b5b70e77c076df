"""Size sites: every way a KernelBench file writes a size, their roles, and rewriting them."""

from __future__ import annotations

import pytest

from kernelbench_npu.size_params import find_sites, rewrite, role_of

SOURCE = '''import torch
N = 2048 * 2  # square
batch_size = 16
D, H, W = 16, 32, 32
height = width = 128
input_shape = (8192 * 2,)
hidden = [1024] * 16
bias_shape = (N, 1, 1)
kernel_size = (3, 5)
scale = 0.5
flag = True


def get_inputs():
    return [torch.rand(batch_size, 3, 224, 224), torch.randint(0, 10, (batch_size,))]
'''


def _sites():
    return {s.key: s for s in find_sites(SOURCE)}


def test_every_size_form_is_a_site_and_derived_sizes_are_not():
    sites = _sites()
    assert {k: s.value for k, s in sites.items()} == {
        "N": 4096, "batch_size": 16, "D": 16, "H": 32, "W": 32, "height=width": 128, "input_shape[0]": 16384,
        "hidden[0]": 1024, "bias_shape[1]": 1, "bias_shape[2]": 1, "kernel_size[0]": 3, "kernel_size[1]": 5,
        "get_inputs:15:35": 3, "get_inputs:15:38": 224, "get_inputs:15:43": 224,
    }  # bias_shape[0] (a name), scale (float), flag (bool) and randint's bounds are not sizes


def test_roles_from_names_and_positions():
    sites = _sites()
    roles = {k: s.role for k, s in sites.items()}
    assert roles["N"] == "gemm" and roles["batch_size"] == "batch" and roles["D"] == "spatial"
    assert roles["height=width"] == "spatial" and roles["kernel_size[0]"] == "geometry"
    assert roles["get_inputs:15:38"] == "spatial" and roles["get_inputs:15:35"] == "channels"
    assert not sites["kernel_size[1]"].scalable and not sites["get_inputs:15:35"].scalable
    assert sites["hidden[0]"].scalable and sites["batch_size"].scalable


@pytest.mark.parametrize("name, role", [
    ("num_layers", "geometry"), ("hidden_layer_sizes", "channels"), ("n_head", "geometry"),
    ("seq_len", "sequence"), ("input_length", "spatial"), ("num_groups", "group"), ("dim1", "spatial"),
    ("dim", "channels"), ("reduce_dim", "geometry"), ("block_widths", "channels"), ("b", "batch"),
])
def test_role_of_names(name, role):
    assert role_of(name) == role


def test_rewrite_changes_only_the_sites_and_keeps_the_rest_byte_for_byte():
    sites = find_sites(SOURCE)
    new = rewrite(SOURCE, sites, {"N": 256, "D": 8, "height=width": 16, "input_shape[0]": 512, "hidden[0]": 64,
                                  "get_inputs:15:38": 28, "get_inputs:15:43": 28})
    assert "N = 256  # square" in new and "D, H, W = 8, 32, 32" in new and "height = width = 16" in new
    assert "input_shape = (512,)" in new and "hidden = [64] * 16" in new
    assert "torch.rand(batch_size, 3, 28, 28)" in new and "bias_shape = (N, 1, 1)" in new
    assert {s.key: s.value for s in find_sites(new)}["N"] == 256


def test_a_constant_assigned_again_later_is_dead():
    sites = {s.key: s for s in find_sites("height = width = 2048\nheight, width = 32, 32\n")}
    assert sites["height=width"].dead and not sites["height=width"].scalable
    assert not sites["height"].dead and sites["width"].value == 32


def test_non_ascii_text_before_a_site_does_not_shift_the_rewrite():
    source = "é = 1; size = 64  # größe\n"
    assert rewrite(source, find_sites(source), {"size": 8}) == "é = 1; size = 8  # größe\n"


NETWORK = '''import torch
import torch.nn as nn


class Block(nn.Module):
    def __init__(self, in_channels, out_channels, stride=1, expansion=64):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, 3, stride, 1)


class Model(nn.Module):
    def __init__(self, num_classes=1000, embed_dim=96, num_heads=16):
        super().__init__()
        self.stem = nn.Conv2d(3, 64, kernel_size=7, stride=2, padding=3)
        self.block = Block(64, 128, 2)
        self.norm = nn.BatchNorm2d(num_features=128)
        self.fc = nn.Linear(128 * 7 * 7, num_classes)
        self.attn = nn.MultiheadAttention(256, 16)


batch_size = 2
'''


def test_layer_widths_inside_the_model_are_sites_with_roles_from_their_parameters():
    sites = {s.key: s for s in find_sites(NETWORK) if not s.key.startswith("batch")}
    found = {(s.key.split(":")[0], s.value, s.role) for s in sites.values()}
    assert found == {
        ("Block.__init__", 64, "channels"),  # the default of expansion
        ("Model.__init__", 1000, "channels"), ("Model.__init__", 96, "channels"),  # defaults; num_heads: geometry
        ("Model.__init__", 64, "channels"),  # Conv2d out_channels and Block's in_channels (3, 7, 2, 3: not sizes)
        ("Model.__init__", 128, "channels"),  # Block's out_channels, BatchNorm's num_features, the 128 of 128 * 7 * 7
        ("Model.__init__", 256, "channels"),  # MultiheadAttention's embed_dim (16 heads: geometry)
    }
    assert sum(s.value == 128 for s in sites.values()) == 3 and sum(s.value == 64 for s in sites.values()) == 3
    new = rewrite(NETWORK, find_sites(NETWORK), {k: 32 for k, s in sites.items() if s.value == 128})
    assert "Block(64, 32, 2)" in new and "nn.Linear(32 * 7 * 7, num_classes)" in new and "num_features=32" in new


def test_a_zero_size_is_never_scalable():
    sites = {s.key: s for s in find_sites("ghost_clusters = 0\nnum_clusters = 32\n")}
    assert not sites["ghost_clusters"].scalable and sites["num_clusters"].scalable
