"""`evokernel lake ...`: create, query (now or as of a snapshot), inspect, maintain, migrate and
transfer a memory lake (a directory, or ducklake:postgres:<conninfo>; see memory_lake/storage.py)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import List, Optional

import typer

from cli.errors import fail, one_line_errors
from cli.inputs import InputError, export_filters, item_kinds
from cli.inputs_lake import lake_path
from cli.inputs_out import output_file, write_failed

LAKE_OPT = typer.Option(..., "--lake", help="lake directory, or ducklake:postgres:<libpq conninfo>")
DATA_PATH_OPT = typer.Option(None, "--data-path", help="where a new catalog lake keeps its Parquet files: a "
                             "directory or s3://bucket/prefix (default: $EVOKERNEL_LAKE_DATA_PATH; directory "
                             "lakes: <dir>/data)")
AS_OF_OPT = typer.Option(None, "--as-of", help="read the lake as it was at a snapshot id or a timestamp "
                         "(see `evokernel lake snapshots`)")


def _open(root: str):
    from memory_lake import Lake

    with one_line_errors(InputError):  # a file, a damaged catalog, no lake: one line before DuckDB
        lake_path(root, must_exist=True)
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
    from evokernel.agent.runtime import memory_seeds

    return memory_seeds(found)


def register(app: typer.Typer) -> None:
    lake_app = typer.Typer(help="The memory lake: Parquet tables queried with DuckDB.", no_args_is_help=True)
    app.add_typer(lake_app, name="lake")
    _register_lifecycle(lake_app)
    _register_reading(lake_app)
    _register_history(lake_app)
    _register_transfer(lake_app)


def _register_lifecycle(lake_app: typer.Typer) -> None:
    """init and compact: create a lake, merge its small files."""

    @lake_app.command("init")
    def init(lake: str = LAKE_OPT, backend: str = typer.Option(..., "--backend"),
             q_init: float = typer.Option(0.0, "--q-init", help="initial Q of every item"),
             data_path: Optional[str] = DATA_PATH_OPT) -> None:
        """Create the lake's tables and load the backend's seed knowledge (api_templates)."""
        with one_line_errors(InputError):  # before DuckDB is imported
            lake_path(lake, must_exist=False)
        from memory_lake import Lake, LakeError

        with one_line_errors(LakeError):
            try:
                seeds = _seed_items(backend)
            except KeyError as exc:
                fail(f"--backend {backend}: {exc.args[0] if exc.args else exc}")
            created = Lake.create(lake, backend, seeds, q_init=q_init, data_path=data_path)
        typer.echo(f"created {created.root} for backend {backend} with {len(seeds)} seed items")

    @lake_app.command("compact")
    def compact(lake: str = LAKE_OPT,
                expire: Optional[str] = typer.Option(None, "--expire-older-than", help="also expire snapshots "
                                                     "older than this (e.g. 7d, 12h, 30m; time travel before "
                                                     "then ends) and delete the files only they used, once "
                                                     "unused for an hour (the grace period)")) -> None:
        """Merge small files, rebuild the champion lists (safe while campaigns write; results unchanged)."""
        from memory_lake import LakeError

        seconds = _duration(expire) if expire else None
        with one_line_errors(LakeError):
            r = _open(lake).compact(expire_older_than=seconds)
        typer.echo(f"compacted {', '.join(r.tables) or 'nothing'}: files {r.files_before} -> {r.files_after}, "
                   f"bytes {r.bytes_before} -> {r.bytes_after}")
        if r.expired is not None:
            typer.echo(expiry_line(r.expired))


def _register_reading(lake_app: typer.Typer) -> None:
    """query and stats: what users ask of the lake."""

    @lake_app.command("query")
    def query(sql_text: str = typer.Argument(..., metavar="SQL"), lake: str = LAKE_OPT,
              fmt: str = typer.Option("table", "--format", help="table | csv | json | parquet"),
              out: Optional[Path] = typer.Option(None, "--out", help="output file (required for parquet)"),
              as_of: Optional[str] = AS_OF_OPT,
              wide: bool = typer.Option(False, "--wide", help="table: show free text whole (ids, hashes and "
                                        "numbers are never cut; text longer than 60 characters is, by default)")) -> None:
        """Run one read-only SELECT over items, attempts, retrievals, value_updates, campaigns, llm_calls,
        item_values (writes, COPY, ATTACH, CALL, PRAGMA, SET and file readers are refused)."""
        from memory_lake import LakeError

        if fmt not in ("table", "csv", "json", "parquet"):
            fail(f"--format {fmt}: expected table, csv, json or parquet")
        if fmt == "parquet" and out is None:
            fail("--format parquet needs --out FILE")
        if out is not None:
            with one_line_errors(InputError):
                output_file(out)
        from memory_lake import readonly
        from memory_lake.storage import parse

        with one_line_errors(LakeError):
            result = readonly.query(parse(lake), sql_text, as_of=as_of)
        render(result, fmt, out, wide)

    @lake_app.command("stats")
    def stats(lake: str = LAKE_OPT, top: int = typer.Option(5, "--top", help="items shown per stage")) -> None:
        """Rows per table and kind, files, bytes, and the top items by Q per stage."""
        from memory_lake import LakeError

        with one_line_errors(LakeError):
            print_stats(_open(lake), top)


def _register_history(lake_app: typer.Typer) -> None:
    """snapshots, migrate and attach: the lake's history, moving it, reading it from plain DuckDB."""

    @lake_app.command("snapshots")
    def snapshots(lake: str = LAKE_OPT, last: int = typer.Option(20, "--last", min=1, help="newest snapshots shown")) -> None:
        """List the lake's snapshots (ids and times for --as-of) and the tables each changed."""
        from memory_lake import LakeError

        with one_line_errors(LakeError):
            found = _open(lake).snapshots()
        rows = [{"snapshot": s.snapshot_id, "time": s.time.isoformat(timespec="seconds"), "changes": s.described}
                for s in found[-last:]]
        typer.echo(format_table(["snapshot", "time", "changes"], rows, wide=True, count=False))
        shown = f"the last {len(rows)} shown (--last N shows more)" if len(found) > len(rows) else "all shown"
        typer.echo(f"({len(found)} snapshots; {shown})")

    @lake_app.command("migrate")
    def migrate(old: str = typer.Argument(..., metavar="OLD"), new: str = typer.Argument(..., metavar="NEW"),
                data_path: Optional[str] = DATA_PATH_OPT) -> None:
        """Copy a lake (old directory format, or any lake) into a new DuckLake lake: every row, Q and id."""
        from memory_lake import Lake, LakeError

        with one_line_errors(LakeError):
            _, r = Lake.migrate(old, new, data_path=data_path)
        counts = ", ".join(f"{n} {table}" for table, n in r.rows.items())
        typer.echo(f"migrated {old} -> {new}: {counts}; {r.q_values} current Q values"
                   + ("; value_updates seqs renumbered (they were not distinct)" if r.renumbered else ""))

    @lake_app.command("attach")
    def attach(lake: str = LAKE_OPT) -> None:
        """Print the SQL that opens the lake in plain DuckDB (Python: duckdb 1.5.5 and the extension wheels)."""
        from memory_lake import LakeError
        from memory_lake.catalog import attach_script

        with one_line_errors(LakeError):
            typer.echo(attach_script(lake))


