"""`evokernel lake ...`: create, query, inspect, compact and transfer a memory lake."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import List, Optional

import typer

from cli.errors import fail, one_line_errors

LAKE_OPT = typer.Option(..., "--lake", help="lake root directory (or fsspec URL)")


def _open(root: str):
    from memory_lake import Lake

    return Lake.open(root)


def _seed_items(backend: str) -> tuple:
    """The backend's api_template seed knowledge (empty when the backend is not registered)."""
    try:
        from verifier.backends import get_backend  # type: ignore[attr-defined]
    except ImportError:
        return ()
    try:
        found = get_backend(backend)  # KeyError: unknown name, reported by the caller
    except ImportError:  # a registered backend whose module is not importable here: no seeds
        return ()
    return tuple(found.seed_items())


def register(app: typer.Typer) -> None:
    lake_app = typer.Typer(help="The memory lake: Parquet tables queried with DuckDB.", no_args_is_help=True)
    app.add_typer(lake_app, name="lake")
    _register_lifecycle(lake_app)
    _register_reading(lake_app)
    _register_transfer(lake_app)


def _register_lifecycle(lake_app: typer.Typer) -> None:
    """init and compact: create a lake, merge its small files."""

    @lake_app.command("init")
    def init(lake: str = LAKE_OPT, backend: str = typer.Option(..., "--backend"),
             q_init: float = typer.Option(0.0, "--q-init", help="initial Q of every item")) -> None:
        """Create the lake's tables and load the backend's seed knowledge (api_templates)."""
        from memory_lake import Lake, LakeError

        with one_line_errors(LakeError):
            try:
                seeds = _seed_items(backend)
            except KeyError as exc:
                fail(f"--backend {backend}: {exc.args[0] if exc.args else exc}")
            created = Lake.create(lake, backend, seeds, q_init=q_init)
        typer.echo(f"created {created.root} for backend {backend} with {len(seeds)} seed items")

    @lake_app.command("compact")
    def compact(lake: str = LAKE_OPT) -> None:
        """Merge small files into one per table (query results do not change)."""
        from memory_lake import LakeError

        with one_line_errors(LakeError):
            r = _open(lake).compact()
        typer.echo(f"compacted {', '.join(r.tables) or 'nothing'}: files {r.files_before} -> {r.files_after}, "
                   f"bytes {r.bytes_before} -> {r.bytes_after}")


def _register_reading(lake_app: typer.Typer) -> None:
    """query and stats: what users ask of the lake."""

    @lake_app.command("query")
    def query(sql_text: str = typer.Argument(..., metavar="SQL"), lake: str = LAKE_OPT,
              fmt: str = typer.Option("table", "--format", help="table | csv | json | parquet"),
              out: Optional[Path] = typer.Option(None, "--out", help="output file (required for parquet)")) -> None:
        """Run SQL over the views items, attempts, retrievals, value_updates, campaigns, item_values."""
        from memory_lake import LakeError

        if fmt not in ("table", "csv", "json", "parquet"):
            fail(f"--format {fmt}: expected table, csv, json or parquet")
        if fmt == "parquet" and out is None:
            fail("--format parquet needs --out FILE")
        with one_line_errors(LakeError):
            result = _open(lake).query(sql_text)
        render(result, fmt, out)

    @lake_app.command("stats")
    def stats(lake: str = LAKE_OPT, top: int = typer.Option(5, "--top", help="items shown per stage")) -> None:
        """Rows per table and kind, files, bytes, and the top items by Q per stage."""
        from memory_lake import LakeError

        with one_line_errors(LakeError):
            print_stats(_open(lake), top)


def _register_transfer(lake_app: typer.Typer) -> None:
    """export and import: move memory between lakes (cross-model transfer)."""

    @lake_app.command("export")
    def export(lake: str = LAKE_OPT, out: Path = typer.Option(..., "--out"),
               exclude_tasks: Optional[List[str]] = typer.Option(None, "--exclude-tasks", help="task ids to leave out"),
               kinds: Optional[List[str]] = typer.Option(None, "--kinds", help="item kinds to export")) -> None:
        """Export items with their Q values (e.g. a strong model's memory, test tasks filtered out)."""
        from memory_lake import LakeError

        with one_line_errors(LakeError):
            r = _open(lake).export(out, _split(exclude_tasks), _split(kinds))
        typer.echo(f"exported {r.items} items ({r.q_values} with Q values) to {out}")

    @lake_app.command("import")
    def import_(file: Path = typer.Argument(..., metavar="FILE"), lake: str = LAKE_OPT) -> None:
        """Import an export: items keep their ids, provenance and Q values."""
        from memory_lake import LakeError

        with one_line_errors(LakeError):
            r = _open(lake).import_items(file)
        typer.echo(f"imported {r.items} items ({r.skipped} already present, {r.q_values} Q values)")


def _split(values: Optional[List[str]]) -> list[str]:
    """Accept repeated options and comma-separated lists alike."""
    return [v for value in values or [] for v in value.split(",") if v]


def render(result, fmt: str, out: Optional[Path]) -> None:
    """Print (or write) a query result as an aligned table, CSV, JSON lines or Parquet."""
    import pyarrow.csv as pacsv
    import pyarrow.parquet as pq

    if fmt == "parquet":
        pq.write_table(result, out)
        typer.echo(f"wrote {result.num_rows} rows to {out}")
        return
    if fmt == "csv":
        sink = open(out, "wb") if out else sys.stdout.buffer
        pacsv.write_csv(result, sink)
        sink.flush()
        return
    if fmt == "json":
        import json

        text = "\n".join(json.dumps(row, default=str) for row in result.to_pylist())
        Path(out).write_text(text + "\n") if out else typer.echo(text)
        return
    typer.echo(format_table(result.column_names, result.to_pylist()))


def format_table(names: list[str], rows: list[dict], max_width: int = 60) -> str:
    cells = [[_cell(row[n], max_width) for n in names] for row in rows]
    widths = [max([len(n)] + [len(r[i]) for r in cells]) for i, n in enumerate(names)]
    line = lambda values: "  ".join(v.ljust(w) for v, w in zip(values, widths)).rstrip()  # noqa: E731
    out = [line(names), line(["-" * w for w in widths])] + [line(r) for r in cells]
    out.append(f"({len(rows)} row{'s' if len(rows) != 1 else ''})")
    return "\n".join(out)


def _cell(value, max_width: int) -> str:
    text = "NULL" if value is None else str(value).replace("\n", " ")
    return text if len(text) <= max_width else text[: max_width - 3] + "..."


def print_stats(lake, top: int) -> None:
    from memory_lake.sqlfiles import sql

    stats = lake.table_stats()
    typer.echo(format_table(["table", "rows", "files", "bytes"],
                            [{"table": s.table, "rows": s.rows, "files": s.files, "bytes": s.bytes} for s in stats]))
    kinds = lake.query(sql("table_rows"))
    typer.echo("\nitems per kind\n" + format_table(kinds.column_names, kinds.to_pylist()))
    for stage in (1, 2):
        best = lake.query(sql("top_items"), {"stage": stage, "limit": top})
        typer.echo(f"\ntop items by Q{stage}\n" + format_table(best.column_names, best.to_pylist()))
