"""Input fuzzing (issue 16): thousands of generated events through the real CLI and the real push.

    python bench/fuzz_events.py [--lines 6000] [--pushes 2500]

The shapes are tests/hostile_events.py's (Hypothesis strategies, derandomized): good events mixed
with events refused by validation (lone surrogates, control characters, out-of-range times, wrong
types, oversized fields) and lines refused as JSON (nesting past the recursion limit, numbers of
thousands of digits, NaN, bytes that are not UTF-8). Two runs:

- an events file of ``--lines`` lines through ``teamlore import --json`` in a subprocess: the exit
  code, one stderr line per bad line naming it, no traceback, every good event in the SQLite file;
- ``--pushes`` signed push bodies to a uvicorn server: the status each must get (200, 400 or 422),
  never a 500, every event of an accepted body stored, nothing of a refused one.

Prints the counts; exits 1 if any expectation failed.
"""

from __future__ import annotations

import argparse
import json
import os
import sqlite3
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import httpx  # noqa: E402
from hypothesis import HealthCheck, Phase, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from teamlore.app import Teamlore  # noqa: E402
from teamlore.capabilities.push import sign  # noqa: E402
from teamlore.config import Settings  # noqa: E402
from teamlore.web import create_app  # noqa: E402
from tests.hostile_events import (  # noqa: E402
    GOOD,
    MAX_CHARS,
    Shape,
    event_shapes,
    expected_push_status,
    good_event,
    push_body,
    shapes,
)
from tests.web_server import serving  # noqa: E402

SECRET = "fuzz-secret"


def generate(strategy: st.SearchStrategy, count: int) -> list:
    drawn: list = []
    if count <= 0:
        return drawn

    @settings(
        max_examples=count,
        derandomize=True,
        database=None,
        deadline=None,
        phases=[Phase.generate],
        suppress_health_check=list(HealthCheck),
    )
    @given(strategy)
    def collect(value) -> None:
        drawn.append(value)

    collect()
    return drawn


def stored_ids(db: Path) -> set[tuple[str, str]]:
    conn = sqlite3.connect(db)
    try:
        return set(conn.execute("SELECT channel, message_id FROM messages"))
    finally:
        conn.close()


def fuzz_import(lines: list[Shape], folder: Path) -> tuple[str, bool]:
    path = folder / "fuzz.jsonl"
    path.write_bytes(b"\n".join(line.raw for line in lines) + b"\n")
    env = {
        **os.environ,
        "TEAMLORE_DATA_DIR": str(folder / "cli"),
        "TEAMLORE_MAX_MESSAGE_CHARS": str(MAX_CHARS),
    }
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "teamlore.cli", "import", str(path), "--json"],
        capture_output=True,
        text=True,
        env=env,
        timeout=7_200,
    )
    seconds = time.perf_counter() - started
    bad = {f"fuzz.jsonl:{n}" for n, line in enumerate(lines, start=1) if line.verdict != GOOD}
    good = {(line.channel, line.message_id) for line in lines if line.verdict == GOOD}
    stderr = [line for line in done.stderr.splitlines() if line.strip()]  # the progress bar leaves one blank
    named = [line.removeprefix("skipped ").split(": ", 1)[0] for line in stderr]
    summary = json.loads(done.stdout) if done.stdout.strip().startswith("{") else {}
    stored = good & stored_ids(folder / "cli" / "teamlore.sqlite3")
    checks = {
        "exit code 2": done.returncode == 2,
        "no traceback": "Traceback" not in done.stderr,
        "one stderr line per bad line, naming it": len(named) == len(bad) and set(named) == bad,
        "taken = good lines": summary.get("taken") == len(good),
        "skipped = bad lines": summary.get("skipped") == len(bad),
        "every good event stored": stored == good,
    }
    if not all(checks.values()):
        (Path(tempfile.gettempdir()) / "teamlore-fuzz-import.stderr").write_text(
            done.stderr
        )  # kept for the post-mortem
    report = (
        f"events file: {len(lines):,} lines ({len(good):,} good, {len(bad):,} bad) through `teamlore import`"
        f" in {seconds:.0f} s: exit {done.returncode}; taken {summary.get('taken')}, skipped "
        f"{summary.get('skipped')}; stderr lines {len(stderr):,}; good stored {len(stored):,}/{len(good):,}; "
        f"tracebacks {done.stderr.count('Traceback')}"
    )
    return _with_checks(report, checks)


