"""A child process for durability tests: writes to a lake in a loop, printing what committed.

    python lake_writer.py append ROOT TAG BATCHES ROWS   -> prints "committed <i>" after each batch
    python lake_writer.py update ROOT ITEM_ID COUNT      -> prints "updated <i>" after each update
    python lake_writer.py compact ROOT COUNT             -> prints "open", compacts COUNT times ("compacted <i>")
    python lake_writer.py share ROOT TAG OTHER ITEM_ID COUNT
        -> COUNT times: add an item tagged TAG and reward the shared item; then retrieve until an
           item tagged OTHER (written by a concurrent process) is found: prints "saw <item id>"
"""

from __future__ import annotations

import os
import sys
import time

from memory_lake import Lake, NewItem, RetrievalRequest, ValueUpdate


def share(lake: Lake, tag: str, other: str, item_id: str, count: int) -> None:
    for i in range(count):
        lake.add_items([NewItem("experience", "cpu", f"{tag} note {i}", f"tag{tag} kernel note {i}")])
        lake.update_values([ValueUpdate(item_id, 1, 1.0 if i % 2 else -1.0, 0.5, f"{tag}-{i}")])
        print(f"updated {i}", flush=True)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        req = RetrievalRequest(f"{tag}-look", None, f"tag{other}", None, "cpu", 1, n=1, epsilon=0.0,
                               strategy="heuristic", include_templates=False)
        found = [r for r in lake.retrieve(req, record=False) if r.title.startswith(f"{other} ")]
        if found:
            print(f"saw {found[0].item_id}", flush=True)
            return
        time.sleep(0.2)
    raise SystemExit(f"{tag}: never saw an item of {other}")


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
    elif mode == "compact":
        print("open", flush=True)
        for i in range(int(argv[2])):
            lake.compact()
            print(f"compacted {i}", flush=True)
    elif mode == "share":
        share(lake, argv[2], argv[3], argv[4], int(argv[5]))


if __name__ == "__main__":
    main(sys.argv[1:])
