"""The embedded default's one SQLite file (every store; the server stack opens none, and adopts an
older one it finds: ``stores.with_mongo.adopt_file``): connection, schema, transactions."""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext
from pathlib import Path
from typing import Protocol

from teamlore.errors import BackendUnavailable
from teamlore.timeutil import SENTINEL_MICROS

SCHEMA_VERSION = 5

# Times are INTEGER microseconds since the epoch (UTC); open bounds hold SENTINEL_MICROS.
SCHEMA = f"""
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS counters (name TEXT PRIMARY KEY, value INTEGER NOT NULL);
INSERT OR IGNORE INTO counters VALUES ('fact_seq', 0), ('index_generation', 0),
    ('message_seq', 0), ('message_index_generation', 0);

CREATE TABLE IF NOT EXISTS channels (
    workspace TEXT NOT NULL, channel TEXT NOT NULL, name TEXT NOT NULL,
    visibility TEXT NOT NULL, platform TEXT NOT NULL,
    PRIMARY KEY (workspace, channel)
);

CREATE TABLE IF NOT EXISTS messages (
    workspace TEXT NOT NULL, channel TEXT NOT NULL, message_id TEXT NOT NULL,
    platform TEXT NOT NULL, thread_id TEXT, author_id TEXT NOT NULL, author_name TEXT NOT NULL,
    ts INTEGER NOT NULL, text TEXT NOT NULL, permalink TEXT NOT NULL, content_hash TEXT NOT NULL,
    edited_at INTEGER, deleted_at INTEGER, recorded_at INTEGER NOT NULL,
    shared_in TEXT, file_ref TEXT NOT NULL DEFAULT '',
    PRIMARY KEY (workspace, channel, message_id)
);
CREATE INDEX IF NOT EXISTS messages_author ON messages (workspace, author_id);
CREATE INDEX IF NOT EXISTS messages_time ON messages (workspace, channel, ts);
-- Files shared with a message (name, type, size, link; their content is not read).
CREATE TABLE IF NOT EXISTS message_attachments (
    workspace TEXT NOT NULL, channel TEXT NOT NULL, message_id TEXT NOT NULL, position INTEGER NOT NULL,
    name TEXT NOT NULL, mime_type TEXT NOT NULL, kind TEXT NOT NULL, size INTEGER, url TEXT NOT NULL,
    download_url TEXT NOT NULL DEFAULT '',
    PRIMARY KEY (workspace, channel, message_id, position)
);
-- What reading each shared file came to (teamlore/files/): its bytes' sha256 (the blob's name in
-- the folder beside this file), fetched | extracted | partial | failed | skipped, and why.
CREATE TABLE IF NOT EXISTS shared_files (
    workspace TEXT NOT NULL, channel TEXT NOT NULL, message_id TEXT NOT NULL, position INTEGER NOT NULL,
    name TEXT NOT NULL, sha256 TEXT NOT NULL, size INTEGER, status TEXT NOT NULL, detail TEXT NOT NULL,
    pages INTEGER NOT NULL, passages INTEGER NOT NULL, attempts INTEGER NOT NULL, at INTEGER NOT NULL,
    PRIMARY KEY (workspace, channel, message_id, position)
);
CREATE INDEX IF NOT EXISTS shared_files_blob ON shared_files (sha256);
CREATE INDEX IF NOT EXISTS shared_files_status ON shared_files (workspace, channel, status);
CREATE INDEX IF NOT EXISTS message_attachments_kind ON message_attachments (workspace, channel, kind);

-- The message search index: every text a message had, one row per version, with both time
-- axes in the columns the fact queries use (valid_from is when it was posted; valid_to stays open),
-- so one scope-and-time clause serves both. A delete or an erasure blanks every version.
CREATE TABLE IF NOT EXISTS message_versions (
    vid INTEGER PRIMARY KEY,
    workspace TEXT NOT NULL, channel TEXT NOT NULL, message_id TEXT NOT NULL, version INTEGER NOT NULL,
    thread_id TEXT, author_id TEXT NOT NULL, author_name TEXT NOT NULL, text TEXT NOT NULL,
    valid_from INTEGER NOT NULL, valid_to INTEGER NOT NULL,
    recorded_from INTEGER NOT NULL, recorded_to INTEGER NOT NULL,
    embedding_key TEXT, seq INTEGER NOT NULL,
    UNIQUE (workspace, channel, message_id, version)
);
CREATE INDEX IF NOT EXISTS message_versions_current
    ON message_versions (workspace, channel, message_id) WHERE recorded_to = {SENTINEL_MICROS};
CREATE INDEX IF NOT EXISTS message_versions_posted
    ON message_versions (workspace, channel, valid_from) WHERE recorded_to = {SENTINEL_MICROS};
-- A thread's current replies in order: a reply's passage reads the reply before it.
CREATE INDEX IF NOT EXISTS message_versions_thread
    ON message_versions (workspace, channel, thread_id, valid_from) WHERE recorded_to = {SENTINEL_MICROS};
CREATE INDEX IF NOT EXISTS message_versions_seq ON message_versions (seq);
CREATE INDEX IF NOT EXISTS message_versions_author ON message_versions (workspace, author_id);

CREATE TABLE IF NOT EXISTS fact_versions (
    vid INTEGER PRIMARY KEY,
    fact_id TEXT NOT NULL, version INTEGER NOT NULL,
    workspace TEXT NOT NULL, channel TEXT NOT NULL, thread_id TEXT,
    statement TEXT NOT NULL, content_hash TEXT NOT NULL, fact_type TEXT NOT NULL,
    entities TEXT NOT NULL, topic TEXT NOT NULL, importance REAL NOT NULL, confidence REAL NOT NULL,
    status TEXT NOT NULL, evidence TEXT NOT NULL,
    valid_from INTEGER NOT NULL, valid_to INTEGER NOT NULL,
    recorded_from INTEGER NOT NULL, recorded_to INTEGER NOT NULL,
    supersedes TEXT NOT NULL, superseded_by TEXT, origin TEXT NOT NULL, due_at INTEGER,
    embedding_key TEXT,
    seq INTEGER NOT NULL,
    UNIQUE (fact_id, version)
);
CREATE INDEX IF NOT EXISTS fact_versions_scope_time
    ON fact_versions (workspace, channel, recorded_to, valid_to);
CREATE INDEX IF NOT EXISTS fact_versions_current_hash
    ON fact_versions (workspace, channel, content_hash) WHERE recorded_to = {SENTINEL_MICROS};
CREATE INDEX IF NOT EXISTS fact_versions_seq ON fact_versions (seq);
-- A channel's current rows, newest first (the resolver's lookup by meaning reads the latest few).
CREATE INDEX IF NOT EXISTS fact_versions_current_recent
    ON fact_versions (workspace, channel, vid) WHERE recorded_to = {SENTINEL_MICROS};

-- The resolver's lookup by words: current, not retired versions only, each term prefixed with
-- its channel (``stores.embedded.subjects``), so a lookup reads one channel's current facts.
CREATE VIRTUAL TABLE IF NOT EXISTS fact_subjects USING fts5(
    terms, tokenize='unicode61 remove_diacritics 0'
);

-- Which current facts cite which message: edits and deletes start here.
CREATE TABLE IF NOT EXISTS fact_evidence (
    workspace TEXT NOT NULL, channel TEXT NOT NULL, message_id TEXT NOT NULL, fact_id TEXT NOT NULL,
    PRIMARY KEY (workspace, channel, message_id, fact_id)
);
-- A version change rewrites its fact's rows: found by fact, not by scanning every row.
CREATE INDEX IF NOT EXISTS fact_evidence_fact ON fact_evidence (fact_id);

CREATE TABLE IF NOT EXISTS embeddings (
    key TEXT PRIMARY KEY, model TEXT NOT NULL, dim INTEGER NOT NULL, vector BLOB NOT NULL
);

CREATE TABLE IF NOT EXISTS tombstones (
    workspace TEXT NOT NULL, channel TEXT NOT NULL, content_hash TEXT NOT NULL,
    reason TEXT NOT NULL, at INTEGER NOT NULL,
    PRIMARY KEY (workspace, channel, content_hash)
);

-- Possible contradictions and conflicts with a reviewer's facts, waiting for a person.
CREATE TABLE IF NOT EXISTS review_items (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    workspace TEXT NOT NULL, channel TEXT NOT NULL, kind TEXT NOT NULL,
    older_fact TEXT NOT NULL, newer_fact TEXT NOT NULL, reason TEXT NOT NULL,
    status TEXT NOT NULL DEFAULT 'open', opened_at INTEGER NOT NULL,
    closed_at INTEGER, reviewer TEXT, decision TEXT
);
CREATE INDEX IF NOT EXISTS review_items_open ON review_items (workspace, channel, status);

CREATE TABLE IF NOT EXISTS pages (
    page_id TEXT PRIMARY KEY, workspace TEXT NOT NULL, channel TEXT NOT NULL, slug TEXT NOT NULL,
    kind TEXT NOT NULL, title TEXT NOT NULL, current_version INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX IF NOT EXISTS pages_channel ON pages (workspace, channel, slug);
CREATE TABLE IF NOT EXISTS page_versions (
    page_id TEXT NOT NULL, version INTEGER NOT NULL, created_at INTEGER NOT NULL,
    sections TEXT NOT NULL, facts_seen TEXT NOT NULL, flagged TEXT,
    PRIMARY KEY (page_id, version)
);
-- The routing index: which facts belong in which section (every version, retired included).
CREATE TABLE IF NOT EXISTS page_facts (
    page_id TEXT NOT NULL, section_key TEXT NOT NULL, section_title TEXT NOT NULL,
    section_order INTEGER NOT NULL, fact_id TEXT NOT NULL,
    PRIMARY KEY (page_id, section_key, fact_id)
);
CREATE INDEX IF NOT EXISTS page_facts_fact ON page_facts (fact_id);
-- The durable dirty set: a page waiting for a rewrite, its due time and its claim (a lease).
CREATE TABLE IF NOT EXISTS dirty_pages (
    page_id TEXT PRIMARY KEY, due_at INTEGER NOT NULL, claimed_until INTEGER, claim_token TEXT
);
CREATE TABLE IF NOT EXISTS dirty_facts (
    page_id TEXT NOT NULL, fact_id TEXT NOT NULL, seq INTEGER NOT NULL,
    PRIMARY KEY (page_id, fact_id)
);
INSERT OR IGNORE INTO counters VALUES ('dirty_seq', 0);

-- Language model spend per role and model: what `teamlore status` shows.
CREATE TABLE IF NOT EXISTS llm_spend (
    role TEXT NOT NULL, model TEXT NOT NULL,
    calls INTEGER NOT NULL DEFAULT 0, failures INTEGER NOT NULL DEFAULT 0,
    fallbacks INTEGER NOT NULL DEFAULT 0, rejected INTEGER NOT NULL DEFAULT 0,
    cache_hits INTEGER NOT NULL DEFAULT 0,
    prompt_tokens INTEGER NOT NULL DEFAULT 0, completion_tokens INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (role, model)
);
-- Each model role's circuit breaker as it last changed (any process): what `teamlore status` shows.
CREATE TABLE IF NOT EXISTS llm_breakers (
    role TEXT PRIMARY KEY, state TEXT NOT NULL, failures INTEGER NOT NULL,
    changed_at INTEGER NOT NULL, retry_at INTEGER
);
-- Validated model output by prompt version, model and content hash: a re-index pays nothing.
CREATE TABLE IF NOT EXISTS llm_cache (
    key TEXT PRIMARY KEY, role TEXT NOT NULL, model TEXT NOT NULL, value TEXT NOT NULL
);
-- Idempotency keys of applied events (MessageEvent.idempotency_key); orphans are kept apart.
CREATE TABLE IF NOT EXISTS event_ledger (
    key TEXT PRIMARY KEY, outcome TEXT NOT NULL, at INTEGER NOT NULL
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS backfill_checkpoints (
    platform TEXT NOT NULL, workspace TEXT NOT NULL, channel TEXT NOT NULL,
    cursor TEXT NOT NULL, done INTEGER NOT NULL, fetched INTEGER NOT NULL, updated_at INTEGER NOT NULL,
    PRIMARY KEY (platform, workspace, channel)
);
CREATE TABLE IF NOT EXISTS api_tokens (
    token_id TEXT PRIMARY KEY, name TEXT NOT NULL, role TEXT NOT NULL, workspace TEXT NOT NULL,
    channels TEXT NOT NULL, secret_sha256 TEXT NOT NULL, created_at INTEGER NOT NULL, revoked_at INTEGER
);

-- Idempotency keys and signatures of accepted pushes, kept past the signature's window.
CREATE TABLE IF NOT EXISTS push_seen (key TEXT PRIMARY KEY, at INTEGER NOT NULL);
CREATE INDEX IF NOT EXISTS push_seen_at ON push_seen (at);

-- Append-only: ids and hashes, never message text, so erasure leaves the log whole.
CREATE TABLE IF NOT EXISTS audit_log (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    at INTEGER NOT NULL, event TEXT NOT NULL, actor TEXT NOT NULL, reason TEXT NOT NULL,
    workspace TEXT NOT NULL, channel TEXT NOT NULL,
    fact_ids TEXT NOT NULL, content_hashes TEXT NOT NULL, details TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS audit_fact (
    fact_id TEXT NOT NULL, seq INTEGER NOT NULL, PRIMARY KEY (fact_id, seq)
);
CREATE INDEX IF NOT EXISTS audit_log_by_channel ON audit_log (workspace, channel, at);
CREATE TRIGGER IF NOT EXISTS audit_log_no_update BEFORE UPDATE ON audit_log
    BEGIN SELECT RAISE(ABORT, 'audit_log is append-only'); END;
CREATE TRIGGER IF NOT EXISTS audit_log_no_delete BEFORE DELETE ON audit_log
    BEGIN SELECT RAISE(ABORT, 'audit_log is append-only'); END;
"""


