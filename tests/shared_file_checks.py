"""What the platforms' shared-file tests look at the same way (issue 21): the wiki's lines of a
statement, the web wiki's page of a passage, the bytes kept beside the SQLite file, and what
erasure leaves of a file's passages. Each platform's test shares its files through its own fake."""

from __future__ import annotations

from typing import Any

from teamlore.app import Teamlore
from teamlore.domain import Scope

from . import files_made as made
from .web_server import serving

# A second version of tests.test_shared_files.BUDGET_PAGES says another budget on page 2, and
# another person's file says something else altogether (the erasure control).
NEWER = "55 thousand"
VENDOR_PAGES = ["The Falcon badge vendor is Initech."]


def newer_pages(pages: list[str]) -> list[str]:
    return [page.replace("40 thousand", NEWER) for page in pages]


def blob_names(lore: Teamlore) -> list[str]:
    """The sha256 names of the bytes kept in the folder beside the SQLite file."""
    blobs = lore.settings.db_path.with_name(lore.settings.db_path.stem + ".blobs")
    return sorted(p.name for p in blobs.rglob("*") if p.is_file())


def wiki_lines(lore: Teamlore, scope: Scope, needle: str) -> list[str]:
    """Every line of every wiki page in the scope that says ``needle``, pages written first."""
    lore.wiki.flush(everything=True)
    pages = [lore.pages.get(p.page.slug, scope).markdown for p in lore.pages.list(scope)]
    return [line for page in pages for line in page.splitlines() if needle in line]


def passage_rows(lore: Teamlore, shared_in: str) -> list[tuple[str, str, str]]:
    """(text, author name, file ref) of every stored passage of the message ``shared_in``."""
    rows = lore.stores.db.conn.execute(
        "SELECT text, author_name, file_ref FROM messages WHERE shared_in = ?", (shared_in,)
    ).fetchall()
    return [(r[0], r[1], r[2]) for r in rows]


def web_message_page(lore: Teamlore, workspace: str, channel: str, message_id: str) -> Any:
    """The web wiki's page of one message (a passage's source page), read with a reader's token."""
    import httpx

    from teamlore.web import create_app
    from teamlore.web.auth import TOKEN_COOKIE

    token = lore.access.create("reader", "reader", workspace, [channel])[1]
    with (
        serving(create_app(lore, flush_pages=False)) as url,
        httpx.Client(base_url=url, cookies={TOKEN_COOKIE: token}, timeout=30) as wiki,
    ):
        return wiki.get(f"/wiki/{channel}/messages/{message_id}")


# The Office files every platform shares (as tests.test_shared_files' Slack test does): name, mime
# type and bytes, and what `teamlore media` says of each.
OFFICE_FILES: list[tuple[str, str, bytes]] = [
    ("notes.docx", made.DOCX_MIME, made.docx(["The Falcon vendor is Globex."], "Vendors")),
    (
        "plan.xlsx",
        made.XLSX_MIME,
        made.xlsx(
            {
                "Budget": [["Item", "Cost"], ["Badges", 300]],
                "Headcount": [["Team", "People"], ["Falcon platform team", 7]],
            }
        ),
    ),
    (
        "roadmap.pptx",
        made.PPTX_MIME,
        made.pptx([("Intro", "Welcome"), ("Q3", "Falcon ships in September.")]),
    ),
]
OFFICE_MEDIA = {
    "notes.docx": ("extracted", "docx: 1 passage"),
    "plan.xlsx": ("extracted", "xlsx: 2 sheets, 2 passages"),
    "roadmap.pptx": ("extracted", "pptx: 2 slides, 2 passages"),
}


def check_office_files_read(lore: Teamlore, scope: Scope) -> None:
    """The Office files were read with their statuses, and search cites the section, sheet, slide."""
    refs = lore.search_media_references(scope, "application")  # every mime type says so
    assert {ref.name: (ref.status, ref.detail) for ref in refs} == OFFICE_MEDIA

    def cited(query: str) -> set[str]:
        result = lore.reader.search(query, scope, k=3)
        return {s.file_ref for hit in result.hits for s in hit.sources}

    assert "notes.docx, § Vendors" in cited("Falcon vendor Globex")
    assert "plan.xlsx, sheet Headcount" in cited("Falcon platform team people")
    assert "roadmap.pptx, slide 2" in cited("Falcon ships in September")
