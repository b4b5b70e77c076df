"""The monitor's two-thread copy of a round's input sets (verifier.monitor.copying): every byte lands
where one np.copyto would put it, whatever the size, and two verifications copying at once do not mix."""

from __future__ import annotations

import threading

import numpy as np
import pytest

from verifier.monitor import copying


@pytest.mark.parametrize("size", [0, 1, 4095, copying.SPLIT_BYTES - 1, copying.SPLIT_BYTES, copying.SPLIT_BYTES + 1,
                                  (3 << 20) + 17, 9 << 20])
def test_a_copy_is_np_copyto_at_every_size(size):
    rng = np.random.default_rng(size)
    src = rng.integers(0, 256, size, dtype=np.uint8)
    dst = np.zeros(size + 64, np.uint8)
    copying.copy(dst[:size], src)
    assert np.array_equal(dst[:size], src)
    assert not dst[size:].any()  # nothing written past the end


def test_copies_from_two_threads_at_once_each_get_their_own_bytes():
    size = 6 << 20
    sources = [np.full(size, k + 1, np.uint8) for k in range(4)]
    targets = [np.zeros(size, np.uint8) for _ in range(4)]

    def work(k: int) -> None:
        for _ in range(5):
            copying.copy(targets[k], sources[k])

    threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for k in range(4):
        assert (targets[k] == k + 1).all()
