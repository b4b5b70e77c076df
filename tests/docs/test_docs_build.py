"""The documentation site builds with warnings as errors (``mkdocs build --strict``): a broken link or
anchor, a page missing from the nav, or an API reference to a name that no longer exists fails here.
The README's own links into docs/ are checked as files."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _mkdocs_build(config: Path, site: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}  # Material's notice about its successor, not ours
    return subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--config-file", str(config),
                           "--site-dir", str(site)], capture_output=True, text=True, cwd=config.parent,
                          env=env, timeout=300)


def test_site_builds_strict(tmp_path):
    started = time.perf_counter()
    result = _mkdocs_build(ROOT / "mkdocs.yml", tmp_path / "site")
    assert result.returncode == 0, result.stderr[-4000:]
    print(f"mkdocs build --strict: {time.perf_counter() - started:.1f} s")
    api = (tmp_path / "site" / "api" / "verifier" / "index.html").read_text()
    assert "verifier.api.verify" in api  # mkdocstrings rendered the entry point from its source
    for page in ("setup", "usage", "verifier", "lake", "memory", "experiments", "benchmarks", "development"):
        assert (tmp_path / "site" / page / "index.html").is_file(), page


def test_a_broken_link_fails_the_build(tmp_path):
    """The strict build is what catches a stale link: the same site with one broken anchor fails."""
    copy = tmp_path / "repo"
    shutil.copytree(ROOT / "docs", copy / "docs", ignore=shutil.ignore_patterns("api"))
    (copy / "docs" / "api").mkdir()
    for name in ("verifier", "memory_lake", "evokernel"):  # the API pages without their ::: blocks
        (copy / "docs" / "api" / f"{name}.md").write_text(f"# {name}\n")
    config = (ROOT / "mkdocs.yml").read_text()
    (copy / "mkdocs.yml").write_text(re.sub(r"\n  - mkdocstrings:.*?(?=\nnav:)", "", config, flags=re.S))
    page = copy / "docs" / "settings.md"
    page.write_text(page.read_text() + "\nSee [the lake](lake.md#no-such-section).\n")
    result = _mkdocs_build(copy / "mkdocs.yml", tmp_path / "site")
    assert result.returncode != 0
    assert "no-such-section" in result.stderr


@pytest.mark.parametrize("target", sorted(set(re.findall(r"\]\((docs/[^)#]+)", (ROOT / "README.md").read_text()))))
def test_readme_links_into_docs_exist(target):
    assert (ROOT / target).is_file(), f"README.md links to {target}, which does not exist"


def test_every_docs_page_is_in_the_nav():
    nav = (ROOT / "mkdocs.yml").read_text()
    pages = [str(p.relative_to(ROOT / "docs")) for p in (ROOT / "docs").rglob("*.md")]
    assert pages and all(page in nav for page in pages), [p for p in pages if p not in nav]
