"""Rendering a report's content to a self-contained index.html and to summary.md.

The HTML embeds every figure as a base64 PNG and inlines its CSS (reports/templates/index.html),
so the file reads offline; every value is escaped. summary.md holds the key tables, the status
(missing data, data quality) and links to the figures written beside it.
"""

from __future__ import annotations

import base64
import html
from dataclasses import dataclass
from pathlib import Path
from string import Template

from reports.definitions import DEFINITIONS
from reports.machine import machine_table
from reports.metrics import Metrics
from reports.plots import Figure
from reports.quality import QualityReport
from reports.tables import (
    Table, best_kernels_table, breakdown_table, comparison_tables, first_solves_table, headline_lines,
    provenance_table, quality_table, task_table,
)

TEMPLATE = Path(__file__).resolve().parent / "templates" / "index.html"
FIGURES_DIR = "figures"


@dataclass(frozen=True, eq=False)
class ReportContent:
    lake_root: str
    generated_at: str
    metrics: Metrics
    quality: QualityReport
    missing: tuple[str, ...]
    figures: tuple[Figure, ...]

    @property
    def title(self) -> str:
        return "EvoKernel report"

    def headline(self) -> tuple[str, ...]:
        return headline_lines(self.metrics.overall()) if self.metrics.has_attempts else ()

    def tables(self) -> tuple[Table, ...]:
        m = self.metrics
        key = comparison_tables(m.overall()) if m.has_attempts else ()
        per_campaign = tuple(breakdown_table(m.groups, c) for c in m.campaign_ids if m.groups.height)
        detail = (task_table(m.task_outcomes), best_kernels_table(m.speedups), first_solves_table(m.first_solves),
                  provenance_table(m.provenance_items), machine_table(m.machine_outcomes))
        return (*key, *per_campaign, *(t for t in detail if t.rows))


def _esc(value: object) -> str:
    return html.escape(str(value), quote=True)


def html_table(table: Table) -> str:
    head = "".join(f"<th>{_esc(h)}</th>" for h in table.headers)
    body = []
    for index, row in enumerate(table.rows):
        css = ' class="fail"' if index in table.failed_rows else ""
        body.append(f"<tr{css}>" + "".join(f"<td>{_esc(cell)}</td>" for cell in row) + "</tr>")
    # the caption (what each figure is) below the scrolling wrapper: a wide table never hides its text
    caption = f'<p class="caption">{_esc(table.caption)}</p>' if table.caption else ""
    return (f'<h3>{_esc(table.title)}</h3><div class="table-wrap"><table>'
            f"<thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table></div>{caption}")


def _html_figure(figure: Figure) -> str:
    data = base64.b64encode(figure.png).decode("ascii")
    return (f'<figure><img alt="{_esc(figure.title)}" src="data:image/png;base64,{data}">'
            f"<figcaption><b>{_esc(figure.title)}.</b> {_esc(figure.caption)}</figcaption></figure>")


def _html_status(content: ReportContent) -> str:
    quality = content.quality
    if quality.error:
        parts = [f'<div class="status bad">Data quality suite could not run: {_esc(quality.error)}</div>']
    elif not quality.outcomes:
        parts = ['<div class="status warn">Data quality: no lake rows to check.</div>']
    elif quality.passed:
        parts = [f'<div class="status ok">Data quality: all {len(quality.outcomes)} expectations passed.</div>']
    else:
        names = "; ".join(f"{o.table}: {o.description}" for o in quality.failed)
        parts = [f'<div class="status bad">Data quality: {len(quality.failed)} of {len(quality.outcomes)} '
                 f"expectations FAILED ({_esc(names)}). See the data quality table below.</div>"]
    if content.missing:
        items = "".join(f"<li>{_esc(line)}</li>" for line in content.missing)
        parts.append(f'<div class="status warn">Missing from the lake:<ul>{items}</ul></div>')
    return "\n".join(parts)


