"""What a report's reader sees first: the headline sentence, what its speedups are (the best kernel's
median with its CI, the one definition of best; a noisy timing at its median, an implausible one left
out; the gain over the first draft measured in one paired run where the lake has it), 0-based
iterations, Q legends that tell items apart. On the hand-made lake (reports_handmade_lake.py) plus
flagged attempts and one paired comparison, answers by hand."""

from __future__ import annotations

import pytest

import reports_handmade_lake as handmade
from memory_lake import Lake
from reports.metrics import compute_metrics
from reports.plots import distinct_labels
from reports.render import render_markdown
from reports.tables import best_kernels_table, first_solves_table, headline_lines

NOISY = "flag: noisy timing (IQR/median candidate 41%): a loaded machine; rerun before trusting the speedup"
IMPLAUSIBLE = ("flag: implausible by roofline: 3.1x faster than this machine's measured peaks allow: review before "
               "trusting\nnote: speedup 50.0x exceeds the plausibility bound 10x")


PAIRED = {"campaign_id": "c1", "task_id": "t2", "draft_attempt_id": "c1-t2-0", "best_attempt_id": "c1-t2-1",
          "same_kernel": False, "ratio": 1.9, "ratio_ci_low": 1.8, "ratio_ci_high": 2.05, "draft_speedup": 1.3,
          "best_speedup": 2.47, "rounds": 30, "outcome_owner": "candidate", "created_at": handmade.T0}


@pytest.fixture(scope="module")
def flagged_metrics(tmp_path_factory):
    """c1 / t3 gains a 21.8x timing flagged noisy (CI 1.6-30) and a 50x one flagged implausible; c1 / t1 a
    correct first draft at iteration 1 timed 3.0x but noisy (CI 0.5-4.0)."""
    noisy = handmade._attempt("c1", "t3", 2, handmade.FEASIBLE, ms=0.1, speedup=21.8, ci=(1.6, 30.0), stage=2)
    wild = handmade._attempt("c1", "t3", 3, handmade.FEASIBLE, ms=0.05, speedup=50.0, ci=(45.0, 55.0), stage=2)
    draft = handmade._attempt("c1", "t1", 1, handmade.FEASIBLE, ms=1.5, speedup=3.0, ci=(0.5, 4.0))
    rows = [noisy | {"flagged": True, "feedback": f"RESULT: passed all gates\n{NOISY}"},
            wild | {"flagged": True, "feedback": f"RESULT: passed all gates\n{IMPLAUSIBLE}"},
            draft | {"attempt_id": "c1-t1-1-noisy", "flagged": True, "feedback": f"RESULT: passed all gates\n{NOISY}"}]
    root = tmp_path_factory.mktemp("flagged") / "lake"
    lake = handmade.make_lake(root, extra_attempts=rows)
    lake.append("comparisons", [PAIRED])  # c1 / t2: its draft and best kernel timed in the same rounds
    lake.close()
    with Lake.open(root) as lake:
        con = lake.connect()
        try:
            yield compute_metrics(con, ["c1"])
        finally:
            con.close()


def _c1(metrics) -> dict:
    return metrics.overall().to_dicts()[0]


def test_a_noisy_timing_counts_at_its_median_and_an_implausible_one_not_at_all(flagged_metrics):
    t3 = flagged_metrics.task_outcomes.filter(task_id="t3").to_dicts()[0]
    assert (t3["best_speedup"], t3["best_ci_low"], t3["best_timing_flag"]) == (21.8, 1.6, "noisy")  # not 50
    assert t3["n_implausible"] == 1
    # no paired run for t3: the ratio of the two medians, its interval the conservative bound of their CIs
    assert t3["draft_speedup"] == pytest.approx(21.8 / 1.2) and t3["draft_speedup_source"] == "separate verifications"
    assert (t3["draft_speedup_ci_low"], t3["draft_speedup_ci_high"]) == pytest.approx((1.6 / 1.3, 30.0 / 1.1))
    c1 = _c1(flagged_metrics)
    assert c1["speedup_geomean"] == pytest.approx((3.0 * 2.5 * 21.8) ** (1 / 3))
    assert (c1["fast_1_5"], c1["fast_2"], c1["fast_1_ci_low"]) == (0.75, 0.75, 0.5)
    assert (c1["n_flagged_best"], c1["n_implausible_tasks"]) == (2, 1)


def test_the_gain_over_the_first_draft_is_the_paired_ratio_or_exactly_one(flagged_metrics):
    by_task = {r["task_id"]: r for r in flagged_metrics.task_outcomes.filter(campaign_id="c1").to_dicts()}
    t2 = by_task["t2"]
    assert (t2["draft_speedup"], t2["draft_speedup_ci_low"], t2["draft_speedup_ci_high"]) == (1.9, 1.8, 2.05)
    assert t2["draft_speedup_source"] == "paired"  # measured in one run, not 2.5 / 1.25 from two
    t1 = by_task["t1"]  # its noisy first draft (3.0x at its median) is its best kernel: the ratio is 1
    assert (t1["best_speedup"], t1["draft_speedup"], t1["draft_speedup_source"]) == (3.0, 1.0, "same kernel")
    assert _c1(flagged_metrics)["n_draft_speedup_measured"] == 2


