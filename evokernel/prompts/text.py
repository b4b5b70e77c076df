"""Small text helpers every prompt uses: the templates, a length cap that says what it cut, and a
Markdown fence that survives backticks in the code it holds."""

from __future__ import annotations

import re
from functools import lru_cache
from importlib.resources import files
from string import Template


@lru_cache(maxsize=None)
def template(name: str) -> Template:
    return Template(files("evokernel.prompts").joinpath("templates", f"{name}.md").read_text())


def cap(text: str, limit: int) -> str:
    text = text.strip()
    return text if len(text) <= limit else text[:limit].rstrip() + f"\n… [{len(text) - limit} more characters cut]"


def fenced(code: str, language: str = "") -> str:
    """A Markdown fence longer than any backtick run inside ``code``."""
    longest = max((len(run) for run in re.findall(r"`+", code)), default=0)
    fence = "`" * max(3, longest + 1)
    return f"{fence}{language}\n{code.rstrip()}\n{fence}"
