"""Shared files' bytes (issue 21, item 1): a folder beside the SQLite file in the embedded default,
GridFS in MongoDB in the server stack (``stores.mongo.blobs``). The same rules on both (a blob is
named by its sha256, kept once, read back only whole and only when it matches its hash, deleted
by name), then a file shared in Slack through the server configuration: its bytes in GridFS and
none in the data folder, gone after the sharer's erasure while another person's file stays."""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from pymongo import MongoClient

from teamlore.app import Teamlore
from teamlore.config import Settings
from teamlore.errors import BackendUnavailable
from teamlore.stores.embedded.files import FolderBlobStore
from teamlore.stores.mongo.blobs import CHUNK_BYTES, CHUNKS, FILES, MongoBlobStore
from teamlore.stores.mongo.runtime import MongoRuntime
from teamlore.stores.protocols import BlobStore

from . import files_made as made
from .conftest import _double_fact_stores
from .fake_slack import TEAM, TOKEN, FakeSlack
from .mongo_server import drop_database, fresh_database
from .test_shared_files import BUDGET_PAGES, Chat, facts_found

BIG = bytes(range(256)) * (2 * CHUNK_BYTES // 256 + 7)  # three chunks, the last one short


class Kind:
    """One blob store and a way to damage what it holds, as a crash or a bad disk would."""

    def __init__(self, store: BlobStore, tear: Any) -> None:
        self.store, self.tear = store, tear


@pytest.fixture(params=["folder", "gridfs"])
def kind(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Kind]:
    if request.param == "folder":
        store = FolderBlobStore(tmp_path / "store.blobs")

        def tear_folder(sha: str) -> None:
            path = tmp_path / "store.blobs" / sha[:2] / sha
            path.write_bytes(path.read_bytes()[:-1])

        yield Kind(store, tear_folder)
        return
    url, name = request.getfixturevalue("nx_server"), fresh_database()
    runtime = MongoRuntime(url, name, 5.0)
    client: MongoClient = MongoClient(url)

    def tear_gridfs(sha: str) -> None:
        client[name][CHUNKS].delete_one({"files_id": sha, "n": 1})

    try:
        yield Kind(MongoBlobStore(runtime), tear_gridfs)
    finally:
        runtime.close()
        client.close()
        drop_database(url, name)


def test_a_blob_reads_back_whole_by_its_sha256(kind: Kind) -> None:
    sha = kind.store.put(BIG)
    assert sha == hashlib.sha256(BIG).hexdigest()
    assert kind.store.get(sha) == BIG
    assert kind.store.put(b"") == hashlib.sha256(b"").hexdigest()
    assert kind.store.get(hashlib.sha256(b"").hexdigest()) == b""


def test_the_same_bytes_put_twice_are_kept_once_and_deleted_once(kind: Kind) -> None:
    first, second = kind.store.put(BIG), kind.store.put(BIG)
    other = kind.store.put(b"another file")
    assert first == second
    assert kind.store.delete([first, first]) == 1
    with pytest.raises(BackendUnavailable, match="is not in"):
        kind.store.get(first)
    assert kind.store.get(other) == b"another file"  # control: the blob not named stays
    assert kind.store.delete([first]) == 0


def test_a_damaged_blob_is_refused_not_read_short(kind: Kind) -> None:
    sha = kind.store.put(BIG)
    intact = kind.store.put(b"an intact file")
    kind.tear(sha)
    with pytest.raises(BackendUnavailable, match="does not match its hash"):
        kind.store.get(sha)
    assert kind.store.get(intact) == b"an intact file"  # control: the same store, a blob not torn


def test_a_name_that_is_no_sha256_is_refused(kind: Kind) -> None:
    with pytest.raises(ValueError, match="not a sha256"):
        kind.store.get("../../etc/passwd")
    with pytest.raises(ValueError, match="not a sha256"):
        kind.store.delete(["x" * 64])


def test_gridfs_a_put_cut_short_is_unreadable_until_put_again(nx_server: str) -> None:
    name = fresh_database()
    runtime = MongoRuntime(nx_server, name, 5.0)
    client: MongoClient = MongoClient(nx_server)
    try:
        store = MongoBlobStore(runtime)
        sha = store.put(BIG)
        client[name][FILES].delete_one({"_id": sha})  # as if the process died before the last write
        client[name][CHUNKS].delete_one({"files_id": sha, "n": 2})
        with pytest.raises(BackendUnavailable, match="is not in"):
            store.get(sha)

        assert store.put(BIG) == sha
        assert store.get(sha) == BIG
        chunks = sorted(doc["n"] for doc in client[name][CHUNKS].find({"files_id": sha}))
        assert chunks == [0, 1, 2]  # no chunk twice
        record = client[name][FILES].find_one({"_id": sha})
        assert record is not None and record["length"] == len(BIG) and record["filename"] == sha
    finally:
        runtime.close()
        client.close()
        drop_database(nx_server, name)


@pytest.fixture
def slack() -> Iterator[FakeSlack]:
    with FakeSlack() as fake:
        fake.add_channel("C1", "eng")
        yield fake


def test_the_server_stack_keeps_a_shared_files_bytes_in_gridfs_and_erasure_removes_them(
    tmp_path: Path, embedder: Any, clock: Any, slack: FakeSlack, nx_server: str
) -> None:
    name = fresh_database()
    settings = Settings(
        data_dir=tmp_path / "store",
        slack_bot_token=TOKEN,
        slack_api_url=slack.base_url,
        mongo_url=nx_server,
        mongo_db=name,
        _env_file=None,
    )
    lore = Teamlore(settings, embedder=embedder, clock=clock, fact_store=_double_fact_stores())
    client: MongoClient = MongoClient(nx_server)
    try:
        chat = Chat(lore, slack)
        report = made.pdf(BUDGET_PAGES)
        kept = b"Falcon glossary: a kickoff is the first meeting of a project.\n"
        chat.post(
            1,
            "Here is the Falcon report.",
            user="U2",
            files=[slack.share("F1", "report.pdf", made.PDF_MIME, report)],
        )
        chat.post(
            2, "And the glossary.", user="U1", files=[slack.share("F2", "glossary.txt", "text/plain", kept)]
        )
        assert any("40 thousand" in h.fact.statement for h in facts_found(lore, "Falcon launch budget", "C1"))
        in_gridfs = {doc["_id"] for doc in client[name][FILES].find({}, {"_id": 1})}
        assert in_gridfs == {hashlib.sha256(report).hexdigest(), hashlib.sha256(kept).hexdigest()}
        folder = settings.db_path.with_name(settings.db_path.stem + ".blobs")
        assert not [p for p in folder.rglob("*") if p.is_file()]  # nothing beside the SQLite file

        erased = lore.erase_author(TEAM, "U2", "dpo")

        assert erased.files == 1 and erased.blobs == 1
        left = {doc["_id"] for doc in client[name][FILES].find({}, {"_id": 1})}
        assert left == {hashlib.sha256(kept).hexdigest()}  # control: the other person's file stays
        assert not list(client[name][CHUNKS].find({"files_id": hashlib.sha256(report).hexdigest()}))
        assert lore.stores.blobs.get(hashlib.sha256(kept).hexdigest()) == kept
    finally:
        lore.close()
        client.close()
        drop_database(nx_server, name)
