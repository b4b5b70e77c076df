"""What `lake snapshots` and `lake query` show a user (issue 39, item 6): the tables a snapshot changed by
name and how many snapshots exist when only the last are shown; ids in a table are never cut (they are
pasted into the next query), free text is cut only without --wide and the table says so."""

from __future__ import annotations

from typer.testing import CliRunner

from cli.main import app
from memory_lake import Lake, NewItem

runner = CliRunner()


def test_snapshots_name_the_tables_they_changed_and_say_how_many_exist(tmp_path):
    root = str(tmp_path / "lake")
    with Lake.create(root, "cpu") as lake:
        for i in range(3):
            lake.append("attempts", [{"attempt_id": f"a{i}", "campaign_id": "c", "task_id": "t", "stage": 1,
                                      "iteration": i}])
        total = len(lake.snapshots())
    listed = runner.invoke(app, ["lake", "snapshots", "--lake", root, "--last", "2"])
    assert listed.exit_code == 0, listed.output
    lines = listed.stdout.splitlines()
    assert lines[2].split(None, 2)[2] == lines[3].split(None, 2)[2] == "inserted into: attempts"
    assert lines[-1] == f"({total} snapshots; the last 2 shown (--last N shows more))"
    assert "tables_inserted_into" not in listed.stdout  # DuckLake's internal ids are not shown
    everything = runner.invoke(app, ["lake", "snapshots", "--lake", root, "--last", "1000"])
    assert everything.stdout.splitlines()[-1] == f"({total} snapshots; all shown)"
    changes = [line.split(None, 2)[2] for line in everything.stdout.splitlines()[2:-1]]
    created = next(c for c in changes if c.startswith("created: "))  # the snapshot that made the lake's tables
    assert {"attempts", "items", "value_updates"} <= set(created.split("; ")[0].removeprefix("created: ").split(", "))


def test_a_table_never_cuts_an_id_and_says_when_it_cut_text(tmp_path):
    root = str(tmp_path / "lake")
    item_id = "trace/nightly-cpu-gpt-4o-mini/KB-L1/75_conv_transposed_2D_asymmetric_input_asymmetric_kernel/3"
    body = "vectorise the inner loop " * 10
    with Lake.create(root, "cpu") as lake:
        lake.add_items([NewItem(item_id=item_id, kind="experience", backend="cpu", title="t", body=body)])
    query = ["lake", "query", "--lake", root, "SELECT item_id, body FROM items WHERE kind = 'experience'"]
    shown = runner.invoke(app, query)
    assert shown.exit_code == 0, shown.output
    row = shown.stdout.splitlines()[2]
    assert row.startswith(item_id + "  ")  # whole: it can be pasted into the README's "why did Q2 move" query
    assert "…" in row and body.strip() not in row
    assert shown.stdout.splitlines()[-1] == ("(1 row; 1 text value cut at 60 characters: --wide shows them whole, "
                                             "--format csv|json writes them whole)")
    wide = runner.invoke(app, query + ["--wide"])
    assert body.strip() in wide.stdout and wide.stdout.splitlines()[-1] == "(1 row)"
