"""Progress events of a running campaign flow, for whoever listens in its process (the CLI).

The flow calls :func:`emit` for what it sees itself: the campaign's start (its id and the steps
planned), each benchmark task's end (the flow sees its future finish) and the campaign's end;
listeners are plain callables registered with :func:`listen`. Steps are not events: they happen
wherever the task runs (a thread, or a Dask worker on another machine), so a listener counts them
in the lake (``Lake.campaign_progress``). Kept out of flow parameters so flows stay serialisable.
"""

from __future__ import annotations

import threading
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Callable, Iterator, Sequence


@dataclass(frozen=True)
class ProgressEvent:
    kind: str  # "campaign-start" | "task-end" | "campaign-end"
    campaign_id: str
    task_id: str | None = None
    total_steps: int = 0  # campaign-start: tasks x budget
    budget: int = 0  # campaign-start: steps per task
    message: str = ""  # task-end: why the task stopped


def steps_done(attempts_per_task: dict[str, int], ended: Sequence[str] | set[str], budget: int) -> int:
    """Steps a campaign has done: committed attempts (at most the budget) of running tasks, the whole
    budget of ended ones (a task that stops early completes its remaining steps)."""
    ended = set(ended)
    running = sum(min(n, budget) for task, n in attempts_per_task.items() if task not in ended)
    return running + budget * len(ended)


_listeners: list[Callable[[ProgressEvent], None]] = []
_lock = threading.Lock()


def emit(event: ProgressEvent) -> None:
    with _lock:
        listeners = list(_listeners)
    for listener in listeners:
        listener(event)


@contextmanager
def listen(listener: Callable[[ProgressEvent], None]) -> Iterator[None]:
    with _lock:
        _listeners.append(listener)
    try:
        yield
    finally:
        with _lock:
            _listeners.remove(listener)