_KEYWORD_INDEXES = ("fact_subjects",)


class TransactionListener(Protocol):
    """Told of each transaction boundary on a thread, so writes to another store can follow the
    SQLite file's commits and rollbacks (see ``teamlore.stores.mongo.journal``). ``depth`` is 0
    for the outermost transaction and counts savepoints inside it."""

    def begun(self, depth: int) -> None: ...

    def rolled_back(self, depth: int) -> None: ...

    def released(self, depth: int) -> None: ...

    def before_commit(self, conn: sqlite3.Connection) -> None: ...

    def committed(self) -> None: ...


def _index_stored_messages(conn: sqlite3.Connection) -> None:
    """Schema 1 -> 2: every live message stored before the message index existed becomes its
    first indexed version (keyword search at once; vectors come with ``teamlore reindex``)."""
    conn.execute(
        "INSERT INTO message_versions (workspace, channel, message_id, version, thread_id, author_id,"
        " author_name, text, valid_from, valid_to, recorded_from, recorded_to, embedding_key, seq)"
        " SELECT workspace, channel, message_id, 1, thread_id, author_id, author_name, text, ts, ?,"
        " recorded_at, ?, NULL, 0 FROM messages WHERE deleted_at IS NULL AND text != ''"
        " ORDER BY workspace, channel, ts, message_id",
        (SENTINEL_MICROS, SENTINEL_MICROS),
    )
    conn.execute("UPDATE message_versions SET seq = vid")
    conn.execute(
        "UPDATE counters SET value = (SELECT coalesce(max(vid), 0) FROM message_versions)"
        " WHERE name = 'message_seq'"
    )


