"""Retrieval's relevance rules (what refining asks for): optimisation traces only, a relevance floor
relative to the best candidate, the task's category first, other categories only above a Q bound."""

from __future__ import annotations

import pytest

from memory_lake import Lake, NewItem, RetrievalRequest, ValueUpdate
from memory_lake.retrieval import Candidate, ItemFacts, blended_scores, choose, eligible

TASK = "gelu activation kernel: tanh approximation, vectorise the elementwise loop with simd"


def req(**overrides) -> RetrievalRequest:
    base = dict(attempt_id="a", task_id="L1/gelu", task_text=TASK, category="activation", backend="cpu", stage=2,
                n=5, lam=3, epsilon=0.0, seed=3, include_templates=False, kinds=("trace", "best_practice"))
    return RetrievalRequest(**{**base, **overrides})


def trace(item_id: str, category: str, text: str, feasible: bool, speedup: float | None = None) -> NewItem:
    return NewItem(kind="trace", backend="cpu", task_id=f"task-{item_id}", category=category, item_id=item_id,
                   title=f"{item_id}: {text}", body=text, code=f"// {text}\n", feasible=feasible, speedup=speedup)


@pytest.fixture(scope="module")
def mixed_lake(lake_factory):
    lake = Lake.create(lake_factory.new(), "cpu")
    lake.add_items([
        trace("gelu-fast", "activation", "gelu activation tanh vectorise simd elementwise loop", True, 2.0),
        trace("gelu-failed", "activation", "gelu activation tanh vectorise simd elementwise loop", False),
        trace("gelu-untimed", "activation", "gelu activation tanh vectorise simd loop", True, None),
        trace("relu-fast", "activation", "relu activation vectorise simd elementwise", True, 1.5),
        trace("l1norm-failed", "normalization", "l1 norm reduction simd vectorise loop", False),
        trace("softmax-fast", "normalization", "softmax rows vectorise simd loop exp", True, 1.8),
        trace("matmul-fast", "matmul", "matmul tiles vectorise simd loop", True, 3.0),
        NewItem(kind="best_practice", backend="cpu", category="activation", item_id="bp-act",
                title="activations", body="elementwise activation: vectorise with simd, one pass, tanh polynomial"),
        NewItem(kind="best_practice", backend="cpu", category="pooling", item_id="bp-unrelated",
                title="pooling windows", body="pooling: window strides and padding borders"),
    ])
    lake.update_values([ValueUpdate("matmul-fast", 2, 1.0, 0.5), ValueUpdate("softmax-fast", 2, -1.0, 0.5)])
    yield lake
    lake.close()


def ids(items) -> list[str]:
    return [i.item_id for i in items]


def test_without_rules_failed_and_unrelated_traces_take_slots(mixed_lake):
    got = ids(mixed_lake.retrieve(req(), record=False))
    assert {"gelu-failed", "gelu-untimed"} <= set(got)  # the noise the rules remove


def test_refining_rules_keep_what_can_make_the_kernel_faster(mixed_lake):
    got = mixed_lake.retrieve(req(feasible_traces_only=True, category_first=True, other_categories_min_q=0.0,
                                  overfetch=4), record=False)
    names = ids(got)
    assert not {"gelu-failed", "gelu-untimed", "l1norm-failed"} & set(names)  # only optimisation traces
    assert "softmax-fast" not in names  # another category with Q2 below 0
    same = [n for n in names if n in ("gelu-fast", "relu-fast", "bp-act")]
    assert names[: len(same)] == same and "matmul-fast" in names  # the task's category first, then Q2 > 0
    assert [r.rank for r in got] == list(range(len(got)))


def test_the_relevance_floor_gives_fewer_items_rather_than_noise(mixed_lake):
    loose = ids(mixed_lake.retrieve(req(feasible_traces_only=True, overfetch=4), record=False))
    strict = ids(mixed_lake.retrieve(req(feasible_traces_only=True, overfetch=4, min_relevance=0.6), record=False))
    assert "bp-unrelated" in loose and "bp-unrelated" not in strict
    assert 0 < len(strict) < len(loose) and set(strict) <= set(loose)


