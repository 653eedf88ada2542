"""What every Weaviate store of Teamlore's does the same way: errors translated, the words a
keyword query sends, vectors as the client takes them, distance floors, and keyset paging."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np
from weaviate.classes.query import Filter, Sort
from weaviate.collections.classes.filters import _Filters
from weaviate.exceptions import WeaviateBaseError

from teamlore.errors import BackendUnavailable
from teamlore.text import content_words, words_of

PAGE = 1_000  # rows per page when a write-path lookup walks a whole channel


@contextmanager
def translated(what: str, store: str = "fact store") -> Iterator[None]:
    """Weaviate's exceptions, as the one error the read path and the CLI understand."""
    try:
        yield
    except WeaviateBaseError as exc:
        raise BackendUnavailable(f"Weaviate {store}: {what} failed: {exc}") from exc


def keyword_text(text: str) -> str | None:
    """The words a keyword query searches for, as the embedded store picks them."""
    words = content_words(text) or words_of(text)
    return " ".join(dict.fromkeys(words)) if words else None


def floats(vector: np.ndarray) -> list[float]:
    values: list[float] = np.asarray(vector, dtype=np.float32).astype(float).tolist()
    return values


def farthest(floor: float) -> float | None:
    """The cosine distance (1 - cosine) matching a least cosine; None: no floor."""
    return None if floor <= -1.0 else 1.0 - floor


def walk(
    collection: Any,
    where: _Filters,
    key: str,
    what: str,
    fields: list[str] | None = None,
    store: str = "fact store",
) -> Iterator[dict[str, Any]]:
    """Every object matching ``where`` in ``key`` order, page by page (keyset paging: Weaviate
    caps offsets at its QUERY_MAXIMUM_RESULTS). ``key`` must be unique among the matches."""
    last = None
    while True:
        page_filter = where if last is None else where & Filter.by_property(key).greater_than(last)
        with translated(what, store):
            found = collection.query.fetch_objects(
                filters=page_filter, sort=Sort.by_property(key), limit=PAGE, return_properties=fields
            )
        for obj in found.objects:
            yield obj.properties
        if len(found.objects) < PAGE:
            return
        last = found.objects[-1].properties[key]
