"""The embedding cache in MongoDB (collection ``embeddings``), shared by every process of the
server stack: passage vectors by cache key (model + text hash), float32 bytes.

Written straight to MongoDB, not through the unit of work (``journal``): a vector is a pure function of
its text and model, so one a rolled-back event left is still right for its text. Forgets too:
Weaviate's erasure rewrites (which blank a version's key) are not undone, so a forget held for a
commit that never came would leave a vector no later run could find; a forget by an event that
rolls back costs only a cache miss (the text is embedded again when next needed). Shared rather
than per process for the same reasons as the model cache: workers do not embed one text twice,
and erasure's ``forget`` reaches the only copy (a vector is derived from the person's words; a
per-pod cache would keep it on the pods the erasure did not run on).

In the server stack only Weaviate's stores and ``CachedEmbedder`` read it (by key): the file's
fact store and message index read their vectors from the file's table, which is why MongoDB
needs Weaviate (``Settings.server_stack_problem``).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from pymongo import UpdateOne

from teamlore.stores.mongo.runtime import Db, MongoRuntime

COLLECTION = "embeddings"
# Keys per query: an ``$in`` list well below MongoDB's 16 MB document limit (40-character keys).
_CHUNK = 500


class MongoEmbeddingCache:
    """``EmbeddingCache`` on MongoDB: ``_id`` = cache key; ``model``, ``dim``, ``vector`` (bytes)."""

    def __init__(self, runtime: MongoRuntime) -> None:
        self._rt = runtime

    def get_vectors(self, keys: Sequence[str]) -> dict[str, np.ndarray]:
        wanted = list(dict.fromkeys(keys))

        async def found(db: Db) -> dict[str, np.ndarray]:
            vectors: dict[str, np.ndarray] = {}
            for i in range(0, len(wanted), _CHUNK):
                cursor = db[COLLECTION].find({"_id": {"$in": wanted[i : i + _CHUNK]}}, {"vector": 1})
                async for doc in cursor:
                    vectors[doc["_id"]] = np.frombuffer(bytes(doc["vector"]), dtype=np.float32)
            return vectors

        return self._rt.run(found) if wanted else {}

    def put_vectors(self, model: str, vectors: dict[str, np.ndarray]) -> None:
        """Keep these vectors; a key already held keeps its vector (the same text, the same model)."""
        writes = [
            UpdateOne(
                {"_id": key},
                {
                    "$setOnInsert": {
                        "model": model,
                        "dim": int(vector.shape[-1]),
                        "vector": np.asarray(vector, np.float32).tobytes(),
                    }
                },
                upsert=True,
            )
            for key, vector in vectors.items()
        ]
        if writes:
            self._rt.run(lambda db: db[COLLECTION].bulk_write(writes, ordered=False))

    def forget(self, keys: Sequence[str]) -> int:
        """Delete these vectors (an erasure, or a vector no version holds any more); how many there
        were."""
        doomed = list(dict.fromkeys(keys))

        async def deleted(db: Db) -> int:
            count = 0
            for i in range(0, len(doomed), _CHUNK):
                result = await db[COLLECTION].delete_many({"_id": {"$in": doomed[i : i + _CHUNK]}})
                count += result.deleted_count
            return count

        return self._rt.run(deleted) if doomed else 0
