"""CI runs exactly the README's test command, as on a machine that never fetched anything: HOME and
XDG_CACHE_HOME are fresh empty directories (so a test that leans on a cache a manual step left
behind fails in CI), while pip keeps its configured package indexes."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def readme_test_command() -> str:
    setup = ROOT.joinpath("README.md").read_text().split("## Set-up on a fresh machine", 1)[1]
    block = re.search(r"```bash\n(.*?)```", setup, re.S).group(1)
    commands = [line.split("#")[0].strip() for line in block.splitlines()]
    (test,) = [c for c in commands if "test" in c]
    return test


def test_ci_calls_the_readme_test_command_in_a_fresh_home(tmp_path):
    assert readme_test_command() == "make test"
    # `make` on PATH replaced by one that records what it was asked to do and in which environment
    fake = tmp_path / "bin"
    fake.mkdir()
    (fake / "make").write_text('#!/bin/sh\necho "args=$*"\necho "home=$HOME"\necho "cache=$XDG_CACHE_HOME"\n'
                               'ls -A "$HOME" "$XDG_CACHE_HOME" | grep -v ":$" | grep . && echo not-empty\n'
                               'echo "pip=$PIP_CONFIG_FILE"\n')
    (fake / "make").chmod(0o755)
    user_home = tmp_path / "user"
    (user_home / ".config" / "pip").mkdir(parents=True)
    (user_home / ".config" / "pip" / "pip.conf").write_text("[global]\nextra-index-url = file:///somewhere\n")
    env = {"PATH": f"{fake}:{os.environ['PATH']}", "HOME": str(user_home)}
    result = subprocess.run([str(ROOT / ".ci" / "run")], capture_output=True, text=True, env=env, timeout=60)
    assert result.returncode == 0, result.stderr
    seen = dict(line.split("=", 1) for line in result.stdout.splitlines() if "=" in line)
    assert seen["args"] == readme_test_command().split(None, 1)[1]
    assert "not-empty" not in result.stdout
    assert Path(seen["home"]) != user_home and seen["cache"] and not Path(seen["home"]).exists()  # removed after
    assert seen["pip"] == str(user_home / ".config" / "pip" / "pip.conf")


def test_every_module_handed_out_first_exists():
    """tests/scheduling.py's SLOW_FIRST names test modules by path: a renamed or removed one would silently
    stop being handed out first, and the two workers would no longer finish together."""
    from scheduling import SLOW_FIRST

    tests = [str(p.relative_to(ROOT)) for p in (ROOT / "tests").rglob("test_*.py")]
    missing = [prefix for prefix in SLOW_FIRST if not any(t.startswith(prefix) for t in tests)]
    assert not missing, missing
    assert len(set(SLOW_FIRST)) == len(SLOW_FIRST)
