"""The embedding cache (the ``EmbeddingCache`` protocol: passage vectors by model + text hash):
one suite, run on the file's cache (``embeddings`` table), on MongoDB's (collection
``embeddings``) on nx-27017, and on a real MongoDB with TEAMLORE_TEST_MONGO_URL."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from teamlore.embedding import CachedEmbedder

from . import test_store_conformance as _conformance
from .helpers import HashEmbedder
from .mongo_server import drop_database, fresh_database

# The same store bundles as the other conformance suites: one per kind (embedded, nx-27017, ...).
store_kind = _conformance.store_kind
stores = _conformance.stores


def vector(seed: int, dim: int = 8) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal(dim).astype(np.float32)


def test_a_vector_reads_back_bit_for_bit_as_float32_and_an_unknown_key_is_absent(stores):
    stores.embeddings.put_vectors("m1", {"k1": vector(1), "k2": vector(2, dim=384)})
    found = stores.embeddings.get_vectors(["k1", "k2", "nope"])
    assert set(found) == {"k1", "k2"}  # control: the unknown key is simply absent
    assert found["k1"].dtype == np.float32 and found["k1"].tobytes() == vector(1).tobytes()
    assert found["k2"].shape == (384,) and np.array_equal(found["k2"], vector(2, dim=384))
    assert stores.embeddings.get_vectors([]) == {}


def test_a_key_already_held_keeps_its_first_vector(stores):
    # A key is the model and the text: the same key is the same vector, so the first one stays.
    stores.embeddings.put_vectors("m1", {"k1": vector(1)})
    stores.embeddings.put_vectors("m1", {"k1": vector(9), "k2": vector(2)})
    found = stores.embeddings.get_vectors(["k1", "k2"])
    assert np.array_equal(found["k1"], vector(1)) and np.array_equal(found["k2"], vector(2))


def test_many_keys_are_read_and_forgotten_at_once(stores):
    many = {f"k{i}": vector(i, dim=4) for i in range(1203)}  # more than one query's worth of keys
    stores.embeddings.put_vectors("m1", many)
    found = stores.embeddings.get_vectors(list(many) + ["k1"])
    assert len(found) == 1203 and np.array_equal(found["k1202"], many["k1202"])
    assert stores.embeddings.forget([f"k{i}" for i in range(1200)]) == 1200
    assert sorted(stores.embeddings.get_vectors(list(many))) == ["k1200", "k1201", "k1202"]


def test_forget_deletes_only_the_named_vectors_and_counts_those_it_held(stores):
    stores.embeddings.put_vectors("m1", {"k1": vector(1), "k2": vector(2), "k3": vector(3)})
    assert stores.embeddings.forget(["k1", "k3", "unknown"]) == 2
    assert stores.embeddings.forget(["k1"]) == 0  # already gone
    assert stores.embeddings.forget([]) == 0
    assert list(stores.embeddings.get_vectors(["k1", "k2", "k3"])) == ["k2"]  # control: k2 stays


def test_a_cached_embedder_embeds_a_text_once_and_again_after_it_is_forgotten(stores):
    embedder = CachedEmbedder(HashEmbedder(), stores.embeddings)
    keys = embedder.ensure_passages(["alpha", "beta"])
    embedder.ensure_passages(["alpha", "beta"])
    assert (embedder.stats.computed, embedder.stats.cache_hits) == (2, 2)
    first = embedder.vectors(["alpha"])[0]
    assert stores.embeddings.forget([keys["alpha"]]) == 1  # an erasure
    assert np.array_equal(embedder.vectors(["alpha"])[0], first)
    assert embedder.stats.computed == 3  # embedded again, not found


def test_with_mongodb_no_vector_is_kept_in_the_file(stores, store_kind):
    CachedEmbedder(HashEmbedder(), stores.embeddings).ensure_passages(["alpha", "beta"])
    rows = stores.db.conn.execute("SELECT count(*) FROM embeddings").fetchone()[0]
    assert rows == (2 if store_kind == "embedded" else 0)  # the control: the file keeps them


def test_two_processes_on_one_mongodb_share_the_cache_and_its_forgetting(tmp_path: Path, nx_server):
    """Each with its own data folder: what one embedded the other finds, and what one forgets is
    gone for the other (an erasure run on one pod reaches every pod)."""
    from teamlore.stores.with_mongo import MongoStores

    database = fresh_database()
    one = MongoStores(tmp_path / "one" / "s.sqlite3", nx_server, database, timeout_s=5)
    two = MongoStores(tmp_path / "two" / "s.sqlite3", nx_server, database, timeout_s=5)
    apart = MongoStores(tmp_path / "apart" / "s.sqlite3", nx_server, fresh_database(), timeout_s=5)
    try:
        one.embeddings.put_vectors("m1", {"k1": vector(1), "k2": vector(2)})
        assert sorted(two.embeddings.get_vectors(["k1", "k2"])) == ["k1", "k2"]
        assert apart.embeddings.get_vectors(["k1"]) == {}  # control: another database shares nothing
        assert two.embeddings.forget(["k1"]) == 1
        assert list(one.embeddings.get_vectors(["k1", "k2"])) == ["k2"]
    finally:
        for bundle in (one, two, apart):
            bundle.close()
        drop_database(nx_server, database)
        drop_database(nx_server, apart.runtime.database)


def test_opening_mongodb_beside_an_old_file_moves_its_vectors_there_once(tmp_path: Path, nx_server):
    """Moved, not copied: a vector left in the file would outlive an erasure, whose forget reaches
    MongoDB's cache only. A key MongoDB already holds keeps its vector."""
    from teamlore.stores.embedded import EmbeddedStores
    from teamlore.stores.with_mongo import MongoStores, move_file_vectors

    path, database = tmp_path / "s.sqlite3", fresh_database()
    old = EmbeddedStores(path)  # an older Teamlore's cache, in its file
    old.embeddings.put_vectors("m1", {"k1": vector(1), "k2": vector(2)})
    old.embeddings.put_vectors("m2", {"k3": vector(3, dim=4)})
    old.close()
    first = MongoStores(tmp_path / "first.sqlite3", nx_server, database, timeout_s=5)
    first.embeddings.put_vectors("m1", {"k2": vector(20)})  # another process cached k2 already
    bundle = MongoStores(path, nx_server, database, timeout_s=5)
    try:
        assert bundle.db.conn.execute("SELECT count(*) FROM embeddings").fetchone()[0] == 0
        found = first.embeddings.get_vectors(["k1", "k2", "k3"])  # every process sees them
        assert np.array_equal(found["k1"], vector(1)) and np.array_equal(found["k3"], vector(3, dim=4))
        assert np.array_equal(found["k2"], vector(20))
        assert move_file_vectors(bundle, bundle.db) == 0  # the next start finds nothing to move
    finally:
        bundle.close()
        first.close()
        drop_database(nx_server, database)


