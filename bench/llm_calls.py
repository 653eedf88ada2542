"""Model calls and tokens per 1,000 messages, for extraction and page writing, on the sample
workspace against the scripted OpenAI-compatible server of the tests (counts, not quality).

    python bench/llm_calls.py [--window 30] [--batch 20] [--extract-window 900]

Three runs over teamlore/samples/acme.jsonl, each on a fresh store:
- import: the whole file as ``teamlore import`` ingests it (batches of 256 events, messages
  extracted per thread and time window), then one flush of every dirty page;
- live: the same messages one at a time, the clock at each message's time, a flush after each
  (as beat would), so page rewrites collapse within the debounce window;
- re-index of every channel of the imported store: what a re-index costs with the cache.
Tokens are the scripted server's estimate (4 characters a token, prompt and answer), the same
for every run. The script checks that the page writer made exactly one model call per dirty page
flushed (pages whose affected sections hold no live fact need no call, and are counted apart).
"""

from __future__ import annotations

import argparse
import platform
import sys
import tempfile
from datetime import timedelta
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))
sys.path.insert(0, str(ROOT))

from synthetic import HashEmbedder  # noqa: E402

from teamlore.app import Teamlore  # noqa: E402
from teamlore.capabilities.importing import import_items  # noqa: E402
from teamlore.capabilities.reindex import reindex_channel  # noqa: E402
from teamlore.config import Settings  # noqa: E402
from teamlore.connectors.events_file import read_events_file  # noqa: E402
from teamlore.workers.pipeline import ingest  # noqa: E402
from tests.llm_server import ScriptedModel  # noqa: E402

SAMPLE = ROOT / "teamlore" / "samples" / "acme.jsonl"


class Clock:
    def __init__(self) -> None:
        self.now = None

    def __call__(self):
        return self.now


class CountingWriter:
    """Counts the maintainer's writer calls (one per dirty page flushed) around the model writer."""

    def __init__(self, inner) -> None:
        self.inner, self.calls, self.nothing_live = inner, 0, 0

    def write(self, page, sections):
        self.calls += 1
        self.nothing_live += not any(s.live for s in sections)
        return self.inner.write(page, sections)


def _open(folder: Path, model: ScriptedModel, clock: Clock, args) -> Teamlore:
    settings = Settings(
        data_dir=folder,
        _env_file=None,
        wiki_window_s=args.window,
        llm_base_url=model.url,
        llm_extract_batch_messages=args.batch,
        llm_extract_window_s=args.extract_window,
    )
    lore = Teamlore(settings, embedder=HashEmbedder(), clock=clock)
    lore.wiki.writer = CountingWriter(lore.wiki.writer)
    return lore


def _spend(lore: Teamlore) -> dict[str, tuple[int, int, int, int]]:
    return {
        r.role: (r.calls, r.prompt_tokens, r.completion_tokens, r.cache_hits)
        for r in lore.stores.spend.totals()
    }


def _row(name: str, messages: int, before: dict, lore: Teamlore, pages: int) -> dict:
    after = _spend(lore)
    delta = {
        role: tuple(a - b for a, b in zip(after.get(role, (0,) * 4), before.get(role, (0,) * 4), strict=True))
        for role in ("extract", "write", "judge")
    }
    return {"run": name, "messages": messages, "spend": delta, "pages": pages}


def run(args) -> list[dict]:
    events = [item.event for item in read_events_file(SAMPLE, 40_000)]
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        model = ScriptedModel()
        try:
            clock = Clock()
            clock.now = events[-1].ts + timedelta(days=1)
            lore = _open(Path(tmp) / "import", model, clock, args)
            summary = import_items(read_events_file(SAMPLE, 40_000), lore.pipeline)
            flushed = lore.wiki.flush(everything=True)
            rows.append(_row("import", summary.taken, {}, lore, flushed.writer_calls))
            _check(model, lore, "import")

            before, writes_before = _spend(lore), len(model.chats("write"))
            channels = {(e.workspace, e.channel) for e in events}
            reindexed = sum(reindex_channel(ws, ch, lore.pipeline).messages for ws, ch in sorted(channels))
            rewritten = lore.wiki.flush(everything=True)
            rows.append(_row("re-index", reindexed, before, lore, rewritten.writer_calls))
            assert len(model.chats("write")) - writes_before <= rewritten.writer_calls
            lore.close()

            live = _open(Path(tmp) / "live", model, clock, args)
            writes_before = len(model.chats("write"))
            pages = 0
            for event in events:
                clock.now = event.ts
                ingest([event], live.pipeline)
                pages += live.wiki.flush().writer_calls
            clock.now = events[-1].ts + timedelta(seconds=args.window + 1)
            pages += live.wiki.flush().writer_calls
            rows.append(_row("live", len(events), {}, live, pages))
            _check(model, live, "live", writes_before)
            live.close()
        finally:
            model.close()
    return rows


def _check(model: ScriptedModel, lore: Teamlore, name: str, writes_before: int = 0) -> None:
    """One model call per dirty page flushed; a page whose prompt was answered before (the same
    sections and live facts) is served from the cache, and one with nothing live needs no call."""
    writer = lore.wiki.writer
    model_calls = len(model.chats("write")) - writes_before
    hits = _spend(lore).get("write", (0,) * 4)[3]
    assert model_calls + hits == writer.calls - writer.nothing_live, (name, model_calls, hits, writer.calls)
    print(
        f"{name}: page-writer model calls {model_calls} + cache hits {hits} == dirty pages flushed "
        f"{writer.calls} - pages with nothing live {writer.nothing_live}",
    )


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--window", type=float, default=30.0, help="Wiki debounce window, seconds.")
    parser.add_argument("--batch", type=int, default=20, help="TEAMLORE_LLM_EXTRACT_BATCH_MESSAGES.")
    parser.add_argument("--extract-window", type=float, default=900.0, help="TEAMLORE_LLM_EXTRACT_WINDOW_S.")
    args = parser.parse_args()
    rows = run(args)
    print(f"machine: {platform.machine()}, Python {platform.python_version()}, {platform.system()}")
    print(
        f"wiki window {args.window:g} s, extraction batch {args.batch}, "
        f"extraction window {args.extract_window:g} s"
    )
    print(
        "| run | messages | extraction calls /1k | extraction tokens in+out /1k | page-writer calls /1k "
        "| page-writer tokens in+out /1k | judge calls /1k | dirty pages flushed |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for r in rows:
        k = 1000 / r["messages"]
        e, w, j = r["spend"]["extract"], r["spend"]["write"], r["spend"]["judge"]
        print(
            f"| {r['run']} | {r['messages']} | {e[0] * k:.0f} | {e[1] * k:,.0f} + {e[2] * k:,.0f} "
            f"| {w[0] * k:.0f} | {w[1] * k:,.0f} + {w[2] * k:,.0f} | {j[0] * k:.0f} | {r['pages']} |"
        )


if __name__ == "__main__":
    main()
