"""benchmarks.timing_fidelity's ``why`` column: where the verifier is off plain timing, it names the
measured figure that agrees with it (solo under the sandbox's allocator, solo in the verifier's regime,
solo's own spread, the alternating run), and says "unexplained" when none does."""

from __future__ import annotations

from benchmarks.timing_fidelity import summary, why
from verifier.sandbox.spawn import ALLOCATOR, clean_env


def _row(**values) -> dict:
    row = {"task_id": "L1/025_conv2d", "solo": 1.32, "solo_range": [1.25, 1.40], "alt": 1.48, "alt_passive": None,
           "verifier": 1.30, "trusted": True}
    row.update(values)
    row["fidelity"] = row["verifier"] / row["solo"]
    return row


def test_a_verifier_near_solo_needs_no_reason():
    assert why(_row()) == ""


def test_the_allocator_named_where_solo_under_the_sandbox_allocator_agrees():
    row = _row(verifier=0.72, solo_alloc=0.67)
    assert why(row) == "allocator: solo with the sandbox's allocator reads 0.67x"


def test_inputs_from_memory_named_where_solo_in_the_verifiers_regime_agrees():
    row = _row(verifier=0.80, solo_alloc=1.30, solo_regime=0.84, regime_sets=49)
    assert why(row) == "inputs from memory: solo with the sandbox's allocator on 49 fresh input sets (a window's) reads 0.84x"
    row["fidelity_regime"] = row["verifier"] / row["solo_regime"]
    counts = summary([row, _row()])
    assert counts["off_by_inputs_from_memory"] == 1 and counts["off_by_allocator"] == 0
    assert counts["regime"]["measured"] == 1 and abs(counts["regime"]["median"] - 0.80 / 0.84) < 1e-9


def test_the_allocator_is_named_before_the_regime_that_includes_it():
    row = _row(verifier=0.72, solo_alloc=0.70, solo_regime=0.74, regime_sets=20)
    assert why(row).startswith("allocator: ")


def test_the_regime_figure_is_said_where_nothing_explains_the_verifier():
    row = _row(verifier=0.5, alt=1.4, solo_alloc=1.2, solo_regime=0.9, regime_sets=12)
    assert why(row).endswith(", solo with the sandbox's allocator 1.20x, in the verifier's regime 0.90x")


def test_solo_own_spread_named_where_the_verifier_lies_within_its_runs():
    row = _row(solo=1.0, solo_range=[1.0, 1.6], verifier=1.5, alt=1.0, solo_alloc=1.0)
    assert why(row) == "solo's own spread: its runs read 1.00-1.60x"


def test_unexplained_when_no_measured_figure_agrees():
    row = _row(verifier=0.5, alt=1.4, solo_alloc=1.2)
    assert why(row).startswith("verifier off, unexplained: solo runs 1.25-1.40x")
    rows = [_row(), row, _row(verifier=0.72, solo_alloc=0.67)]
    for one in rows:
        one["why"] = why(one)
    counts = summary(rows)
    assert (counts["within_0.90_1.10"], counts["off_unexplained"], counts["off_by_allocator"]) == (1, 1, 1)


def test_plain_disagreement_and_verifier_off_are_both_said():
    row = _row(alt=2.0, alt_passive=1.35, verifier=0.72, solo_alloc=0.70)
    assert why(row) == ("OpenMP interference in one process (passive threads agree with solo); "
                        "allocator: solo with the sandbox's allocator reads 0.70x")


def test_every_sandbox_process_gets_the_allocator_settings_the_benchmark_names(tmp_path):
    env = clean_env(2, tmp_path, None)
    assert {k: env[k] for k in ALLOCATOR} == ALLOCATOR


def test_plain_disagreement_from_the_allocator_names_the_side_whose_milliseconds_moved():
    """add + LayerNorm + scale on 2026-12-02: the reference's heap trimmed and grown again under glibc's
    defaults (solo 6.07x, alternating 2.58x, passive 2.05x); under the sandbox's allocator solo read 1.24x."""
    row = _row(solo=6.07, solo_range=[5.9, 6.3], ref_ms=1.176, cand_ms=0.194, alt=2.58, alt_passive=2.05, verifier=1.48,
               solo_alloc=1.24, alloc_ref_ms=0.262, alloc_cand_ms=0.211, solo_regime=1.54, regime_sets=30)
    said = why(row)
    assert said.startswith("solo follows glibc's allocator: the reference reads 1.176 ms a call under its defaults, "
                           "0.262 ms with the sandbox's allocator (solo 6.07x against 1.24x; alternating 2.58x, "
                           "passive 2.05x); inputs from memory: ")
    assert "unexplained" not in said


def test_an_allocator_that_moves_neither_side_leaves_the_plain_disagreement_unexplained():
    row = _row(solo=2.0, solo_range=[1.95, 2.1], ref_ms=1.0, cand_ms=0.5, alt=1.5, alt_passive=1.5, verifier=1.9,
               solo_alloc=1.95, alloc_ref_ms=0.98, alloc_cand_ms=0.50)
    assert why(row).startswith("plain methods disagree, unexplained: alternating 1.50x, passive 1.50x, solo 2.00x")


def test_a_plain_disagreement_within_solos_own_spread_is_said_so_before_the_allocator():
    """add + LayerNorm + scale at 11:26 on 2026-12-02: solo's runs read 1.32-4.97x (the reference bimodal under
    glibc's defaults), so neither alternating's 1.52x nor the allocator run's 1.77x stands out of them."""
    row = _row(solo=1.38, solo_range=[1.32, 4.97], ref_ms=0.383, cand_ms=0.278, alt=1.52, alt_passive=1.54,
               verifier=1.50, solo_alloc=1.77, alloc_ref_ms=0.390, alloc_cand_ms=0.221)
    assert why(row) == "solo's own spread: its runs read 1.32-4.97x, alternating 1.52x among them"


def test_one_spread_holding_alternating_and_the_verifier_is_said_once():
    """GELU at 11:31 on 2026-12-02: solo's runs 2.86-4.56x, alternating 3.19x, passive 3.21x, verified 2.78x."""
    row = _row(solo=3.70, solo_range=[2.86, 4.56], ref_ms=10.084, cand_ms=2.729, alt=3.19, alt_passive=3.21,
               verifier=2.78, solo_alloc=3.88, alloc_ref_ms=10.2, alloc_cand_ms=2.63)
    assert why(row) == "solo's own spread: its runs read 2.86-4.56x, alternating 3.19x and the verifier 2.78x among them"
