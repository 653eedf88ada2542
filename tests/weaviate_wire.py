"""The Weaviate double (tests/weaviate_double.py) served over weaviate-client's real wire protocol.

NOT Weaviate. A server process on free localhost ports that answers the REST endpoints and the gRPC
methods weaviate-client v4 uses for what ``teamlore/stores/weaviate/`` does, so the client's own
serialisation runs end to end and several processes, each with its own client, share one fact store:

- REST (``/v1``): ``meta`` (reports the version deploy/ pins), ``.well-known/ready|live|openid-
  configuration``, ``schema`` (create, get with the server's defaults filled in, list, delete) and
  ``objects`` (insert, PATCH update, delete by id).
- gRPC (``weaviate.v1.Weaviate``): ``Search`` (fetch with filters, sort, limit and the properties
  asked for; fetch by id, with its named vector; BM25; near_vector; hybrid) and ``BatchObjects``;
  ``grpc.health.v1.Health/Check``.

Everything the server decides is the in-process double's: the wire layer only decodes the
client's messages into the same values the in-process double receives (the client's own Filter
and Sort objects, rebuilt from their protobuf; DATE values parsed by the collection's schema, as
the server does) and encodes the double's rows back. So filters, BM25, cosine, rank fusion, the
UnixNano date detail and the schema refusals are one rule in one place, weaviate_double.py.

Run it with ``python -m tests.weaviate_wire`` (it prints ``ready HTTP_PORT GRPC_PORT``) or through
``WireWeaviate`` (a subprocess, stopped by ``stop()``). It also answers the client's once-per-
connect PyPI version lookup (``pypi_url``), so tests need no network: see ``hermetic_client``.
"""

from __future__ import annotations

import json
import signal
import struct
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from concurrent import futures
from contextlib import contextmanager, suppress
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from importlib.metadata import version as package_version
from pathlib import Path
from typing import Any

import grpc
from google.protobuf.json_format import MessageToDict
from weaviate.classes.data import DataObject
from weaviate.classes.query import HybridFusion, Sort
from weaviate.exceptions import UnexpectedStatusCodeError
from weaviate.proto.v1 import (
    base_pb2,
    base_search_pb2,
    batch_pb2,
    health_weaviate_pb2,
    properties_pb2,
    search_get_pb2,
    weaviate_pb2_grpc,
)

from . import weaviate_wire_values as codec
from .helpers import stop_process
from .weaviate_double import DoubleCollection, error_message
from .weaviate_double import status_error as _status

SERVER_VERSION = "1.33.0"  # what deploy/k8s/weaviate.yaml and docker-compose.yml run
# ---- the store: one double collection per class, its schema as the server would answer it ----


class Store:
    """Every collection the server holds; one lock, so concurrent clients see one order."""

    def __init__(self) -> None:
        self.lock = threading.RLock()
        self.schemas: dict[str, dict[str, Any]] = {}
        self.collections: dict[str, DoubleCollection] = {}

    def create(self, posted: dict[str, Any]) -> dict[str, Any]:
        name = posted["class"][:1].upper() + posted["class"][1:]
        if name in self.schemas:
            raise _status(422, f"class name {name!r} already exists")
        schema = _with_server_defaults({**posted, "class": name})
        self.schemas[name] = schema
        self.collections[name] = DoubleCollection(
            properties=frozenset(p["name"] for p in schema["properties"]), record=False
        )
        return schema

    def collection(self, name: str) -> DoubleCollection:
        found = self.collections.get(name)
        if found is None:
            raise _status(422, f"class {name!r} not found in schema")
        return found

    def types(self, name: str) -> dict[str, str]:
        return {p["name"]: p["dataType"][0] for p in self.schemas[name]["properties"]}


