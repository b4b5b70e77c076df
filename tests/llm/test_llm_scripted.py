"""The offline scripted provider: playback order, fallback, repetition, simulated errors, accounting."""

from __future__ import annotations

import json
import threading

import pytest

from evokernel.config import Settings
from evokernel.llm import FatalLLMError, LLMConfigError, LLMRequest, RetryBudgetExhausted, make_llm
from evokernel.llm.scripted import ScriptedLLM, ScriptError


def _req(task_id="L1/relu", stage="draft", **kw) -> LLMRequest:
    return LLMRequest(system="sys " * 10, prompt="prompt " * 20, task_id=task_id, stage=stage, **kw)


def _script(tmp_path, responses, label="test script") -> str:
    path = tmp_path / "script.json"
    path.write_text(json.dumps({"label": label, "responses": responses}))
    return str(path)


def test_plays_the_list_in_order_then_repeats_the_last(tmp_path, no_sleep):
    llm = make_llm("scripted:" + _script(tmp_path, {"L1/relu": {"draft": ["a", "b", "c"]}}), sleep=no_sleep)
    assert [llm.complete(_req()).text for _ in range(5)] == ["a", "b", "c", "c", "c"]


def test_task_specific_list_first_then_the_star_fallback(tmp_path, no_sleep):
    path = _script(tmp_path, {"L1/relu": {"draft": ["relu draft"]},
                              "*": {"draft": ["generic draft"], "refine": ["generic refine"]}})
    llm = make_llm("scripted:" + path, sleep=no_sleep)
    assert llm.complete(_req()).text == "relu draft"
    assert llm.complete(_req(task_id="L2/other")).text == "generic draft"
    assert llm.complete(_req(stage="refine")).text == "generic refine"  # no relu refine list
    with pytest.raises(FatalLLMError, match="no scripted 'distill' responses"):
        llm.complete(_req(stage="distill"))


def test_counters_are_per_task_and_stage(tmp_path, no_sleep):
    llm = make_llm("scripted:" + _script(tmp_path, {"*": {"draft": ["1", "2"], "refine": ["r1", "r2"]}}),
                   sleep=no_sleep)
    texts = [llm.complete(_req(task_id=t, stage=s)).text
             for t, s in [("a", "draft"), ("b", "draft"), ("a", "refine"), ("a", "draft")]]
    assert texts == ["1", "1", "r1", "2"]


def test_call_index_in_metadata_replays_a_slot_deterministically(tmp_path, no_sleep):
    llm = make_llm("scripted:" + _script(tmp_path, {"*": {"draft": ["a", "b", "c"]}}), sleep=no_sleep)
    assert llm.complete(_req(metadata={"call_index": 1})).text == "b"
    assert llm.complete(_req(metadata={"call_index": 1})).text == "b"
    assert llm.complete(_req(metadata={"call_index": 9})).text == "c"
    assert llm.complete(_req()).text == "a"  # the counter is untouched by indexed calls


def test_tokens_are_a_deterministic_estimate_and_cost_is_zero(tmp_path, no_sleep):
    llm = make_llm("scripted:" + _script(tmp_path, {"*": {"draft": ["x" * 400]}}), sleep=no_sleep)
    req = _req()
    done = llm.complete(req)
    assert done.input_tokens == len(req.system + req.prompt) // 4
    assert done.output_tokens == 100
    assert (done.cost_usd, done.cost_known, done.tokens_estimated, done.finish_reason) == (0.0, True, True, "stop")
    assert done.model == "scripted:script"


def test_a_text_beyond_the_output_limit_is_cut_with_finish_reason_length(tmp_path, no_sleep):
    llm = make_llm("scripted:" + _script(tmp_path, {"*": {"draft": ["y" * 2000]}}), sleep=no_sleep)
    done = llm.complete(_req(max_output_tokens=100))
    assert (len(done.text), done.output_tokens, done.finish_reason) == (400, 100, "length")


def test_an_explicit_finish_reason_is_played(tmp_path, no_sleep):
    llm = make_llm("scripted:" + _script(tmp_path, {"*": {"draft": [{"text": "```python\nclass",
                                                                     "finish_reason": "length"}]}}),
                   sleep=no_sleep)
    assert llm.complete(_req()).finish_reason == "length"


def test_simulated_retryable_errors_fire_once_and_go_through_the_retry_policy(tmp_path, no_sleep):
    path = _script(tmp_path, {"*": {"draft": [{"error": "rate_limit"}, {"error": "server_error"}, "ok", "next"]}})
    llm = make_llm("scripted:" + path, sleep=no_sleep)
    first = llm.complete(_req())
    assert (first.text, first.retries, len(no_sleep.calls)) == ("ok", 2, 2)
    second = llm.complete(_req())
    assert (second.text, second.retries) == ("next", 0)


def test_simulated_errors_beyond_the_retry_budget_exhaust_it(tmp_path, no_sleep):
    path = _script(tmp_path, {"*": {"draft": [{"error": "timeout"}] * 3 + ["ok"]}})
    llm = make_llm("scripted:" + path, Settings(llm_max_retries=1), sleep=no_sleep)
    with pytest.raises(RetryBudgetExhausted, match="timeout"):
        llm.complete(_req())
    assert llm.complete(_req()).text == "ok"  # the errors fired once each; the script goes on


def test_a_simulated_fatal_error_is_not_retried(tmp_path, no_sleep):
    llm = make_llm("scripted:" + _script(tmp_path, {"*": {"draft": [{"error": "auth"}, "ok"]}}), sleep=no_sleep)
    with pytest.raises(FatalLLMError, match="401") as info:
        llm.complete(_req())
    assert not isinstance(info.value, RetryBudgetExhausted) and no_sleep.calls == []


def test_concurrent_calls_each_get_a_distinct_slot(tmp_path, no_sleep):
    llm = make_llm("scripted:" + _script(tmp_path, {"*": {"draft": [str(i) for i in range(40)]}}), sleep=no_sleep)
    results: list[str] = []
    threads = [threading.Thread(target=lambda: results.append(llm.complete(_req()).text)) for _ in range(40)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(results, key=int) == [str(i) for i in range(40)]


@pytest.mark.parametrize("responses, field", [
    ({"*": {"draft": []}}, "responses.*.draft: expected a non-empty list"),
    ({"*": {"drafting": ["a"]}}, "responses.*.drafting: unknown stage"),
    ({"*": {"draft": [{"error": "meteor"}, "a"]}}, "responses.*.draft[0].error: 'meteor' is not one of"),
    ({"*": {"draft": ["a", {"error": "timeout"}]}}, "error entries must be followed by a text"),
    ({"*": {"draft": [42]}}, "responses.*.draft[0]: expected a string"),
    ({"*": ["a"]}, "responses.*: expected an object keyed by stage"),
])
def test_a_malformed_script_names_the_file_and_field(tmp_path, responses, field):
    path = _script(tmp_path, responses)
    with pytest.raises(ScriptError) as info:
        ScriptedLLM(path)
    assert str(info.value).startswith(path) and field in str(info.value)
    with pytest.raises(LLMConfigError, match=f"^scripted:{path}: {path}"):
        make_llm("scripted:" + path)


def test_invalid_json_and_missing_file(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text("{nope")
    with pytest.raises(ScriptError, match=f"{bad}: invalid JSON"):
        ScriptedLLM(bad)
    with pytest.raises(LLMConfigError, match="script file .*missing.json not found"):
        make_llm(f"scripted:{tmp_path / 'missing.json'}")