def test_a_server_stack_upgraded_from_the_file_loads_its_messages_with_their_vectors(
    tmp_path: Path, embedder, clock, nx_server, weaviate_wire
):
    """The file's vectors move to MongoDB when the server stack opens, and ``teamlore weaviate
    load-messages`` finds them there: the copied message version carries its vector."""
    import uuid

    from teamlore.app import Teamlore, load_messages_into_weaviate, weaviate_message_collection
    from teamlore.config import Settings
    from teamlore.stores.weaviate import connect

    from .conftest import event
    from .helpers import KeepsNothing, put

    data, database = tmp_path / "lore", fresh_database()
    embedded = Teamlore(
        Settings(data_dir=data, _env_file=None), embedder=embedder, clock=clock, extractor=KeepsNothing()
    )
    try:
        put(embedded, event("Our status page is hosted by Statuspage.", message_id="m1"))
    finally:
        embedded.close()
    settings = Settings(
        data_dir=data,
        mongo_url=nx_server,
        mongo_db=database,
        weaviate_url=weaviate_wire.url,
        weaviate_grpc_port=weaviate_wire.grpc_port,
        weaviate_collection=f"TeamloreTest{uuid.uuid4().hex[:12]}",
        _env_file=None,
    )
    served = Teamlore(settings, embedder=embedder, clock=clock, extractor=KeepsNothing())
    try:
        assert served.stores.db.conn.execute("SELECT count(*) FROM embeddings").fetchone()[0] == 0
        report = load_messages_into_weaviate(served)
        assert (report.copied, report.failed) == (1, [])
    finally:
        served.close()
        drop_database(nx_server, database)
    client = connect(settings)
    try:
        copied = client.collections.get(weaviate_message_collection(settings))
        (listed,) = copied.query.fetch_objects().objects
        only = copied.query.fetch_object_by_id(listed.uuid, include_vector=True)
        assert only is not None and only.properties["text"] == "Our status page is hosted by Statuspage."
        assert len(only.vector["passage"]) == 384  # its vector came from MongoDB's cache
    finally:
        client.collections.delete(settings.weaviate_collection)
        client.collections.delete(weaviate_message_collection(settings))
        client.close()
