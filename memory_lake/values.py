"""Stage-specific Q values: current Q = the latest value_updates row; updates append rows.

Concurrency (campaigns on several machines updating the same items). DuckLake's transactions
alone do not serialise "read the latest Q, insert the next row": concurrent inserts never
conflict, so two writers can both build on the same Q and one update is lost (measured here:
7 of 60). So every Q-update transaction also rewrites the one row of the internal table
``value_clock`` (the last seq): it reads the clock and the current Qs, appends its rows with
seq = clock + 1, clock + 2, ... and moves the clock, all in one DuckLake transaction. Two
transactions that overlap both delete the clock row, and DuckLake's optimistic concurrency
control rejects the second commit ("another transaction has deleted from it"); the loser rolls
back and runs again from the start, now reading the winner's Qs. Hence:

* no lost update: a committed update was computed from every update committed before it;
* one total order: seq is gapless and follows commit order (one sequence for the whole lake,
  so also one per (item, stage)); q_before of each row is q_after of the row before it (of an
  item's first row of a stage: the update's ``prior``, else the lake's q_init);
* nothing to leak: no lock is held outside the transaction, so a writer killed at any point
  leaves either its whole transaction or nothing, and no one waits for it. The same holds for
  a SQLite catalog (one machine) and a PostgreSQL catalog (many), data local or on S3.

Readers cache current Qs per (item, stage) and catch up with ``seq > last seen``: as seq follows
commit order, rows committed later always carry higher seqs, so the cache is exact.
Within one call, updates apply in the order given (an item listed twice is updated twice).
"""

from __future__ import annotations

import threading
from typing import Sequence

import duckdb
import pyarrow as pa

from memory_lake.engine import transaction
from memory_lake.errors import LakeError
from memory_lake.models import ValueUpdate
from memory_lake.rows import to_table
from memory_lake.sqlfiles import sql


def q_step(q: float, reward: float, alpha: float) -> float:
    """The update rule (paper Eq. 4): Q <- Q + alpha (r - Q), a constant-step average of rewards."""
    return q + alpha * (reward - q)


def current_q(con: duckdb.DuckDBPyConnection, item_ids: Sequence[str], stage: int,
              q_init: float) -> dict[str, float]:
    """Latest Q per item for one stage, read on ``con`` (items without updates: q_init)."""
    ids = list(dict.fromkeys(item_ids))
    if not ids:
        return {}
    found = dict(con.execute(sql("current_q"), {"stage": stage, "item_ids": ids}).fetchall())
    return {i: float(found.get(i, q_init)) for i in ids}


def plan_updates(con: duckdb.DuckDBPyConnection, updates: Sequence[ValueUpdate], q_init: float,
                 clock: int) -> list[dict]:
    """The value_updates rows for ``updates``, from the Qs visible on ``con`` and the clock."""
    ids = list(dict.fromkeys(u.item_id for u in updates))
    known = {row[0] for row in con.execute(sql("known_items"), {"item_ids": ids}).fetchall()}
    missing = [i for i in ids if i not in known]
    if missing:
        raise LakeError(f"value_updates: item_id {missing[0]!r} is not in the lake")
    q: dict[int, dict[str, float]] = {}
    for stage in (1, 2):
        wanted = list(dict.fromkeys(u.item_id for u in updates if u.stage == stage))
        q[stage] = dict(con.execute(sql("current_q"), {"stage": stage, "item_ids": wanted}).fetchall()) if wanted else {}
    rows, seq = [], clock
    for update in updates:
        # an item's first update of a stage starts from the caller's prior for it, else the lake's q_init
        before = q[update.stage].get(update.item_id, q_init if update.prior is None else update.prior)
        after = q_step(before, update.reward, update.alpha)
        q[update.stage][update.item_id] = after
        seq += 1
        rows.append({"item_id": update.item_id, "stage": update.stage, "attempt_id": update.attempt_id,
                     "campaign_id": update.campaign_id, "reward": float(update.reward), "alpha": float(update.alpha),
                     "q_before": before, "q_after": after, "seq": seq})
    return rows