def test_eligible_and_choose_on_plain_candidates():
    facts = {"a": ItemFacts("trace", "act", True, 1.2), "b": ItemFacts("trace", "act", False, None),
             "c": ItemFacts("best_practice", "norm", None, None), "d": ItemFacts("trace", "norm", True, 2.0),
             "e": ItemFacts("experience", "act", None, None)}
    pool = [Candidate("b", 10.0, 0.9), Candidate("a", 8.0, 0.1), Candidate("c", 6.0, 0.5), Candidate("d", 2.0, -0.2),
            Candidate("e", 1.0, 0.0)]
    rules = RetrievalRequest("x", "t", "q", "act", "cpu", 2, n=3, feasible_traces_only=True, min_relevance=0.2,
                             category_first=True, other_categories_min_q=0.0)
    kept = eligible(pool, rules, facts)
    # b: a failed trace; d: another category below the floor (2 < 0.2 * 8, the best admitted); e: of the
    # task's category, relevant by it whatever its text overlap
    assert [c.item_id for c in kept] == ["a", "c", "e"] and [c.category for c in kept] == ["act", "norm", "act"]
    picked = choose(kept, rules)
    assert [c.candidate.item_id for c in picked] == ["a", "e", "c"]  # the task's category first despite lower Q
    spare = choose([Candidate(i, 1.0, q) for i, q in (("p", 0.3), ("q", 0.2), ("r", 0.1))],
                   RetrievalRequest("x", "t", "q", None, "cpu", 1, n=1, epsilon=0.0, spare=1))
    assert [c.candidate.item_id for c in spare] == ["p", "q"]


def test_bad_rule_values_are_one_line_errors():
    from memory_lake import LakeError

    with pytest.raises(LakeError, match="min_relevance"):
        RetrievalRequest("x", "t", "q", None, "cpu", 2, min_relevance=1.5)


def test_a_stage_prior_is_the_q_of_items_never_updated(lake_factory):
    lake = Lake.create(lake_factory.new(), "cpu")  # q_init 0
    try:
        lake.add_items([NewItem(kind="experience", backend="cpu", category="activation", item_id=i, title=i,
                                body=f"gelu activation tip {i}") for i in ("tried", "untried")])
        rows = lake.update_values([ValueUpdate("tried", 1, 1.0, 0.1, prior=-1.0)])
        assert rows == {"tried": pytest.approx(-0.8)}  # from the prior, not from q_init
        first = lake.query("SELECT q_before FROM value_updates").to_pylist()
        assert first == [{"q_before": -1.0}]
        assert lake.current_q(["tried", "untried"], 1, -1.0) == {"tried": pytest.approx(-0.8), "untried": -1.0}
        assert lake.current_q(["untried"], 1) == {"untried": 0.0}  # without a prior: the lake's q_init
        got = lake.retrieve(req(stage=1, kinds=None, n=2, lam=1, q_prior=-1.0), record=False)
        assert [(r.item_id, r.q_value) for r in got] == [("tried", pytest.approx(-0.8)), ("untried", -1.0)]
    finally:
        lake.close()


def test_untried_lessons_of_other_categories_reach_refining(lake_factory):
    """Issue 35: behind "other categories only with Q2 > 0" no other category's item was ever shown, so
    none ever earned a Q2. Now an untried one competes by its similarity, and Q2 then decides."""
    lake = Lake.create(lake_factory.new(), "cpu")
    try:
        lake.add_items([
            NewItem(kind="best_practice", backend="cpu", category="pooling", item_id="bp-pool", task_id="t-pool",
                    title="separable max", body="gelu tanh vectorise simd elementwise: a separable max per window"),
            NewItem(kind="best_practice", backend="cpu", category="scan", item_id="bp-scan", task_id="t-scan",
                    title="interleave chains", body="vectorise simd loop: interleave independent serial chains"),
            NewItem(kind="best_practice", backend="cpu", category="loss", item_id="bp-loss", task_id="t-loss",
                    title="fused reductions", body="simd loop: one fused pass, no temporaries"),
        ])
        rules = dict(feasible_traces_only=True, min_relevance=0.1, overfetch=4)
        gated = lake.retrieve(req(**rules, category_first=True, other_categories_min_q=0.0), record=False)
        assert ids(gated) == []  # the rule before: nothing, ever
        got = lake.retrieve(req(**rules, q_weight=0.5), record=False)
        assert set(ids(got)) == {"bp-pool", "bp-scan", "bp-loss"} and all(r.q_value == 0.0 for r in got)
        assert ids(got)[0] == "bp-pool"  # untried, all at the prior: the most similar first
        # shown, and they moved: refinements with bp-pool in context failed, with bp-scan got faster
        lake.update_values([ValueUpdate("bp-pool", 2, -1.0, 1.0), ValueUpdate("bp-scan", 2, 1.0, 1.0)])
        again = ids(lake.retrieve(req(**rules, q_weight=0.5), record=False))
        assert again[0] == "bp-scan" and again.index("bp-pool") > 0  # Q2 decides once it is known
    finally:
        lake.close()


