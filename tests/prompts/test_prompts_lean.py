"""Lean prompts: each piece of text once per prompt, section budgets with the cut stated, sizes."""

from __future__ import annotations

from dataclasses import dataclass, replace

from test_prompts_render import SCAFFOLD, TASK  # tests/prompts is on sys.path (rootdir-less import)

from evokernel.prompts import build_draft_prompt, build_refine_prompt
from evokernel.prompts.budget import SECTION_BUDGETS
from verifier.backends.cpu import CpuBackend


@dataclass(frozen=True)
class Item:
    kind: str
    title: str
    body: str
    code: str | None
    q_value: float = 0.0


def _kernel(tag: str) -> str:
    return f"import torch\n\nclass ModelNew(torch.nn.Module):\n    def forward(self, x):  # kernel {tag}\n        return x\n"


def _section(prompt, name):
    return next(s for s in prompt.sections if s.name == name)


def test_the_seeded_api_templates_are_not_repeated_after_the_real_cpu_scaffold():
    backend = CpuBackend()
    scaffold = backend.scaffold(None)
    seeds = [Item("api_template", s.title, s.body, s.code) for s in backend.seed_items()]
    prompt = build_draft_prompt(TASK, scaffold, seeds, None)
    assert prompt.user.count("The fast loader: `from verifier.cpu_native import load_c`") == 1  # the scaffold once
    assert prompt.user.count('extern "C" void linear_relu(') == 1  # the worked example once
    assert prompt.user.count("already in the backend scaffold above; not repeated") == len(seeds) == 2
    memory = _section(prompt, "retrieved memory")
    assert (memory.items_shown, memory.items_collapsed, memory.items_left_out) == (0, 2, 0)


def test_an_item_from_an_older_edition_of_the_scaffold_still_counts_as_in_it_but_a_new_one_does_not():
    scaffold = CpuBackend().scaffold(None)
    older = scaffold.replace("about a second", "about two seconds")
    own = Item("experience", "mind the tail", "Handle n % 8 != 0 with a scalar tail loop.\n" + scaffold[:40], None)
    prompt = build_draft_prompt(TASK, scaffold, [Item("api_template", "scaffold v0", older, None), own], None)
    assert "scaffold v0 (Q = +0.00): already in the backend scaffold above" in prompt.user
    assert "Handle n % 8 != 0 with a scalar tail loop." in prompt.user


def test_refine_shows_each_kernel_once_and_refers_repeats_to_where_they_are():
    start = Item("trace", "start point (iteration 0)", "", _kernel("A"))
    children = [Item("trace", "iteration 2: feasible, 0.30 ms", "speedup 1.1x", _kernel("A")),
                Item("trace", "iteration 3: feasible, 0.20 ms", "speedup 1.6x", _kernel("B"))]
    context = [Item("trace", "other task, same code", "fine", _kernel("A")),
               Item("trace", "copy of B", "fine", _kernel("B")),
               Item("trace", "kernel C", "fine", _kernel("C")),
               Item("trace", "copy of C", "fine", _kernel("C") + "\n\n")]  # trailing blank lines do not count
    prompt = build_refine_prompt(TASK, SCAFFOLD, start, children, context, 0.3, None)
    for tag in "ABC":
        assert prompt.user.count(f"# kernel {tag}") == 1, tag
    assert "iteration 2: feasible, 0.30 ms (Q = +0.00): same code as the start point; not repeated." in prompt.user
    assert "copy of B (Q = +0.00): same code as earlier refinement 2; not repeated." in prompt.user
    assert "copy of C (Q = +0.00): same code as memory item 3; not repeated." in prompt.user
    assert (_section(prompt, "earlier refinements").items_collapsed, _section(prompt, "retrieved memory").items_collapsed) == (1, 3)


def test_repeated_text_without_code_and_the_last_feedback_appear_once():
    feedback = "correctness: max abs error 3.1 at index 17 (trial 2, normal inputs)"
    lesson = Item("experience", "tail handling", "Handle the tail of a vectorised loop separately.", None)
    child = Item("trace", "iteration 4: failed at correctness", feedback, _kernel("D"))
    prompt = build_refine_prompt(TASK, SCAFFOLD, Item("trace", "start", "", _kernel("A")), [child],
                                 [lesson, replace(lesson, title="tails again")], None, feedback)
    assert prompt.user.count("max abs error 3.1") == 1
    assert "(Same text as the verifier feedback on your previous attempt (below); not repeated.)" in prompt.user
    assert "tails again (Q = +0.00): same text as memory item 1; not repeated." in prompt.user
    assert prompt.user.count("# kernel D") == 1


