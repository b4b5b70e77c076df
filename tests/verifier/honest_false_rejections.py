"""Honest corpus entries the verifier rejects today (issue 24), each with its cause.

Every entry is a correct kernel in a style real solutions use (the fixture's covers line says which);
the static tier rejects it before anything runs. test_verifier_corpus turns each entry into a strict
xfail: when the policy stops rejecting it the test XPASSes, which fails the run until the entry is
removed here; a rejection for any other reason fails it too. ``python -m benchmarks.honest_corpus``
prints the same picture from real verifications, grouped by cause.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class FalseRejection:
    """An honest candidate rejected at `gate` with `text` in the feedback, because of `cause`."""

    gate: str
    text: str
    cause: str
    static: bool = True  # rejected by the parent-side tier (static policy, build arguments read statically)
    later: "FalseRejection | None" = None  # what rejects it next once this cause is fixed (checked end to end)

    def matches(self, gate: str, feedback: str) -> bool:
        return (gate == self.gate and self.text in feedback) or bool(self.later and self.later.matches(gate, feedback))


# Empty: no honest candidate of the corpus is rejected today. The 60 entries issue 24 started from
# (operator/itertools imports, code under ``if __name__ == "__main__":``, at::parallel_for, C++ methods
# named like tensor ops, clone, torch.get_num_threads(), super(ModelNew, self).__init__(), build
# arguments computed at import, the trivial-output check on tanh, comprehension-built autotune
# configs, flag lists built by .append()) were cleared by the policy by meaning, the runner's recorded
# build arguments, the precision floor of the trivial-output check and the triton import slice's pure
# builtins. A new one found goes here with its cause.
KNOWN_FALSE_REJECTIONS: dict[str, FalseRejection] = {}
