"""Help agrees with the code (issue 39, item 6): every method a campaign runs is named by its --help."""

from __future__ import annotations

from typing import get_args

import pytest
from typer.testing import CliRunner

from cli.main import app
from evokernel.config import Method


@pytest.mark.parametrize("command, option", [("campaign", "--method"), ("experiment", "--methods")])
def test_help_names_every_method(command, option):
    result = CliRunner().invoke(app, [command, "--help"], env={"COLUMNS": "400", "TERM": "dumb"})
    assert result.exit_code == 0, result.output
    line = next(line for line in result.output.splitlines() if option in line)
    for method in get_args(Method):
        assert method in line, f"{command} --help does not name {method}: {line}"
