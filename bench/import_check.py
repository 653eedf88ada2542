"""Import end state and import profile: the same synthetic import, dumped or profiled.

``dump``: import N synthetic messages (``bench/synthetic.py``, seeded) with the hash embedder, a
fixed hash secret and a clock that follows the history (each batch recorded a minute after its
newest message), so two trees given the same input must leave the same rows; then write every
row of the tables an import fills to a JSON file. ``compare``: say which tables differ between
two dumps, and show the first differing rows.

``profile``: the same import under cProfile, with every SQL statement timed (execute and fetch,
grouped by statement text), printed as the top functions and the top statements.

Run:  PYTHONPATH=<tree> python bench/import_check.py dump OUT.json [--messages 3000]
      python bench/import_check.py compare A.json B.json
      PYTHONPATH=<tree> python bench/import_check.py profile [--messages 3000] [--top 40]
"""

from __future__ import annotations

import argparse
import cProfile
import functools
import json
import pstats
import re
import sqlite3
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from synthetic import Clock, HashEmbedder, as_items, generate  # noqa: E402

from teamlore import __file__ as teamlore_path  # noqa: E402
from teamlore.app import Teamlore  # noqa: E402
from teamlore.capabilities.importing import ImportSummary, import_items  # noqa: E402
from teamlore.config import Settings  # noqa: E402

# Every table an import writes, ordered by a key that does not depend on write order where the
# table has none of its own (rowids are compared too: they should be the same).
TABLES = {
    "fact_versions": "vid",
    "fact_evidence": "workspace, channel, message_id, fact_id",
    "fact_subjects": "rowid",
    "audit_log": "seq",
    "audit_fact": "fact_id, seq",
    "pages": "page_id",
    "page_facts": "page_id, section_key, fact_id",
    "dirty_pages": "page_id",
    "dirty_facts": "page_id, fact_id",
    "counters": "name",
    "review_items": "id",
    "tombstones": "workspace, channel, content_hash",
    "event_ledger": "key",
    "messages": "workspace, channel, message_id",
    "message_versions": "vid",
    "embeddings": "key",
}


def run_import(data_dir: Path, messages: int, seed: int) -> tuple[Teamlore, ImportSummary]:
    events = generate(messages, seed=seed)
    clock = Clock(events[0].ts)
    settings = Settings(data_dir=data_dir, hash_secret="bench-import-check", _env_file=None)
    lore = Teamlore(settings, embedder=HashEmbedder(), clock=clock)
    return lore, import_items(as_items(events, clock), lore.pipeline)


