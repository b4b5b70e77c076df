"""The issue-23 adversarial corpus covers every class the issue lists (no verification runs here).

Where each class lives: escape_corpus.py (``EscapeCase.z23``: 1, 3), z23_preconfinement.py (1, 2:
one load_inline candidate), z23_harness_hacks.py (4, 2), the corpus fixtures hack_z23_c4_* and
hack_z23_c5_* (4, 5), test_z23_include_oracle.py (6) and z23_runner_cases.py (the runner's
misbehaviour).
"""

from __future__ import annotations

from collections import Counter

import escape_corpus
import z23_harness_hacks
import z23_preconfinement
import z23_runner_cases
from verifier_corpus import corpus


def inventory() -> Counter:
    """Cases per issue-23 class."""
    classes = Counter(c.z23 for c in escape_corpus.CASES if c.z23)
    classes.update(h.z23 for h in z23_harness_hacks.HACKS)
    classes.update(e.name.split("_")[2][1] for e in corpus() if e.name.startswith("hack_z23_"))
    classes.update(["1", "2"])  # the pre-confinement candidate: both classes in one verification
    classes.update(["6", "6"])  # the #include oracle: diagnostics, and __has_include through the verdict
    classes.update(c.z23 for c in z23_runner_cases.CASES)
    return classes


def test_every_class_of_issue_23_has_cases():
    counts = inventory()
    assert {"1", "2", "3", "4", "5", "6", "runner"} <= set(counts), counts
    assert counts["4"] >= 5 and counts["runner"] >= 8, counts


def test_the_issue23_fixtures_expect_the_hack_gate():
    fixtures = [e for e in corpus() if e.name.startswith("hack_z23_")]
    assert len(fixtures) >= 4 and all(e.expect == "hack" for e in fixtures)
    assert "ChildConfig" in z23_preconfinement.PAYLOAD  # the pre-confinement payload reads the sandbox's config
