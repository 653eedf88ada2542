"""What the resolver's lookup by words costs per new statement as the store grows.

    python bench/candidate_lookup.py --messages 10000 80000 [--keep DIR] [--lookups 300]

For each size, imports that many synthetic messages (``bench/synthetic.py``, seed 7, the hash
embedder: words only) into a new embedded store (or opens ``DIR/<size>`` when kept from an earlier
run), then times ``current_related`` (the query ``workers.lifecycle`` runs for every new
statement) for the subject words of current statements picked at random (seed 1), p50 and p95 in
ms. Run it with ``PYTHONPATH`` on two trees, each on its own copy of a kept store, to compare.
"""

from __future__ import annotations

import argparse
import random
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from synthetic import HashEmbedder, as_items, generate  # noqa: E402

from teamlore.app import Teamlore  # noqa: E402
from teamlore.capabilities.importing import import_items  # noqa: E402
from teamlore.config import Settings  # noqa: E402
from teamlore.timeutil import SENTINEL_MICROS  # noqa: E402
from teamlore.workers.lifecycle import CANDIDATES  # noqa: E402
from teamlore.workers.resolver import candidate_terms  # noqa: E402


def _store(folder: Path, messages: int) -> Teamlore:
    fresh = not (folder / "teamlore.sqlite3").exists()
    lore = Teamlore(Settings(data_dir=folder, _env_file=None), embedder=HashEmbedder())
    if fresh:
        started = time.perf_counter()
        import_items(as_items(generate(messages, seed=7)), lore.pipeline)
        print(f"  built {messages:,} messages in {time.perf_counter() - started:,.0f} s")
    return lore


def _time(lore: Teamlore, lookups: int) -> tuple[int, int, float, float]:
    conn = lore.stores.db.conn
    versions = conn.execute("SELECT count(*) FROM fact_versions").fetchone()[0]
    rows = conn.execute(
        "SELECT workspace, channel, statement FROM fact_versions WHERE recorded_to = ?"
        " AND status IN ('active', 'contested') ORDER BY vid",
        (SENTINEL_MICROS,),
    ).fetchall()
    picked = random.Random(1).sample(rows, min(lookups, len(rows)))
    facts = lore.stores.facts
    for workspace, channel, statement in picked[:20]:  # warm the page cache
        facts.current_related(workspace, channel, candidate_terms(statement), CANDIDATES)
    spent = []
    for workspace, channel, statement in picked:
        terms = candidate_terms(statement)
        started = time.perf_counter()
        facts.current_related(workspace, channel, terms, CANDIDATES)
        spent.append((time.perf_counter() - started) * 1000)
    spent.sort()
    return versions, len(rows), spent[len(spent) // 2], spent[int(len(spent) * 0.95)]


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--messages", type=int, nargs="+", default=[10_000, 80_000])
    parser.add_argument("--keep", type=Path, default=None, help="keep (or reuse) the stores here")
    parser.add_argument("--lookups", type=int, default=300)
    args = parser.parse_args()
    print("messages | fact versions | current facts | lookup p50 ms | p95 ms")
    for size in args.messages:
        with tempfile.TemporaryDirectory(prefix="teamlore-lookup-") as tmp:
            folder = (args.keep / str(size)) if args.keep else Path(tmp)
            lore = _store(folder, size)
            try:
                versions, current, p50, p95 = _time(lore, args.lookups)
            finally:
                lore.close()
        print(f"{size:,} | {versions:,} | {current:,} | {p50:.2f} | {p95:.2f}")


if __name__ == "__main__":
    main()
