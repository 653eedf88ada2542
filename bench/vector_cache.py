"""A file of passage vectors kept between benchmark runs, in the store's ``embeddings`` layout
(keyed by model and text, as the store's own cache is), so a second run embeds nothing again."""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from pathlib import Path

import numpy as np


class FileVectorCache:
    """``EmbeddingCache`` over one SQLite file."""

    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self._conn = sqlite3.connect(path)
        self._conn.execute(
            "CREATE TABLE IF NOT EXISTS embeddings (key TEXT PRIMARY KEY, model TEXT NOT NULL,"
            " dim INTEGER NOT NULL, vector BLOB NOT NULL)"
        )

    def get_vectors(self, keys: Sequence[str]) -> dict[str, np.ndarray]:
        found = {}
        for i in range(0, len(keys), 500):
            chunk = list(keys[i : i + 500])
            for key, blob in self._conn.execute(
                f"SELECT key, vector FROM embeddings WHERE key IN ({','.join('?' * len(chunk))})", chunk
            ):
                found[key] = np.frombuffer(blob, dtype=np.float32)
        return found

    def put_vectors(self, model: str, vectors: dict[str, np.ndarray]) -> None:
        self._conn.executemany(
            "INSERT OR IGNORE INTO embeddings VALUES (?, ?, ?, ?)",
            [(k, model, int(v.shape[-1]), np.asarray(v, np.float32).tobytes()) for k, v in vectors.items()],
        )
        self._conn.commit()

    def forget(self, keys: Sequence[str]) -> int:
        return 0
