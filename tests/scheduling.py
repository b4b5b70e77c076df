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
SLOW_FIRST = (  # ordered by the module's seconds in the last CI-style run's --durations (2026-11-29, 95aeb88)
    "tests/verifier/test_verifier_corpus.py",  # 372 s
    "tests/verifier/test_z36_outside.py",  # 248 s
    "tests/agent/test_agent_flow.py",  # 216 s
    "tests/verifier/test_verifier_known_good.py",  # 216 s
    "tests/backends/test_backends_triton_ascend_cli.py",  # 83 s
    "tests/agent/test_agent_experiment.py",  # 74 s
    "tests/agent/test_agent_interrupt.py",  # 69 s
    "tests/backends/test_backends_triton_ascend.py",  # 68 s
    "tests/verifier/test_sandbox_fork_server.py",  # 67 s
    "tests/lake/test_lake_durability.py",  # 67 s
    "tests/verifier/test_latency_attacks.py",  # 63 s
    "tests/bench/test_bench_build.py",  # 60 s
    "tests/backends/test_backends_verify.py",  # 60 s
    "tests/backends/test_backends_triton_ascend_shapes.py",  # 54 s
    "tests/cli/test_cli_demo.py",  # 49 s
    "tests/verifier/test_sandbox_escapes.py",  # 44 s
    "tests/bench/test_bench_cli_flow.py",  # 44 s
    "tests/lake/test_lake_champions.py",  # 39 s
    "tests/agent/test_agent_distill_once.py",  # 38 s
    "tests/docs/test_docs_commands.py",  # 21 s
    "tests/lake/test_lake_readonly_query.py",  # 21 s
    "tests/backends/test_backends_triton.py",  # 20 s
    "tests/verifier/test_verifier_roofline.py",  # 20 s
)


def slowest_first(items: list[pytest.Item]) -> None:
    def rank(item: pytest.Item) -> int:
        return next((i for i, prefix in enumerate(SLOW_FIRST) if item.nodeid.startswith(prefix)), len(SLOW_FIRST))

    items.sort(key=rank)  # stable: each module's own order is kept
