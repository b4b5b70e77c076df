"""Where the arena puts a tensor (verifier.sandbox.arena.place, through verifier.sandbox.values.layout_spec): a
tensor of 128 KiB or more 64 bytes into a page, as torch's allocator hands a user's process a mapped block, the
rest packed at 64-byte alignment; every input set of a window (verifier.monitor.window_size.strides: whole pages
a set) has its tensors at the same places in a page as the first, in as many bytes as the first."""

from __future__ import annotations

import subprocess
import sys

import pytest

from verifier.sandbox.arena import ALIGN, MAPPED_FROM, PAGE, page_round, place
from verifier.sandbox.values import Shaped, layout_spec, storage_bytes

BIG = (128, 65536)  # 32 MiB of float32: torch maps it, 64 bytes into a page


@pytest.mark.parametrize("offset", [0, 1, 64, 65, PAGE - 1, PAGE, PAGE + 64, 5 * PAGE + 100])
def test_a_large_tensor_lies_64_bytes_into_a_page_and_a_small_one_on_64_bytes(offset):
    at = place(offset, MAPPED_FROM)
    assert at >= offset and at % PAGE == ALIGN and at - offset < PAGE + ALIGN
    small = place(offset, MAPPED_FROM - 1)
    assert small >= offset and small % ALIGN == 0 and small - offset < ALIGN


def test_torch_hands_a_fresh_process_its_large_tensors_64_bytes_into_a_page():
    """The fact the placement copies (glibc's mapped chunk, posix_memalign(64) past its header), in a fresh
    process as a user's script draws its inputs (a long-running one may find room in its heap: any offset)."""
    code = "import torch; print(torch.empty(%r).data_ptr() %% %d)" % (BIG, PAGE)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True)
    assert int(out.stdout) == ALIGN


def test_every_set_of_a_window_has_its_tensors_where_the_first_has_them():
    values = [Shaped(BIG, "float32"), Shaped((3,), "float32"), Shaped((64, 4096), "float32")]
    size = storage_bytes(values)
    stride = page_round(size)
    first = [item["offset"] for item in layout_spec(values)[0]]
    assert first[0] % PAGE == ALIGN and first[2] % PAGE == ALIGN and first[1] % ALIGN == 0
    for k in (1, 2, 7):
        spec, _, end = layout_spec(values, k * stride)
        assert [item["offset"] - k * stride for item in spec] == first
        assert end - k * stride == size <= stride
