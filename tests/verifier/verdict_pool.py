"""Verifications mostly wait on their sandbox processes, so the corpus tests run two at a time:
each test asks for its own verdict, which submits it and the entries after it
(in parametrisation order) and waits for it."""

from __future__ import annotations

from concurrent.futures import Future, ThreadPoolExecutor
from typing import Callable, Generic, Hashable, Sequence, TypeVar

from verifier.result import Verdict

# Two in flight under pytest-xdist too: a verification spends much of its time starting and waiting on its
# sandbox processes, so a second one overlaps it even when the other xdist worker is busy.
IN_FLIGHT = 2
Key = TypeVar("Key", bound=Hashable)


class VerdictPool(Generic[Key]):
    def __init__(self, order: Sequence[Key], verify_one: Callable[[Key], Verdict], in_flight: int = IN_FLIGHT):
        self.order, self.verify_one, self.in_flight = list(order), verify_one, in_flight
        self.pool = ThreadPoolExecutor(in_flight)
        self.futures: dict[Key, Future] = {}

    def get(self, key: Key) -> Verdict:
        start = self.order.index(key)
        for ahead in self.order[start:start + self.in_flight]:
            if ahead not in self.futures:
                self.futures[ahead] = self.pool.submit(self.verify_one, ahead)
        return self.futures.pop(key).result()

    def close(self) -> None:
        self.pool.shutdown(wait=True, cancel_futures=True)
