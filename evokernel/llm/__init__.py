"""LLM providers behind one interface (:mod:`evokernel.llm.base`), chosen by spec string
(:func:`evokernel.llm.registry.make_llm`), with one retry policy and per-call token/cost accounting.

Importing this package is cheap: the openai/anthropic SDKs are imported only when a provider
that needs them is made.
"""

from evokernel.llm.base import LLM, Completion, LLMRequest
from evokernel.llm.errors import FatalLLMError, LLMError, RetryableLLMError, RetryBudgetExhausted
from evokernel.llm.registry import LLMConfigError, make_llm

__all__ = [
    "LLM", "Completion", "LLMRequest", "LLMError", "RetryableLLMError", "FatalLLMError",
    "RetryBudgetExhausted", "LLMConfigError", "make_llm",
]