def _html_definitions() -> str:
    entries = "".join(
        f"<dt>{_esc(d.title)} <code>{_esc(d.key)}</code></dt><dd>{_esc(d.definition)} "
        f"<i>(reports/sql/{_esc(d.sql)}.sql)</i></dd>"
        for d in DEFINITIONS
    )
    return f"<h2>Metric definitions</h2><dl>{entries}</dl>"


def render_html(content: ReportContent) -> str:
    tables = content.tables()
    key, rest = (tables[:2], tables[2:]) if content.metrics.has_attempts else ((), tables)
    body = ["<h2>Summary</h2>", *(f'<p class="headline">{_esc(line)}</p>' for line in content.headline()),
            *(html_table(t) for t in key)]
    if not content.metrics.has_attempts:
        body.append("<p>No attempts for the selected campaigns: there is nothing to measure yet.</p>")
    if content.figures:
        body += ["<h2>Figures</h2>", *(_html_figure(f) for f in content.figures)]
    if rest:
        body += ["<h2>Details</h2>", *(html_table(t) for t in rest)]
    body += ["<h2>Data quality</h2>", html_table(quality_table(content.quality)), _html_definitions()]
    campaigns = ", ".join(content.metrics.campaign_ids) or "none"
    meta = f"Lake: {content.lake_root} · campaigns: {campaigns} · generated {content.generated_at}"
    return Template(TEMPLATE.read_text()).substitute(
        title=_esc(content.title), meta=_esc(meta), status=_html_status(content), body="\n".join(body)
    )


def _md_cell(value: str) -> str:
    return str(value).replace("|", "\\|").replace("\n", " ")


def markdown_table(table: Table) -> str:
    lines = [f"### {table.title}", "", "| " + " | ".join(_md_cell(h) for h in table.headers) + " |",
             "|" + "---|" * len(table.headers)]
    for index, row in enumerate(table.rows):
        cells = [_md_cell(c) for c in row]
        if index in table.failed_rows:
            cells = [f"**{c}**" if c else c for c in cells]
        lines.append("| " + " | ".join(cells) + " |")
    if table.caption:
        lines += ["", f"_{table.caption}_"]
    return "\n".join(lines) + "\n"


def _md_status(content: ReportContent) -> list[str]:
    quality = content.quality
    if quality.error:
        lines = [f"**Data quality suite could not run:** {quality.error}"]
    elif not quality.outcomes:
        lines = ["Data quality: no lake rows to check."]
    elif quality.passed:
        lines = [f"Data quality: all {len(quality.outcomes)} expectations passed."]
    else:
        lines = [f"**Data quality: {len(quality.failed)} of {len(quality.outcomes)} expectations FAILED:**", ""]
        lines += [f"- {o.table}: {o.description} ({o.rows_failed} of {o.rows_checked} rows; {o.examples})"
                  for o in quality.failed]
    if content.missing:
        lines += ["", "Missing from the lake:", ""] + [f"- {line}" for line in content.missing]
    return lines


def render_markdown(content: ReportContent) -> str:
    campaigns = ", ".join(content.metrics.campaign_ids) or "none"
    lines = [f"# {content.title}", "", *(f"> {line}" for line in content.headline()), "",
             f"Lake: `{content.lake_root}` · campaigns: {campaigns} · generated {content.generated_at}", "",
             *_md_status(content), ""]
    tables = content.tables()
    if content.metrics.has_attempts:
        lines += [markdown_table(t) for t in tables[:2]]
    else:
        lines.append("No attempts for the selected campaigns: there is nothing to measure yet.\n")
    if content.figures:
        lines += ["## Figures", ""]
        lines += [f"![{f.title}]({FIGURES_DIR}/{f.name}.png)  \n_{f.caption}_\n" for f in content.figures]
    lines.append("Definitions of every metric, per-level and per-category tables, provenance and the full data "
                 "quality table: see index.html; the numbers behind every plot: metrics.parquet.")
    return "\n".join(lines) + "\n"
