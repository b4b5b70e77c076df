"""Spec strings to providers, one-line configuration errors, prices, the retry policy, error mapping."""

from __future__ import annotations

import random

import pytest

from evokernel.config import Settings
from evokernel.llm import LLM, FatalLLMError, LLMConfigError, LLMRequest, RetryableLLMError, make_llm
from evokernel.llm.errors import RetryBudgetExhausted, classify_status
from evokernel.llm.pricing import PriceTableError, load_price_table
from evokernel.llm.registry import DEMO_SCRIPT
from evokernel.llm.retry import RetryPolicy, call_with_retries


@pytest.fixture(autouse=True)
def _no_keys(monkeypatch):
    for name in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "OPENAI_COMPATIBLE_API_KEY", "OPENAI_BASE_URL",
                 "ANTHROPIC_BASE_URL", "LLM_PRICES"):
        monkeypatch.delenv(name, raising=False)


@pytest.mark.parametrize("spec, message", [
    ("openai:gpt-4o", "openai:gpt-4o: environment variable OPENAI_API_KEY is not set"),
    ("anthropic:claude-opus-4-5", "anthropic:claude-opus-4-5: environment variable ANTHROPIC_API_KEY is not set"),
    ("gpt-4o", "gpt-4o: expected PREFIX:MODEL, prefixes: openai, anthropic, openai-compatible, scripted"),
    ("mistral:large", "mistral:large: unknown LLM provider 'mistral', known: openai"),
    ("openai-compatible:llama3", "openai-compatible:llama3: expected openai-compatible:MODEL@BASE_URL"),
    ("openai-compatible:@http://x", "expected openai-compatible:MODEL@BASE_URL"),
    ("scripted:", "scripted:: missing script file"),
])
def test_bad_specs_and_missing_keys_are_one_line_errors(spec, message):
    with pytest.raises(LLMConfigError) as info:
        make_llm(spec)
    assert message in str(info.value) and "\n" not in str(info.value)


def test_providers_are_made_from_specs(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "k")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "k")
    for spec, model in [("openai:gpt-4o-mini", "gpt-4o-mini"), ("anthropic:claude-haiku-4-5", "claude-haiku-4-5"),
                        ("openai-compatible:deepseek-chat@https://api.deepseek.com/v1", "deepseek-chat")]:
        llm = make_llm(spec)
        assert isinstance(llm, LLM) and (llm.spec, llm.model) == (spec, model)


def test_scripted_demo_resolves_to_the_bundled_file():
    assert DEMO_SCRIPT.parts[-3:] == ("evokernel", "demo", "script.json")
    if DEMO_SCRIPT.is_file():  # written by the demo's owner
        llm = make_llm("scripted:demo")
        assert (llm.spec, llm.model) == ("scripted:demo", "scripted:demo")
    else:
        with pytest.raises(LLMConfigError, match="scripted:demo: script file .*demo/script.json not found"):
            make_llm("scripted:demo")


def test_an_entry_point_provider_is_found_by_its_prefix(monkeypatch):
    from importlib import metadata

    made = []

    class _EP:
        name = "echo"

        def load(self):
            return lambda rest, settings: made.append((rest, settings.llm_max_retries)) or "provider"

    real = metadata.entry_points
    monkeypatch.setattr("evokernel.llm.registry.entry_points",
                        lambda group: [_EP()] if group == "evokernel.llm" else real(group=group))
    assert make_llm("echo:model-x", Settings(llm_max_retries=2)) == "provider"
    assert made == [("model-x", 2)]


def test_prices_known_snapshot_unknown_and_overridden(monkeypatch, tmp_path):
    table = load_price_table()
    assert table.cost("gpt-4o", 1_000_000, 1_000_000).usd == pytest.approx(12.5)
    assert table.cost("claude-opus-4-5-20251101", 2000, 1000).usd == pytest.approx(0.035)
    unknown = table.cost("claude-opus-4-6", 1000, 1000)  # a newer model is not priced by analogy
    assert (unknown.usd, unknown.known) == (0.0, False)
    monkeypatch.setenv("LLM_PRICES", '{"gpt-4o": [1, 2], "my-model": {"input": 0.5, "output": 1}}')
    table = load_price_table()
    assert table.cost("gpt-4o", 1_000_000, 0).usd == 1.0
    assert table.cost("my-model", 0, 2_000_000) .usd == 2.0
    price_file = tmp_path / "prices.json"
    price_file.write_text('{"local": [0, 0]}')
    monkeypatch.setenv("LLM_PRICES", str(price_file))
    assert load_price_table(builtin=False).cost("local", 5, 5).known