def test_the_best_kernels_table_shows_each_figures_definition(flagged_metrics):
    table = best_kernels_table(flagged_metrics.speedups)
    t3 = next(row for row in table.rows if row[1] == "t3")
    assert t3[3] == "21.80x [1.60, 30.00] (noisy timing)"
    assert t3[5].startswith("estimate: ratio of medians from two verifications")
    t2 = next(row for row in table.rows if row[1] == "t2")
    assert t2[4] == "1.90x [1.80, 2.05]" and t2[5].startswith("draft and best timed in the same rounds")
    assert "vs PyTorch: median [95% CI]" in table.headers
    for words in ("median over rounds of reference time / candidate time", "highest such median",
                  "timed in the same rounds when the task ended", "conservative interval", "not counted"):
        assert words in table.caption, words


def test_the_headline_says_what_the_campaign_achieved(flagged_metrics):
    (line,) = headline_lines(flagged_metrics.overall())
    geomean = (3.0 * 2.5 * 21.8) ** (1 / 3)
    assert line.startswith("c1: 3 of 4 tasks got a correct kernel within 10 attempts each; 3 of 4 beat PyTorch "
                           f"(best kernel's median speedup > 1); the best kernels run {geomean:.2f}x [")
    assert "PyTorch's speed (geomean of medians [of their 95% CI bounds])" in line
    assert "(median over tasks; 2 of 3 measured: one paired run, or the best kernel is the draft)" in line


def test_iterations_are_0_based_as_in_the_lake(flagged_metrics):
    table = first_solves_table(flagged_metrics.first_solves)
    t1 = next(row for row in table.rows if row[1] == "t1")
    assert t1[2] == "1"  # attempts.iteration of c1/t1's first correct kernel
    assert "0-based" in table.caption


def test_summary_md_opens_with_the_headline(flagged_metrics, tmp_path):
    from reports.quality import QualityReport
    from reports.render import ReportContent

    content = ReportContent(lake_root="lake", generated_at="now", metrics=flagged_metrics,
                            quality=QualityReport(outcomes=()), missing=(), figures=())
    lines = render_markdown(content).splitlines()
    assert lines[0] == "# EvoKernel report" and lines[2].startswith("> c1: 3 of 4 tasks got a correct kernel")


def test_q_legends_tell_items_with_long_shared_titles_apart():
    titles = ["L2/014_add_layernorm_scale refine: fused row passes over the OpenMP pool (2.9x)",
              "L2/014_add_layernorm_scale refine: fused row passes over the OpenMP pool (3.1x)",
              "short title", "short title"]
    labels = distinct_labels(titles, ["aaaaaaaa1", "bbbbbbbb2", "cccccccc3", "dddddddd4"])
    assert len(set(labels)) == 4 and all(len(label) <= 40 + 11 for label in labels)
    assert labels[0].endswith("(2.9x)") and labels[1].endswith("(3.1x)")
    assert labels[2:] == ["short title [cccccccc]", "short title [dddddddd]"]


def test_q_legends_are_never_cut_inside_a_word():
    """issue 39: legends read "…ow passes" (cut mid-word); a shortened title keeps whole words only."""
    import re

    from reports.plots import shorten

    titles = ["L2/014_add_layernorm_scale refine: fused row passes over the OpenMP pool (2.9x)",
              "rms_norm (L1/016_rms_norm) iteration 3: feasible 1.24x, vectorised exp with a polynomial",
              "Triton on Ascend: Worked example: row softmax with masked loads and a one-tile reduction"]
    for title in titles:
        label = shorten(title, 40)
        assert len(label) <= 40 and "…" in label
        words = set(re.findall(r"[A-Za-z0-9]+", title))
        assert set(re.findall(r"[A-Za-z0-9]+", label)) <= words, label
    assert shorten("short title", 40) == "short title"


def test_the_speedup_axis_labels_ticks_around_1_whatever_the_data():
    """issue 39: a log-scale panel whose data spanned 0.8-1.3x labelled only "1"."""
    from reports.plots import _pyplot, speedup_axis

    plt = _pyplot()
    for values in ([0.8, 1.3], [1.0], [0.05, 30.0]):
        fig, ax = plt.subplots()
        ax.plot([1] * len(values), values, "o")
        speedup_axis(ax, values)
        fig.canvas.draw()
        low, high = ax.get_ylim()
        labels = [t.get_text() for t in ax.get_yticklabels() if low <= t.get_position()[1] <= high and t.get_text()]
        plt.close(fig)
        assert {"0.5", "1", "2"} <= set(labels), (values, labels)