def _with_server_defaults(posted: dict[str, Any]) -> dict[str, Any]:
    """The schema as GET /v1/schema/{class} returns it: what was posted, with the defaults a
    1.33 server fills in (the client's config parser reads them)."""
    schema = json.loads(json.dumps(posted))
    inverted = schema.setdefault("invertedIndexConfig", {})
    inverted.setdefault("bm25", {"b": 0.75, "k1": 1.2})
    inverted.setdefault("cleanupIntervalSeconds", 60)
    stopwords = inverted.setdefault("stopwords", {"preset": "en"})
    stopwords.setdefault("additions", None)
    stopwords.setdefault("removals", None)
    schema.setdefault("multiTenancyConfig", {"enabled": False})
    schema.setdefault("replicationConfig", {"factor": 1, "deletionStrategy": "NoAutomatedResolution"})
    schema.setdefault(
        "shardingConfig",
        {
            "virtualPerPhysical": 128,
            "desiredCount": 1,
            "actualCount": 1,
            "desiredVirtualCount": 128,
            "actualVirtualCount": 128,
            "key": "_id",
            "strategy": "hash",
            "function": "murmur3",
        },
    )
    for vector in (schema.get("vectorConfig") or {}).values():
        vector.setdefault("vectorIndexType", "hnsw")
        index = vector.setdefault("vectorIndexConfig", {})
        for key, value in _HNSW_DEFAULTS.items():
            index.setdefault(key, value)
    for prop in schema.get("properties") or []:
        text = prop["dataType"][0] in ("text", "text[]")
        prop.setdefault("indexFilterable", True)
        prop.setdefault("indexSearchable", text)
        prop.setdefault("indexRangeFilters", False)
        if text:
            prop.setdefault("tokenization", "word")
    return schema


_HNSW_DEFAULTS: dict[str, Any] = {
    "skip": False,
    "cleanupIntervalSeconds": 300,
    "maxConnections": 32,
    "efConstruction": 128,
    "ef": -1,
    "dynamicEfMin": 100,
    "dynamicEfMax": 500,
    "dynamicEfFactor": 8,
    "vectorCacheMaxObjects": 1_000_000_000_000,
    "flatSearchCutoff": 40_000,
    "distance": "cosine",
    "filterStrategy": "sweeping",
    "pq": {"enabled": False},
    "bq": {"enabled": False},
    "sq": {"enabled": False},
}


# ---- gRPC ----