def fuzz_push(bodies: list[list[Shape]], folder: Path) -> tuple[str, bool]:
    config = Settings(
        data_dir=folder / "push", max_message_chars=MAX_CHARS, push_secret=SECRET, _env_file=None
    )
    lore = Teamlore(config)
    statuses: Counter[int] = Counter()
    wrong: list[str] = []
    accepted_events = 0
    started = time.perf_counter()
    with serving(create_app(lore, flush_pages=False)) as url, httpx.Client(base_url=url, timeout=120) as http:
        for number, items in enumerate(bodies):
            body = push_body(items)
            stamp = str(int(time.time()))
            headers = {
                "Content-Type": "application/json",
                "X-Teamlore-Timestamp": stamp,
                "X-Teamlore-Signature": sign(SECRET, stamp, body),
                "Idempotency-Key": f"fuzz-{number}",
            }
            response = http.post("/api/push", content=body, headers=headers)
            statuses[response.status_code] += 1
            expected = expected_push_status(items)
            shape_ok = response.status_code == 200 or _error_shaped(response)
            if response.status_code != expected or not shape_ok:
                wrong.append(
                    f"body {number}: {response.status_code} (expected {expected}): {response.text[:120]}"
                )
            if response.status_code == 200:
                accepted_events += len(items)
    seconds = time.perf_counter() - started
    stored = stored_ids(folder / "push" / "teamlore.sqlite3")
    lore.close()
    accepted = {
        (i.channel, i.message_id) for items in bodies if expected_push_status(items) == 200 for i in items
    }
    refused = {
        (i.channel, i.message_id)
        for items in bodies
        if expected_push_status(items) != 200
        for i in items
        if i.verdict == GOOD
    }
    events = sum(len(items) for items in bodies)
    checks = {
        "every status as expected": not wrong,
        "no 500": statuses[500] == 0,
        "every event of an accepted body stored": accepted <= stored,
        "nothing of a refused body stored": not (refused & stored),
    }
    by_status = ", ".join(f"{code}: {count:,}" for code, count in sorted(statuses.items()))
    report = (
        f"push: {len(bodies):,} signed bodies carrying {events:,} events in {seconds:.0f} s: {by_status}; "
        f"events accepted {accepted_events:,}, stored {len(accepted & stored):,}; good events in refused "
        f"bodies stored {len(refused & stored)}"
    )
    for line in wrong[:5]:
        report += f"\n  {line}"
    return _with_checks(report, checks)


def _error_shaped(response: httpx.Response) -> bool:
    try:
        return set(response.json()) == {"error", "status"}
    except ValueError:  # a plain-text 500
        return False


def _with_checks(report: str, checks: dict[str, bool]) -> tuple[str, bool]:
    failed = [name for name, ok in checks.items() if not ok]
    return report + ("\n  FAILED: " + "; ".join(failed) if failed else "\n  all checks passed"), not failed


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--lines", type=int, default=6_000, help="Lines in the generated events file.")
    parser.add_argument("--pushes", type=int, default=2_500, help="Signed push bodies sent.")
    args = parser.parse_args()
    started = time.perf_counter()
    # The first line is good: a file whose first lines are all bad is refused whole, by design.
    lines = [*generate(good_event(), 1), *generate(shapes(good_weight=1), args.lines - 1)]
    bodies = generate(
        st.one_of(
            st.lists(event_shapes(), min_size=1, max_size=4), st.lists(shapes(), min_size=1, max_size=4)
        ),
        args.pushes,
    )
    verdicts = Counter(line.verdict for line in lines)
    print(
        f"generated in {time.perf_counter() - started:.0f} s: {len(lines):,} lines ({dict(verdicts)}), "
        f"{len(bodies):,} push bodies",
        flush=True,
    )
    ok = True
    with tempfile.TemporaryDirectory(prefix="teamlore-fuzz-") as tmp:
        runs = [lambda: fuzz_import(lines, Path(tmp))] + (
            [lambda: fuzz_push(bodies, Path(tmp))] if bodies else []
        )
        for run in runs:
            report, passed = run()
            print(report, flush=True)
            ok = ok and passed
    events = len(lines) + sum(len(items) for items in bodies)
    verdict = "OK" if ok else "FAILED"
    print(f"total: {events:,} generated events in {time.perf_counter() - started:.0f} s; {verdict}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