@pytest.mark.parametrize("value, message", [
    ("{nope", "LLM_PRICES: invalid JSON"),
    ('{"m": [1]}', "LLM_PRICES: m: expected [input, output]"),
    ('{"m": [-1, 2]}', "LLM_PRICES: m: prices must be non-negative"),
    ("/no/such/prices.json", "LLM_PRICES: cannot read price file /no/such/prices.json"),
])
def test_a_bad_price_override_is_a_one_line_error(monkeypatch, value, message):
    monkeypatch.setenv("LLM_PRICES", value)
    with pytest.raises(PriceTableError, match=message.replace("[", r"\[")):
        load_price_table()


def test_backoff_is_full_jitter_below_an_exponential_cap():
    policy, rng = RetryPolicy(max_retries=10, budget_s=1e9, base_s=1.0, cap_s=8.0), random.Random(0)
    for n, ceiling in enumerate([1, 2, 4, 8, 8, 8]):
        draws = [policy.backoff_s(n, rng) for _ in range(300)]
        assert 0 <= min(draws) and max(draws) <= ceiling and max(draws) > 0.8 * ceiling


def test_the_seconds_budget_counts_time_spent_in_calls():
    clock = [0.0]

    def slow_failure():
        clock[0] += 4.0  # each call takes 4 s
        raise RetryableLLMError("server error (HTTP 503): busy", status_code=503)

    sleeps: list[float] = []
    policy = RetryPolicy(max_retries=100, budget_s=10.0, base_s=0.001, cap_s=0.001)
    with pytest.raises(RetryBudgetExhausted) as info:
        call_with_retries(slow_failure, policy, sleep=sleeps.append, clock=lambda: clock[0])
    assert info.value.retries == 2 and len(sleeps) == 2  # 4 s, 8 s, then 12 s > 10 s budget


def test_a_bug_is_not_swallowed_by_the_retry_loop():
    with pytest.raises(ZeroDivisionError):
        call_with_retries(lambda: 1 / 0, RetryPolicy(), sleep=lambda s: None)


@pytest.mark.parametrize("status, retryable, words", [
    (429, True, "rate limited"), (500, True, "server error"), (529, True, "server error"),
    (408, True, "server error"), (401, False, "authentication"), (403, False, "authentication"),
    (400, False, "bad request"), (404, False, "bad request"), (422, False, "bad request"),
    (402, False, "spending budget exhausted"),
])
def test_status_codes_are_classified(status, retryable, words):
    error = classify_status(status, "x")
    assert error.retryable is retryable and words in str(error)
    assert isinstance(error, RetryableLLMError if retryable else FatalLLMError)


def test_insufficient_quota_429_is_fatal_not_a_rate_limit():
    assert not classify_status(429, "quota", code="insufficient_quota").retryable


def test_request_validation():
    with pytest.raises(ValueError, match="LLMRequest.stage: 'drafting'"):
        LLMRequest(system="s", prompt="p", task_id="t", stage="drafting")


def test_each_retry_is_logged_as_one_warning(caplog):
    calls = iter([RetryableLLMError("rate limited (HTTP 429): slow down"), "done"])

    def flaky():
        value = next(calls)
        if isinstance(value, Exception):
            raise value
        return value

    with caplog.at_level("WARNING", logger="evokernel.llm"):
        outcome = call_with_retries(flaky, RetryPolicy(), sleep=lambda s: None, rng=random.Random(1))
    assert (outcome.value, outcome.retries) == ("done", 1)
    assert len(caplog.records) == 1 and "(rate limited (HTTP 429): slow down); retry 1 in" in caplog.text