class WeaviateService(weaviate_pb2_grpc.WeaviateServicer):
    def __init__(self, store: Store) -> None:
        self.store = store

    def Search(self, request: search_get_pb2.SearchRequest, context: grpc.ServicerContext) -> Any:  # noqa: N802
        started = time.perf_counter()
        try:
            with self.store.lock:
                rows = self._search(request)
                types = self.store.types(request.collection)
        except UnexpectedStatusCodeError as exc:
            context.abort(grpc.StatusCode.UNKNOWN, error_message(exc))
        wanted = None
        if request.HasField("properties") and not request.properties.return_all_nonref_properties:
            wanted = list(request.properties.non_ref_properties)
        return search_get_pb2.SearchReply(
            took=time.perf_counter() - started,
            results=[_result(o, types, wanted, request.metadata) for o in rows],
        )

    def _search(self, request: search_get_pb2.SearchRequest) -> list[Any]:
        collection = self.store.collection(request.collection)
        types = self.store.types(request.collection)
        limit = request.limit or 10  # unset (0): the server's QUERY_DEFAULTS_LIMIT
        if request.HasField("filters") and (wanted := codec.id_wanted(request.filters)) is not None:
            vector = request.metadata.vector or bool(request.metadata.vectors)
            found = collection.query.fetch_object_by_id(wanted, include_vector=vector)
            return [] if found is None else [found]
        where = codec.filter_in(request.filters, types) if request.HasField("filters") else None
        if request.HasField("bm25_search"):
            bm25 = request.bm25_search
            return collection.query.bm25(
                bm25.query, query_properties=list(bm25.properties) or None, filters=where, limit=limit
            ).objects
        if request.HasField("near_vector"):
            near = request.near_vector
            return collection.query.near_vector(
                codec.query_vector(near),
                distance=near.distance if near.HasField("distance") else None,
                target_vector=codec.target(near),
                filters=where,
                limit=limit,
            ).objects
        if request.HasField("hybrid_search"):
            hybrid = request.hybrid_search
            alpha = hybrid.alpha_param if hybrid.use_alpha_param else hybrid.alpha
            fusion = _fusion(hybrid.fusion_type)
            return collection.query.hybrid(
                hybrid.query,
                vector=codec.query_vector(hybrid.near_vector if hybrid.HasField("near_vector") else hybrid),
                target_vector=codec.target(hybrid),
                alpha=alpha,
                fusion_type=fusion,
                query_properties=list(hybrid.properties) or None,
                filters=where,
                limit=limit,
                max_vector_distance=hybrid.vector_distance if hybrid.HasField("vector_distance") else None,
            ).objects
        unsupported = [f for f in ("near_object", "near_text", "group_by", "rerank") if request.HasField(f)]
        if unsupported or request.offset or request.after:
            raise _status(422, f"the double does not serve {unsupported or 'offset/after paging'}")
        sort = None
        for each in request.sort_by:
            sort = (sort or Sort).by_property(each.path[0], ascending=each.ascending)
        return collection.query.fetch_objects(filters=where, sort=sort, limit=limit).objects

    def BatchObjects(self, request: batch_pb2.BatchObjectsRequest, context: grpc.ServicerContext) -> Any:  # noqa: N802
        started = time.perf_counter()
        errors = []
        by_collection: dict[str, list[tuple[int, DataObject]]] = {}
        with self.store.lock:
            for index, obj in enumerate(request.objects):
                try:
                    types = self.store.types(obj.collection)
                except KeyError:
                    errors.append(batch_pb2.BatchObjectsReply.BatchError(index=index, error="no such class"))
                    continue
                by_collection.setdefault(obj.collection, []).append((index, _batch_object(obj, types)))
            for name, indexed in by_collection.items():
                result = self.store.collection(name).data.insert_many([o for _, o in indexed])
                for position, error in sorted(result.errors.items()):
                    errors.append(
                        batch_pb2.BatchObjectsReply.BatchError(
                            index=indexed[position][0], error=error.message
                        )
                    )
        return batch_pb2.BatchObjectsReply(took=time.perf_counter() - started, errors=errors)


def _fusion(value: int) -> HybridFusion | None:
    name = base_search_pb2.Hybrid.FusionType.Name(value)
    return None if name == "FUSION_TYPE_UNSPECIFIED" else HybridFusion(name)


def _batch_object(obj: batch_pb2.BatchObject, types: dict[str, str]) -> DataObject:
    props: dict[str, Any] = dict(json.loads(json.dumps(_struct(obj.properties.non_ref_properties))))
    for arrays in (obj.properties.text_array_properties, obj.properties.int_array_properties,
                   obj.properties.boolean_array_properties):  # fmt: skip
        props.update({a.prop_name: list(a.values) for a in arrays})
    for numbers in obj.properties.number_array_properties:
        packed = numbers.values_bytes
        props[numbers.prop_name] = (
            list(struct.unpack(f"<{len(packed) // 8}d", packed)) if packed else list(numbers.values)
        )
    props.update({name: [] for name in obj.properties.empty_list_props})
    vectors = {v.name: codec.floats(v.vector_bytes) for v in obj.vectors}
    if obj.vector_bytes:
        vectors["default"] = codec.floats(obj.vector_bytes)
    return DataObject(properties=codec.properties_in(types, props), uuid=obj.uuid, vector=vectors or None)


def _struct(message: Any) -> dict[str, Any]:
    found: dict[str, Any] = MessageToDict(message)
    return found


