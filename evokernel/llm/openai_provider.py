"""``openai:MODEL`` and ``openai-compatible:MODEL@BASE_URL`` through the official openai SDK.

Chat Completions API (served by OpenAI and by vLLM, Ollama, llama.cpp server, DeepSeek...).
Tokens and cost come from the answer's usage (see :mod:`evokernel.llm.usage`).
The SDK's own retries are off; :mod:`evokernel.llm.retry` is the only policy. For OpenAI
itself the output limit is sent as ``max_completion_tokens`` and reasoning models (o-series,
gpt-5) get no temperature (they reject one); compatible servers get the classic ``max_tokens``.
"""

from __future__ import annotations

import time
from typing import Callable

from evokernel.llm.base import Completion, LLMRequest
from evokernel.llm.errors import RetryableLLMError, translate_sdk_errors
from evokernel.llm.pricing import PriceTable
from evokernel.llm.retry import RetryPolicy, call_with_retries
from evokernel.llm.usage import RawAnswer, finish_completion, openai_usage

_REASONING_PREFIXES = ("o1", "o3", "o4", "gpt-5")


class OpenAIProvider:
    def __init__(self, *, spec: str, model: str, api_key: str, base_url: str | None,
                 prices: PriceTable, policy: RetryPolicy = RetryPolicy(), timeout_s: float = 600.0,
                 compatible: bool = False, sleep: Callable[[float], None] = time.sleep) -> None:
        import openai  # heavy import, only when this provider is used

        self.spec, self.model = spec, model
        self._compatible, self._prices, self._policy, self._sleep = compatible, prices, policy, sleep
        self._client = openai.OpenAI(api_key=api_key, base_url=base_url, timeout=timeout_s, max_retries=0)
        self._key_variable = "OPENAI_COMPATIBLE_API_KEY or OPENAI_API_KEY" if compatible else "OPENAI_API_KEY"

    def probe_target(self) -> tuple[str, dict[str, str], str]:
        """What evokernel.llm.reach GETs before a campaign: the model list, with the key; the key's variable."""
        base = str(self._client.base_url).rstrip("/")
        return f"{base}/models", {"Authorization": f"Bearer {self._client.api_key}"}, self._key_variable

    def _params(self, req: LLMRequest) -> dict:
        params: dict = {
            "model": self.model,
            "messages": [{"role": "system", "content": req.system}, {"role": "user", "content": req.prompt}],
        }
        if self._compatible:
            params.update(max_tokens=req.max_output_tokens, temperature=req.temperature)
        else:
            params["max_completion_tokens"] = req.max_output_tokens
            if not self.model.startswith(_REASONING_PREFIXES):
                params["temperature"] = req.temperature
        return params

    def _once(self, req: LLMRequest) -> RawAnswer:
        params = self._params(req)
        response = translate_sdk_errors(lambda: self._client.chat.completions.create(**params))
        choices = getattr(response, "choices", None)
        if not choices or getattr(choices[0], "message", None) is None:
            raise RetryableLLMError(f"malformed response: no choices in the answer from {self.spec}")
        text = choices[0].message.content or ""
        return RawAnswer(
            text=text, usage=openai_usage(getattr(response, "usage", None), req.system + req.prompt, text),
            finish_reason=choices[0].finish_reason or "unknown",
            model=getattr(response, "model", None) or self.model,
        )

    def complete(self, req: LLMRequest) -> Completion:
        outcome = call_with_retries(lambda: self._once(req), self._policy, sleep=self._sleep)
        return finish_completion(outcome.value, retries=outcome.retries, seconds=outcome.seconds,
                                 prices=self._prices)
