"""cli/inputs*.py: every bad input the newcomer met is refused with one line naming the option, file or
variable, before anything is created; good inputs pass. Real builds, real lakes, real files."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
import time
from datetime import datetime, timezone

import pytest

from cli import inputs, inputs_lake
from cli.inputs import InputError


def _one_line(info) -> str:
    text = str(info.value)
    assert "\n" not in text and text
    return text


# ---- settings ---------------------------------------------------------------------------------
def test_a_bad_option_value_names_the_option_not_the_environment():
    with pytest.raises(InputError) as info:
        inputs.settings(None, budget=0)
    assert _one_line(info).startswith("--budget 0: ") and "environment" not in str(info.value)


def test_a_bad_environment_value_names_the_variable(monkeypatch):
    monkeypatch.setenv("EVOKERNEL_BUDGET", "0")
    with pytest.raises(InputError, match=r"^environment: EVOKERNEL_BUDGET=0: "):
        inputs.settings(None)


def test_a_bad_config_value_names_the_file_and_key(tmp_path):
    config = tmp_path / "c.toml"
    config.write_text("latency_rounds = 1\n")
    with pytest.raises(InputError, match=rf"^{config}: latency_rounds: "):
        inputs.settings(config)
    with pytest.raises(InputError, match="--config .*: not found"):
        inputs.settings(tmp_path / "missing.toml")
    with pytest.raises(InputError, match="--config .*: is a directory"):
        inputs.settings(tmp_path)


def test_the_timing_window_reaches_the_verifier_and_a_window_under_1_ms_is_refused(tmp_path, monkeypatch):
    from evokernel.agent.runtime import verify_settings

    monkeypatch.delenv("EVOKERNEL_LATENCY_WINDOW_MS", raising=False)  # the suite's own (tests/conftest.py)
    assert verify_settings(inputs.settings(None)).window_ms == 40.0  # the verifier's default
    config = tmp_path / "c.toml"
    config.write_text("latency_window_ms = 5\n")
    assert verify_settings(inputs.settings(config)).window_ms == 5.0
    config.write_text("latency_window_ms = 0.5\n")
    with pytest.raises(InputError, match=rf"^{config}: latency_window_ms: "):
        inputs.settings(config)


def test_the_early_end_of_the_latency_rounds_can_be_switched_off_from_a_campaigns_config(tmp_path):
    from evokernel.agent.runtime import verify_settings
    from verifier.settings import VerifySettings

    assert verify_settings(inputs.settings(None)).settle_ci == VerifySettings().settle_ci  # the verifier's default
    config = tmp_path / "c.toml"
    config.write_text("latency_settle_ci = 0\n")
    assert verify_settings(inputs.settings(config)).settle_ci == 0.0  # every round played
    config.write_text("latency_settle_ci = -0.1\n")
    with pytest.raises(InputError, match=rf"^{config}: latency_settle_ci: "):
        inputs.settings(config)


def test_evokernel_home_is_accepted_and_other_unknown_variables_are_not(monkeypatch, tmp_path):
    monkeypatch.setenv("EVOKERNEL_HOME", str(tmp_path))  # what prefect.yaml's pull step reads on a worker
    assert inputs.settings(None, budget=3).budget == 3
    monkeypatch.setenv("EVOKERNEL_BUDGETT", "3")
    with pytest.raises(InputError, match="EVOKERNEL_BUDGETT: unknown setting"):
        inputs.settings(None)


# ---- builds, tasks, backends ------------------------------------------------------------------
def test_a_build_that_is_missing_or_a_file(tmp_path):
    with pytest.raises(InputError, match=r"--build .*nope: not found .*evokernel build --out"):
        inputs.build(tmp_path / "nope")
    (tmp_path / "f").write_text("x")
    with pytest.raises(InputError, match="is a file, not a build directory"):
        inputs.build(tmp_path / "f")


@pytest.mark.parametrize("content, expected", [(b"", "empty (0 bytes)"),
                                               (b"not parquet at all", "not a readable Parquet file")])
def test_an_empty_or_corrupt_manifest_is_one_line(kb_build, tmp_path, content, expected):
    import shutil

    copy = tmp_path / "build"
    shutil.copytree(kb_build.root, copy)
    (copy / "manifest.parquet").write_bytes(content)
    with pytest.raises(InputError) as info:
        inputs.build(copy)
    assert expected in _one_line(info) and "manifest.parquet" in str(info.value)


def test_unknown_task_ids_name_the_flag_and_say_how_to_list_them(kb_build):
    with pytest.raises(InputError) as info:
        inputs.task(kb_build, "L1/19_ReLU", flag="--task")
    line = _one_line(info)
    assert line.startswith("--task L1/19_ReLU: not a task of the build")
    assert "did you mean KB-L1/1_ReLU" in line and "evokernel build --list" in line
    assert inputs.task(kb_build, "KB-L1/3_Zeros").quarantined  # verify may look at a quarantined task


def test_a_campaign_refuses_quarantined_tasks(kb_build):
    assert inputs.runnable_tasks(kb_build, ["KB-L1/1_ReLU"]) == ("KB-L1/1_ReLU",)
    with pytest.raises(InputError, match=r"--tasks KB-L1/3_Zeros: quarantined in the build .*\(.+\)"):
        inputs.runnable_tasks(kb_build, ["KB-L1/3_Zeros"])


def test_unknown_backend():
    assert inputs.backend("cpu") == "cpu"
    with pytest.raises(InputError, match=r"--backend cpux: unknown backend \(known: cpu, cuda"):
        inputs.backend("cpux")


# ---- candidates -------------------------------------------------------------------------------
def test_a_candidate_that_is_a_directory_or_missing(tmp_path):
    with pytest.raises(InputError, match="is a directory; give the candidate's .py file"):
        inputs.candidate_source(tmp_path)
    with pytest.raises(InputError, match="no such file"):
        inputs.candidate_source(tmp_path / "x.py")


@pytest.mark.parametrize("content, expected", [
    (b"", "the file is empty"),
    (b"\n   \n", "the file is empty"),
    (b"import torch\nx = 1\x00\n", "line 2, column 6: a NUL byte"),
    (b"x = '\xff'\n", "not UTF-8 text (byte 0xff at offset 5)"),
])
def test_candidates_that_are_not_python_text_are_refused_up_front(tmp_path, content, expected):
    path = tmp_path / "c.py"
    path.write_bytes(content)
    with pytest.raises(InputError) as info:
        inputs.candidate_source(path)
    assert _one_line(info).startswith(f"--candidate {path}: ") and expected in str(info.value)


def test_a_python_candidate_is_read_as_is(tmp_path):
    path = tmp_path / "c.py"
    path.write_text("class ModelNew: pass\n")
    assert inputs.candidate_source(path) == "class ModelNew: pass\n"


# ---- LLM providers ----------------------------------------------------------------------------
def test_llm_specs_are_checked_without_a_request(monkeypatch, tmp_path):
    config = inputs.settings(None)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with pytest.raises(InputError, match=r"^--llm foo:bar: unknown LLM provider 'foo'"):
        inputs.llm("foo:bar", config)
    with pytest.raises(InputError, match=r"^--llm openai:gpt-4o-mini: environment variable OPENAI_API_KEY is not set"):
        inputs.llm("openai:gpt-4o-mini", config)
    with pytest.raises(InputError, match="script file .*none.json not found"):
        inputs.llm(f"scripted:{tmp_path / 'none.json'}", config)
    assert inputs.llm("scripted:demo", config).model == "scripted:demo"


# ---- lakes ------------------------------------------------------------------------------------
def test_a_lake_path_that_is_a_file_gets_advice_that_does_not_loop(tmp_path):
    (tmp_path / "f").write_text("x")
    for must_exist in (True, False):
        with pytest.raises(InputError) as info:
            inputs_lake.lake_path(tmp_path / "f", must_exist=must_exist)
        assert "is a file, not a lake" in _one_line(info) and "already exists" not in str(info.value)


@pytest.mark.parametrize("content, expected", [
    (b"garbage, not a database", "not a SQLite database"),
    (b"", "empty"),
    (None, "without DuckLake's tables"),
])
def test_a_damaged_catalog_is_named_as_damaged_not_as_existing(tmp_path, content, expected):
    catalog = tmp_path / "lake" / "catalog.sqlite"
    catalog.parent.mkdir()
    if content is None:
        sqlite3.connect(catalog).execute("CREATE TABLE t (x)").connection.commit()
    else:
        catalog.write_bytes(content)
    with pytest.raises(InputError) as info:
        inputs_lake.lake_path(catalog.parent, must_exist=False)
    assert expected in _one_line(info) and "damaged" in str(info.value) or "not a lake's catalog" in str(info.value)


def test_a_catalog_another_process_holds_locked_is_in_use_not_damaged(tmp_path):
    """A campaign stopped mid-commit (Ctrl-Z, SIGSTOP) holds its lake's catalog locked: a second command on that
    lake must not be told that the catalog is damaged and should be restored from a backup (a second start of the
    same campaign then reads "campaign X is running on HOST pid N" from its lease). Until 2026-12-03 it was, after
    10 s, in one CI run of test_agent_interrupt."""
    from memory_lake import Lake

    lake = tmp_path / "lake"
    Lake.create(lake, backend="cpu").close()
    holder = subprocess.Popen([sys.executable, "-c", (
        "import sqlite3, time\n"
        f"db = sqlite3.connect({str(lake / 'catalog.sqlite')!r}, isolation_level=None)\n"
        "db.execute('PRAGMA locking_mode = EXCLUSIVE'); db.execute('BEGIN EXCLUSIVE')\n"
        "print('held', flush=True); time.sleep(120)\n")], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        with pytest.raises(sqlite3.OperationalError, match="locked"):  # the lock is real: a reader is held off
            sqlite3.connect(f"{(lake / 'catalog.sqlite').as_uri()}?mode=ro", uri=True, timeout=0.1).execute(
                "SELECT count(*) FROM sqlite_master").fetchone()
        started = time.monotonic()
        assert inputs_lake.lake_path(lake, must_exist=True) == lake
        assert time.monotonic() - started < inputs_lake.LOCK_WAIT_S + 5
    finally:
        holder.kill()
        holder.wait()


def test_lake_paths_that_cannot_hold_a_lake(tmp_path):
    (tmp_path / "busy").mkdir()
    (tmp_path / "busy" / "notes.txt").write_text("mine")
    with pytest.raises(InputError, match="not empty and holds no lake"):
        inputs_lake.lake_path(tmp_path / "busy", must_exist=False)
    with pytest.raises(InputError, match=r"no memory lake here \(a campaign creates it"):
        inputs_lake.lake_path(tmp_path / "new", must_exist=True)
    (tmp_path / "file").write_text("x")
    with pytest.raises(InputError, match=r"cannot be created: .*file is a file"):
        inputs_lake.lake_path(tmp_path / "file" / "lake", must_exist=False)
    assert inputs_lake.lake_path(tmp_path / "new", must_exist=False) == tmp_path / "new"
    assert not (tmp_path / "new").exists()  # checking creates nothing


def _campaign_row(campaign_id: str, model: str, build_hash: str) -> dict:
    now = datetime.now(timezone.utc)
    return {"campaign_id": campaign_id, "build_hash": build_hash, "backend": "cpu", "model": model,
            "method": "evokernel", "settings_json": json.dumps({"budget": 3}), "status": "running",
            "started_at": now, "finished_at": None, "recorded_at": now}


def test_an_existing_lake_must_match_the_backend_and_a_resumed_campaign(tmp_path, kb_build):
    from memory_lake import Lake

    Lake.create(tmp_path / "cuda-lake", "cuda").close()
    with pytest.raises(InputError, match=r"--lake .*cuda-lake: a lake for backend 'cuda', but the build is for 'cpu'"):
        inputs_lake.campaign_lake(str(tmp_path / "cuda-lake"), "cpu")
    with Lake.create(tmp_path / "cpu-lake", "cpu") as lake:
        lake.append("campaigns", [_campaign_row("c1", "scripted:demo", kb_build.build_hash)])
    uri = str(tmp_path / "cpu-lake")
    inputs_lake.campaign_lake(uri, "cpu", "c1", kb_build.build_hash, "evokernel", "scripted:demo")
    inputs_lake.campaign_lake(uri, "cpu", "new-one", kb_build.build_hash, "evokernel", "openai:gpt-4o")
    with pytest.raises(InputError, match=r"--campaign-id c1: the lake's campaign has model='scripted:demo'"):
        inputs_lake.campaign_lake(uri, "cpu", "c1", kb_build.build_hash, "evokernel", "openai:gpt-4o")
    inputs_lake.known_campaigns(uri, ["c1"])
    with pytest.raises(InputError, match=r"--campaign c2: no such campaign in the lake .*\(its campaigns: c1\)"):
        inputs_lake.known_campaigns(uri, ["c1", "c2"])


def test_export_filters_that_match_nothing_are_said_and_unknown_kinds_are_errors(tmp_path):
    from memory_lake import Lake, NewItem

    with Lake.create(tmp_path / "lake", "cpu") as lake:
        lake.add_items([NewItem(kind="experience", backend="cpu", title="t", body="b", task_id="KB-L1/1_ReLU")])
        assert inputs.export_filters(lake, ["KB-L1/1_ReLU"], ["experience"]) == []
        notes = inputs.export_filters(lake, ["KB-L1/1_Relu", "L3/9_other"], ["trace"])
        assert notes == ["--kinds trace: the lake holds no item of this kind (it holds experience)",
                         "--exclude-tasks KB-L1/1_Relu: no item of the lake belongs to this task, nothing left out "
                         "for it; did you mean KB-L1/1_ReLU?",
                         "--exclude-tasks L3/9_other: no item of the lake belongs to this task, nothing left out "
                         "for it"]
        with pytest.raises(InputError, match=r"--kinds traces: not an item kind \(kinds: api_template"):
            inputs.export_filters(lake, [], ["traces"])


def test_the_cli_knows_the_lakes_item_kinds():
    from memory_lake.schema import ITEM_KINDS

    assert inputs.ITEM_KINDS == ITEM_KINDS  # kept in cli/inputs.py so the check needs no DuckDB import
