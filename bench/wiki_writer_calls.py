"""Page-writer calls per 1,000 messages, replaying a history as if it arrived live.

    python bench/wiki_writer_calls.py [--window 30] [--synthetic 20000]

Messages are ingested one by one with the clock at each message's time, and the maintainer
flushes after every message (as a beat every few seconds would): a burst of messages touching a
page within the debounce window collapses into one writer call. The sample workspace uses the
bundled offline embedder; the synthetic history uses bench/synthetic.py's HashEmbedder (the
embedder does not change routing or the number of rewrites).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from datetime import timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from synthetic import HashEmbedder, generate  # noqa: E402

from teamlore.app import Teamlore  # noqa: E402
from teamlore.config import Settings  # noqa: E402
from teamlore.connectors.events_file import read_events_file  # noqa: E402
from teamlore.wiki.writer import TemplateWriter  # noqa: E402
from teamlore.workers.pipeline import ingest  # noqa: E402

SAMPLE = Path(__file__).resolve().parent.parent / "teamlore" / "samples" / "acme.jsonl"


class Clock:
    def __init__(self) -> None:
        self.now = None

    def __call__(self):
        return self.now


class CountingWriter(TemplateWriter):
    def __init__(self) -> None:
        self.calls = 0

    def write(self, page, sections):
        self.calls += 1
        return super().write(page, sections)


def replay(events, window_s: float, embedder=None) -> dict[str, float]:
    clock, writer = Clock(), CountingWriter()
    with tempfile.TemporaryDirectory() as folder:
        settings = Settings(data_dir=Path(folder), wiki_window_s=window_s, _env_file=None)
        lore = Teamlore(settings, clock=clock, writer=writer, **({"embedder": embedder} if embedder else {}))
        rewritten = 0
        started = time.perf_counter()
        for event in events:
            clock.now = event.ts
            ingest([event], lore.pipeline)
            rewritten += lore.wiki.flush().pages_rewritten
        clock.now = events[-1].ts + timedelta(seconds=window_s + 1)
        rewritten += lore.wiki.flush().pages_rewritten
        seconds = time.perf_counter() - started
        lore.close()
    per_k = 1000 / len(events)
    return {
        "messages": len(events),
        "writer_calls": writer.calls,
        "per_1000": writer.calls * per_k,
        "pages_rewritten": rewritten,
        "seconds": seconds,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--window", type=float, default=30.0, help="Debounce window, seconds.")
    parser.add_argument("--synthetic", type=int, default=20_000, help="Synthetic messages (0 to skip).")
    args = parser.parse_args()
    rows = [("sample workspace", replay([i.event for i in read_events_file(SAMPLE, 40_000)], args.window))]
    if args.synthetic:
        rows.append(
            (f"synthetic {args.synthetic:,}", replay(generate(args.synthetic), args.window, HashEmbedder()))
        )
    print("| history | messages | writer calls | per 1,000 messages | pages rewritten | window |")
    print("|---|---|---|---|---|---|")
    for name, r in rows:
        print(
            f"| {name} | {r['messages']:,} | {r['writer_calls']:,} | {r['per_1000']:.0f} | "
            f"{r['pages_rewritten']:,} | {args.window:g} s |"
        )


if __name__ == "__main__":
    main()
