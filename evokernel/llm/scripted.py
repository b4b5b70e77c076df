"""``scripted:FILE``: an offline LLM that plays recorded responses, for tests and the demo.

File format (JSON)::

    {
      "label": "demo script (scripted responses written for EvoKernel, not a real model)",
      "responses": {
        "<task_id>" | "*": {
          "draft":   [ENTRY, ...],
          "refine":  [ENTRY, ...],
          "distill": [ENTRY, ...]
        }
      }
    }

An ENTRY is either a string (the completion text), ``{"text": "...", "finish_reason":
"length"}`` (a text with an explicit finish reason), or ``{"error": KIND}`` with KIND one of
``rate_limit``, ``server_error``, ``timeout``, ``connection`` (retryable) or ``auth``,
``bad_request`` (fatal). For a request, the list of (task_id, stage) is played, falling back
to ("*", stage). Each text entry is one *slot*; error entries fire, once each, before the text
that follows them, and then the retry policy gets that text — so retry paths run offline with
the same code as real providers. Slot k is played on the k-th completed call for
(task_id, stage); once the list is exhausted the last slot repeats. A request whose metadata
has an integer ``"call_index"`` plays that slot instead of the counter, so a resumed campaign
replays the same script deterministically.

Token counts are the deterministic estimate len(text)//4 (input: system + prompt); a text
longer than ``max_output_tokens`` is cut there with finish_reason "length". Cost is 0.
``scripted:demo`` is the bundled ``evokernel/demo/script.json``.
"""

from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from evokernel.llm.base import STAGES, Completion, LLMRequest, estimate_tokens
from evokernel.llm.errors import FatalLLMError, LLMError, RetryableLLMError
from evokernel.llm.retry import RetryPolicy, call_with_retries

_ERRORS: dict[str, Callable[[], LLMError]] = {
    "rate_limit": lambda: RetryableLLMError("rate limited (HTTP 429): scripted", status_code=429),
    "server_error": lambda: RetryableLLMError("server error (HTTP 500): scripted", status_code=500),
    "timeout": lambda: RetryableLLMError("timeout: scripted"),
    "connection": lambda: RetryableLLMError("connection failed: scripted"),
    "auth": lambda: FatalLLMError("authentication failed (HTTP 401): scripted", status_code=401),
    "bad_request": lambda: FatalLLMError("bad request (HTTP 400): scripted", status_code=400),
}


class ScriptError(ValueError):
    """The script file is missing or malformed; the message names the file and the field."""


@dataclass(frozen=True)
class Slot:
    """One scripted answer and the simulated errors that precede it."""

    text: str
    finish_reason: str
    errors: tuple[str, ...]


def _parse_entries(path: Path, where: str, entries: object) -> tuple[Slot, ...]:
    if not isinstance(entries, list) or not entries:
        raise ScriptError(f"{path}: {where}: expected a non-empty list of responses")
    slots, pending = [], []
    for i, entry in enumerate(entries):
        field = f"{where}[{i}]"
        if isinstance(entry, str):
            slots.append(Slot(entry, "stop", tuple(pending)))
            pending = []
        elif isinstance(entry, dict) and "error" in entry:
            if entry["error"] not in _ERRORS:
                raise ScriptError(f"{path}: {field}.error: {entry['error']!r} is not one of {', '.join(_ERRORS)}")
            pending.append(entry["error"])
        elif isinstance(entry, dict) and isinstance(entry.get("text"), str):
            slots.append(Slot(entry["text"], str(entry.get("finish_reason", "stop")), tuple(pending)))
            pending = []
        else:
            raise ScriptError(f"{path}: {field}: expected a string, {{\"text\": ...}} or {{\"error\": ...}}")
    if pending:
        raise ScriptError(f"{path}: {where}: error entries must be followed by a text entry")
    return tuple(slots)


def load_script(path: Path) -> tuple[str, dict[tuple[str, str], tuple[Slot, ...]]]:
    """Read and validate a script file: (label, {(task_id, stage): slots})."""
    try:
        raw = json.loads(path.read_text())
    except FileNotFoundError:
        raise ScriptError(f"{path}: script file not found") from None
    except json.JSONDecodeError as exc:
        raise ScriptError(f"{path}: invalid JSON ({exc.msg} at line {exc.lineno})") from None
    if not isinstance(raw, dict) or not isinstance(raw.get("responses"), dict):
        raise ScriptError(f"{path}: responses: expected an object keyed by task id or \"*\"")
    label = raw.get("label", path.stem)
    if not isinstance(label, str):
        raise ScriptError(f"{path}: label: expected a string")
    table = {}
    for task_id, stages in raw["responses"].items():
        if not isinstance(stages, dict):
            raise ScriptError(f"{path}: responses.{task_id}: expected an object keyed by stage")
        for stage, entries in stages.items():
            if stage not in STAGES:
                raise ScriptError(f"{path}: responses.{task_id}.{stage}: unknown stage (use {', '.join(STAGES)})")
            table[(task_id, stage)] = _parse_entries(path, f"responses.{task_id}.{stage}", entries)
    return label, table


class ScriptedLLM:
    """Plays a script file; thread-safe; costs nothing."""

    def __init__(self, path: str | Path, *, spec: str | None = None, model: str | None = None,
                 policy: RetryPolicy = RetryPolicy(), sleep: Callable[[float], None] = time.sleep) -> None:
        self.path = Path(path)
        self.label, self._table = load_script(self.path)
        self.spec = spec or f"scripted:{self.path}"
        self.model = model or f"scripted:{self.path.stem}"
        self._policy, self._sleep = policy, sleep
        self._counters: dict[tuple[str, str], int] = {}
        self._fired: set[tuple[str, str, int, int]] = set()
        self._lock = threading.Lock()

    def _slots(self, req: LLMRequest) -> tuple[Slot, ...]:
        for key in ((req.task_id, req.stage), ("*", req.stage)):
            if key in self._table:
                return self._table[key]
        raise FatalLLMError(f"{self.path}: no scripted {req.stage!r} responses for task "
                            f"{req.task_id!r} and no \"*\" fallback")

    def _once(self, req: LLMRequest) -> tuple[str, str]:
        with self._lock:
            key, slots = (req.task_id, req.stage), self._slots(req)
            index = req.metadata.get("call_index") if req.metadata else None
            counted = not isinstance(index, int)
            index = min(self._counters.get(key, 0) if counted else index, len(slots) - 1)
            slot = slots[index]
            for n, kind in enumerate(slot.errors):
                if (*key, index, n) not in self._fired:
                    self._fired.add((*key, index, n))
                    raise _ERRORS[kind]()
            if counted:
                self._counters[key] = self._counters.get(key, 0) + 1
            return slot.text, slot.finish_reason

    def complete(self, req: LLMRequest) -> Completion:
        outcome = call_with_retries(lambda: self._once(req), self._policy, sleep=self._sleep)
        text, finish_reason = outcome.value
        limit_chars = req.max_output_tokens * 4
        if len(text) > limit_chars:
            text, finish_reason = text[:limit_chars], "length"
        return Completion(
            text=text, input_tokens=estimate_tokens(req.system + req.prompt),
            output_tokens=estimate_tokens(text), cost_usd=0.0, seconds=outcome.seconds,
            model=self.model, finish_reason=finish_reason, retries=outcome.retries,
            cost_known=True, tokens_estimated=True,
        )
