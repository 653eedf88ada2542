"""Fact versions and message versions to Weaviate objects and back: one object per version, a
deterministic UUID."""

from __future__ import annotations

import threading
import uuid
from collections.abc import Mapping
from typing import Any

from teamlore.domain import Fact, FactStatus, FactType, MessageVersion
from teamlore.stores.weaviate.filters import from_stored, to_stored
from teamlore.terms import Tokenizer
from teamlore.timeutil import SENTINEL

# Fixed namespace: the same (fact, version) is the same object id on every machine and every run,
# so a second insert of a version is refused by Weaviate (the concurrency check) and a re-run
# batch import overwrites instead of duplicating.
_NAMESPACE = uuid.UUID("5f0c7a52-6b1e-4d0e-9a57-7d1c4a3b2e10")


def version_uuid(fact_id: str, version: int) -> uuid.UUID:
    return uuid.uuid5(_NAMESPACE, f"{fact_id}#{version}")


def to_properties(fact: Fact, embedding_key: str | None) -> dict[str, Any]:
    """Every declared property (absent optional values are left out, never sent as new fields)."""
    props: dict[str, Any] = {
        "fact_id": fact.fact_id,
        "version": fact.version,
        "workspace": fact.workspace,
        "channel": fact.channel,
        "statement": fact.statement,
        "content_hash": fact.content_hash,
        "fact_type": fact.fact_type.value,
        "entities": list(fact.entities),
        "topic": fact.topic,
        "importance": float(fact.importance),
        "confidence": float(fact.confidence),
        "status": fact.status.value,
        "evidence": list(fact.evidence),
        "valid_from": to_stored(fact.valid_from),
        "valid_to": to_stored(fact.valid_to),
        "recorded_from": to_stored(fact.recorded_from),
        "recorded_to": to_stored(fact.recorded_to),
        "supersedes": list(fact.supersedes),
        "origin": fact.origin,
    }
    optional = {
        "thread_id": fact.thread_id,
        "superseded_by": fact.superseded_by,
        "due_at": None if fact.due_at is None else to_stored(fact.due_at),
        "embedding_key": embedding_key,
    }
    props.update({k: v for k, v in optional.items() if v is not None})
    return props


def to_fact(props: Mapping[str, Any]) -> Fact:
    due_at = props.get("due_at")
    return Fact(
        fact_id=props["fact_id"],
        version=int(props["version"]),
        workspace=props["workspace"],
        channel=props["channel"],
        thread_id=props.get("thread_id"),
        statement=props.get("statement") or "",
        content_hash=props["content_hash"],
        fact_type=FactType(props["fact_type"]),
        entities=tuple(props.get("entities") or ()),
        topic=props.get("topic") or "",
        importance=float(props["importance"]),
        confidence=float(props["confidence"]),
        status=FactStatus(props["status"]),
        evidence=tuple(props.get("evidence") or ()),
        valid_from=from_stored(props["valid_from"]),
        valid_to=from_stored(props["valid_to"]),
        recorded_from=from_stored(props["recorded_from"]),
        recorded_to=from_stored(props["recorded_to"]),
        supersedes=tuple(props.get("supersedes") or ()),
        superseded_by=props.get("superseded_by"),
        origin=props["origin"],
        due_at=None if due_at is None else from_stored(due_at),
    )


# ---- message versions (the message index) ----

TOP_LEVEL = "top"  # the conversation of a channel's top-level messages
_local = threading.local()  # each thread's tokenizer


def message_uuid(workspace: str, channel: str, message_id: str, version: int) -> uuid.UUID:
    # The unit separator cannot occur in a platform's ids, so no two keys run together.
    return uuid.uuid5(_NAMESPACE, f"message\x1f{workspace}\x1f{channel}\x1f{message_id}#{version}")


def conversation(message_id: str, thread_id: str | None) -> str:
    """The conversation a message sits in: the channel's top level, or its thread."""
    reply = thread_id is not None and thread_id != message_id
    return f"t:{thread_id}" if reply else TOP_LEVEL


def index_terms(text: str) -> str:
    """``text`` as the keyword index holds it: its ``teamlore.terms`` (stemmed words), spaced."""
    tokenizer = getattr(_local, "tokenizer", None)
    if tokenizer is None:  # a stemmer must not be shared between threads
        tokenizer = _local.tokenizer = Tokenizer()
    return " ".join(tokenizer.tokens(text))


def query_terms(text: str) -> str:
    """What a keyword query of the message index asks for: the query's terms, spaced ("" for none)."""
    tokenizer = getattr(_local, "tokenizer", None)
    if tokenizer is None:
        tokenizer = _local.tokenizer = Tokenizer()
    return " ".join(tokenizer.query_terms(text))


def message_properties(version: MessageVersion, embedding_key: str | None) -> dict[str, Any]:
    """Every declared property of a message version; ``terms`` and ``speaker`` (what keyword
    search reads) only while the version has text, so a deleted message matches nothing."""
    object_id = message_uuid(version.workspace, version.channel, version.message_id, version.version)
    props: dict[str, Any] = {
        "version_key": str(object_id),
        "workspace": version.workspace,
        "channel": version.channel,
        "message_id": version.message_id,
        "version": version.version,
        "conversation": conversation(version.message_id, version.thread_id),
        "author_id": version.author_id,
        "author_name": version.author_name,
        "text": version.text,
        "terms": index_terms(version.text),
        "speaker": index_terms(version.author_name) if version.text else "",
        "has_text": bool(version.text),
        "valid_from": to_stored(version.posted_at),
        "valid_to": to_stored(SENTINEL),
        "recorded_from": to_stored(version.recorded_from),
        "recorded_to": to_stored(version.recorded_to),
    }
    optional = {"thread_id": version.thread_id, "embedding_key": embedding_key}
    props.update({k: v for k, v in optional.items() if v is not None})
    return props


def to_message_version(props: Mapping[str, Any]) -> MessageVersion:
    return MessageVersion(
        workspace=props["workspace"],
        channel=props["channel"],
        message_id=props["message_id"],
        version=int(props["version"]),
        thread_id=props.get("thread_id"),
        author_id=props["author_id"],
        author_name=props.get("author_name") or "",
        text=props.get("text") or "",
        posted_at=from_stored(props["valid_from"]),
        recorded_from=from_stored(props["recorded_from"]),
        recorded_to=from_stored(props["recorded_to"]),
    )
