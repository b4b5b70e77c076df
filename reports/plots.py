"""The report's figures, drawn with matplotlib (Agg backend) as PNG bytes.

Why matplotlib rather than altair/vega: it is already a dependency, renders with no JavaScript,
so index.html stays readable offline and in any browser with plain base64 <img> tags (a vega
chart needs ~1 MB of JS bundles inlined, or a CDN the machine cannot reach), and the same PNGs
serve summary.md. Each function takes the polars frames of ``reports.metrics.Metrics`` and
returns a ``Figure`` (name, title, PNG bytes), or None when there is nothing to draw.
"""

from __future__ import annotations

import io
import re
from dataclasses import dataclass

import polars as pl

DPI = 110


@dataclass(frozen=True)
class Figure:
    name: str  # file stem, e.g. "learning_curves"
    title: str
    png: bytes
    caption: str


def _pyplot():
    import matplotlib

    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt

    return plt


def campaign_colors(campaign_ids) -> dict[str, str]:
    """One matplotlib cycle colour per campaign, the same in every figure."""
    return {campaign: f"C{index % 10}" for index, campaign in enumerate(campaign_ids)}


def speedup_axis(ax, values: list[float]) -> None:
    """A log-scale speedup axis labelled at powers of two (0.25, 0.5, 1, 2, 4, ...): it always spans 0.5 to 2
    at least, so it shows several labelled ticks around "no speedup" (1) whatever the data's range."""
    from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

    low, high = min(values + [1.0]), max(values + [1.0])
    ax.set_yscale("log", base=2)
    ax.set_ylim(min(low / 1.25, 0.5), max(high * 1.25, 2.0))
    ax.yaxis.set_major_locator(LogLocator(base=2, numticks=12))
    ax.yaxis.set_major_formatter(FuncFormatter(lambda x, _pos: f"{x:g}"))
    ax.yaxis.set_minor_formatter(NullFormatter())


def _integer_ticks():
    from matplotlib.ticker import MaxNLocator

    return MaxNLocator(integer=True)


def _to_png(fig) -> bytes:
    plt = _pyplot()
    buffer = io.BytesIO()
    fig.tight_layout()
    fig.savefig(buffer, format="png", dpi=DPI)
    plt.close(fig)
    return buffer.getvalue()


def learning_curves(curves: pl.DataFrame, colors: dict[str, str]) -> Figure | None:
    """Cumulative compile rate and correctness against iteration, one line per campaign."""
    if curves.is_empty():
        return None
    plt = _pyplot()
    fig, axes = plt.subplots(1, 2, figsize=(10, 3.6), sharey=True)
    for campaign, frame in curves.group_by("campaign_id", maintain_order=True):
        x = frame["iteration"].to_list()
        style = dict(where="post", label=campaign[0], color=colors.get(campaign[0]))
        axes[0].step(x, frame["compile_rate"].to_list(), **style)
        axes[1].step(x, frame["correct_rate"].to_list(), **style)
    for ax, title in zip(axes, ("compile rate (tasks)", "correctness (tasks)")):
        ax.xaxis.set_major_locator(_integer_ticks())
        ax.set_title(title)
        ax.set_xlabel("iteration (0-based, as in the lake)")
        ax.set_ylim(-0.02, 1.02)
        ax.grid(alpha=0.3)
    axes[0].set_ylabel("share of tasks")
    axes[1].legend(fontsize=8, loc="lower right")
    return Figure("learning_curves", "Learning curves", _to_png(fig),
                  "Share of all tasks with a compiling / correct kernel at or before each iteration.")


