"""Pages, their versions, the routing index and the durable dirty set, in the SQLite file."""

from __future__ import annotations

import json
import sqlite3
import uuid
from collections.abc import Iterable
from datetime import datetime, timedelta

from teamlore.page_model import PageKind, PageRef, PageVersion, Route, Section
from teamlore.stores.database import Database
from teamlore.stores.protocols import Claim, StalePage
from teamlore.timeutil import from_micros, to_micros


def _page(row: sqlite3.Row) -> PageRef:
    return PageRef(row["workspace"], row["channel"], row["slug"], PageKind(row["kind"]), row["title"])


class EmbeddedPageStore:
    def __init__(self, db: Database) -> None:
        self._db = db

    def record_routes(self, fact_id: str, routes: Iterable[Route]) -> None:
        routes = sorted(routes, key=lambda r: (r.page.page_id, r.section_key))
        with self._db.transaction() as conn:
            conn.executemany(
                "INSERT OR IGNORE INTO pages (page_id, workspace, channel, slug, kind, title)"
                " VALUES (?,?,?,?,?,?)",
                [
                    (
                        r.page.page_id,
                        r.page.workspace,
                        r.page.channel,
                        r.page.slug,
                        r.page.kind.value,
                        r.page.title,
                    )
                    for r in routes
                ],
            )
            conn.executemany(
                "INSERT OR IGNORE INTO page_facts VALUES (?,?,?,?,?)",
                [(r.page.page_id, r.section_key, r.section_title, r.order, fact_id) for r in routes],
            )

    def page(self, page_id: str) -> PageRef | None:
        row = self._db.conn.execute("SELECT * FROM pages WHERE page_id = ?", (page_id,)).fetchone()
        return None if row is None else _page(row)

    def pages(self, workspace: str, channels: Iterable[str]) -> list[tuple[PageRef, int]]:
        channels = sorted(channels)
        rows = self._db.conn.execute(
            f"SELECT * FROM pages WHERE workspace = ? AND channel IN ({','.join('?' * len(channels))})"
            " ORDER BY channel, kind, slug",
            (workspace, *channels),
        ).fetchall()
        rank = {PageKind.OVERVIEW: 0, PageKind.ROLE: 1, PageKind.TOPIC: 2, PageKind.ENTITY: 3}
        found = [(_page(r), r["current_version"]) for r in rows]
        return sorted(found, key=lambda item: (item[0].channel, rank[item[0].kind], item[0].slug))

    def sections_of(self, page_id: str) -> dict[str, tuple[str, int, list[str]]]:
        """section key -> (title, order, fact ids routed there)."""
        out: dict[str, tuple[str, int, list[str]]] = {}
        for key, title, order, fact_id in self._db.conn.execute(
            "SELECT section_key, section_title, section_order, fact_id FROM page_facts"
            " WHERE page_id = ? ORDER BY section_key, fact_id",
            (page_id,),
        ):
            out.setdefault(key, (title, order, []))[2].append(fact_id)
        return out

    def sections_holding(self, page_id: str, fact_ids: Iterable[str]) -> set[str]:
        ids = list(fact_ids)
        if not ids:
            return set()
        rows = self._db.conn.execute(
            f"SELECT DISTINCT section_key FROM page_facts WHERE page_id = ? AND fact_id IN"
            f" ({','.join('?' * len(ids))})",
            (page_id, *ids),
        ).fetchall()
        return {r[0] for r in rows}

    def current(self, page_id: str) -> PageVersion | None:
        row = self._db.conn.execute(
            "SELECT current_version FROM pages WHERE page_id = ?", (page_id,)
        ).fetchone()
        if row is None or row[0] == 0:
            return None
        return self.version(page_id, row[0])

    def version(self, page_id: str, version: int) -> PageVersion | None:
        page = self.page(page_id)
        row = self._db.conn.execute(
            "SELECT * FROM page_versions WHERE page_id = ? AND version = ?", (page_id, version)
        ).fetchone()
        if page is None or row is None:
            return None
        sections = tuple(
            Section(s["key"], s["title"], s["order"], s["body"], tuple(s["citations"]))
            for s in json.loads(row["sections"])
        )
        return PageVersion(
            page,
            version,
            from_micros(row["created_at"]),
            sections,
            tuple(json.loads(row["facts_seen"])),
            row["flagged"],
        )

    def save(self, version: PageVersion) -> None:
        """Write a new version; refused unless it follows the current one (no lost update)."""
        with self._db.transaction() as conn:
            moved = conn.execute(
                "UPDATE pages SET current_version = ? WHERE page_id = ? AND current_version = ?",
                (version.version, version.page.page_id, version.version - 1),
            ).rowcount
            if moved != 1:
                raise StalePage(f"page {version.page.page_id} moved past version {version.version - 1}")
            conn.execute(
                "INSERT INTO page_versions VALUES (?,?,?,?,?,?)",
                (
                    version.page.page_id,
                    version.version,
                    to_micros(version.created_at),
                    json.dumps(
                        [
                            {
                                "key": s.key,
                                "title": s.title,
                                "order": s.order,
                                "body": s.body,
                                "citations": list(s.citations),
                            }
                            for s in version.sections
                        ]
                    ),
                    json.dumps(list(version.facts_seen)),
                    version.flagged,
                ),
            )

    def purge_facts(self, fact_ids: Iterable[str]) -> list[str]:
        """Erasure: forget these facts on every page, with the versions that showed them.

        A page left with no facts goes entirely (its title may name the erased thing); the
        others lose their versions and start again at version 1. Returns the pages to rewrite.
        """
        ids = sorted(set(fact_ids))
        if not ids:
            return []
        marks = ",".join("?" * len(ids))
        with self._db.transaction() as conn:
            touched = [
                r[0]
                for r in conn.execute(
                    f"SELECT DISTINCT page_id FROM page_facts WHERE fact_id IN ({marks}) ORDER BY page_id",
                    ids,
                )
            ]
            conn.execute(f"DELETE FROM page_facts WHERE fact_id IN ({marks})", ids)
            conn.execute(f"DELETE FROM dirty_facts WHERE fact_id IN ({marks})", ids)
            rewrite = []
            for page_id in touched:
                conn.execute("DELETE FROM page_versions WHERE page_id = ?", (page_id,))
                left = conn.execute(
                    "SELECT 1 FROM page_facts WHERE page_id = ? LIMIT 1", (page_id,)
                ).fetchone()
                if left is None:
                    conn.execute("DELETE FROM pages WHERE page_id = ?", (page_id,))
                    conn.execute("DELETE FROM dirty_pages WHERE page_id = ?", (page_id,))
                else:
                    conn.execute("UPDATE pages SET current_version = 0 WHERE page_id = ?", (page_id,))
                    rewrite.append(page_id)
        return rewrite


