"""Pages, their versions and the routing index in MongoDB: the same contract as the embedded store.

A save writes the version document first, under a fresh token, then moves the page's pointer
in one conditional update (``current_version`` v-1 -> v, token pushed). That update is the
commit: a second writer of the same version fails it and gets ``StalePage``; a save that dies
between the two leaves an unreferenced version document and the page as it was.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable
from typing import Any

from pymongo import ASCENDING

from teamlore.page_model import PageKind, PageRef, PageVersion, Route, Section
from teamlore.stores.mongo.codec import Op, time_of, times
from teamlore.stores.mongo.journal import WriteJournal
from teamlore.stores.mongo.runtime import Db, Document, MongoRuntime
from teamlore.stores.protocols import StalePage

_RANK = {PageKind.OVERVIEW: 0, PageKind.ROLE: 1, PageKind.TOPIC: 2, PageKind.ENTITY: 3}


def _page(doc: dict[str, Any]) -> PageRef:
    return PageRef(doc["workspace"], doc["channel"], doc["slug"], PageKind(doc["kind"]), doc["title"])


class MongoPageStore:
    def __init__(self, runtime: MongoRuntime, journal: WriteJournal) -> None:
        self._rt, self._journal = runtime, journal

    def record_routes(self, fact_id: str, routes: Iterable[Route]) -> None:
        for r in sorted(routes, key=lambda r: (r.page.page_id, r.section_key)):
            page = r.page
            new_page: dict[str, Any] = {
                "workspace": page.workspace,
                "channel": page.channel,
                "slug": page.slug,
                "kind": page.kind.value,
                "title": page.title,
                "current_version": 0,
                "tokens": [],
            }
            self._journal.write(
                Op("pages", "update_one", {"_id": page.page_id}, {"$setOnInsert": new_page}, upsert=True)
            )
            # Keyed by its identity, so a route recorded again is a cheap upsert on _id.
            route_id = f"{page.page_id}\x1f{r.section_key}\x1f{fact_id}"
            route = {
                "page_id": page.page_id,
                "section_key": r.section_key,
                "fact_id": fact_id,
                "section_title": r.section_title,
                "section_order": r.order,
            }
            self._journal.write(
                Op("page_routes", "update_one", {"_id": route_id}, {"$setOnInsert": route}, upsert=True)
            )

    def _page_doc(self, page_id: str) -> dict[str, Any] | None:
        return self._rt.run(lambda db: db["pages"].find_one({"_id": page_id}))

    def page(self, page_id: str) -> PageRef | None:
        doc = self._page_doc(page_id)
        return None if doc is None else _page(doc)

    def pages(self, workspace: str, channels: Iterable[str]) -> list[tuple[PageRef, int]]:
        query = {"workspace": workspace, "channel": {"$in": sorted(channels)}}
        docs = self._rt.run(lambda db: db["pages"].find(query).to_list())
        found = [(_page(d), int(d["current_version"])) for d in docs]
        return sorted(found, key=lambda item: (item[0].channel, _RANK[item[0].kind], item[0].slug))

    def sections_of(self, page_id: str) -> dict[str, tuple[str, int, list[str]]]:
        """section key -> (title, order, fact ids routed there)."""

        async def find(db: Db) -> list[Document]:
            cursor = db["page_routes"].find({"page_id": page_id})
            return await cursor.sort([("section_key", ASCENDING), ("fact_id", ASCENDING)]).to_list()

        out: dict[str, tuple[str, int, list[str]]] = {}
        for d in self._rt.run(find):
            out.setdefault(d["section_key"], (d["section_title"], d["section_order"], []))[2].append(
                d["fact_id"]
            )
        return out

    def sections_holding(self, page_id: str, fact_ids: Iterable[str]) -> set[str]:
        ids = list(fact_ids)
        if not ids:
            return set()
        # find, not distinct: nx-27017 ignores a distinct's filter when it holds $in.
        query = {"page_id": page_id, "fact_id": {"$in": ids}}
        rows = self._rt.run(lambda db: db["page_routes"].find(query, {"section_key": 1}).to_list())
        return {r["section_key"] for r in rows}

    def current(self, page_id: str) -> PageVersion | None:
        doc = self._page_doc(page_id)
        if doc is None or doc["current_version"] == 0:
            return None
        return self._version(doc, doc["current_version"])

    def version(self, page_id: str, version: int) -> PageVersion | None:
        doc = self._page_doc(page_id)
        return None if doc is None else self._version(doc, version)

    def _version(self, page_doc: dict[str, Any], version: int) -> PageVersion | None:
        tokens = page_doc.get("tokens") or []
        if not 1 <= version <= min(len(tokens), page_doc["current_version"]):
            return None
        row = self._rt.run(lambda db: db["page_versions"].find_one({"_id": tokens[version - 1]}))
        if row is None:
            return None
        sections = tuple(
            Section(s["key"], s["title"], s["order"], s["body"], tuple(s["citations"]))
            for s in row["sections"]
        )
        created_at = time_of(row, "created_at")
        assert created_at is not None
        return PageVersion(
            _page(page_doc), version, created_at, sections, tuple(row["facts_seen"]), row.get("flagged")
        )

    def save(self, version: PageVersion) -> None:
        """Write a new version; refused unless it follows the current one (no lost update)."""
        page_id, token = version.page.page_id, uuid.uuid4().hex
        doc = {
            "_id": token,
            "page_id": page_id,
            "version": version.version,
            **times(created_at=version.created_at),
            "sections": [
                {
                    "key": s.key,
                    "title": s.title,
                    "order": s.order,
                    "body": s.body,
                    "citations": list(s.citations),
                }
                for s in version.sections
            ],
            "facts_seen": list(version.facts_seen),
            "flagged": version.flagged,
        }

        async def commit(db: Db) -> bool:
            await db["page_versions"].insert_one(doc)
            moved = await db["pages"].update_one(
                {"_id": page_id, "current_version": version.version - 1},
                {"$set": {"current_version": version.version}, "$push": {"tokens": token}},
            )
            if moved.modified_count != 1:
                await db["page_versions"].delete_one({"_id": token})
                return False
            return True

        if not self._rt.run(commit):
            raise StalePage(f"page {page_id} moved past version {version.version - 1}")

    def purge_facts(self, fact_ids: Iterable[str]) -> list[str]:
        """Erasure: forget these facts on every page, with the versions that showed them.

        A page left with no facts goes entirely (its title may name the erased thing); the
        others lose their versions and start again at version 1. Returns the pages to rewrite.
        (The dirty set is not here: a pending mark for an erased fact or page rewrites nothing.)
        """
        ids = sorted(set(fact_ids))
        if not ids:
            return []

        async def routes_of_touched(db: Db) -> dict[str, set[str]]:
            hits = await db["page_routes"].find({"fact_id": {"$in": ids}}, {"page_id": 1}).to_list()
            touched = sorted({h["page_id"] for h in hits})
            rows = (
                await db["page_routes"]
                .find({"page_id": {"$in": touched}}, {"page_id": 1, "fact_id": 1})
                .to_list()
            )
            out: dict[str, set[str]] = {page_id: set() for page_id in touched}
            for r in rows:
                out[r["page_id"]].add(r["fact_id"])
            return out

        routed = self._rt.run(routes_of_touched)
        self._journal.write(Op("page_routes", "delete_many", {"fact_id": {"$in": ids}}))
        rewrite = []
        for page_id in sorted(routed):
            self._journal.write(Op("page_versions", "delete_many", {"page_id": page_id}))
            if routed[page_id] - set(ids):
                self._journal.write(
                    Op(
                        "pages",
                        "update_one",
                        {"_id": page_id},
                        {"$set": {"current_version": 0, "tokens": []}},
                    )
                )
                rewrite.append(page_id)
            else:
                self._journal.write(Op("pages", "delete_many", {"_id": page_id}))
        return rewrite
