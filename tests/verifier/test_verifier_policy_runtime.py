"""What the static policy leaves to the runner: torch compute reached through helpers, aliases,
dispatch tables, decorators, nn layers, hooks, dunders and RNG is not refused from names any more
(names rejected honest code); each such candidate really computes with torch in ``forward``, and the
runner's native ATen observer (verifier.sandbox.observer: a RecordFunction callback counting into
shared memory) records it on the first call, in a real process as the runner installs it."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pytest
from policy_snippets import RUNTIME_HEAD, RUNTIME_OBSERVED

from verifier.gates.hack_python import run_python_checks
from verifier.sandbox import native_build, observer

OBSERVE = """
import json, sys, types, torch
from verifier.sandbox.arena import Arena
from verifier.sandbox.observer import ObserverPage, PAGE_BYTES, RunnerObserver
cases, library = json.loads(sys.stdin.read()), sys.argv[1]
page = ObserverPage(Arena.create(PAGE_BYTES))
RunnerObserver(Arena.attach(page.arena.fd), library).arm()
seen = {}
for name, source in cases.items():
    module = types.ModuleType("case_" + name)
    exec(compile(source, name + ".py", "exec"), module.__dict__)
    model = module.ModelNew()
    before = page.read().forbidden
    with torch.no_grad():
        model(torch.randn(4, 4))
    now = page.read()
    seen[name] = [now.forbidden - before, list(now.names[before:])]
print(json.dumps(seen))
"""


@pytest.fixture(scope="module")
def observed(tmp_path_factory):
    library, why = observer.library(native_build.machine_root(tmp_path_factory.mktemp("observer")))  # the run's own
    if library is None:
        pytest.skip(f"the native observer cannot be built here: {why}")
    cases = {name: RUNTIME_HEAD + code for name, code in RUNTIME_OBSERVED.items()}
    proc = subprocess.run([sys.executable, "-c", textwrap.dedent(OBSERVE), str(library)], input=json.dumps(cases),
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("name", sorted(RUNTIME_OBSERVED))
def test_torch_compute_behind_names_passes_the_static_policy_and_is_observed(name, observed):
    assert run_python_checks(RUNTIME_HEAD + RUNTIME_OBSERVED[name]) == []
    count, names = observed[name]
    assert count > 0, f"{name}: no ATen compute observed"
    assert all(n.startswith("aten::") and n.removeprefix("aten::") not in observer.ALLOWED_OPS for n in names)