class EmbeddedDirtySet:
    """page -> pending fact ids and a due time. Claims carry a lease; nothing is lost on a crash."""

    def __init__(self, db: Database) -> None:
        self._db = db

    def mark(
        self, page_ids: Iterable[str], fact_ids: Iterable[str], now: datetime, window: timedelta
    ) -> None:
        facts = sorted(set(fact_ids))
        pages = sorted(set(page_ids))
        with self._db.transaction() as conn:
            # One sequence number per mark: a claim covers every fact marked up to its own.
            seq = self._db.next_seq("dirty_seq")
            # The first mark of a burst fixes the due time: later marks join the same rewrite.
            conn.executemany(
                "INSERT OR IGNORE INTO dirty_pages (page_id, due_at) VALUES (?, ?)",
                [(page_id, to_micros(now + window)) for page_id in pages],
            )
            conn.executemany(
                "INSERT INTO dirty_facts VALUES (?, ?, ?)"
                " ON CONFLICT (page_id, fact_id) DO UPDATE SET seq = excluded.seq",
                [(page_id, fact_id, seq) for page_id in pages for fact_id in facts],
            )

    def claim_due(self, now: datetime, lease: timedelta, limit: int = 100) -> list[Claim]:
        token = uuid.uuid4().hex
        at, until = to_micros(now), to_micros(now + lease)
        with self._db.transaction() as conn:
            rows = conn.execute(
                "SELECT page_id FROM dirty_pages WHERE due_at <= ? AND (claimed_until IS NULL"
                " OR claimed_until <= ?) ORDER BY due_at, page_id LIMIT ?",
                (at, at, limit),
            ).fetchall()
            claims = []
            for (page_id,) in rows:
                conn.execute(
                    "UPDATE dirty_pages SET claimed_until = ?, claim_token = ? WHERE page_id = ?",
                    (until, token, page_id),
                )
                facts = conn.execute(
                    "SELECT fact_id, seq FROM dirty_facts WHERE page_id = ? ORDER BY fact_id", (page_id,)
                ).fetchall()
                claims.append(
                    Claim(page_id, token, tuple(f[0] for f in facts), max((f[1] for f in facts), default=0))
                )
        return claims

    def complete(self, claim: Claim, now: datetime, window: timedelta) -> bool:
        """Drop what the claim covered; facts marked meanwhile stay for the next rewrite."""
        with self._db.transaction() as conn:
            held = conn.execute(
                "SELECT 1 FROM dirty_pages WHERE page_id = ? AND claim_token = ?",
                (claim.page_id, claim.token),
            ).fetchone()
            if held is None:
                return False  # the lease ran out and someone else took the page
            conn.execute(
                "DELETE FROM dirty_facts WHERE page_id = ? AND seq <= ?", (claim.page_id, claim.max_seq)
            )
            left = conn.execute(
                "SELECT 1 FROM dirty_facts WHERE page_id = ? LIMIT 1", (claim.page_id,)
            ).fetchone()
            if left is None:
                conn.execute("DELETE FROM dirty_pages WHERE page_id = ?", (claim.page_id,))
            else:
                conn.execute(
                    "UPDATE dirty_pages SET claimed_until = NULL, claim_token = NULL, due_at = ?"
                    " WHERE page_id = ?",
                    (to_micros(now + window), claim.page_id),
                )
        return True

    def pending(self) -> list[tuple[str, datetime, int]]:
        rows = self._db.conn.execute(
            "SELECT d.page_id, d.due_at, count(f.fact_id) FROM dirty_pages d LEFT JOIN dirty_facts f"
            " ON f.page_id = d.page_id GROUP BY d.page_id ORDER BY d.due_at"
        ).fetchall()
        return [(r[0], from_micros(r[1]), r[2]) for r in rows]
