"""A child process for durability tests: appends or updates in a loop, printing what committed.

    python lake_writer.py append ROOT TAG BATCHES ROWS   -> prints "committed <i>" after each batch
    python lake_writer.py update ROOT ITEM_ID COUNT      -> prints "updated <i>" after each update
    python lake_writer.py compact-kill ROOT STEP         -> compacts, SIGKILLs itself at STEP
"""

from __future__ import annotations

import os
import signal
import sys

from memory_lake import Lake, ValueUpdate
from memory_lake.compaction import compact


def main(argv: list[str]) -> None:
    mode, root = argv[0], argv[1]
    lake = Lake.open(root)
    if mode == "append":
        tag, batches, rows = argv[2], int(argv[3]), int(argv[4])
        for b in range(batches):
            lake.append("attempts", [{"attempt_id": f"{tag}-{b}-{r}", "code": "x" * 200} for r in range(rows)])
            print(f"committed {b}", flush=True)
    elif mode == "update":
        item_id, count = argv[2], int(argv[3])
        for i in range(count):
            lake.update_values([ValueUpdate(item_id, 1, 1.0 if i % 2 else -1.0, 0.5, f"{os.getpid()}-{i}")])
            print(f"updated {i}", flush=True)
    elif mode == "compact-kill":
        target = argv[2]

        def step(name: str) -> None:
            if name == target:
                os.kill(os.getpid(), signal.SIGKILL)

        compact(lake.storage, on_step=step)
        print("finished", flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
