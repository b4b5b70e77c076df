"""The accounting of one answer: token counts and cost from the provider's reported usage whenever
the response carries it; the len(text)//4 estimate only where it does not, flagged as estimated.

- OpenAI Chat Completions (and compatible servers): ``usage.prompt_tokens`` (cached tokens
  included) and ``usage.completion_tokens`` (reasoning tokens included). A gateway that reports
  the call's price as a number in ``usage.cost`` (USD; OpenRouter does) has that taken as the cost.
- Anthropic Messages: ``usage.input_tokens`` is the uncached part of the input, so the input is it
  plus ``cache_creation_input_tokens`` and ``cache_read_input_tokens``; ``usage.output_tokens``.

A count missing from a partial usage object is estimated on its own; the answer is then flagged.
"""

from __future__ import annotations

from dataclasses import dataclass

from evokernel.llm.base import Completion, estimate_tokens
from evokernel.llm.pricing import PriceTable


@dataclass(frozen=True)
class Usage:
    input_tokens: int
    output_tokens: int
    estimated: bool  # at least one count is the len//4 estimate (no usage reported for it)
    reported_cost_usd: float | None = None  # the provider's own price of the call, when it sends one


@dataclass(frozen=True)
class RawAnswer:
    """One successful API answer before accounting (every provider's)."""

    text: str
    usage: Usage
    finish_reason: str
    model: str


def _count(usage: object, *names: str) -> int | None:
    """The sum of the named integer fields of ``usage``; None if the first (main) one is absent."""
    values = [getattr(usage, name, None) for name in names]
    if not isinstance(values[0], int) or isinstance(values[0], bool):
        return None
    return sum(v for v in values if isinstance(v, int) and not isinstance(v, bool))


def _usage(input_count: int | None, output_count: int | None, prompt: str, text: str,
           reported_cost: object = None) -> Usage:
    cost = float(reported_cost) if isinstance(reported_cost, (int, float)) and not isinstance(reported_cost, bool) \
        and reported_cost >= 0 else None
    return Usage(input_tokens=estimate_tokens(prompt) if input_count is None else input_count,
                 output_tokens=estimate_tokens(text) if output_count is None else output_count,
                 estimated=input_count is None or output_count is None, reported_cost_usd=cost)


def openai_usage(usage: object | None, prompt: str, text: str) -> Usage:
    """From a Chat Completions ``usage`` object (None when the server sent none)."""
    return _usage(_count(usage, "prompt_tokens"), _count(usage, "completion_tokens"), prompt, text,
                  getattr(usage, "cost", None))


def anthropic_usage(usage: object | None, prompt: str, text: str) -> Usage:
    """From a Messages ``usage`` object (None when the server sent none)."""
    inputs = _count(usage, "input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens")
    return _usage(inputs, _count(usage, "output_tokens"), prompt, text)


def finish_completion(raw: RawAnswer, *, retries: int, seconds: float, prices: PriceTable) -> Completion:
    """The completion with its cost: the provider's reported price, else the price table's."""
    usage = raw.usage
    if usage.reported_cost_usd is not None:
        usd, known = round(usage.reported_cost_usd, 8), True
    else:
        cost = prices.cost(raw.model, usage.input_tokens, usage.output_tokens)
        usd, known = cost.usd, cost.known
    return Completion(
        text=raw.text, input_tokens=usage.input_tokens, output_tokens=usage.output_tokens, cost_usd=usd,
        seconds=seconds, model=raw.model, finish_reason=raw.finish_reason, retries=retries, cost_known=known,
        tokens_estimated=usage.estimated,
    )
