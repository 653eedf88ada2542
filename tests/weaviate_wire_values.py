"""The Weaviate wire server's translation (tests/weaviate_wire.py): the wire's text, numbers and
protobuf messages to the Python values and the client's own query objects the double
(tests/weaviate_double.py) evaluates, and values back to the wire."""

from __future__ import annotations

import struct
import uuid as uuid_module
from datetime import UTC, datetime
from typing import Any

from weaviate.collections.classes.filters import (
    _FilterAnd,
    _FilterNot,
    _FilterOr,
    _Filters,
    _FilterValue,
    _Operator,
)
from weaviate.proto.v1 import base_pb2, properties_pb2

from .weaviate_double import status_error as _status

_OPERATORS = {op._to_grpc(): op for op in _Operator}
_JOINS = {
    base_pb2.Filters.OPERATOR_AND: lambda fs: _FilterAnd(fs),
    base_pb2.Filters.OPERATOR_OR: lambda fs: _FilterOr(fs),
    base_pb2.Filters.OPERATOR_NOT: lambda fs: _FilterNot(fs[0]),
}


# ---- values: the wire's text and numbers to the Python values the double holds, and back ----


def parse_date(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00")).astimezone(UTC)


def go_time(moment: datetime) -> str:
    """RFC 3339 with nanoseconds and trailing zeros cut, in UTC, as Go's encoder writes a DATE."""
    moment = moment.astimezone(UTC)
    fraction = f"{moment.microsecond:06d}".rstrip("0")
    return moment.strftime("%Y-%m-%dT%H:%M:%S") + (f".{fraction}" if fraction else "") + "Z"


def typed(data_type: str, value: Any) -> Any:
    """A value as the schema types it (the server parses dates and ints by the schema too)."""
    if value is None:
        return None
    if data_type == "date":
        return parse_date(value)
    if data_type == "date[]":
        return [parse_date(v) for v in value]
    if data_type == "int":
        return int(value)
    if data_type == "number":
        return float(value)
    return value


def properties_in(types: dict[str, str], properties: dict[str, Any]) -> dict[str, Any]:
    # An undeclared property passes through untyped: the double refuses it (auto-schema off).
    return {k: typed(types[k], v) if k in types else v for k, v in properties.items()}


def value_out(data_type: str, value: Any) -> properties_pb2.Value:
    if value is None:
        return properties_pb2.Value(null_value=0)
    if data_type == "date":
        return properties_pb2.Value(date_value=go_time(value))
    if data_type == "int":
        return properties_pb2.Value(int_value=int(value))
    if data_type == "number":
        return properties_pb2.Value(number_value=float(value))
    if data_type == "boolean":
        return properties_pb2.Value(bool_value=bool(value))
    if data_type in ("text[]", "string[]"):
        return properties_pb2.Value(
            list_value=properties_pb2.ListValue(text_values=properties_pb2.TextValues(values=list(value)))
        )
    if data_type == "date[]":
        values = [go_time(v) for v in value]
        return properties_pb2.Value(
            list_value=properties_pb2.ListValue(date_values=properties_pb2.DateValues(values=values))
        )
    if data_type == "int[]":
        packed = struct.pack(f"<{len(value)}q", *value)
        return properties_pb2.Value(
            list_value=properties_pb2.ListValue(int_values=properties_pb2.IntValues(values=packed))
        )
    if data_type == "number[]":
        packed = struct.pack(f"<{len(value)}d", *value)
        return properties_pb2.Value(
            list_value=properties_pb2.ListValue(number_values=properties_pb2.NumberValues(values=packed))
        )
    return properties_pb2.Value(text_value=str(value))


def floats(packed: bytes) -> list[float]:
    return list(struct.unpack(f"<{len(packed) // 4}f", packed))


def pack(vector: list[float]) -> bytes:
    return struct.pack(f"<{len(vector)}f", *vector)


# ---- protobuf to the client's own query objects ----


def filter_in(message: base_pb2.Filters, types: dict[str, str]) -> _Filters:
    """The client's Filter object, rebuilt from the Filters message it serialised."""
    if message.operator in _JOINS:
        return _JOINS[message.operator]([filter_in(f, types) for f in message.filters])
    if message.target.WhichOneof("target") != "property":
        raise _status(422, "the double filters on properties only (no reference or count filters)")
    target = message.target.property
    kind = message.WhichOneof("test_value")
    raw: Any = getattr(message, kind) if kind else None
    if kind in ("value_text_array", "value_int_array", "value_boolean_array", "value_number_array"):
        raw = list(raw.values)
    element = types.get(target, "").removesuffix("[]")
    if element == "date":
        value = [parse_date(v) for v in raw] if isinstance(raw, list) else parse_date(raw)
    else:
        value = raw
    return _FilterValue(target=target, value=value, operator=_OPERATORS[message.operator])


def id_wanted(message: base_pb2.Filters) -> uuid_module.UUID | None:
    """The object id of a fetch by id (``Filter.by_id().equal(uuid)``, what fetch_object_by_id sends)."""
    if message.operator == base_pb2.Filters.OPERATOR_EQUAL and message.target.property == "_id":
        return uuid_module.UUID(message.value_text)
    return None


def query_vector(message: Any) -> list[float]:
    """A query vector from any of the shapes the client packs it in (bytes, Vectors, per target)."""
    if message.vector_bytes:
        return floats(message.vector_bytes)
    if len(message.vectors):
        return floats(message.vectors[0].vector_bytes)
    for each in getattr(message, "vector_for_targets", []):
        return floats(each.vectors[0].vector_bytes if len(each.vectors) else each.vector_bytes)
    if len(message.vector):
        return list(message.vector)
    raise _status(422, "no query vector")


def target(message: Any) -> str | None:
    names = list(message.targets.target_vectors) or list(message.target_vectors)
    if len(names) > 1:
        raise _status(422, "the double searches one target vector")
    return names[0] if names else None