def test_an_item_section_over_its_budget_leaves_whole_items_out_and_says_so():
    items = [Item("trace", f"kernel {i}", "", _kernel(str(i)) + "#" * 2_500) for i in range(6)]
    prompt = build_draft_prompt(TASK, SCAFFOLD, items, None)
    memory = _section(prompt, "retrieved memory")
    assert memory.items_shown == 3 and memory.items_left_out == 3 and memory.cut_chars > 7_500
    assert "[3 more item(s) left out (" in prompt.user and "its budget of 9,000 characters]" in prompt.user
    assert "# kernel 2" in prompt.user and "# kernel 3" not in prompt.user
    assert memory.chars <= SECTION_BUDGETS["retrieved memory"] + 200


def test_a_text_section_over_its_budget_is_cut_with_the_cut_stated_but_the_task_never_is():
    long_task = replace(TASK, source=TASK.source + "#" * 20_000)
    prompt = build_draft_prompt(long_task, "S" * 12_000, [], "F" * 5_000)
    scaffold, feedback = _section(prompt, "backend scaffold"), _section(prompt, "verifier feedback")
    assert (scaffold.cut_chars, feedback.cut_chars) == (3_000, 3_000)
    assert "[cut: 3,000 characters ≈ 750 tokens more; this section's budget is 9,000 characters]" in prompt.user
    assert "#" * 20_000 in prompt.user and _section(prompt, "reference program").cut_chars == 0


def test_the_section_sizes_add_up_to_the_whole_prompt():
    prompt = build_refine_prompt(TASK, SCAFFOLD, Item("trace", "start", "", _kernel("A")),
                                 [Item("trace", "child", "ok", _kernel("B"))], [], 0.5, "feasible")
    names = [s.name for s in prompt.sections]
    assert names == ["system", "reference program", "backend scaffold", "start point", "earlier refinements",
                     "retrieved memory", "verifier feedback", "instructions"]
    assert sum(s.chars for s in prompt.sections) == prompt.chars == len(prompt.system) + len(prompt.user)
    assert all(s.tokens == s.chars // 4 for s in prompt.sections)


def test_a_close_variant_of_shown_code_is_a_diff_against_it():
    start = Item("trace", "start", "", CpuBackend().seed_items()[1].code)
    changed = start.code.replace("acc > 0.0f ? acc : 0.0f", "acc > 0.0f ? acc : 0.01f * acc")
    child = Item("trace", "iteration 3: failed at correctness", "mismatch at index 0", changed)
    prompt = build_refine_prompt(TASK, SCAFFOLD, start, [child], [], None, None)
    block = prompt.user.split("iteration 3: failed at correctness")[1]
    assert "Code: the start point with these changes:\n```diff\n@@" in block
    assert "\n-            y[i * out_f + j] = acc > 0.0f ? acc : 0.0f;" in block
    assert "\n+            y[i * out_f + j] = acc > 0.0f ? acc : 0.01f * acc;" in block
    assert prompt.user.count("class ModelNew(nn.Module):") == 1  # the child's full code is not repeated
    unrelated = Item("trace", "other kernel", "", _kernel("Z"))
    assert "Code:" not in build_refine_prompt(TASK, SCAFFOLD, start, [unrelated], [], None, None).user


def test_refining_shows_the_scaffold_without_its_worked_example_and_drafting_with_it():
    scaffold = CpuBackend().scaffold(None)
    start = Item("trace", "start", "", _kernel("A"))
    refine = build_refine_prompt(TASK, scaffold, start, [], [], None, None).user
    draft = build_draft_prompt(TASK, scaffold, [], None).user
    assert "void linear_relu(" in draft and "void linear_relu(" not in refine
    assert "## Complete worked example\n(Left out when refining: the start point below is a complete kernel" in refine
    assert "## The fast loader" in refine and "## Gates and feedback" in refine


def test_a_run_of_passed_gates_is_one_line():
    feedback = "RESULT: failed at the latency gate\n[hack] ok\n[compile] ok\n[correctness] ok\n[latency] FAILED: 0.5x"
    prompt = build_draft_prompt(TASK, SCAFFOLD, [], feedback)
    assert "RESULT: failed at the latency gate\n[hack, compile, correctness] ok\n[latency] FAILED: 0.5x" in prompt.user