def speedup_distribution(speedups: pl.DataFrame, colors: dict[str, str]) -> Figure | None:
    """Best kernel's speedup over PyTorch and over the first draft per task, log scale."""
    if speedups.is_empty():
        return None
    plt = _pyplot()
    campaigns = speedups["campaign_id"].unique(maintain_order=True).to_list()
    fig, axes = plt.subplots(1, 2, figsize=(10, 3.8))
    panels = (("best_speedup", "best kernel vs PyTorch (median over rounds)"),
              ("draft_speedup", "best kernel vs first feasible draft"))
    for ax, (column, title) in zip(axes, panels):
        data = [speedups.filter(pl.col("campaign_id") == c)[column].drop_nulls().to_list() for c in campaigns]
        kept = [(c, d) for c, d in zip(campaigns, data) if d]
        if kept:
            ax.boxplot([d for _, d in kept], showfliers=False)
            for position, (campaign, values) in enumerate(kept, start=1):
                ax.scatter([position] * len(values), values, s=12, alpha=0.6, zorder=3, color=colors.get(campaign))
            ax.set_xticks(range(1, len(kept) + 1), [c for c, _ in kept], rotation=20, fontsize=8)
        speedup_axis(ax, [v for _, values in kept for v in values])
        ax.axhline(1.0, color="grey", lw=0.8, ls="--")
        ax.set_title(title)
        ax.set_ylabel("speedup (log scale)")
        ax.grid(alpha=0.3, which="both")
    return Figure("speedup_distribution", "Speedup distributions", _to_png(fig),
                  "One point per solved task, its best kernel (the highest median speedup among feasible kernels "
                  "whose timing is not implausible). Left: that median over rounds of reference time / candidate "
                  "time, both timed in each round. Right: the best kernel over the first feasible draft, both timed "
                  "in the same rounds when the task ended (median of per-round ratios; exactly 1 when the best kernel "
                  "is the draft), or, without that run, the ratio of the two medians. Dashed line = no speedup.")


def category_bars(groups: pl.DataFrame, colors: dict[str, str]) -> Figure | None:
    """Correctness and fast_1 per op category, bars grouped by campaign."""
    frame = groups.filter(pl.col("group_kind") == "category")
    if frame.is_empty():
        return None
    plt = _pyplot()
    categories = sorted(frame["group_name"].unique().to_list())
    campaigns = frame["campaign_id"].unique(maintain_order=True).to_list()
    width = 0.8 / max(len(campaigns), 1)
    fig, axes = plt.subplots(1, 2, figsize=(10, 3.8), sharey=True)
    for ax, (column, title) in zip(axes, (("correct_rate_tasks", "correctness"), ("fast_1", "fast_1"))):
        for index, campaign in enumerate(campaigns):
            rows = dict(frame.filter(pl.col("campaign_id") == campaign).select("group_name", column).iter_rows())
            values = [rows.get(category) or 0.0 for category in categories]
            positions = [i + index * width for i in range(len(categories))]
            ax.bar(positions, values, width=width, label=campaign, color=colors.get(campaign))
        ax.set_xticks([i + width * (len(campaigns) - 1) / 2 for i in range(len(categories))], categories,
                      rotation=30, ha="right", fontsize=8)
        ax.set_title(f"{title} per category")
        ax.set_ylim(0, 1.05)
        ax.grid(alpha=0.3, axis="y")
    axes[0].set_ylabel("share of tasks")
    axes[1].legend(fontsize=8)
    return Figure("category_bars", "Per-category results", _to_png(fig),
                  "Share of the category's tasks with a correct kernel / a kernel faster than PyTorch.")


def q_trajectories(q: pl.DataFrame) -> Figure | None:
    """Q after each value update of the most retrieved items, one panel per stage."""
    if q.is_empty():
        return None
    plt = _pyplot()
    stages = sorted(q["stage"].unique().to_list())
    fig, axes = plt.subplots(1, len(stages), figsize=(5 * len(stages), 3.6), squeeze=False)
    for ax, stage in zip(axes[0], stages):
        items = list(q.filter(pl.col("stage") == stage).group_by("item_id", maintain_order=True))
        labels = distinct_labels([frame["title"][0] for _, frame in items], [item for (item,), _ in items])
        for ((item,), frame), text in zip(items, labels):
            label = f"{text} ({frame['n_retrievals'][0]}x)"
            x = [0] + frame["update_index"].to_list()
            y = [frame["q_before"][0]] + frame["q_after"].to_list()
            ax.plot(x, y, marker="o", ms=2.5, lw=1.2, label=label)
        ax.set_title(f"Q{stage} ({'drafting' if stage == 1 else 'refining'})")
        ax.set_xlabel("value update")
        ax.set_ylabel("Q")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7)
    return Figure("q_trajectories", "Q-value trajectories", _to_png(fig),
                  "Most retrieved items per stage; legend: title (retrievals).")


