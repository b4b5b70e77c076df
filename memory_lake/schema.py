"""The lake's tables, declared once as pyarrow schemas (DESIGN.md section 5), and the DuckLake
DDL made from them.

Every user table is append-only: a row is never edited. "Current" state is derived:
the current Q of (item, stage) is its latest value_updates row; a campaign's state is its
latest campaigns row.
"""

from __future__ import annotations

import pyarrow as pa

TS = pa.timestamp("us", tz="UTC")

ITEM_KINDS = ("api_template", "experience", "trace", "best_practice")
STAGES = (1, 2)  # 1 = drafting (Q1), 2 = refining (Q2)

ITEMS = pa.schema([
    ("item_id", pa.string()),
    ("kind", pa.string()),  # one of ITEM_KINDS
    ("backend", pa.string()),
    ("task_id", pa.string()),  # null = global item
    ("category", pa.string()),  # op category, e.g. "activation", "matmul"; "general" for global items
    ("title", pa.string()),
    ("body", pa.string()),
    ("code", pa.string()),
    ("embedding_text", pa.string()),  # the text the similarity scorer indexes
    ("parent_item_id", pa.string()),  # traces: the start point this kernel refined (tree per task)
    ("feasible", pa.bool_()),  # traces: passed hack, compile and correctness
    ("latency_ms", pa.float64()),  # traces: candidate latency when measured
    ("speedup", pa.float64()),  # traces: speedup over the reference when measured
    ("source_attempt_id", pa.string()),  # provenance: the attempt that created it (null for seeds)
    ("campaign_id", pa.string()),
    ("created_at", TS),
])

ATTEMPTS = pa.schema([
    ("attempt_id", pa.string()),
    ("campaign_id", pa.string()),
    ("task_id", pa.string()),
    ("level", pa.int32()),
    ("category", pa.string()),
    ("stage", pa.int8()),
    ("iteration", pa.int32()),  # 0-based index within the task's budget
    ("method", pa.string()),  # evokernel | pass-at-k | refinement | heuristic | no-memory
    ("model", pa.string()),
    ("backend", pa.string()),
    ("start_point_item_id", pa.string()),  # refining: the trace item refined
    ("code_sha256", pa.string()),
    ("code", pa.string()),
    ("hack_passed", pa.bool_()),
    ("compile_passed", pa.bool_()),
    ("correct", pa.bool_()),
    ("latency_passed", pa.bool_()),
    ("feasible", pa.bool_()),
    ("failed_gate", pa.string()),  # null when every gate passed; "generation" when no usable kernel
    ("gates_json", pa.string()),  # [{name, passed, reason, seconds}, ...]
    ("feedback", pa.string()),
    ("candidate_ms", pa.float64()),
    ("reference_ms", pa.float64()),
    ("speedup", pa.float64()),
    ("ci_low", pa.float64()),
    ("ci_high", pa.float64()),
    ("flagged", pa.bool_()),
    # roofline position (null where no peaks were probed; added to older lakes on open, null there)
    ("bytes_moved", pa.int64()),  # inputs + outputs + parameters of one call: the lower bound of traffic
    ("flops", pa.int64()),  # FlopCounterMode on the reference + one per element of other compute ops
    ("achieved_gbs", pa.float64()),  # bytes_moved / candidate time
    ("achieved_gflops", pa.float64()),
    ("roof_gbs", pa.float64()),  # the machine's probed bandwidth at the timed window's working set
    ("memory_gbs", pa.float64()),  # the machine's probed bandwidth from memory
    ("peak_gflops", pa.float64()),  # the machine's probed FMA throughput
    ("roof_fraction", pa.float64()),  # shortest possible time / measured time (1 = on the roofline)
    ("roof_bound", pa.string()),  # memory | compute
    ("reward", pa.float64()),  # raw reward (+1/-1 drafting; paired, noise-aware tanh(log speedup ratio) or -1 refining)
    ("reward_normalized", pa.float64()),  # refining: after online normalisation; drafting: = reward
    ("input_tokens", pa.int64()),
    ("output_tokens", pa.int64()),
    ("cost_usd", pa.float64()),
    ("llm_seconds", pa.float64()),
    ("verify_seconds", pa.float64()),
    ("created_at", TS),
    ("tokens_estimated", pa.bool_()),  # the server reported no usage: token counts (and cost) are len//4 estimates
    # attribution and the value update explained (evokernel/agent/attribution.py, scoring.py); null in older rows
    ("outcome_owner", pa.string()),  # candidate | machine (machine: no reward, no value update; null = candidate)
    ("machine_reason", pa.string()),  # the machine's outcome: why (infrastructure error, "<gate> unavailable here: ...")
    ("reward_applied", pa.float64()),  # the reward the Q updates of this attempt used (value_updates.reward); null: none
    ("incumbent_speedup", pa.float64()),  # refining: the best paired speedup before this step (b in tanh(log s/b))
    ("reward_norm_mean", pa.float64()),  # refining: the normaliser's running mean and std, this reward included
    ("reward_norm_std", pa.float64()),
    ("reward_norm_count", pa.int64()),  # refining rewards of the campaign the normaliser has seen, this one included
    ("reward_rule", pa.string()),  # the reward's derivation in words and numbers
    # the latency verdict's flag as a class: clean | noisy | implausible (null: not timed; older rows: null,
    # read from feedback's "flag:" line). An implausible timing never makes a kernel the best (best_kernels.sql)
    ("timing_flag", pa.string()),
    # refining: what the raw reward was divided by, max(rms of the rewards so far, 1/3) (null: applied as is)
    ("reward_norm_scale", pa.float64()),
])

