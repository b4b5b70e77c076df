"""Progress events of a running campaign, for whoever listens (the CLI's progress bar).

The flow and the core loop call :func:`emit`; listeners are plain callables registered with
:func:`listen`. Kept out of flow parameters so flows stay serialisable.
"""

from __future__ import annotations

import threading
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Callable, Iterator

from evokernel.agent.state import StepOutcome


@dataclass(frozen=True)
class ProgressEvent:
    kind: str  # "campaign-start" | "task-start" | "step" | "task-end" | "campaign-end"
    campaign_id: str
    task_id: str | None = None
    total_steps: int = 0  # campaign-start: the planned number of steps
    outcome: StepOutcome | None = None
    message: str = ""


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