def shorten(title: str, width: int = 40) -> str:
    """A title that fits ``width``: its start and end around an ellipsis (titles of one task's kernels
    differ at the end), cut between words (runs of letters and digits), never inside one."""
    title = " ".join(str(title).split())
    if len(title) <= width:
        return title
    tokens = _TOKENS.findall(title)
    head, i = "", 0
    while i < len(tokens) and len(head) + len(tokens[i]) <= (width - 1) // 2:
        head, i = head + tokens[i], i + 1
    tail, j = "", len(tokens) - 1
    while j >= i and len(head) + 1 + len(tokens[j]) + len(tail) <= width:
        tail, j = tokens[j] + tail, j - 1
    if not head.strip() and not tail.strip():  # one word longer than the label: only it can be cut
        return title[:width - 1] + "…"
    return head.rstrip(" _/-,;:") + "…" + tail.lstrip(" _/-,;:")


_TOKENS = re.compile(r"[A-Za-z0-9]+|[^A-Za-z0-9]")  # words, and each character between them


def distinct_labels(titles: list[str], ids: list[str], width: int = 40) -> list[str]:
    """Legend labels that fit ``width`` and tell items apart: a long title shortened between words
    (:func:`shorten`), and labels that still coincide get the item id's first characters."""
    labels = [shorten(t, width) for t in titles]
    repeated = {label for label in labels if labels.count(label) > 1}
    return [f"{label} [{item[:8]}]" if label in repeated else label for label, item in zip(labels, ids)]


def roofline(points: pl.DataFrame, colors: dict[str, str]) -> Figure | None:
    """Best kernel per task on the machine's measured roofline (log-log), its reference beside it."""
    if points.is_empty():
        return None
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(7.5, 4.6))
    memory, peak = points["memory_gbs"].max(), points["peak_gflops"].max()
    low, high = points["intensity"].min() / 4, max(points["intensity"].max() * 4, 2 * peak / memory)
    xs = [low * (high / low) ** (i / 200) for i in range(201)]
    ax.plot(xs, [min(peak, x * memory) for x in xs], color="black", lw=1.4,
            label=f"measured roof: {memory:.3g} GB/s, {peak:.3g} GFLOP/s")
    cache = points["roof_gbs"].max()
    if cache > memory * 1.05:
        ax.plot(xs, [min(peak, x * cache) for x in xs], color="grey", lw=1.0, ls="--",
                label=f"cache-resident roof: {cache:.3g} GB/s")
    for (campaign,), frame in points.group_by("campaign_id", maintain_order=True):
        color = colors.get(campaign)
        ax.scatter(frame["intensity"], frame["achieved_gflops"], s=28, color=color, zorder=3, label=f"{campaign}: best kernel")
        ax.scatter(frame["intensity"], frame["reference_gflops"], s=28, facecolors="none", edgecolors=color, zorder=3,
                   label=f"{campaign}: PyTorch reference")
        for task, x, y in frame.select("task_id", "intensity", "achieved_gflops").iter_rows():
            ax.annotate(task.split("/")[-1], (x, y), fontsize=7, xytext=(4, 3), textcoords="offset points")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("arithmetic intensity (FLOP / byte moved, lower bound of traffic)")
    ax.set_ylabel("GFLOP/s")
    ax.grid(alpha=0.3, which="both")
    ax.legend(fontsize=7, loc="lower right")
    return Figure("roofline", "Roofline", _to_png(fig),
                  "Each solved task's best kernel (filled) and its PyTorch reference (hollow): FLOPs (FlopCounterMode "
                  "on the reference + one per element of other ops) and bytes (inputs + outputs + parameters) over "
                  "the measured time, under this machine's probed bandwidth (STREAM-style triad) and FMA peak.")


def all_figures(metrics) -> tuple[Figure, ...]:
    """Every figure that has data, in report order."""
    colors = campaign_colors(metrics.campaign_ids)
    drawn = (
        learning_curves(metrics.learning_curves, colors),
        speedup_distribution(metrics.speedups, colors),
        category_bars(metrics.groups, colors),
        q_trajectories(metrics.q_trajectories),
        roofline(metrics.roofline, colors),
    )
    return tuple(figure for figure in drawn if figure is not None)
