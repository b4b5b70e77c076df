"""How the suite's tests are spread over the two xdist workers (``make test``: ``-n 2 --dist loadscope
--no-loadscope-reorder``); :func:`slowest_first` runs at collection, identically on each worker.

- ``--dist loadscope``: each test module (or class) runs whole on one worker, so a module- or
  class-scoped fixture (a verdict pool, a campaign run once, a report written once) is made once.
  Under ``--dist load`` each worker that got some of a module's tests made it again. (xdist's
  ``xdist_group`` marks would allow finer groups, but xdist 3.8 rewrites ``item._nodeid``, which
  pytest 9 no longer reads: the marks are silently ignored here.)
- ``--no-loadscope-reorder`` keeps this module's order: the slowest modules (``SLOW_FIRST``, measured
  with ``--durations``) are handed out first, so the two workers finish together instead of one
  starting a long module while the other has run out of work. Every other module keeps its
  collection order.
"""

from __future__ import annotations

import pytest

# Test modules (or directories), slowest first: the ones whose tests take minutes in all.
SLOW_FIRST = (  # ordered by the module's seconds in the CI-style runs' --durations of 2026-12-02 (two runs, mean)
    "tests/verifier/test_verifier_corpus.py",
    "tests/agent/test_agent_flow.py",
    "tests/verifier/test_verifier_known_good.py",
    "tests/verifier/test_z36_outside.py",
    "tests/verifier/test_latency_attacks.py",
    "tests/backends/test_backends_triton_ascend_cli.py",
    "tests/backends/test_backends_verify.py",
    "tests/lake/test_lake_durability.py",
    "tests/agent/test_agent_interrupt.py",
    "tests/agent/test_agent_experiment.py",
    "tests/backends/test_backends_triton_ascend.py",
    "tests/verifier/test_sandbox_fork_server.py",
    "tests/lake/test_lake_champions.py",
    "tests/backends/test_backends_triton_ascend_shapes.py",
    "tests/bench/test_bench_build.py",
    "tests/agent/test_agent_distill_once.py",
    "tests/cli/test_cli_demo.py",
    "tests/verifier/test_sandbox_escapes.py",
    "tests/lake/test_lake_core.py",
    "tests/bench/test_bench_cli_flow.py",
    "tests/verifier/test_verifier_timing.py",
    "tests/bench/test_bench_lint.py",
    "tests/lake/test_lake_readonly_query.py",
    "tests/docs/test_docs_commands.py",
)


def slowest_first(items: list[pytest.Item]) -> None:
    def rank(item: pytest.Item) -> int:
        return next((i for i, prefix in enumerate(SLOW_FIRST) if item.nodeid.startswith(prefix)), len(SLOW_FIRST))

    items.sort(key=rank)  # stable: each module's own order is kept