RETRIEVALS = pa.schema([
    ("attempt_id", pa.string()),
    ("item_id", pa.string()),
    ("stage", pa.int8()),
    ("rank", pa.int32()),  # 0 = first in the prompt
    ("similarity", pa.float64()),  # pool score (BM25 + feature matches)
    ("q_value", pa.float64()),  # the stage's Q at retrieval time
    ("explored", pa.bool_()),  # chosen by the epsilon branch rather than by Q
    ("strategy", pa.string()),  # value | heuristic | template
    ("created_at", TS),
])

VALUE_UPDATES = pa.schema([
    ("item_id", pa.string()),
    ("stage", pa.int8()),
    ("attempt_id", pa.string()),
    ("campaign_id", pa.string()),
    ("reward", pa.float64()),
    ("alpha", pa.float64()),
    ("q_before", pa.float64()),
    ("q_after", pa.float64()),
    ("seq", pa.int64()),  # ordering key of updates (see memory_lake docs for the concurrency rule)
    ("created_at", TS),
])

CAMPAIGNS = pa.schema([
    ("campaign_id", pa.string()),
    ("build_hash", pa.string()),
    ("backend", pa.string()),
    ("model", pa.string()),
    ("method", pa.string()),
    ("settings_json", pa.string()),
    ("status", pa.string()),  # running | finished | interrupted (Ctrl-C) | failed (a fatal error); all resumable
    ("started_at", TS),
    ("finished_at", TS),
    ("recorded_at", TS),  # the latest row per campaign_id is its current state
    ("status_reason", pa.string()),  # interrupted / failed: why, one line (added to older lakes on open, null there)
])

LLM_CALLS = pa.schema([  # every LLM call that is not an attempt (e.g. distillation), for cost accounting
    ("call_id", pa.string()),
    ("campaign_id", pa.string()),
    ("task_id", pa.string()),
    ("purpose", pa.string()),  # distill | judge | ...
    ("model", pa.string()),
    ("input_tokens", pa.int64()),
    ("output_tokens", pa.int64()),
    ("cost_usd", pa.float64()),
    ("seconds", pa.float64()),
    ("created_at", TS),
    ("tokens_estimated", pa.bool_()),  # as in attempts
    # added later (null in older rows): the model's answer, and for a distillation the items it stored
    # (0: the answer held no lesson in the expected form; such a distillation is not asked again unless
    # the settings say so: retry_empty_distillations)
    ("response", pa.string()),
    ("items_stored", pa.int64()),
])

COMPARISONS = pa.schema([  # one row per (campaign, task): its first feasible draft and best kernel timed together
    ("campaign_id", pa.string()),
    ("task_id", pa.string()),
    ("draft_attempt_id", pa.string()),  # the first feasible draft
    ("best_attempt_id", pa.string()),  # the best kernel (best_kernels.sql) when the task ended
    ("same_kernel", pa.bool_()),  # the best kernel is the draft: the ratio is exactly 1, nothing is timed
    ("ratio", pa.float64()),  # best over draft: median over rounds of the per-round ratio, both timed in the same rounds
    ("ratio_ci_low", pa.float64()),  # its 95% bootstrap interval
    ("ratio_ci_high", pa.float64()),
    ("draft_speedup", pa.float64()),  # each against the reference in the same verification (median, 95% CI)
    ("draft_ci_low", pa.float64()),
    ("draft_ci_high", pa.float64()),
    ("best_speedup", pa.float64()),
    ("best_ci_low", pa.float64()),
    ("best_ci_high", pa.float64()),
    ("draft_ms", pa.float64()),  # medians over rounds of this verification
    ("best_ms", pa.float64()),
    ("reference_ms", pa.float64()),
    ("rounds", pa.int32()),
    ("untrusted_reason", pa.string()),  # the machine disturbed too many rounds: the ratio is not one to learn from
    ("failed_reason", pa.string()),  # a candidate did not pass again, or the machine failed: no ratio
    ("outcome_owner", pa.string()),  # candidate | machine (as attempts.outcome_owner)
    ("seconds", pa.float64()),
    ("created_at", TS),
])