def _drop_message_fts(conn: sqlite3.Connection) -> None:
    """Schema 2 -> 3: messages are ranked by keyword in memory (``stores.embedded.keywords``);
    their FTS5 table goes, with every word it held (a deleted message's included)."""
    conn.execute("DROP TABLE IF EXISTS message_fts")


def _add_file_columns(conn: sqlite3.Connection) -> None:
    """Schema 4 -> 5: a message may be a passage of a shared file (``shared_in``, ``file_ref``),
    and an attachment keeps where its bytes can be fetched (``download_url``)."""
    for table, column, kind in (
        ("messages", "shared_in", "TEXT"),
        ("messages", "file_ref", "TEXT NOT NULL DEFAULT ''"),
        ("message_attachments", "download_url", "TEXT NOT NULL DEFAULT ''"),
    ):
        if column not in {r[1] for r in conn.execute(f"PRAGMA table_info({table})")}:
            conn.execute(f"ALTER TABLE {table} ADD COLUMN {column} {kind}")


def _drop_fact_fts(conn: sqlite3.Connection) -> None:
    """Schema 3 -> 4: facts are ranked by keyword in memory too, and the resolver looks up the
    current ones in ``fact_subjects`` (filled when the fact store opens); the FTS5 table of every
    fact version goes."""
    conn.execute("DROP TABLE IF EXISTS fact_fts")