def expiry_line(e) -> str:
    """What --expire-older-than did, and the grace period of the files it leaves."""
    ids = f" ({e.first_expired}..{e.last_expired})" if e.snapshots else ""
    since = f"snapshot {e.oldest_kept} ({e.oldest_kept_time:%Y-%m-%d %H:%M:%S} UTC)" if e.oldest_kept is not None else "-"
    hours = f"{e.grace_s / 3600:g} h"
    return (f"expired {e.snapshots} snapshots{ids}; time travel now starts at {since}; deleted {e.files_deleted} "
            f"files unused for {hours} and {e.orphans_deleted} orphaned files (files unused for less than {hours} "
            "are deleted by a later compact)")


def _duration(text: str) -> float:
    units = {"s": 1, "m": 60, "h": 3600, "d": 86400}
    value, unit = text[:-1], text[-1:]
    try:
        return float(value) * units[unit]
    except (KeyError, ValueError):
        fail(f"--expire-older-than {text}: expected a number and a unit (s, m, h, d), e.g. 7d")


def _register_transfer(lake_app: typer.Typer) -> None:
    """export and import: move memory between lakes (cross-model transfer)."""

    @lake_app.command("export")
    def export(lake: str = LAKE_OPT, out: Path = typer.Option(..., "--out"),
               exclude_tasks: Optional[List[str]] = typer.Option(None, "--exclude-tasks", help="task ids to leave out"),
               kinds: Optional[List[str]] = typer.Option(None, "--kinds", help="item kinds to export")) -> None:
        """Export items with their Q values (e.g. a strong model's memory, test tasks filtered out)."""
        from memory_lake import LakeError

        with one_line_errors(InputError):
            item_kinds(_split(kinds))
            output_file(out)
        with one_line_errors(LakeError, InputError):
            opened = _open(lake)
            for note in export_filters(opened, _split(exclude_tasks), _split(kinds)):  # what matched nothing
                typer.echo(f"note: {note}", err=True)
            r = opened.export(out, _split(exclude_tasks), _split(kinds))
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


