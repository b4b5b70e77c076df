"""The report opened in headless Chromium (Debian's package; flags from research/stack.md): a
screenshot is taken, the page logs no console message (it has no script, so any message is an
error: a blocked resource, a bad image), and in a probe copy every <img> decodes."""

from __future__ import annotations

import shutil
import subprocess

import pytest

from reports.build import write_report

CHROMIUM = shutil.which("chromium")
pytestmark = pytest.mark.skipif(
    CHROMIUM is None, reason="Debian's chromium is not installed (scripts/run_tests.sh installs it with apt-get)")

PROBE = """
<script>
window.addEventListener('load', () => {
  const images = [...document.images];
  document.body.dataset.images = images.length;
  document.body.dataset.decoded = images.filter(i => i.complete && i.naturalWidth > 0).length;
  document.body.dataset.tables = document.querySelectorAll('table tbody tr').length;
});
</script>
"""


def _chromium(profile, *args: str) -> subprocess.CompletedProcess:
    flags = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
             "--disable-background-networking", "--disable-component-update", "--disable-sync",
             f"--user-data-dir={profile}", "--enable-logging=stderr", "--v=0"]
    return subprocess.run([CHROMIUM, *flags, *args], capture_output=True, text=True, timeout=120)


@pytest.fixture(scope="module")
def report(handmade_lake_root, tmp_path_factory):
    return write_report(handmade_lake_root, tmp_path_factory.mktemp("reports-chromium") / "report")


def test_screenshot_renders_without_console_messages(report, tmp_path):
    from PIL import Image

    shot = tmp_path / "report.png"
    run = _chromium(tmp_path / "profile", f"--screenshot={shot}", "--window-size=1280,4000",
                    report.html_path.as_uri())
    assert run.returncode == 0, run.stderr[-2000:]
    console = [line for line in run.stderr.splitlines() if ":CONSOLE" in line]
    assert not console, console
    image = Image.open(shot).convert("L")
    assert image.size == (1280, 4000)
    histogram = image.histogram()
    non_white = sum(histogram[:240]) / sum(histogram)
    assert non_white > 0.05, f"page looks blank ({non_white:.1%} non-white pixels)"


def test_every_figure_decodes_and_tables_render(report, tmp_path):
    probe = tmp_path / "probe.html"
    probe.write_text(report.html_path.read_text().replace("</body>", PROBE + "</body>"))
    run = _chromium(tmp_path / "profile", "--virtual-time-budget=5000", "--dump-dom", probe.as_uri())
    assert run.returncode == 0, run.stderr[-2000:]
    body = next(line for line in run.stdout.splitlines() if line.startswith("<body"))
    assert 'data-images="5"' in body and 'data-decoded="5"' in body, body
    rows = int(body.split('data-tables="')[1].split('"')[0])
    assert rows >= 20, body