class Database:
    """One SQLite file in WAL mode. One connection per thread; writes in explicit transactions."""

    def __init__(self, path: Path | str) -> None:
        self.path = Path(path)
        self.listener: TransactionListener | None = None
        self._local = threading.local()
        self.path.parent.mkdir(parents=True, exist_ok=True)
        # executescript manages its own transaction; the schema is created all or nothing.
        self.conn.executescript(f"BEGIN IMMEDIATE;\n{SCHEMA}\nCOMMIT;")
        with self.transaction() as conn:
            found = conn.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone()
            if found is None:
                conn.execute("INSERT INTO meta VALUES ('schema_version', ?)", (str(SCHEMA_VERSION),))
            elif int(found[0]) in (1, 2, 3, 4):
                if int(found[0]) == 1:
                    _index_stored_messages(conn)
                _drop_message_fts(conn)
                _drop_fact_fts(conn)
                _add_file_columns(conn)
                conn.execute("UPDATE meta SET value = ? WHERE key = 'schema_version'", (str(SCHEMA_VERSION),))
            elif int(found[0]) != SCHEMA_VERSION:
                raise BackendUnavailable(
                    f"{self.path} has schema version {found[0]}, this Teamlore expects "
                    f"{SCHEMA_VERSION}; use a new TEAMLORE_DATA_DIR or re-import"
                )
            # After the columns exist (a migrated file gains them above).
            conn.execute(
                "CREATE INDEX IF NOT EXISTS messages_shared_in ON messages (workspace, channel, shared_in)"
                " WHERE shared_in IS NOT NULL"
            )

    @property
    def conn(self) -> sqlite3.Connection:
        conn = getattr(self._local, "conn", None)
        if conn is None:
            try:
                conn = sqlite3.connect(self.path, isolation_level=None, timeout=30.0)
            except sqlite3.Error as exc:
                raise BackendUnavailable(f"cannot open {self.path}: {exc}") from exc
            conn.row_factory = sqlite3.Row
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA synchronous=NORMAL")
            conn.execute("PRAGMA foreign_keys=ON")
            # Deleted and overwritten content is zeroed on disk, not left in free space.
            conn.execute("PRAGMA secure_delete=ON")
            conn.execute("PRAGMA cache_size=-65536")
            self._local.conn = conn
            self._local.depth = 0
            # Counters counted up inside the open transaction (name -> value), written back just
            # before it commits; a copy per open savepoint, put back if that savepoint rolls back.
            self._local.seqs = {}
            self._local.saved = []
        return conn

    def transaction(self, savepoint: bool = False) -> AbstractContextManager[sqlite3.Connection]:
        """A transaction; inside one, a savepoint when asked (a failure then undoes only its own
        writes), else simply part of the enclosing transaction, which undoes everything."""
        conn = self.conn
        if self._local.depth and not savepoint:
            # Every store write opens one: inside a transaction (an import's every write) it
            # costs no generator.
            return nullcontext(conn)
        return self._begin(conn)

    @contextmanager
    def _begin(self, conn: sqlite3.Connection) -> Iterator[sqlite3.Connection]:
        depth = self._local.depth
        name = f"sp{depth}"
        listener = self.listener
        conn.execute("BEGIN IMMEDIATE" if depth == 0 else f"SAVEPOINT {name}")
        seqs = self._local.seqs
        self._local.saved.append(dict(seqs))
        self._local.depth = depth + 1
        try:
            if listener is not None:
                listener.begun(depth)
            yield conn
            if depth == 0:
                self._write_seqs(conn)
                if listener is not None:
                    listener.before_commit(conn)
        except BaseException:
            if depth == 0:
                conn.execute("ROLLBACK")
            else:
                conn.execute(f"ROLLBACK TO {name}")
                conn.execute(f"RELEASE {name}")
            seqs.clear()
            seqs.update(self._local.saved[-1])
            if listener is not None:
                listener.rolled_back(depth)
            raise
        else:
            conn.execute("COMMIT" if depth == 0 else f"RELEASE {name}")
            if listener is not None and depth:
                listener.released(depth)
        finally:
            self._local.saved.pop()
            self._local.depth = depth
        if listener is not None and depth == 0:
            listener.committed()

    def next_seq(self, name: str = "fact_seq") -> int:
        """Count the counter ``name`` up by one; returns its new value. Inside a transaction the
        counter is read once and counted in memory, and written back just before the commit (the
        transaction holds the write lock from its start: nobody else counts meanwhile)."""
        conn = self.conn
        if not self._local.depth:
            row = conn.execute(
                "UPDATE counters SET value = value + 1 WHERE name = ? RETURNING value", (name,)
            ).fetchone()
            return int(row[0])
        seqs = self._local.seqs
        value = seqs[name] + 1 if name in seqs else self._stored(conn, name) + 1
        seqs[name] = value
        return value

    def counter(self, name: str) -> int:
        """The counter's current value (as this transaction has counted it)."""
        conn = self.conn
        return self._local.seqs.get(name) or self._stored(conn, name)

    @staticmethod
    def _stored(conn: sqlite3.Connection, name: str) -> int:
        return int(conn.execute("SELECT value FROM counters WHERE name = ?", (name,)).fetchone()[0])

    def _write_seqs(self, conn: sqlite3.Connection) -> None:
        seqs = self._local.seqs
        if seqs:
            conn.executemany(
                "UPDATE counters SET value = ? WHERE name = ?", [(v, n) for n, v in seqs.items()]
            )
            seqs.clear()

    def scrub(self) -> None:
        """After an erasure, leave no copy of deleted text in the files: merge the keyword
        indexes (FTS5 keeps a deleted row's words in its segments until they are merged),
        rewrite the file without its free space, and empty the write-ahead log (which holds
        the pages as they were before). Outside any transaction; takes the write lock."""
        conn = self.conn
        with self.transaction():
            for index in _KEYWORD_INDEXES:
                conn.execute(f"INSERT INTO {index} ({index}) VALUES ('optimize')")
        conn.execute("VACUUM")
        busy = conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()[0]
        if busy:
            raise BackendUnavailable(
                f"{self.path}: another process is reading; its write-ahead log still holds erased"
                " text: run the erasure again when it is idle"
            )

    def close(self) -> None:
        conn = getattr(self._local, "conn", None)
        if conn is not None:
            conn.close()
            self._local.conn = None
