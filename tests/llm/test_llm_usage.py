"""Tokens and cost come from the provider's reported usage; the len/4 estimate only where the
response carries none, flagged (real SDK clients against the fake API on 127.0.0.1), and the flag
reaches the lake's attempts and llm_calls rows and the report."""

from __future__ import annotations

from pathlib import Path

from fake_server import API_KEY, Answer

from evokernel.agent.distill import commit_distillation, distill_request
from evokernel.agent.runtime import agent_context, open_lake
from evokernel.agent.state import TaskState
from evokernel.agent.step import commit_step, prepare_step
from evokernel.config import Settings
from evokernel.llm import LLMRequest, make_llm
from evokernel.llm.pricing import load_price_table
from kernelbench_npu.spec import TaskSpec
from reports.metrics import compute_metrics
from verifier.backends.cpu import CpuBackend

REQ = LLMRequest(system="be brief", prompt="write a kernel", task_id="L1/001", stage="draft", max_output_tokens=256)
ANSWER = "x" * 400


def test_an_answer_without_usage_is_estimated_and_flagged(provider):
    make, api, _ = provider
    api.push(Answer(text=ANSWER, usage=None))
    llm = make()
    done = llm.complete(REQ)
    assert done.tokens_estimated and done.text == ANSWER
    assert (done.input_tokens, done.output_tokens) == (len("be brief" + "write a kernel") // 4, 100)
    assert done.cost_usd == load_price_table().cost(done.model, done.input_tokens, done.output_tokens).usd > 0


def test_a_partial_usage_is_used_where_present_and_the_rest_estimated(provider):
    make, api, _ = provider
    api.push(Answer(text=ANSWER, usage={"prompt_tokens": 321, "input_tokens": 321}))
    done = make().complete(REQ)
    assert (done.input_tokens, done.output_tokens, done.tokens_estimated) == (321, 100, True)


def test_anthropic_cache_reads_and_writes_count_as_input(fake_api, monkeypatch, no_sleep):
    monkeypatch.setenv("ANTHROPIC_API_KEY", API_KEY)
    monkeypatch.setenv("ANTHROPIC_BASE_URL", fake_api.url)
    fake_api.push(Answer(usage={"input_tokens": 3, "cache_creation_input_tokens": 200,
                                "cache_read_input_tokens": 4000, "output_tokens": 9}))
    done = make_llm("anthropic:claude-opus-4-5-20251101", Settings(), sleep=no_sleep).complete(REQ)
    assert (done.input_tokens, done.output_tokens, done.tokens_estimated) == (4203, 9, False)


def test_a_price_reported_in_the_usage_is_the_cost(fake_api, monkeypatch, no_sleep):
    monkeypatch.setenv("OPENAI_COMPATIBLE_API_KEY", API_KEY)
    fake_api.push(Answer(usage={"prompt_tokens": 1000, "completion_tokens": 50, "cost": 0.00042}))
    done = make_llm(f"openai-compatible:some/model@{fake_api.url}/v1", Settings(), sleep=no_sleep).complete(REQ)
    assert (done.cost_usd, done.cost_known, done.tokens_estimated) == (0.00042, True, False)
    assert (done.input_tokens, done.output_tokens) == (1000, 50)


TASK = TaskSpec(
    task_id="L1/019_relu", level=1, category="activation", name="relu", variant="cpu", dtype="float32",
    source="import torch\n\nclass Model(torch.nn.Module):\n    def forward(self, x):\n        return torch.relu(x)\n",
    source_sha256="0" * 64, atol=1e-5, rtol=2e-5, original_shapes="{}", adapted_shapes="{}",
    lint_status="ok", lint_reason=None, reference_ms=0.8, problem_path=Path("/dev/null"),
)


def test_the_flag_reaches_the_lake_and_the_report(tmp_path, fake_api, monkeypatch, no_sleep):
    """Two steps (usage reported, then none) and a distillation (none), committed for real."""
    monkeypatch.setenv("OPENAI_API_KEY", API_KEY)
    monkeypatch.setenv("OPENAI_BASE_URL", fake_api.url + "/v1")
    settings = Settings(lake=tmp_path / "lake")
    llm = make_llm("openai:gpt-4o", settings, sleep=no_sleep)
    lake = open_lake(tmp_path / "lake", CpuBackend())
    ctx = agent_context(settings, CpuBackend(), lake, llm.model, "c1")
    lake.append("campaigns", [{"campaign_id": "c1", "backend": "cpu", "model": llm.model, "method": "evokernel",
                               "status": "finished", "settings_json": "{}"}])
    fake_api.push(Answer(text="no kernel here"), Answer(text="still none", usage=None),
                  Answer(text='```json\n[{"kind": "experience", "title": "t", "body": "b"}]\n```', usage=None))
    state = TaskState(TASK.task_id)
    for _ in range(2):
        plan = prepare_step(ctx, TASK, state)
        state = state.after(commit_step(ctx, plan, llm.complete(plan.request), None), ctx.policy)
    commit_distillation(ctx, TASK, llm.complete(distill_request(ctx, TASK)))
    attempts = lake.query("SELECT input_tokens, output_tokens, tokens_estimated FROM attempts ORDER BY iteration")
    assert attempts.to_pylist()[0] == {"input_tokens": 11, "output_tokens": 7, "tokens_estimated": False}
    second = attempts.to_pylist()[1]
    assert second["tokens_estimated"] and second["output_tokens"] == len("still none") // 4
    call = lake.query("SELECT input_tokens, output_tokens, tokens_estimated FROM llm_calls").to_pylist()
    assert len(call) == 1 and call[0]["tokens_estimated"] and call[0]["input_tokens"] > 100  # the real prompt, /4
    con = lake.connect()
    try:
        row = compute_metrics(con).groups.to_dicts()[0]
    finally:
        con.close()
        lake.close()
    estimated = second["input_tokens"] + second["output_tokens"] + call[0]["input_tokens"] + call[0]["output_tokens"]
    assert (row["tokens"], row["estimated_tokens"]) == (11 + 7 + estimated, estimated)