def render(result, fmt: str, out: Optional[Path], wide: bool = False) -> None:
    """Print (or write) a query result as an aligned table, CSV, JSON lines or Parquet; a write that
    fails is one line (the checks before passed: e.g. root on a read-only mount)."""
    try:
        _render(result, fmt, out, wide)
    except OSError as exc:
        if out is None:
            raise
        fail(write_failed("--out", out, exc))


def _render(result, fmt: str, out: Optional[Path], wide: bool) -> None:
    import pyarrow.csv as pacsv
    import pyarrow.parquet as pq

    if fmt == "parquet":
        pq.write_table(result, out)
        typer.echo(f"wrote {result.num_rows} rows to {out}")
        return
    if fmt == "csv":
        if out is None:
            pacsv.write_csv(result, sys.stdout.buffer)
            sys.stdout.buffer.flush()
            return
        with open(out, "wb") as sink:
            pacsv.write_csv(result, sink)
        return
    if fmt == "json":
        import json

        text = "\n".join(json.dumps(row, default=str) for row in result.to_pylist())
        Path(out).write_text(text + "\n") if out else typer.echo(text)
        return
    text = format_table(result.column_names, result.to_pylist(), wide=wide)
    Path(out).write_text(text + "\n") if out else typer.echo(text)


TEXT_WIDTH = 60  # a cell of free text (it has spaces: feedback, code, titles) longer than this is cut


def format_table(names: list[str], rows: list[dict], wide: bool = False, count: bool = True) -> str:
    """An aligned table. A value a user may paste (no spaces: ids, hashes, numbers, times) is never cut;
    free text longer than TEXT_WIDTH is, with "…", unless ``wide``; the last line counts the rows and
    says how many values were cut and how to see them whole."""
    cells = [[_cell(row[n], wide) for n in names] for row in rows]
    widths = [max([len(n)] + [len(r[i][0]) for r in cells]) for i, n in enumerate(names)]
    line = lambda values: "  ".join(v.ljust(w) for v, w in zip(values, widths)).rstrip()  # noqa: E731
    out = [line(names), line(["-" * w for w in widths])] + [line([text for text, _ in r]) for r in cells]
    cut = sum(was_cut for r in cells for _, was_cut in r)
    notes = [f"{len(rows)} row{'s' if len(rows) != 1 else ''}"] if count else []
    if cut:
        notes.append(f"{cut} text value{'s' if cut != 1 else ''} cut at {TEXT_WIDTH} characters: --wide shows them "
                     "whole, --format csv|json writes them whole")
    return "\n".join(out + ([f"({'; '.join(notes)})"] if notes else []))


def _cell(value, wide: bool) -> tuple[str, bool]:
    text = "NULL" if value is None else str(value).replace("\n", " ")
    if wide or len(text) <= TEXT_WIDTH or " " not in text:
        return text, False
    return text[: TEXT_WIDTH - 1] + "…", True


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
