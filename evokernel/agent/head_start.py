"""A campaign's first LLM requests, sent before its Prefect API is up (issue 39: fast first feedback).

`evokernel campaign` runs its flow on a Prefect API; with none configured it starts a server for the
campaign, 20-70 s on a loaded 2-core machine before the flow's first step could begin (Prefect 3.8
has no API-less mode: a flow run is created through an API before its first line runs). Before that,
:meth:`HeadStart.begin` does what the flow's first wave will do first: open the campaign's runtime
(the one the flow then shares: evokernel.agent.runtime.runtime_for), plan the first wave of tasks as
the flow plans it, prepare each task's next step (its retrievals are recorded under the step's attempt
id, under the campaign's lease, so the flow's prepare_step of that step rebuilds the same request) and
send its LLM request from a daemon thread. The CLI waits for that (:meth:`HeadStart.wait`, seconds),
then imports Prefect and starts the server while the model generates.

The flow's ``llm-generate`` task of that step takes the answer (:func:`take`) instead of calling
again: the call is made once and still belongs to the Prefect task of its step (its result, its
timing in the lake); only its HTTP request left earlier. An answer that no step took (the campaign
stopped before that step, or the flow built another request) is recorded in ``llm_calls`` with
purpose ``unused-head-start`` by :meth:`HeadStart.close`, so what it cost is counted. Not used for
Dask task runners: their tasks run in other processes, which cannot take an answer held here.
"""

from __future__ import annotations

import threading
import uuid
from concurrent.futures import Future
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Sequence

from evokernel.agent.campaign import plan_tasks, resume_task, stop_reason, task_waves
from evokernel.agent.runtime import Runtime, release_runtime, runtime_for
from evokernel.agent.step import prepare_step
from evokernel.config import Settings
from evokernel.llm.base import Completion, LLMRequest

UNUSED = "unused-head-start"


@dataclass(frozen=True)
class _Sent:
    request: LLMRequest
    answer: Future  # Future[Completion]
    task_id: str


_SENT: dict[str, _Sent] = {}  # attempt id -> the request sent ahead for that step
_LOCK = threading.Lock()


def take(attempt_id: str, request: LLMRequest) -> Future | None:
    """The answer sent ahead for this step when its request is the one the flow built (once)."""
    with _LOCK:
        sent = _SENT.get(attempt_id)
        if sent is None or sent.request != request:
            return None
        return _SENT.pop(attempt_id).answer


class HeadStart:
    """The first wave's first requests, sent from a daemon thread (see the module docstring)."""

    def __init__(self, settings: Settings, campaign_id: str, task_ids: Sequence[str], order: str) -> None:
        self.settings, self.campaign_id, self.task_ids, self.order = settings, campaign_id, tuple(task_ids), order
        self.runtime: Runtime | None = None
        self.sent: list[str] = []  # attempt ids whose request went out
        self._thread = threading.Thread(target=self._run, name="campaign-head-start", daemon=True)

    @classmethod
    def begin(cls, settings: Settings, campaign_id: str, task_ids: Sequence[str], order: str) -> "HeadStart":
        head = cls(settings, campaign_id, task_ids, order)
        head._thread.start()
        return head

    def wait(self, timeout_s: float | None = None) -> None:
        """Until every request of the head start went out (or failed to be prepared) and the campaign's
        lease it held is released: the flow takes that lease next."""
        self._thread.join(timeout_s)

    def _run(self) -> None:
        try:
            self.runtime = runtime_for(self.settings, self.campaign_id)
            ctx, build = self.runtime.ctx, self.runtime.build
            wave = task_waves(plan_tasks(build, self.task_ids, self.order), self.settings.parallel_tasks)[:1]
            with ctx.lake.hold_campaign(self.campaign_id):  # it writes the steps' retrievals
                for spec in wave[0] if wave else ():
                    self._send(spec)
        except Exception:  # the flow meets the same problem and reports it properly
            return

    def _send(self, spec) -> None:
        ctx = self.runtime.ctx
        state = resume_task(ctx, spec)
        if stop_reason(ctx, state) is not None:
            return
        plan = prepare_step(ctx, spec, state)
        answer: Future = Future()
        with _LOCK:
            _SENT[plan.attempt_id] = _Sent(plan.request, answer, spec.task_id)
        self.sent.append(plan.attempt_id)
        threading.Thread(target=_complete, args=(self.runtime.llm, plan.request, answer), daemon=True,
                         name=f"head-start {spec.task_id}").start()

    def close(self) -> None:
        """Record what no step took (its cost counts), forget it, and hand the runtime back."""
        self.wait(timeout_s=30.0)
        with _LOCK:
            left = [_SENT.pop(a) for a in self.sent if a in _SENT]
        if self.runtime is None:
            return
        try:
            done = [s for s in left if s.answer.done() and s.answer.exception() is None]
            if done:
                self.runtime.ctx.lake.append("llm_calls", [_unused_row(self.campaign_id, s) for s in done])
        except Exception:  # the lake is gone or damaged: its own error was the campaign's to report
            pass
        finally:
            release_runtime(self.runtime)


def _complete(llm, request: LLMRequest, answer: Future) -> None:
    try:
        answer.set_result(llm.complete(request))
    except BaseException as exc:  # an LLMError reaches the step that takes it, as its own call's would
        answer.set_exception(exc)


def _unused_row(campaign_id: str, sent: _Sent) -> dict:
    completion: Completion = sent.answer.result()
    return {"call_id": uuid.uuid4().hex, "campaign_id": campaign_id, "task_id": sent.task_id, "purpose": UNUSED,
            "model": completion.model, "input_tokens": completion.input_tokens,
            "output_tokens": completion.output_tokens, "cost_usd": completion.cost_usd,
            "tokens_estimated": completion.tokens_estimated, "seconds": completion.seconds,
            "created_at": datetime.now(timezone.utc), "response": completion.text}