TABLES: dict[str, pa.Schema] = {
    "items": ITEMS,
    "attempts": ATTEMPTS,
    "retrievals": RETRIEVALS,
    "value_updates": VALUE_UPDATES,
    "campaigns": CAMPAIGNS,
    "llm_calls": LLM_CALLS,
    "comparisons": COMPARISONS,
}
# Tables added after the lake format was set: a lake created before gets them (empty) when opened.
ADDED_TABLES = ("comparisons",)

# --- Internal tables (memory_lake's own; users may query them but should not write them) ---
# docs and postings are written in the same transaction as the items they describe.

DOCS = pa.schema([  # one row per item: the narrow columns retrieval filters and BM25 normalises on
    ("item_id", pa.string()),
    ("kind", pa.string()),
    ("backend", pa.string()),
    ("task_id", pa.string()),
    ("category", pa.string()),
    ("doc_len", pa.int32()),  # tokens in the item's embedding text
])

POSTINGS = pa.schema([  # one row per (term, item): the inverted index BM25 is computed from in SQL
    ("term", pa.string()),
    ("item_id", pa.string()),
    ("tf", pa.int32()),
    ("doc_len", pa.int32()),
    ("kind", pa.string()),
    ("backend", pa.string()),
    ("category", pa.string()),
])

# Champion lists (rebuilt by compaction): per (term, kind) the postings with the highest BM25 term
# weight, at most CHAMPIONS_K of them, over the postings data files listed in champion_sources.
# Retrieval reads these instead of those files (see retrieval.py).
CHAMPIONS = POSTINGS
CHAMPION_SOURCES = pa.schema([("data_file", pa.string())])

# The Q-update clock: one row whose seq is the last value_updates seq; every Q-update transaction
# rewrites it, so two concurrent ones conflict in DuckLake and one retries (see values.py).
VALUE_CLOCK = pa.schema([("seq", pa.int64())])

LAKE_META = pa.schema([  # one row, written with the tables: the lake exists once it is committed
    ("format", pa.int32()),
    ("backend", pa.string()),
    ("q_init", pa.float64()),
    ("created_at", TS),
])

INTERNAL_TABLES: dict[str, pa.Schema] = {"docs": DOCS, "postings": POSTINGS, "champions": CHAMPIONS,
                                         "champion_sources": CHAMPION_SOURCES, "value_clock": VALUE_CLOCK,
                                         "lake_meta": LAKE_META}
ALL_TABLES: dict[str, pa.Schema] = {**TABLES, **INTERNAL_TABLES}

# Tables read file by file with row-group pruning (keyed_reads.py): their rows are never inlined
# into the catalog, and their files are sorted by the key retrieval looks them up by.
FILE_TABLES = {"items": "item_id", "docs": "item_id", "postings": "term", "champions": "term"}
# Rows per Parquet row group: small enough that id and term filters prune most of a big file.
# (DuckDB writes at least one vector, 2,048 rows, per row group: smaller settings have no effect.)
ROW_GROUP_ROWS = {"postings": 16_384, "champions": 4_096, "items": 2_048, "docs": 16_384}
# Parquet codec of the tables retrieval decodes on its hot path (default snappy elsewhere): a point
# read of an item decodes its whole 2,048-row group; with LZ4_RAW five such reads take 5.0 ms
# against 9.9 ms with snappy (1M-item lake, file 5% larger), and 30 champion groups 8.1 against
# 10.7 ms. zstd was 6.1 ms with a file 36% smaller (benchmarks/lake_scale measures retrieval).
PARQUET_COMPRESSION = {"items": "lz4_raw", "champions": "lz4_raw"}

_DUCK_TYPES = {pa.string(): "VARCHAR", pa.int8(): "TINYINT", pa.int32(): "INTEGER", pa.int64(): "BIGINT",
               pa.float64(): "DOUBLE", pa.bool_(): "BOOLEAN", TS: "TIMESTAMPTZ"}


def column_type(table: str, column: str) -> str:
    """The DuckDB type of one lake column."""
    return _DUCK_TYPES[ALL_TABLES[table].field(column).type]


def create_table_sql(table: str) -> str:
    """CREATE TABLE for one lake table, its columns and types from the pyarrow schema."""
    columns = ", ".join(f"{f.name} {_DUCK_TYPES[f.type]}" for f in ALL_TABLES[table])
    return f"CREATE TABLE IF NOT EXISTS {table} ({columns})"