def apply_updates(con: duckdb.DuckDBPyConnection, updates: Sequence[ValueUpdate], q_init: float) -> list[dict]:
    """Apply Q <- Q + alpha (r - Q) in one clock transaction (retried on conflict); its rows."""
    return transaction(con, lambda c: _commit_rows(c, lambda clock: plan_updates(c, updates, q_init, clock)))


def set_values(con: duckdb.DuckDBPyConnection, wanted: Sequence[tuple[str, int, float]], attempt_id: str | None,
               q_init: float) -> list[dict]:
    """Record given Qs (import, migration) as value_updates rows, under the same clock rule."""

    def plan(c: duckdb.DuckDBPyConnection, clock: int) -> list[dict]:
        before = {stage: current_q(c, [i for i, s, _ in wanted if s == stage], stage, q_init) for stage in (1, 2)}
        return [{"item_id": item_id, "stage": stage, "attempt_id": attempt_id, "q_before": before[stage][item_id],
                 "q_after": q, "seq": clock + k + 1} for k, (item_id, stage, q) in enumerate(wanted)]

    return transaction(con, lambda c: _commit_rows(c, lambda clock: plan(c, clock)))


def append_history(con: duckdb.DuckDBPyConnection, rows: pa.Table) -> None:
    """Append value_updates rows that carry their own seqs (migration, hand-made lakes): they must
    follow the lake's last seq; the clock moves to their highest seq in the same transaction."""

    def body(c: duckdb.DuckDBPyConnection) -> None:
        clock = read_clock(c)
        seqs = rows.column("seq").to_pylist()
        if min(seqs) <= clock or len(set(seqs)) != len(seqs):
            raise LakeError(f"value_updates: seq values must be distinct and above the lake's last seq {clock}")
        _insert(c, rows)
        _move_clock(c, max(seqs))

    transaction(con, body)


def read_clock(con: duckdb.DuckDBPyConnection) -> int:
    return int(con.execute(sql("value_clock")).fetchall()[0][0])


def _commit_rows(con: duckdb.DuckDBPyConnection, plan) -> list[dict]:
    clock = read_clock(con)
    rows = plan(clock)
    if rows:
        _insert(con, to_table("value_updates", rows))
        _move_clock(con, rows[-1]["seq"])  # last statement: a SQLite catalog is locked from here to COMMIT
    return rows


def _insert(con: duckdb.DuckDBPyConnection, data: pa.Table) -> None:
    con.register("_value_rows", data)
    try:
        con.execute("INSERT INTO value_updates SELECT * FROM _value_rows")
    finally:
        con.unregister("_value_rows")


def _move_clock(con: duckdb.DuckDBPyConnection, seq: int) -> None:
    con.execute("UPDATE value_clock SET seq = $seq", {"seq": int(seq)})


class QCache:
    """Current Qs of every updated (item, stage), caught up incrementally by seq (see module doc)."""

    def __init__(self, q_init: float) -> None:
        self.q_init = q_init
        self.last_seq = 0
        self._q: dict[tuple[str, int], float] = {}
        self._lock = threading.Lock()

    def catch_up(self, con: duckdb.DuckDBPyConnection) -> None:
        rows = con.execute(sql("q_since"), {"seq": self.last_seq}).fetchall()
        with self._lock:
            for item_id, stage, q, seq in rows:
                self._q[(item_id, int(stage))] = float(q)
                self.last_seq = max(self.last_seq, int(seq))

    def get(self, item_ids: Sequence[str], stage: int, default: float | None = None) -> dict[str, float]:
        """Current Qs; items never updated at this stage get ``default`` (None: the lake's q_init)."""
        fallback = self.q_init if default is None else default
        with self._lock:
            return {i: self._q.get((i, stage), fallback) for i in dict.fromkeys(item_ids)}
