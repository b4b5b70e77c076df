"""``anthropic:MODEL`` through the official anthropic SDK (Messages API).

The SDK's own retries are off; :mod:`evokernel.llm.retry` is the only policy. Stop reasons are
normalised: ``end_turn``/``stop_sequence`` -> "stop", ``max_tokens`` -> "length". Tokens come from
the answer's usage, cache reads and writes included (see :mod:`evokernel.llm.usage`).
The request's temperature is sent only where the installed SDK still accepts one (anthropic 2.x
dropped the parameter from ``messages.create``; the models then sample at their default).
"""

from __future__ import annotations

import inspect
import time
from typing import Callable

from evokernel.llm.base import Completion, LLMRequest
from evokernel.llm.errors import RetryableLLMError, translate_sdk_errors
from evokernel.llm.pricing import PriceTable
from evokernel.llm.retry import RetryPolicy, call_with_retries
from evokernel.llm.usage import RawAnswer, anthropic_usage, finish_completion

_STOP_REASONS = {"end_turn": "stop", "stop_sequence": "stop", "max_tokens": "length"}


class AnthropicProvider:
    def __init__(self, *, spec: str, model: str, api_key: str, base_url: str | None,
                 prices: PriceTable, policy: RetryPolicy = RetryPolicy(), timeout_s: float = 600.0,
                 sleep: Callable[[float], None] = time.sleep) -> None:
        import anthropic  # heavy import, only when this provider is used

        self.spec, self.model = spec, model
        self._prices, self._policy, self._sleep = prices, policy, sleep
        self._client = anthropic.Anthropic(api_key=api_key, base_url=base_url, timeout=timeout_s,
                                           max_retries=0)
        accepted = inspect.signature(self._client.messages.create).parameters
        self._sends_temperature = "temperature" in accepted

    def probe_target(self) -> tuple[str, dict[str, str], str]:
        """What evokernel.llm.reach GETs before a campaign: the model list, with the key; the key's variable."""
        base = str(self._client.base_url).rstrip("/")
        return (f"{base}/v1/models", {"x-api-key": str(self._client.api_key), "anthropic-version": "2023-06-01"},
                "ANTHROPIC_API_KEY")

    def _once(self, req: LLMRequest) -> RawAnswer:
        params = dict(model=self.model, system=req.system, max_tokens=req.max_output_tokens,
                      messages=[{"role": "user", "content": req.prompt}])
        if self._sends_temperature:
            params["temperature"] = req.temperature
        response = translate_sdk_errors(lambda: self._client.messages.create(**params))
        content = getattr(response, "content", None)
        if content is None:
            raise RetryableLLMError(f"malformed response: no content in the answer from {self.spec}")
        text = "".join(block.text for block in content if getattr(block, "type", None) == "text")
        stop = getattr(response, "stop_reason", None) or "unknown"
        return RawAnswer(
            text=text, usage=anthropic_usage(getattr(response, "usage", None), req.system + req.prompt, text),
            finish_reason=_STOP_REASONS.get(stop, stop), model=getattr(response, "model", None) or self.model,
        )

    def complete(self, req: LLMRequest) -> Completion:
        outcome = call_with_retries(lambda: self._once(req), self._policy, sleep=self._sleep)
        return finish_completion(outcome.value, retries=outcome.retries, seconds=outcome.seconds,
                                 prices=self._prices)
