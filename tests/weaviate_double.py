"""An in-process double of the part of weaviate-client v4's collection API the fact store uses.

NOT Weaviate. No Weaviate server can run on these machines (no Docker; embedded Weaviate downloads
a binary), so this double lets the Weaviate backend's own logic (what it writes, the filters it
compiles, how it reads rows back) run through the same gate tests as the embedded store. It
evaluates the client's real Filter and Sort objects the way the server documents them, including
the one server detail the design depends on: a DATE is indexed as Go's ``UnixNano()``, an int64
that wraps after 2262 (weaviate/adapters/repos/db/inverted: ``a.Int(asTime.UnixNano())``). It
refuses properties the schema does not declare, as a server with auto-schema off does. Every call
is recorded, so unit tests can pin the filters each query sends. Ranking is a plain BM25 and
exact cosine: close to the server's, not identical. The real server is exercised only by the
conformance suite when TEAMLORE_TEST_WEAVIATE_URL is set.

tests/weaviate_wire.py serves this same double over the client's real REST and gRPC protocol
(it decodes each message into the arguments these methods take), so every rule here is also the
wire server's rule: change behaviour here, never there.
"""

from __future__ import annotations

import math
import re
import uuid as uuid_module
from dataclasses import dataclass, field
from datetime import UTC, datetime
from types import SimpleNamespace
from typing import Any

import httpx
import numpy as np
from weaviate.collections.classes.filters import _FilterAnd, _FilterNot, _FilterOr, _FilterValue, _Operator
from weaviate.exceptions import UnexpectedStatusCodeError

from teamlore.stores.weaviate.schema import PROPERTY_NAMES, VECTOR

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_WORD = re.compile(r"\w+")


def go_unix_nano(moment: datetime) -> int:
    """Go's time.UnixNano(): seconds * 1e9 + nanos in int64 arithmetic, which wraps."""
    delta = moment - _EPOCH
    nanos = (delta.days * 86_400 + delta.seconds) * 1_000_000_000 + delta.microseconds * 1000
    wrapped = nanos % (1 << 64)
    return wrapped - (1 << 64) if wrapped >= 1 << 63 else wrapped


def _comparable(value: Any) -> Any:
    return go_unix_nano(value) if isinstance(value, datetime) else value


@dataclass
class _Object:
    uuid: uuid_module.UUID
    properties: dict[str, Any]
    vector: dict[str, list[float]]
    metadata: Any = None


@dataclass
class Call:
    method: str
    kwargs: dict[str, Any]


@dataclass
class _Result:
    objects: list[_Object]


@dataclass
class _BatchResult:
    errors: dict[int, Any] = field(default_factory=dict)