def _rows(conn: sqlite3.Connection, tables: dict[str, str], label: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {}
    for table, order in tables.items():
        column = "rowid, terms" if table == "fact_subjects" else "*"
        rows = conn.execute(f"SELECT {column} FROM {table} ORDER BY {order}").fetchall()
        out[table + label] = [[c.hex() if isinstance(c, bytes) else c for c in r] for r in rows]
    return out


def dump(out: Path, messages: int, seed: int) -> None:
    """The rows the import leaves; then the same events again (must change nothing); then every
    dirty page rewritten (``flush``), and the page versions that leaves."""
    with tempfile.TemporaryDirectory(prefix="teamlore-check-") as tmp:
        lore, summary = run_import(Path(tmp), messages, seed)
        conn = sqlite3.connect(Path(tmp) / "teamlore.sqlite3")
        tables = _rows(conn, TABLES)
        again = import_items(as_items(generate(messages, seed=seed)), lore.pipeline)
        after = _rows(conn, TABLES)
        changed = [t for t in TABLES if after[t] != tables[t]]
        report = lore.wiki.flush(limit=10_000, everything=True)
        flushed = {"page_versions": "page_id, version", "dirty_pages": "page_id", "dirty_facts": "page_id"}
        tables.update(_rows(conn, flushed, " after the flush"))
        conn.close()
        lore.close()
    tables["summary"] = [[summary.facts_created, sorted(summary.outcomes.items())]]
    tables["re-import"] = [[again.facts_created, sorted(again.outcomes.items()), changed]]
    tables["flush"] = [[report.pages_rewritten, report.writer_calls, report.lost_leases]]
    out.write_text(json.dumps(tables))
    print(f"teamlore from {Path(teamlore_path).parent}")
    print(f"{out}: " + ", ".join(f"{t} {len(rows):,}" for t, rows in tables.items()))
    print(f"re-import: {again.facts_created} facts, {dict(again.outcomes)}, changed: {changed or 'nothing'}")


def compare(a: Path, b: Path) -> int:
    left, right = json.loads(a.read_text()), json.loads(b.read_text())
    differing = 0
    for table in sorted(set(left) | set(right)):
        x, y = left.get(table, []), right.get(table, [])
        if x == y:
            print(f"same       {table}: {len(x):,} rows")
            continue
        differing += 1
        print(f"DIFFERENT  {table}: {len(x):,} rows vs {len(y):,}")
        for i, (rx, ry) in enumerate(zip(x, y, strict=False)):
            if rx != ry:
                print(f"  first difference at row {i}:\n    {rx}\n    {ry}")
                break
    return 1 if differing else 0


_STATS: dict[str, list[float]] = defaultdict(lambda: [0, 0.0])


@functools.lru_cache(maxsize=4096)
def _key(sql: str) -> str:
    return re.sub(r"\s+", " ", re.sub(r"\(\?(,\?)*\)", "(?…)", sql)).strip()[:110]


class _TimedCursor(sqlite3.Cursor):
    key = ""

    def fetchall(self) -> list[Any]:
        started = time.perf_counter()
        try:
            return super().fetchall()
        finally:
            _STATS[self.key][1] += time.perf_counter() - started

    def fetchone(self) -> Any:
        started = time.perf_counter()
        try:
            return super().fetchone()
        finally:
            _STATS[self.key][1] += time.perf_counter() - started


class _TimedConnection(sqlite3.Connection):
    def _timed(self, method: str, sql: str, params: Any) -> sqlite3.Cursor:
        cursor = self.cursor(_TimedCursor)
        cursor.key = _key(sql)
        started = time.perf_counter()
        try:
            return getattr(cursor, method)(sql, params)  # type: ignore[no-any-return]
        finally:
            entry = _STATS[cursor.key]
            entry[0] += 1
            entry[1] += time.perf_counter() - started

    def execute(self, sql: str, params: Any = (), /) -> sqlite3.Cursor:  # type: ignore[override]
        return self._timed("execute", sql, params)

    def executemany(self, sql: str, params: Any, /) -> sqlite3.Cursor:  # type: ignore[override]
        return self._timed("executemany", sql, params)


def profile(messages: int, seed: int, top: int, save: Path | None) -> None:
    sqlite3.connect = functools.partial(sqlite3.connect, factory=_TimedConnection)  # type: ignore[assignment]
    with tempfile.TemporaryDirectory(prefix="teamlore-profile-") as tmp:
        profiler = cProfile.Profile()
        started = time.perf_counter()
        profiler.enable()
        lore, summary = run_import(Path(tmp), messages, seed)
        profiler.disable()
        wall = time.perf_counter() - started
        lore.close()
    print(f"{messages:,} messages in {wall:.1f} s ({messages / wall:,.0f} msg/s under the profiler);")
    print(f"facts created {summary.facts_created:,}; outcomes {dict(summary.outcomes)}")
    if save is not None:
        profiler.dump_stats(str(save))
    stats = pstats.Stats(profiler)
    stats.sort_stats("cumulative").print_stats(top)
    total = sum(t for _, t in _STATS.values())
    print(f"SQL: {total:.1f} s in all ({total / wall:.0%} of wall time); by statement:")
    for key, (calls, seconds) in sorted(_STATS.items(), key=lambda kv: -kv[1][1])[:top]:
        print(f"{seconds:7.2f} s {seconds / wall:5.1%} {int(calls):8,} calls  {key}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    d = sub.add_parser("dump")
    d.add_argument("out", type=Path)
    p = sub.add_parser("profile")
    p.add_argument("--top", type=int, default=40)
    p.add_argument("--save", type=Path, default=None, help="write the cProfile for python -m pstats")
    for each in (d, p):
        each.add_argument("--messages", type=int, default=3_000)
        each.add_argument("--seed", type=int, default=7)
    c = sub.add_parser("compare")
    c.add_argument("a", type=Path)
    c.add_argument("b", type=Path)
    args = parser.parse_args()
    if args.command == "dump":
        dump(args.out, args.messages, args.seed)
    elif args.command == "compare":
        sys.exit(compare(args.a, args.b))
    else:
        profile(args.messages, args.seed, args.top, args.save)


if __name__ == "__main__":
    main()
