"""The score of one step: who owns its outcome, its reward, the reward its value updates apply, and
how that reward was derived, in the attempts columns a user queries to explain a value update.

The rule (README "Why a value moved"):

- the machine's outcome (evokernel.agent.attribution): no reward, no value update;
- drafting: +1 if feasible else -1, applied as is (Q1);
- refining: r = tanh(ln(s_new / s_incumbent)) x significance, or -1 if infeasible (rewards.py);
  applied after online normalisation by scale, r / max(rms, 1/3) over the campaign's refining
  rewards so far, this one included (the raw r while fewer than two exist): sign and order kept,
  at most 3x the raw size (Q2).

``reward_applied`` is exactly the number in ``value_updates.reward`` of the attempt's updates;
``reward_norm_scale`` is what the raw reward was divided by (``reward_norm_mean``/``_std``/``_count``
describe the rewards it came from) and ``reward_rule`` says it in words and numbers.
"""

from __future__ import annotations

from dataclasses import dataclass

from evokernel.agent import rewards
from evokernel.agent.attribution import CANDIDATE, Attribution, attribute
from verifier.result import Verdict


@dataclass(frozen=True)
class Scored:
    owner: str  # attribution.CANDIDATE | MACHINE
    reward: float | None  # None: the machine's outcome
    reward_normalized: float | None
    reward_applied: float | None  # what value updates use; None when nothing is updated
    machine_reason: str | None = None
    incumbent_speedup: float | None = None
    norm: rewards.RunningStats | None = None  # refining: the normaliser with this reward added
    rule: str = ""
    latency_unmeasurable: str = ""  # the candidate is feasible but latency cannot be measured here

    def columns(self) -> dict:
        """The attempts columns of the score."""
        return {
            "outcome_owner": self.owner, "machine_reason": self.machine_reason,
            "reward": self.reward, "reward_normalized": self.reward_normalized, "reward_applied": self.reward_applied,
            "incumbent_speedup": self.incumbent_speedup,
            "reward_norm_mean": self.norm.mean if self.norm else None,
            "reward_norm_std": self.norm.std if self.norm else None,
            "reward_norm_count": self.norm.count if self.norm else None,
            "reward_norm_scale": self.norm.scale if self.norm and self.norm.count >= 2 else None,
            "reward_rule": self.rule,
        }


def score(stage: int, verdict: Verdict | None, incumbent: rewards.PairedSpeedup | None,
          refine_stats: rewards.RunningStats, learns_values: bool) -> Scored:
    """Score a verification (None: the answer had no usable kernel) at a stage."""
    who = attribute(verdict, stage)
    if who.owner != CANDIDATE:
        return Scored(who.owner, None, None, None, machine_reason=who.reason,
                      incumbent_speedup=incumbent.speedup if incumbent else None,
                      rule=f"the machine's outcome ({who.reason}): no reward, no value update",
                      latency_unmeasurable=who.latency_unmeasurable)
    feasible = bool(verdict and verdict.feasible)
    if stage == 1:
        return _draft(verdict, feasible, who, learns_values)
    if who.latency_untrusted:
        return Scored(CANDIDATE, None, None, None, incumbent_speedup=incumbent.speedup if incumbent else None,
                      rule=f"feasible, but {who.latency_untrusted}: the speed is the machine's outcome, so no "
                           "reward and no value update")
    latency = verdict.latency if verdict else None
    new = rewards.PairedSpeedup.of(latency.speedup, latency.ci_low, latency.ci_high) if latency else None
    terms = rewards.refine_terms(feasible, incumbent, new)
    normalised, stats = rewards.normalise_refine_reward(refine_stats, terms.reward)
    rule = f"{terms.rule(feasible, incumbent, new)}; {stats.rule(terms.reward)}"
    return Scored(CANDIDATE, terms.reward, normalised, normalised if learns_values else None,
                  incumbent_speedup=incumbent.speedup if incumbent else None, norm=stats,
                  rule=rule + ("" if learns_values else "; this method learns no values"),
                  latency_unmeasurable=who.latency_unmeasurable)


def _draft(verdict: Verdict | None, feasible: bool, who: Attribution, learns_values: bool) -> Scored:
    reward = rewards.draft_reward(feasible)
    if verdict is None:
        why = "no usable kernel in the answer"
    else:
        why = "feasible" if feasible else f"failed at the {verdict.failed_gate} gate"
    rule = f"draft: {why} -> {reward:+g}, applied as is" + ("" if learns_values else "; this method learns no values")
    return Scored(CANDIDATE, reward, reward, reward if learns_values else None, rule=rule,
                  latency_unmeasurable=who.latency_unmeasurable)