def test_the_blend_lets_a_similar_untried_item_beat_a_barely_tried_one():
    pool = [Candidate("tried", 1.0, -0.8), Candidate("untried-close", 9.0, -1.0), Candidate("untried-far", 0.5, -1.0),
            Candidate("failed", 2.0, -1.0)]
    q_only = RetrievalRequest("x", "t", "q", None, "cpu", 1, n=2, epsilon=0.0, q_weight=1.0)
    blend = RetrievalRequest("x", "t", "q", None, "cpu", 1, n=2, epsilon=0.0, q_weight=0.5)
    assert [c.candidate.item_id for c in choose(pool, q_only)] == ["tried", "untried-close"]  # Q, ties by similarity
    assert [c.candidate.item_id for c in choose(pool, blend)][0] == "untried-close"
    scores = blended_scores(pool, 0.5)
    assert scores["untried-close"] > scores["tried"] > scores["untried-far"]
    assert blended_scores([Candidate("a", 3.0, 0.0), Candidate("b", 1.0, 0.0)], 0.5)["a"] > 0  # equal Q: similarity


def test_of_each_task_only_its_fastest_kernel_and_the_floor_ignores_the_tasks_own(lake_factory):
    lake = Lake.create(lake_factory.new(), "cpu")
    try:
        text = "gelu activation tanh vectorise simd elementwise loop"
        lake.add_items([
            NewItem(kind="trace", backend="cpu", task_id="other", category="activation", item_id="other-slow",
                    title=text, body=text, code="// a", feasible=True, speedup=1.2),
            NewItem(kind="trace", backend="cpu", task_id="other", category="activation", item_id="other-fast",
                    title=text, body=text, code="// b", feasible=True, speedup=1.4),
            NewItem(kind="trace", backend="cpu", task_id="L1/gelu", category="activation", item_id="own",
                    title=text * 3, body=text * 3, code="// c", feasible=True, speedup=2.0),
            NewItem(kind="best_practice", backend="cpu", category="matmul", item_id="bp-far", task_id="mm",
                    title="tiles", body="matmul tiles simd"),
        ])
        rules = dict(feasible_traces_only=True, fastest_trace_per_task=True, min_relevance=0.1, overfetch=4, q_weight=0.5)
        got = ids(lake.retrieve(req(**rules), record=False))
        assert "other-fast" in got and "other-slow" not in got and "own" in got
        refining = ids(lake.retrieve(req(**rules, other_tasks_traces_only=True), record=False))
        assert "other-fast" in refining and "own" not in refining  # its own kernels: start point and children
        facts = {"own": ItemFacts("trace", "activation", True, 2.0, "L1/gelu"),
                 "lesson": ItemFacts("best_practice", "scan", None, None, "t2")}
        pool = [Candidate("own", 50.0, 0.0), Candidate("lesson", 2.0, 0.0)]
        rules = RetrievalRequest("x", "L1/gelu", "q", "activation", "cpu", 2, n=2, min_relevance=0.3)
        assert [c.item_id for c in eligible(pool, rules, facts)] == ["own", "lesson"]  # not 2 < 0.3 * 50
    finally:
        lake.close()


def test_an_untried_lesson_of_the_task_or_its_category_is_not_starved_by_the_drafting_prior(lake_factory):
    """Issue 35: with every untried item at Q1 = -1, a lesson distilled for the very task sat below
    every item that had once been in a feasible draft's context. Its own prior (q_prior_related)
    lets it compete; an untried item of another category keeps the cautious one."""
    lake = Lake.create(lake_factory.new(), "cpu")
    try:
        lake.add_items([
            NewItem(kind="trace", backend="cpu", category="activation", item_id="trace-same-category", task_id="t-act",
                    title="gelu", body="gelu activation tanh vectorise simd elementwise", code="// k", feasible=False),
            NewItem(kind="experience", backend="cpu", category="matmul", item_id="tried", task_id="t-mm",
                    title="gelu", body="gelu activation tanh vectorise simd elementwise"),
            NewItem(kind="experience", backend="cpu", category="activation", item_id="own-lesson", task_id="L1/gelu",
                    title="gelu", body="gelu activation tanh vectorise simd elementwise"),
            NewItem(kind="experience", backend="cpu", category="pooling", item_id="other-lesson", task_id="t-pool",
                    title="gelu", body="gelu activation tanh vectorise simd elementwise"),
        ])
        lake.update_values([ValueUpdate("tried", 1, 1.0, 0.1, prior=-1.0)])  # once in a feasible draft: -0.8
        draft = dict(stage=1, kinds=None, n=4, lam=1, q_prior=-1.0, q_weight=1.0)  # by Q, as before issue 35
        starved = lake.retrieve(req(**draft), record=False)
        assert ids(starved)[0] == "tried" and {r.q_value for r in starved[1:]} == {-1.0}
        got = lake.retrieve(req(**draft, q_prior_related=0.0), record=False)
        assert ids(got)[0] == "own-lesson" and got[0].q_value == 0.0
        q = {r.item_id: r.q_value for r in got}
        assert q["other-lesson"] == -1.0 and q["trace-same-category"] == -1.0  # lessons only, of the task or category
    finally:
        lake.close()
