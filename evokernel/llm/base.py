"""The provider-neutral LLM interface: one request in, one completion out.

Every provider (OpenAI, Anthropic, OpenAI-compatible servers, the offline scripted player)
implements :class:`LLM`. Retries happen inside ``complete`` (see :mod:`evokernel.llm.retry`),
so a returned :class:`Completion` says how many retries it took; a raised error is an
:class:`~evokernel.llm.errors.LLMError` whose ``retryable`` flag says what kind of failure it was.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Mapping, Protocol, runtime_checkable

STAGES = ("draft", "refine", "distill")


@dataclass(frozen=True)
class LLMRequest:
    """One generation request. ``stage`` is "draft", "refine" or "distill"."""

    system: str
    prompt: str
    task_id: str
    stage: str
    max_output_tokens: int = 8192
    temperature: float = 0.7
    metadata: Mapping = field(default_factory=lambda: MappingProxyType({}))

    def __post_init__(self) -> None:
        if self.stage not in STAGES:
            raise ValueError(f"LLMRequest.stage: {self.stage!r} is not one of {', '.join(STAGES)}")
        if self.max_output_tokens < 1:
            raise ValueError(f"LLMRequest.max_output_tokens: must be >= 1, got {self.max_output_tokens}")


@dataclass(frozen=True)
class Completion:
    """What came back, with its accounting.

    ``finish_reason`` is normalised: "stop" (natural end), "length" (hit the output-token limit),
    or the provider's own word for anything else. ``cost_known`` is False when the model is not
    in the price table (then ``cost_usd`` is 0.0, never a guess); ``tokens_estimated`` is True
    when the server reported no usage and the counts are the len(text)//4 estimate.
    """

    text: str
    input_tokens: int
    output_tokens: int
    cost_usd: float
    seconds: float
    model: str
    finish_reason: str
    retries: int
    cost_known: bool = True
    tokens_estimated: bool = False

    @property
    def truncated(self) -> bool:
        return self.finish_reason == "length"


@runtime_checkable
class LLM(Protocol):
    """A language model behind a spec string such as ``openai:gpt-4o``."""

    spec: str
    model: str

    def complete(self, req: LLMRequest) -> Completion: ...


def estimate_tokens(text: str) -> int:
    """The deterministic token estimate used where no tokenizer count exists (about 4 chars/token)."""
    return len(text) // 4