def _result(obj: Any, types: dict[str, str], wanted: list[str] | None, metadata: Any) -> Any:
    names = wanted if wanted is not None else list(types)
    props = properties_pb2.Properties(
        fields={n: codec.value_out(types[n], obj.properties.get(n)) for n in names if n in types}
    )
    now = int(time.time() * 1000)
    meta = search_get_pb2.MetadataResult(
        id=str(obj.uuid),
        id_as_bytes=obj.uuid.bytes,
        creation_time_unix=now if metadata.creation_time_unix else 0,
        creation_time_unix_present=metadata.creation_time_unix,
        last_update_time_unix=now if metadata.last_update_time_unix else 0,
        last_update_time_unix_present=metadata.last_update_time_unix,
        is_consistent=True if metadata.is_consistent else None,
        is_consistent_present=metadata.is_consistent,
    )
    found = obj.metadata
    if metadata.score and found is not None and found.score is not None:
        meta.score, meta.score_present = found.score, True
    if metadata.distance and found is not None and found.distance is not None:
        meta.distance, meta.distance_present = found.distance, True
    if metadata.vector or metadata.vectors:
        for name, vector in obj.vector.items():
            if not metadata.vectors or name in metadata.vectors:
                meta.vectors.append(
                    base_pb2.Vectors(
                        name=name,
                        vector_bytes=codec.pack(vector),
                        type=base_pb2.Vectors.VECTOR_TYPE_SINGLE_FP32,
                    )
                )
    return search_get_pb2.SearchResult(
        properties=search_get_pb2.PropertiesResult(non_ref_props=props, target_collection=""),
        metadata=meta,
    )


def _health(request: Any, context: grpc.ServicerContext) -> Any:
    return health_weaviate_pb2.WeaviateHealthCheckResponse(
        status=health_weaviate_pb2.WeaviateHealthCheckResponse.SERVING
    )


# ---- REST ----

_META = {
    "hostname": "http://[::]:8080",
    "version": SERVER_VERSION,
    "modules": {},
    "grpcMaxMessageSize": 104858000,
}


def _answer(store: Store, method: str, parts: list[str], body: Any) -> tuple[int, Any]:
    """The status and JSON body for one REST request (``parts``: the path's segments)."""
    if parts[:1] == ["pypi"]:  # the client's once-per-connect version lookup, answered here
        return 200, {"info": {"version": package_version("weaviate-client")}}
    match method, parts:
        case "GET", ["v1", "meta"]:
            return 200, _META
        case "GET", ["v1", ".well-known", "ready" | "live"]:
            return 200, None
        case "GET", ["v1", ".well-known", "openid-configuration"]:
            return 404, None  # no OIDC
        case _, ["v1", "schema", *name]:
            return _schema(store, method, name, body)
        case _, ["v1", "objects", *where]:
            return _objects(store, method, where, body)
    return 404, {"error": [{"message": f"no route {method} /{'/'.join(parts)}"}]}


def _schema(store: Store, method: str, name: list[str], body: Any) -> tuple[int, Any]:
    match method, name:
        case "GET", []:
            return 200, {"classes": list(store.schemas.values())}
        case "POST", []:
            return 200, store.create(body)
        case "GET", [one]:
            found = store.schemas.get(one)
            return (200, found) if found is not None else (404, None)
        case "DELETE", [one]:
            store.schemas.pop(one, None)
            store.collections.pop(one, None)
            return 200, None
    return 405, {"error": [{"message": f"{method} on the schema is not served"}]}


def _objects(store: Store, method: str, where: list[str], body: Any) -> tuple[int, Any]:
    match method, where:
        case "POST", []:
            name = body["class"]
            vectors = body.get("vectors") or ({"default": body["vector"]} if body.get("vector") else None)
            props = codec.properties_in(store.types(name), body.get("properties") or {})
            store.collection(name).data.insert(properties=props, uuid=body["id"], vector=vectors)
            return 200, {**body, "creationTimeUnix": int(time.time() * 1000)}
        case "PATCH", [name, object_id]:
            props = codec.properties_in(store.types(name), body.get("properties") or {})
            store.collection(name).data.update(uuid=object_id, properties=props)
            return 204, None
        case "DELETE", [name, object_id]:
            deleted = store.collection(name).data.delete_by_id(object_id)
            return (204, None) if deleted else (404, None)
    return 405, {"error": [{"message": f"{method} on objects is not served"}]}


