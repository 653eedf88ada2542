"""Facts and the message index in Weaviate (``weaviate-client`` v4), for deployments that
outgrow one SQLite file.

``open_fact_store(settings, audit, vectors)`` connects, creates or checks the collection's schema,
and returns a ``WeaviateFactBackend``: the raw queries and write path behind the one read gate.
``open_message_index(settings, facts, vectors)`` does the same for the message versions, on the
fact store's connection and undo journal.
"""

from __future__ import annotations

from urllib.parse import urlsplit

import weaviate
from weaviate.classes.init import AdditionalConfig, Auth, Timeout
from weaviate.exceptions import WeaviateBaseError

from teamlore.config import Settings
from teamlore.embedding import EmbeddingCache
from teamlore.errors import BackendUnavailable, ConfigurationError, TeamloreError
from teamlore.stores.protocols import AuditLog
from teamlore.stores.weaviate.facts import WeaviateFactBackend
from teamlore.stores.weaviate.filters import compile_filters
from teamlore.stores.weaviate.messages import WeaviateMessageIndex
from teamlore.stores.weaviate.schema import MESSAGES, check_schema, messages_collection


def connect(settings: Settings) -> weaviate.WeaviateClient:
    """A connected client (the caller closes it), or a clear error saying what to check."""
    url = urlsplit(settings.weaviate_url)
    if url.scheme not in ("http", "https") or not url.hostname:
        raise ConfigurationError(
            f"TEAMLORE_WEAVIATE_URL={settings.weaviate_url!r} is not an http(s) URL;"
            " give e.g. http://localhost:8080"
        )
    secure = url.scheme == "https"
    try:
        return weaviate.connect_to_custom(
            http_host=url.hostname,
            http_port=url.port or (443 if secure else 80),
            http_secure=secure,
            grpc_host=url.hostname,
            grpc_port=settings.weaviate_grpc_port,
            grpc_secure=secure,
            auth_credentials=Auth.api_key(settings.weaviate_api_key) if settings.weaviate_api_key else None,
            additional_config=AdditionalConfig(
                timeout=Timeout(
                    init=settings.weaviate_connect_timeout_s,
                    query=settings.weaviate_timeout_s,
                    insert=settings.weaviate_timeout_s,
                )
            ),
        )
    except WeaviateBaseError as exc:
        raise BackendUnavailable(
            f"cannot reach Weaviate at {settings.weaviate_url} (gRPC port"
            f" {settings.weaviate_grpc_port}): {' '.join(str(exc).split())} Check that the server is up, and"
            " TEAMLORE_WEAVIATE_URL, TEAMLORE_WEAVIATE_GRPC_PORT and TEAMLORE_WEAVIATE_API_KEY."
        ) from exc


def drop_collections(settings: Settings) -> None:
    """Delete the configured fact collection and its message collection (benchmarks' and tests'
    own collections, when they are done)."""
    from teamlore.stores.weaviate.schema import messages_collection

    client = connect(settings)
    try:
        client.collections.delete(settings.weaviate_collection)
        client.collections.delete(messages_collection(settings.weaviate_collection))
    finally:
        client.close()


def open_fact_store(settings: Settings, audit: AuditLog, vectors: EmbeddingCache) -> WeaviateFactBackend:
    client = connect(settings)
    try:
        check_schema(client, settings.weaviate_collection)
        collection = client.collections.get(settings.weaviate_collection)
    except TeamloreError:
        client.close()
        raise
    except WeaviateBaseError as exc:
        client.close()
        raise BackendUnavailable(f"Weaviate schema check failed: {exc}") from exc
    return WeaviateFactBackend(
        collection,
        audit,
        vectors,
        hybrid_alpha=settings.weaviate_hybrid_alpha,
        max_results=settings.weaviate_max_results,
        close=client.close,
        client=client,
    )


def open_message_index(
    settings: Settings, facts: WeaviateFactBackend, vectors: EmbeddingCache
) -> WeaviateMessageIndex:
    """The message index in the collection named after the fact collection (``...Messages``),
    created or checked like it. Its writes join the fact store's undo journal, so the stores'
    transaction undoes both; the connection is the fact store's (closed with it)."""
    name = messages_collection(settings.weaviate_collection)
    try:
        check_schema(facts.client, name, MESSAGES)
        collection = facts.client.collections.get(name)
    except WeaviateBaseError as exc:
        raise BackendUnavailable(f"Weaviate schema check failed: {exc}") from exc
    index = WeaviateMessageIndex(
        collection,
        vectors,
        facts.journal,
        max_results=settings.weaviate_max_results,
        key_in_use=facts.uses_key,
    )
    # A cached vector goes when neither a fact version nor a message version uses it (as the
    # file's ``_still_used`` asks both tables).
    facts.key_in_use = index.uses_key
    facts.message_undo = index.writes.undo  # a dead worker's message writes are undone there
    return index


__all__ = [
    "WeaviateFactBackend",
    "WeaviateMessageIndex",
    "compile_filters",
    "connect",
    "open_fact_store",
    "open_message_index",
]
