"""CLI surfaces of the campaign: one-line errors (the demo's script: tests/cli/test_cli_demo.py)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _cli(*args: str, cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT), "HOME": str(cwd), "PREFECT_HOME": str(cwd / "prefect"),
           **(env or {})}
    return subprocess.run([sys.executable, "-m", "cli.main", *args], capture_output=True, text=True,
                          cwd=cwd, env=env, timeout=300)


def test_campaign_on_a_missing_build_is_a_one_line_error(tmp_path):
    result = _cli("campaign", "--build", str(tmp_path / "nope"), "--lake", str(tmp_path / "lake"),
                  "--llm", "scripted:demo", cwd=tmp_path)
    assert result.returncode == 2
    errors = [line for line in result.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and "nope" in errors[0] and "not found" in errors[0]
    assert not (tmp_path / "lake").exists()  # nothing created for a campaign that cannot start


def test_unknown_setting_is_rejected(tmp_path):
    config = tmp_path / "bad.toml"
    config.write_text("budgett = 3\n")
    result = _cli("config", "--config", str(config), cwd=tmp_path)
    assert result.returncode == 2
    assert "bad.toml: budgett: Extra inputs are not permitted" in result.stderr
