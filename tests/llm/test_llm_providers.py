"""The real openai and anthropic SDK clients against the fake API on 127.0.0.1."""

from __future__ import annotations

import pytest
from fake_server import API_KEY, Answer

from evokernel.config import Settings
from evokernel.llm import FatalLLMError, LLMRequest, RetryBudgetExhausted, make_llm

REQ = LLMRequest(system="be brief", prompt="write a kernel", task_id="L1/001", stage="draft",
                 max_output_tokens=256, temperature=0.2)


def _settings(max_retries: int = 3, budget_s: float = 60.0) -> Settings:
    return Settings(llm_max_retries=max_retries, llm_retry_budget_s=budget_s)


def test_a_scripted_answer_comes_back_with_tokens_and_cost(provider):
    make, api, sleep = provider
    api.push(Answer(text="```python\nclass ModelNew: pass\n```"))
    done = make().complete(REQ)
    assert done.text == "```python\nclass ModelNew: pass\n```"
    assert (done.finish_reason, done.retries, sleep.calls) == ("stop", 0, [])
    assert done.input_tokens in (11, 13) and done.output_tokens in (7, 5)
    assert done.cost_known and done.cost_usd > 0 and not done.tokens_estimated
    assert done.seconds > 0
    path, headers, body = api.requests[-1]
    assert path.endswith(("/chat/completions", "/messages"))
    assert "write a kernel" in str(body["messages"]) and "be brief" in str(body)


def test_the_output_limit_and_temperature_are_sent(provider):
    make, api, _ = provider
    make().complete(REQ)
    path, _, body = api.requests[-1]
    assert body.get("max_completion_tokens", body.get("max_tokens")) == 256
    if path.endswith("/chat/completions"):  # anthropic 2.x dropped temperature from messages.create
        assert body["temperature"] == 0.2


def test_a_truncated_answer_says_length(provider):
    make, api, _ = provider
    api.push(Answer(text="```python\nclass Mod", finish="length"))
    assert make().complete(REQ).finish_reason == "length"


@pytest.mark.parametrize("status", [429, 500, 503])
def test_a_transient_error_is_retried_then_succeeds(provider, status):
    make, api, sleep = provider
    api.push(Answer(status=status), Answer(text="second time"))
    done = make().complete(REQ)
    assert (done.text, done.retries) == ("second time", 1)
    assert len(sleep.calls) == 1 and 0 <= sleep.calls[0] <= 1.0  # full jitter below base 1 s
    assert len(api.requests) == 2  # the SDK's own retries are off: ours is the only policy


def test_retry_after_is_honoured(provider):
    make, api, sleep = provider
    api.push(Answer(status=429, headers=(("retry-after", "7"),)), Answer(text="ok"))
    assert make().complete(REQ).retries == 1
    assert sleep.calls == [7.0]


def test_a_slow_answer_beyond_the_client_timeout_is_a_retryable_timeout(provider):
    make, api, sleep = provider
    api.push(Answer(text="too late", delay_s=1.0), Answer(text="in time"))
    done = make(timeout_s=0.2).complete(REQ)
    assert (done.text, done.retries) == ("in time", 1)


def test_a_malformed_body_is_retried(provider):
    make, api, _ = provider
    api.push(Answer(raw=b"{this is not json"), Answer(raw=b'{"unexpected": true}'), Answer(text="fine"))
    done = make().complete(REQ)
    assert (done.text, done.retries) == ("fine", 2)


def test_authentication_failure_is_fatal_and_not_retried(provider, monkeypatch):
    make, api, sleep = provider
    monkeypatch.setenv("OPENAI_API_KEY", "wrong")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "wrong")
    with pytest.raises(FatalLLMError, match="authentication failed .HTTP 401") as info:
        make().complete(REQ)
    assert not info.value.retryable and info.value.status_code == 401
    assert len(api.requests) == 1 and sleep.calls == []


@pytest.mark.parametrize("status", [400, 404, 422])
def test_a_bad_request_is_fatal_and_not_retried(provider, status):
    make, api, sleep = provider
    api.push(Answer(status=status))
    with pytest.raises(FatalLLMError, match=f"bad request .HTTP {status}"):
        make().complete(REQ)
    assert len(api.requests) == 1


def test_retries_stop_at_max_retries(provider):
    make, api, sleep = provider
    api.push(*[Answer(status=500)] * 10)
    with pytest.raises(RetryBudgetExhausted, match="gave up after 2 retries") as info:
        make(max_retries=2).complete(REQ)
    assert info.value.retries == 2 and not info.value.retryable
    assert info.value.last_error.status_code == 500
    assert len(api.requests) == 3 and len(sleep.calls) == 2


def test_retries_stop_when_the_seconds_budget_would_be_exceeded(provider):
    make, api, sleep = provider
    api.push(*[Answer(status=429, headers=(("retry-after", "30"),))] * 5)
    with pytest.raises(RetryBudgetExhausted, match="budget 10s"):
        make(max_retries=5, budget_s=10.0).complete(REQ)
    assert len(api.requests) == 1 and sleep.calls == []


def test_connection_refused_is_retryable(monkeypatch, no_sleep):
    monkeypatch.setenv("OPENAI_API_KEY", API_KEY)
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")  # discard port: nothing listens
    llm = make_llm("openai:gpt-4o", _settings(max_retries=1), timeout_s=2, sleep=no_sleep)
    with pytest.raises(RetryBudgetExhausted, match="connection failed to http://127.0.0.1:9/v1/"):  # names the URL
        llm.complete(REQ)
    assert len(no_sleep.calls) == 1


def test_openai_compatible_uses_its_base_url_model_and_a_dummy_key(fake_api, monkeypatch, no_sleep):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.setenv("OPENAI_COMPATIBLE_API_KEY", API_KEY)
    llm = make_llm(f"openai-compatible:qwen2.5-coder:7b@{fake_api.url}/v1", _settings(), sleep=no_sleep)
    done = llm.complete(REQ)
    assert llm.model == "qwen2.5-coder:7b"
    _, headers, body = fake_api.requests[-1]
    assert body["model"] == "qwen2.5-coder:7b" and body["max_tokens"] == 256
    assert done.cost_usd == 0.0 and not done.cost_known  # no invented price for a local model
    monkeypatch.delenv("OPENAI_COMPATIBLE_API_KEY")
    keyless = make_llm(f"openai-compatible:m@{fake_api.url}/v1", _settings(), sleep=no_sleep)
    with pytest.raises(FatalLLMError):
        keyless.complete(REQ)
    assert fake_api.requests[-1][1]["authorization"] == "Bearer none"


def test_an_exhausted_quota_429_is_fatal_not_retried(provider):
    make, api, sleep = provider
    body = b'{"type": "error", "error": {"type": "insufficient_quota", "code": "insufficient_quota", "message": "quota"}}'
    api.push(Answer(status=429, raw=body))
    with pytest.raises(FatalLLMError, match="spending budget exhausted"):
        make().complete(REQ)
    assert sleep.calls == []
