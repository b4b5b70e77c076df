"""The agent's one retry rule for verifications, on the real verifier: a failed gate is a result
(returned at once, never retried); an infrastructure failure is retried, then returned as the
machine's outcome (the step records it unscored)."""

from __future__ import annotations

from evokernel.agent.attribution import MACHINE, attribute
from evokernel.agent.verification import verify_candidate
from verifier.settings import VerifySettings

TORCH_IN_FORWARD = '''import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, x):
        return torch.relu(x)
'''


def test_a_failed_gate_is_returned_once_without_retry(tiny_build, tmp_path):
    sleeps = []
    verdict = verify_candidate(tiny_build.runnable()[0], TORCH_IN_FORWARD, "cpu",
                               VerifySettings.for_tests(tmp_path), 1, sleep=sleeps.append)
    assert verdict.failed_gate == "compile" and not verdict.infrastructure_error  # no native code
    assert sleeps == []


def test_an_infrastructure_failure_is_retried_then_returned_as_the_machines_outcome(tiny_build, tmp_path):
    sleeps = []
    verdict = verify_candidate(tiny_build.runnable()[0], TORCH_IN_FORWARD, "no-such-backend",
                               VerifySettings.for_tests(tmp_path), 1, delays_s=(0.5, 2.0), sleep=sleeps.append)
    assert sleeps == [0.5, 2.0]
    assert verdict.infrastructure_error.endswith("(after 3 attempts)") and "no-such-backend" in verdict.infrastructure_error
    who = attribute(verdict, 1)
    assert who.owner == MACHINE and not who.scored and "\n" not in who.reason