class DoubleCollection:
    """One collection. ``properties``: what its schema declares (Teamlore's by default; the wire
    server passes the schema the client created). ``record=False`` keeps no call log (a server)."""

    def __init__(self, properties: frozenset[str] = PROPERTY_NAMES, record: bool = True) -> None:
        self.objects: dict[uuid_module.UUID, _Object] = {}
        self.declared = properties
        self.record = record
        self.calls: list[Call] = []
        self.fail: dict[str, Exception] = {}  # method name -> error to raise (failure injection)
        self.query = SimpleNamespace(
            bm25=self._bm25,
            near_vector=self._near_vector,
            hybrid=self._hybrid,
            fetch_objects=self._fetch_objects,
            fetch_object_by_id=self._fetch_object_by_id,
        )
        self.data = SimpleNamespace(
            insert=self._insert,
            update=self._update,
            delete_by_id=self._delete_by_id,
            insert_many=self._insert_many,
        )

    # ---- bookkeeping ----

    def _record(self, method: str, **kwargs: Any) -> None:
        if self.record:
            self.calls.append(Call(method, kwargs))
        if method in self.fail:
            raise self.fail[method]

    def calls_to(self, method: str) -> list[Call]:
        return [c for c in self.calls if c.method == method]

    # ---- writes ----

    def _check_schema(self, properties: dict[str, Any]) -> None:
        undeclared = set(properties) - self.declared
        if undeclared:  # auto-schema off: the server refuses, it does not add a property
            raise status_error(422, f"no such prop with name '{sorted(undeclared)[0]}' found in class")

    def _insert(self, properties, uuid=None, vector=None, references=None):
        self._record("insert", properties=properties, uuid=uuid, vector=vector)
        self._check_schema(properties)
        object_id = uuid_module.UUID(str(uuid))
        if object_id in self.objects:
            raise status_error(422, f"id '{object_id}' already exists")
        self.objects[object_id] = _Object(object_id, dict(properties), dict(vector or {}))
        return object_id

    def _update(self, uuid, properties=None, references=None, vector=None):
        self._record("update", uuid=uuid, properties=properties)
        self._check_schema(properties or {})
        found = self.objects.get(uuid_module.UUID(str(uuid)))
        if found is None:
            raise status_error(404, "not found")
        found.properties.update(properties or {})

    def _delete_by_id(self, uuid):
        self._record("delete_by_id", uuid=uuid)
        return self.objects.pop(uuid_module.UUID(str(uuid)), None) is not None

    def _insert_many(self, objects):
        self._record("insert_many", objects=objects)
        result = _BatchResult()
        for i, obj in enumerate(objects):
            try:
                self._check_schema(obj.properties)
            except UnexpectedStatusCodeError as exc:
                result.errors[i] = SimpleNamespace(message=error_message(exc), object_=obj)
                continue
            object_id = uuid_module.UUID(str(obj.uuid))
            self.objects[object_id] = _Object(object_id, dict(obj.properties), dict(obj.vector or {}))
        return result

    # ---- reads ----

    def _matching(self, filters) -> list[_Object]:
        return [o for o in self.objects.values() if filters is None or _holds(filters, o.properties)]

    def _fetch_object_by_id(self, uuid, include_vector=False, **_: Any):
        self._record("fetch_object_by_id", uuid=uuid, include_vector=include_vector)
        found = self.objects.get(uuid_module.UUID(str(uuid)))
        return None if found is None else _copy(found, include_vector)

    def _fetch_objects(self, *, filters=None, sort=None, limit=None, return_properties=None, **_: Any):
        self._record("fetch_objects", filters=filters, sort=sort, limit=limit)
        rows = self._matching(filters)
        for key in reversed(sort.sorts if sort is not None else []):
            rows.sort(key=lambda o, k=key: _comparable(o.properties[k.prop]), reverse=not key.ascending)
        return _Result([_copy(o, False) for o in rows[:limit]])

    def _bm25(self, query, *, query_properties=None, filters=None, limit=None, **_: Any):
        self._record("bm25", query=query, query_properties=query_properties, filters=filters, limit=limit)
        scored = self._bm25_scores(query, query_properties or ["statement"], self._matching(filters))
        return _Result([_copy(o, False, score=s) for o, s in scored[:limit]])

    def _near_vector(
        self, near_vector, *, distance=None, target_vector=None, filters=None, limit=None, **_: Any
    ):
        self._record(
            "near_vector", target_vector=target_vector, filters=filters, limit=limit, distance=distance
        )
        ranked = self._by_distance(near_vector, target_vector, self._matching(filters), distance)
        return _Result([_copy(o, False, distance=d) for o, d in ranked[:limit]])

    def _hybrid(self, query, *, vector=None, target_vector=None, alpha=0.75, fusion_type=None,
                query_properties=None, filters=None, limit=None, max_vector_distance=None,
                **_: Any):  # fmt: skip
        self._record(
            "hybrid",
            query=query,
            alpha=alpha,
            fusion_type=fusion_type,
            filters=filters,
            limit=limit,
            max_vector_distance=max_vector_distance,
        )
        rows = self._matching(filters)
        fused: dict[uuid_module.UUID, float] = {}
        keyword = [o for o, _ in self._bm25_scores(query, query_properties or ["statement"], rows)]
        semantic = [o for o, _ in self._by_distance(vector, target_vector, rows, max_vector_distance)]
        for weight, ranked in ((1 - alpha, keyword), (alpha, semantic)):
            for rank, obj in enumerate(ranked):
                fused[obj.uuid] = fused.get(obj.uuid, 0.0) + weight / (60 + rank + 1)
        order = sorted(fused, key=lambda u: (-fused[u], str(u)))[:limit]
        return _Result([_copy(self.objects[u], False, score=fused[u]) for u in order])

    def _by_distance(self, vector, target, rows, farthest=None):
        query = np.asarray(vector, np.float32)
        out = []
        for obj in rows:
            stored = obj.vector.get(target or VECTOR)
            if stored is None:
                continue  # no vector: not in the vector index
            v = np.asarray(stored, np.float32)
            cosine = float(v @ query / (np.linalg.norm(v) * np.linalg.norm(query)))
            if farthest is None or 1.0 - cosine <= farthest:
                out.append((obj, 1.0 - cosine))
        return sorted(out, key=lambda pair: (pair[1], str(pair[0].uuid)))

    def _bm25_scores(self, query, properties, rows, k1=1.2, b=0.75):
        terms = _WORD.findall((query or "").casefold())
        weights = {p.split("^")[0]: float(p.split("^")[1]) if "^" in p else 1.0 for p in properties}
        docs = {o.uuid: _tokens(o.properties, weights) for o in self.objects.values()}
        avg = sum(len(d) for d in docs.values()) / max(len(docs), 1) or 1.0
        weighted = {u: _weighted(d) for u, d in docs.items()}  # term -> summed weight, per object
        unique = list(dict.fromkeys(terms))
        having = {term: sum(1 for counts in weighted.values() if term in counts) for term in unique}
        scored = []
        for obj in rows:
            doc, counts = docs[obj.uuid], weighted[obj.uuid]
            score = 0.0
            for term in unique:
                freq = counts.get(term, 0.0)
                if not freq:
                    continue
                idf = math.log(1 + (len(docs) - having[term] + 0.5) / (having[term] + 0.5))
                score += idf * freq * (k1 + 1) / (freq + k1 * (1 - b + b * len(doc) / avg))
            if score > 0:
                scored.append((obj, score))
        return sorted(scored, key=lambda pair: (-pair[1], str(pair[0].uuid)))


