"""Providers by spec string: ``make_llm("openai:gpt-4o")``.

Built-in prefixes:

- ``openai:MODEL`` — key from OPENAI_API_KEY; OPENAI_BASE_URL is honoured.
- ``anthropic:MODEL`` — key from ANTHROPIC_API_KEY; ANTHROPIC_BASE_URL is honoured.
- ``openai-compatible:MODEL@BASE_URL`` — vLLM, Ollama, llama.cpp server, DeepSeek...; key from
  OPENAI_COMPATIBLE_API_KEY, else OPENAI_API_KEY, else the dummy "none" (local servers need none).
- ``scripted:FILE`` — offline player (:mod:`evokernel.llm.scripted`); ``scripted:demo`` is the
  bundled demo script.

Other prefixes come from the entry-point group ``evokernel.llm``: the entry point's name is the
prefix and it loads a factory ``factory(rest: str, settings: Settings) -> LLM``. Retries follow
Settings ``llm_max_retries`` / ``llm_retry_budget_s``. Bad specs and missing keys raise
:class:`LLMConfigError` with one line naming the spec and the variable.
"""

from __future__ import annotations

import os
import time
from importlib.metadata import entry_points
from pathlib import Path
from typing import Callable

from evokernel.config import Settings
from evokernel.llm.base import LLM
from evokernel.llm.pricing import load_price_table
from evokernel.llm.retry import RetryPolicy

ENTRY_POINT_GROUP = "evokernel.llm"
DEMO_SCRIPT = Path(__file__).resolve().parents[1] / "demo" / "script.json"
DEFAULT_TIMEOUT_S = 600.0
BUILTIN_PREFIXES = ("openai", "anthropic", "openai-compatible", "scripted")


class LLMConfigError(ValueError):
    """A provider spec cannot be turned into a provider (one line: the spec and what is wrong)."""


def _require_env(spec: str, name: str) -> str:
    value = os.environ.get(name, "").strip()
    if not value:
        raise LLMConfigError(f"{spec}: environment variable {name} is not set (the API key)")
    return value


def _require_model(spec: str, model: str) -> str:
    if not model.strip():
        raise LLMConfigError(f"{spec}: missing model name after the prefix")
    return model.strip()


def _openai(spec: str, rest: str, policy: RetryPolicy, timeout_s: float, sleep) -> LLM:
    from evokernel.llm.openai_provider import OpenAIProvider

    return OpenAIProvider(
        spec=spec, model=_require_model(spec, rest), api_key=_require_env(spec, "OPENAI_API_KEY"),
        base_url=os.environ.get("OPENAI_BASE_URL") or None, prices=load_price_table(),
        policy=policy, timeout_s=timeout_s, sleep=sleep,
    )


def _openai_compatible(spec: str, rest: str, policy: RetryPolicy, timeout_s: float, sleep) -> LLM:
    from evokernel.llm.openai_provider import OpenAIProvider

    model, sep, base_url = rest.rpartition("@")
    if not sep or not model.strip() or not base_url.startswith(("http://", "https://")):
        raise LLMConfigError(f"{spec}: expected openai-compatible:MODEL@BASE_URL "
                             "(e.g. openai-compatible:qwen2.5-coder@http://localhost:8000/v1)")
    key = (os.environ.get("OPENAI_COMPATIBLE_API_KEY") or os.environ.get("OPENAI_API_KEY") or "none").strip()
    return OpenAIProvider(
        spec=spec, model=model.strip(), api_key=key, base_url=base_url, compatible=True,
        prices=load_price_table(builtin=False), policy=policy, timeout_s=timeout_s, sleep=sleep,
    )


def _anthropic(spec: str, rest: str, policy: RetryPolicy, timeout_s: float, sleep) -> LLM:
    from evokernel.llm.anthropic_provider import AnthropicProvider

    return AnthropicProvider(
        spec=spec, model=_require_model(spec, rest), api_key=_require_env(spec, "ANTHROPIC_API_KEY"),
        base_url=os.environ.get("ANTHROPIC_BASE_URL") or None, prices=load_price_table(),
        policy=policy, timeout_s=timeout_s, sleep=sleep,
    )


def resolve_script_path(spec: str, rest: str) -> Path:
    """``demo`` -> the bundled demo script; anything else is a file path."""
    if not rest:
        raise LLMConfigError(f"{spec}: missing script file after 'scripted:'")
    path = DEMO_SCRIPT if rest == "demo" else Path(rest).expanduser()
    if not path.is_file():
        raise LLMConfigError(f"{spec}: script file {path} not found")
    return path


def _scripted(spec: str, rest: str, policy: RetryPolicy, timeout_s: float, sleep) -> LLM:
    from evokernel.llm.scripted import ScriptedLLM, ScriptError

    path = resolve_script_path(spec, rest)
    model = spec if rest == "demo" else f"scripted:{path.stem}"
    try:
        return ScriptedLLM(path, spec=spec, model=model, policy=policy, sleep=sleep)
    except ScriptError as exc:
        raise LLMConfigError(f"{spec}: {exc}") from None


_BUILTINS: dict[str, Callable[..., LLM]] = {
    "openai": _openai, "anthropic": _anthropic, "openai-compatible": _openai_compatible,
    "scripted": _scripted,
}


def _from_entry_point(spec: str, prefix: str, rest: str, settings: Settings) -> LLM | None:
    for ep in entry_points(group=ENTRY_POINT_GROUP):
        if ep.name == prefix:
            return ep.load()(rest, settings)
    return None


def known_prefixes() -> tuple[str, ...]:
    plugins = tuple(sorted(ep.name for ep in entry_points(group=ENTRY_POINT_GROUP)))
    return BUILTIN_PREFIXES + tuple(p for p in plugins if p not in BUILTIN_PREFIXES)


def make_llm(spec: str, settings: Settings | None = None, *, timeout_s: float | None = None,
             sleep: Callable[[float], None] = time.sleep) -> LLM:
    """The provider for ``spec``; raises LLMConfigError (one line) for a bad spec or missing key.

    ``timeout_s`` is the per-request timeout (default 600 s); ``sleep`` is the retry sleep
    (tests inject a fake).
    """
    settings = settings or Settings()
    prefix, sep, rest = spec.partition(":")
    if not sep:
        raise LLMConfigError(f"{spec}: expected PREFIX:MODEL, prefixes: {', '.join(known_prefixes())}")
    policy = RetryPolicy.from_settings(settings)
    timeout = timeout_s if timeout_s is not None else DEFAULT_TIMEOUT_S
    if prefix in _BUILTINS:
        return _BUILTINS[prefix](spec, rest, policy, timeout, sleep)
    plugin = _from_entry_point(spec, prefix, rest, settings)
    if plugin is None:
        raise LLMConfigError(f"{spec}: unknown LLM provider {prefix!r}, known: {', '.join(known_prefixes())}")
    return plugin
