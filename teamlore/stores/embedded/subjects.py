"""The resolver's lookup by words: the current facts of one channel that share a subject word.

Each new statement is judged against the channel's current facts that share its words
(``EmbeddedFactBackend.current_related``). Looked up in an FTS5 table of every fact version (as
until schema 4), that match scanned every version of every channel holding any of the words and
ranked them all, so each statement cost more as the store grew (1.9 ms at 10,000 facts, 16 ms at
100,000: docs/benchmarks.md). Here the table ``fact_subjects`` holds only the *current*, not retired
versions (a row goes when its version is closed, retracted, superseded or erased), and each term
is written with its channel's own prefix, so a lookup reads the posting lists of one channel's
current facts only: history and other channels cost nothing.

Terms are those of the in-memory keyword index (``teamlore.terms.Tokenizer``: FTS5's porter unicode61,
remove_diacritics 2), prefixed with a short hash of the workspace and channel; the table's own
tokenizer only splits them on spaces.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import threading
from collections.abc import Sequence

from teamlore.terms import Tokenizer
from teamlore.timeutil import SENTINEL_MICROS

TABLE = "fact_subjects"  # created with the schema (``stores.database``)
# The statuses a new statement may retire or contest.
OPEN = ("active", "contested")
_MARK = "fact_subjects_built"  # meta key: the table holds every current row written before it existed

_local = threading.local()


def _tokenizer() -> Tokenizer:
    # A stemmer must not be shared between threads.
    found = getattr(_local, "tokenizer", None)
    if found is None:
        found = _local.tokenizer = Tokenizer()
    return found


def _prefix(workspace: str, channel: str) -> str:
    digest = hashlib.blake2b(f"{workspace}\x1f{channel}".encode(), digest_size=6).hexdigest()
    return f"s{digest}x"


def terms(workspace: str, channel: str, statement: str, entities: Sequence[str]) -> str:
    """The indexed text of one version: its statement's and entities' terms, each with its
    channel's prefix."""
    prefix = _prefix(workspace, channel)
    return " ".join(prefix + t for t in _tokenizer().tokens(" ".join([statement, *entities])))


def match(workspace: str, channel: str, text: str) -> str | None:
    """The MATCH expression for a statement's subject words in one channel: any may match, bm25
    ranks; None when the text has no word."""
    found = _tokenizer().query_terms(text)
    if not found:
        return None
    prefix = _prefix(workspace, channel)
    return " OR ".join(f'"{prefix}{t}"' for t in found)


def add(
    conn: sqlite3.Connection, vid: int, workspace: str, channel: str, statement: str, entities: Sequence[str]
) -> None:
    conn.execute(
        f"INSERT INTO {TABLE} (rowid, terms) VALUES (?, ?)",
        (vid, terms(workspace, channel, statement, entities)),
    )


def drop(conn: sqlite3.Connection, vid: int) -> None:
    conn.execute(f"DELETE FROM {TABLE} WHERE rowid = ?", (vid,))


def build_once(conn: sqlite3.Connection) -> None:
    """Fill the table from the current rows of a store written before it existed (inside the
    caller's transaction); a store that has it already is left alone."""
    if conn.execute("SELECT 1 FROM meta WHERE key = ?", (_MARK,)).fetchone() is not None:
        return
    conn.execute(f"DELETE FROM {TABLE}")
    rows = conn.execute(
        "SELECT vid, workspace, channel, statement, entities FROM fact_versions"
        f" WHERE recorded_to = {SENTINEL_MICROS} AND status IN {OPEN}"
    ).fetchall()
    conn.executemany(
        f"INSERT INTO {TABLE} (rowid, terms) VALUES (?, ?)",
        ((vid, terms(ws, ch, text, json.loads(ents))) for vid, ws, ch, text, ents in rows),
    )
    conn.execute("INSERT INTO meta VALUES (?, '1')", (_MARK,))