def _rest_handler(store: Store) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        disable_nagle_algorithm = True  # headers and body are two writes: no 40 ms delayed-ACK stall

        def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
            pass

        def _route(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            body = json.loads(self.rfile.read(length)) if length else None
            parts = [p for p in self.path.split("?")[0].split("/") if p]
            try:
                with store.lock:
                    code, answer = _answer(store, self.command, parts, body)
            except UnexpectedStatusCodeError as exc:
                code, answer = exc.status_code, {"error": [{"message": error_message(exc)}]}
            data = b"" if answer is None else json.dumps(answer).encode()
            self.send_response(code)
            if answer is not None:
                self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        do_GET = do_POST = do_PATCH = do_PUT = do_DELETE = do_HEAD = _route  # noqa: N815

    return Handler


# ---- the process ----


def serve() -> tuple[ThreadingHTTPServer, grpc.Server, int]:
    store = Store()
    rpc = grpc.server(futures.ThreadPoolExecutor(max_workers=16))
    weaviate_pb2_grpc.add_WeaviateServicer_to_server(WeaviateService(store), rpc)
    health = grpc.unary_unary_rpc_method_handler(
        _health,
        request_deserializer=health_weaviate_pb2.WeaviateHealthCheckRequest.FromString,
        response_serializer=health_weaviate_pb2.WeaviateHealthCheckResponse.SerializeToString,
    )
    rpc.add_generic_rpc_handlers(
        (grpc.method_handlers_generic_handler("grpc.health.v1.Health", {"Check": health}),)
    )
    grpc_port = rpc.add_insecure_port("127.0.0.1:0")
    rpc.start()
    rest = ThreadingHTTPServer(("127.0.0.1", 0), _rest_handler(store))
    rest.daemon_threads = True
    threading.Thread(target=rest.serve_forever, daemon=True).start()
    return rest, rpc, grpc_port


def main() -> None:
    rest, rpc, grpc_port = serve()
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    print(f"ready {rest.server_address[1]} {grpc_port}", flush=True)
    with suppress(KeyboardInterrupt):
        stop.wait()
    rest.shutdown()
    rest.server_close()
    rpc.stop(grace=None).wait()


class WireWeaviate:
    """The wire server as a subprocess of the test's own: ``url`` and ``grpc_port`` to connect to."""

    def __init__(self) -> None:
        self.proc: subprocess.Popen[str] | None = None
        self.http_port = self.grpc_port = 0

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.http_port}"

    @property
    def pypi_url(self) -> str:
        return f"{self.url}/pypi/weaviate-client/json"

    def start(self) -> WireWeaviate:
        root = Path(__file__).resolve().parents[1]
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "tests.weaviate_wire"],
            cwd=root,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            stdin=subprocess.DEVNULL,
            text=True,
        )
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline().split()
        if not line or line[0] != "ready":
            self.stop()
            raise RuntimeError(f"the Weaviate wire server did not start: {line}")
        self.http_port, self.grpc_port = int(line[1]), int(line[2])
        return self

    def stop(self) -> None:
        if self.proc is not None:
            stop_process(self.proc)
            if self.proc.stdout is not None:
                self.proc.stdout.close()
            self.proc = None


@contextmanager
def hermetic_client(pypi_url: str) -> Iterator[None]:
    """weaviate-client asks PyPI for its latest version on every connect (best effort, and a
    DeprecationWarning when it is two minors behind): pointed at the wire server instead."""
    import weaviate.connect.v4 as v4

    saved = v4.PYPI_PACKAGE_URL
    v4.PYPI_PACKAGE_URL = pypi_url
    try:
        yield
    finally:
        v4.PYPI_PACKAGE_URL = saved


if __name__ == "__main__":
    main()
