"""Stage-specific Q values: current Q = the latest value_updates row; updates append rows.

Concurrency rule (Q updates from concurrent campaigns): an update is applied to the latest Q
*read under the lake's exclusive values lock* (<root>/_values.lock), and its row is committed
before the lock is released, with ``seq`` = the lake's last seq + 1. So seq is a total order of
all updates of a lake, every update sees every earlier one (no lost update: two campaigns
rewarding the same item compose like sequential updates, Q <- Q + alpha (r - Q) applied in seq
order), and "current Q" = q_after of the highest seq. Within one call, updates apply in the
order given (an item listed twice is updated twice).
"""

from __future__ import annotations

from typing import Sequence

import duckdb

from memory_lake.errors import LakeError
from memory_lake.models import ValueUpdate
from memory_lake.sqlfiles import sql


def current_q(con: duckdb.DuckDBPyConnection, item_ids: Sequence[str], stage: int,
              q_init: float) -> dict[str, float]:
    ids = list(dict.fromkeys(item_ids))
    if not ids:
        return {}
    found = dict(con.execute(sql("current_q"), {"stage": stage, "item_ids": ids}).fetchall())
    return {i: float(found.get(i, q_init)) for i in ids}


def plan_updates(con: duckdb.DuckDBPyConnection, updates: Sequence[ValueUpdate], q_init: float) -> list[dict]:
    """The value_updates rows for ``updates``, from the current Qs and last seq visible on ``con``."""
    ids = list(dict.fromkeys(u.item_id for u in updates))
    known = {row[0] for row in con.execute(sql("known_items"), {"item_ids": ids}).fetchall()}
    missing = [i for i in ids if i not in known]
    if missing:
        raise LakeError(f"value_updates: item_id {missing[0]!r} is not in the lake")
    q = {stage: current_q(con, [u.item_id for u in updates if u.stage == stage], stage, q_init) for stage in (1, 2)}
    seq = int(con.execute(sql("max_seq")).fetchall()[0][0])
    rows = []
    for update in updates:
        before = q[update.stage][update.item_id]
        after = before + update.alpha * (update.reward - before)
        q[update.stage][update.item_id] = after
        seq += 1
        rows.append({"item_id": update.item_id, "stage": update.stage, "attempt_id": update.attempt_id,
                     "campaign_id": update.campaign_id, "reward": float(update.reward), "alpha": float(update.alpha),
                     "q_before": before, "q_after": after, "seq": seq})
    return rows