def _tokens(props: dict[str, Any], weights: dict[str, float]) -> list[tuple[str, float]]:
    out = []
    for name, weight in weights.items():
        value = props.get(name) or ""
        text = " ".join(value) if isinstance(value, list) else value
        out += [(t, weight) for t in _WORD.findall(text.casefold())]
    return out


def _weighted(tokens: list[tuple[str, float]]) -> dict[str, float]:
    counts: dict[str, float] = {}
    for term, weight in tokens:
        counts[term] = counts.get(term, 0.0) + weight
    return counts


def _copy(obj: _Object, include_vector: bool, **metadata: float) -> _Object:
    return _Object(
        obj.uuid,
        dict(obj.properties),
        dict(obj.vector) if include_vector else {},
        SimpleNamespace(score=metadata.get("score"), distance=metadata.get("distance")),
    )


def _holds(node, props: dict[str, Any]) -> bool:
    if isinstance(node, _FilterAnd):
        return all(_holds(f, props) for f in node.filters)
    if isinstance(node, _FilterOr):
        return any(_holds(f, props) for f in node.filters)
    if isinstance(node, _FilterNot):
        return not _holds(node.filters[0], props)
    assert isinstance(node, _FilterValue), node
    have = props.get(node.target)
    values = have if isinstance(have, list) else [] if have is None else [have]
    want = node.value
    op = node.operator
    if op is _Operator.CONTAINS_ANY:
        return any(v in want for v in values)
    if op is _Operator.CONTAINS_NONE:
        return not any(v in want for v in values)
    if op is _Operator.NOT_EQUAL:
        return all(_comparable(v) != _comparable(want) for v in values)
    compare = {
        _Operator.EQUAL: lambda a, c: a == c,
        _Operator.LESS_THAN: lambda a, c: a < c,
        _Operator.LESS_THAN_EQUAL: lambda a, c: a <= c,
        _Operator.GREATER_THAN: lambda a, c: a > c,
        _Operator.GREATER_THAN_EQUAL: lambda a, c: a >= c,
    }[op]
    return any(compare(_comparable(v), _comparable(want)) for v in values)


def error_message(exc: UnexpectedStatusCodeError) -> str:
    """The server's own message in the error body (what a batch error or a REST body carries)."""
    body = exc.error if isinstance(exc.error, dict) else {}
    errors = body.get("error") or [{"message": str(exc)}]
    return str(errors[0]["message"])


def status_error(code: int, message: str) -> UnexpectedStatusCodeError:
    """What the client raises for a REST answer with this status and the server's error body."""
    response = httpx.Response(code, json={"error": [{"message": message}]})
    return UnexpectedStatusCodeError(message, response)
