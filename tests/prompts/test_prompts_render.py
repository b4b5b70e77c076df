"""The draft, refine and distill prompts contain what the stages need, and stay concise."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest

from evokernel.prompts import (AttemptSummary, ContextItem, build_distill_prompt, build_draft_prompt,
                               build_refine_prompt, extract_code)
from kernelbench_npu.spec import TaskSpec

SOURCE = ("import torch\n\nN = 4096\n\nclass Model(torch.nn.Module):\n    def forward(self, x):\n"
          "        return torch.relu(x)\n\ndef get_inputs():\n    return [torch.randn(N)]\n")
SCAFFOLD = "Compile C with `cc -O3 -fopenmp` and load it with ctypes.CDLL inside ModelNew.__init__."
TASK = TaskSpec(
    task_id="L1/019_relu", level=1, category="activation", name="relu", variant="cpu", dtype="float32",
    source=SOURCE, source_sha256="0" * 64, atol=1e-5, rtol=2e-5, original_shapes="{}", adapted_shapes="{}",
    lint_status="ok", lint_reason=None, reference_ms=0.8, problem_path=Path("/dev/null"),
)


@dataclass(frozen=True)
class Item:
    kind: str
    title: str
    body: str
    code: str | None
    q_value: float


TEMPLATE = Item("api_template", "ctypes + OpenMP skeleton", "How to build and load.", "class ModelNew: ...", 0.0)
EXPERIENCE = Item("experience", "Forgot extern C", "Symbol lookup failed without extern \"C\".", None, 0.42)
PRACTICE = Item("best_practice", "SIMD inner loop", "#pragma omp simd gave 1.8x.", None, 0.7)
START = Item("trace", "draft #3 (feasible)", "feasible, 0.9 ms, speedup 0.89x", "class ModelNew:  # start\n", 0.25)
CHILD = Item("trace", "refine #5 (failed correctness)", "max abs error 3.1 at index 17", "class ModelNew: # child", -1.0)


def test_the_draft_prompt_holds_task_scaffold_items_feedback_and_format():
    prompt = build_draft_prompt(TASK, SCAFFOLD, [TEMPLATE, EXPERIENCE], "compile failed: undefined symbol relu")
    for needle in (SOURCE.strip(), SCAFFOLD, "L1/019_relu", "activation", "[API template] ctypes + OpenMP skeleton",
                   "[experience] Forgot extern C (Q = +0.42)", "compile failed: undefined symbol relu",
                   "One ```python block defining `class ModelNew`"):
        assert needle in prompt.user, needle
    for needle in ("cpu", "atol 1e-05", "rtol 2e-05", "float32", "no PyTorch compute ops", "class ModelNew"):
        assert needle in prompt.system, needle


def test_the_first_draft_says_there_is_no_feedback_and_no_memory():
    prompt = build_draft_prompt(TASK, SCAFFOLD, [], None)
    assert "(none: this is the first attempt)" in prompt.user and "(no memory items yet)" in prompt.user


def test_the_refine_prompt_holds_start_point_children_best_and_items():
    prompt = build_refine_prompt(TASK, SCAFFOLD, START, [CHILD], [PRACTICE], 0.9, "feasible, 0.95 ms")
    for needle in (SOURCE.strip(), SCAFFOLD, "class ModelNew:  # start", "Q2 = +0.25", "draft #3 (feasible)",
                   "[generation trace] refine #5 (failed correctness) (Q = -1.00)", "max abs error 3.1",
                   "[best practice] SIMD inner loop", "0.9 ms; beat it", "feasible, 0.95 ms", "faster"):
        assert needle in prompt.user, needle


def test_the_refine_target_is_the_paired_speedup_not_a_latency_from_another_run():
    prompt = build_refine_prompt(TASK, SCAFFOLD, START, [], [], 0.9, None, best_speedup=1.84)
    assert ("runs 1.84x as fast as the reference: the median over rounds of reference time / its time, both "
            "timed in each round (0.9 ms in that run); beat that speedup.") in prompt.user
    assert "0.9 ms; beat it" not in prompt.user


def test_refine_without_children_or_a_best_latency():
    prompt = build_refine_prompt(TASK, SCAFFOLD, START, [], [], None, None)
    assert "you are the first refinement" in prompt.user and "No latency has been measured yet" in prompt.user


def test_the_prompt_itself_does_not_look_like_an_answer():
    """The answer-format lines mention ```python but must not form a block defining ModelNew."""
    prompt = build_draft_prompt(TASK, SCAFFOLD, [], None)
    assert extract_code(prompt.system).code is None


def test_long_items_and_feedback_are_capped_but_the_source_is_not():
    huge = Item("trace", "huge", "b" * 10_000, "c" * 20_000, 0.0)
    long_source = TaskSpec(**{**TASK.__dict__, "source": SOURCE + "#" * 30_000})
    prompt = build_draft_prompt(long_source, SCAFFOLD, [huge], "f" * 10_000)
    assert "#" * 30_000 in prompt.user
    assert "b" * 1501 not in prompt.user and "c" * 4001 not in prompt.user and "f" * 2001 not in prompt.user
    assert "more characters cut" in prompt.user
    assert len(prompt.user) < 30_000 + 12_000


def test_code_with_fences_inside_is_fenced_longer():
    sneaky = Item("trace", "sneaky", "", "x = '''\n```\n'''", 0.0)
    prompt = build_draft_prompt(TASK, SCAFFOLD, [sneaky], None)
    assert "````\nx = '''\n```\n'''\n````" in prompt.user


def test_the_distill_prompt_shows_the_best_kernel_the_draft_as_a_diff_and_failures_as_lessons():
    draft = "class ModelNew:\n    def forward(self, x):\n        return slow(x)\n" + "    # unchanged line\n" * 8
    best = draft.replace("slow(x)", "fast(x)")
    attempts = [
        AttemptSummary(1, "draft", False, "[compile] FAILED: x\nkernel.cpp:3:9: error: expected ';' before 'for'\n"
                       "    3 |         for (;;) {}", code="class ModelNew: # broken", failed_gate="compile",
                       passed_gates=("hack",)),
        AttemptSummary(2, "draft", False, "[correctness] FAILED: mismatch", code="class ModelNew: # wrong",
                       failed_gate="correctness", passed_gates=("hack", "compile")),
        AttemptSummary(3, "draft", True, "feasible", code=draft, latency_ms=2.0, speedup=0.4, ci_low=0.35, ci_high=0.45,
                       passed_gates=("hack", "compile", "correctness", "latency")),
        AttemptSummary(4, "refine", True, "feasible", code=best, latency_ms=0.5, speedup=1.6, ci_low=1.4, ci_high=1.8,
                       passed_gates=("hack", "compile", "correctness", "latency"), is_best=True),
    ]
    prompt = build_distill_prompt(TASK, attempts)
    assert "4 attempts, 2 feasible; the best kernel (#4) runs 1.6x the reference's speed." in prompt.user
    for needle in ("#1 draft: failed at the compile gate: kernel.cpp:3:9: error: expected ';' before 'for'",
                   "the line it points at: `for (;;) {}`", "fixed in iteration 2 (passed the compile gate) by:",
                   "-class ModelNew: # broken\n  +class ModelNew: # wrong", "#2 draft: failed at the correctness gate: mismatch",
                   "#4 refine: feasible, 1.6x the reference's speed (median over rounds, 95% CI 1.4-1.8), 0.5 ms "
                   "— the best kernel", "### The best kernel (#4)", "return fast(x)", "-        return slow(x)",
                   '"kind": "experience"'):
        assert needle in prompt.user, needle
    assert "```python\nclass ModelNew: # broken" not in prompt.user  # failures as lessons (and fixes), not code
    assert "```json" in prompt.system and "best_practice" in prompt.system


def test_the_lake_retrieved_item_satisfies_context_item():
    models = pytest.importorskip("memory_lake.models")
    fields = models.RetrievedItem.__dataclass_fields__
    assert {"kind", "title", "body", "code", "q_value"} <= set(fields)
    values = {name: (0 if name in ("rank",) else 0.5 if name in ("similarity", "q_value") else
                     False if name == "explored" else "x") for name in fields}
    item = models.RetrievedItem(**values)
    assert isinstance(item, ContextItem)
    assert "(Q = +0.50)" in build_draft_prompt(TASK, SCAFFOLD, [item], None).user


def test_templates_ship_as_package_data():
    from importlib.resources import files

    names = {p.name for p in files("evokernel.prompts").joinpath("templates").iterdir()}
    assert {"system.md", "draft.md", "refine.md", "distill.md", "distill_system.md"} <= names
