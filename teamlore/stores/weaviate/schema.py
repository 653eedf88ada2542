"""The schemas of Teamlore's collections (fact versions; message versions), created by Teamlore
and checked on every start.

Every property is declared (nothing is left to auto-schema): identifiers are whole-value FIELD
tokens for exact filters, the searchable text (a fact's statement and entity tags, a message's
text and speaker) is WORD-tokenized for BM25, the four time bounds are DATE with range indexes.
Vectors are supplied by Teamlore's embedder (vectorizer none), one named vector per collection,
cosine distance. The schema version sits in the collection's description; a collection made by
another version, or changed by hand or by auto-schema, is refused with the differences and what
to do.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from weaviate import WeaviateClient
from weaviate.classes.config import (
    Configure,
    DataType,
    Property,
    StopwordsPreset,
    Tokenization,
    VectorDistances,
)
from weaviate.collections.classes.config import CollectionConfig
from weaviate.exceptions import WeaviateBaseError

from teamlore.errors import ConfigurationError

SCHEMA_VERSION = 1
DESCRIPTION = f"Teamlore fact versions (bitemporal). teamlore-schema={SCHEMA_VERSION}"
VECTOR = "statement"  # the one named vector: the statement as Teamlore's embedder saw it
KEYWORD_PROPERTIES = ["statement", "entities^0.5"]  # entity tags count half, as in the embedded store
MESSAGE_VECTOR = "passage"  # a message's passage (its text after its conversation's previous one)
# The text's terms and, while it has text, who said it (a question naming a person reaches what
# they said), weighed as the embedded message index weighs them. Both hold ``teamlore.terms``
# (stemmed words, as the file's index holds them), so BM25 matches what the file's matches.
MESSAGE_KEYWORD_PROPERTIES = ["terms", "speaker"]
MESSAGES_SUFFIX = "Messages"  # the message collection is named after the fact collection
_VERSION_MARK = re.compile(r"teamlore-schema=(\d+)")


@dataclass(frozen=True, slots=True)
class Spec:
    """A property of the collection, as this code creates it and expects to find it."""

    name: str
    data_type: DataType
    tokenization: Tokenization | None = None
    filterable: bool = False
    searchable: bool = False
    rangeable: bool = False


def _id(name: str) -> Spec:
    return Spec(name, DataType.TEXT, Tokenization.FIELD, filterable=True)


def _date(name: str) -> Spec:
    return Spec(name, DataType.DATE, filterable=True, rangeable=True)


PROPERTIES: tuple[Spec, ...] = (
    _id("fact_id"),
    Spec("version", DataType.INT, filterable=True, rangeable=True),
    _id("workspace"),
    _id("channel"),
    _id("thread_id"),
    Spec("statement", DataType.TEXT, Tokenization.WORD, searchable=True),
    _id("content_hash"),
    _id("fact_type"),
    Spec("entities", DataType.TEXT_ARRAY, Tokenization.WORD, searchable=True),
    Spec("topic", DataType.TEXT, Tokenization.FIELD),
    Spec("importance", DataType.NUMBER),
    Spec("confidence", DataType.NUMBER),
    _id("status"),
    Spec("evidence", DataType.TEXT_ARRAY, Tokenization.FIELD, filterable=True),
    _date("valid_from"),
    _date("valid_to"),
    _date("recorded_from"),
    _date("recorded_to"),
    Spec("supersedes", DataType.TEXT_ARRAY, Tokenization.FIELD),
    _id("superseded_by"),
    _id("origin"),
    Spec("due_at", DataType.DATE),
    _id("embedding_key"),
)
PROPERTY_NAMES = frozenset(p.name for p in PROPERTIES)

MESSAGE_PROPERTIES: tuple[Spec, ...] = (
    _id("version_key"),  # the object's id as text: a unique key to page by
    _id("workspace"),
    _id("channel"),
    _id("message_id"),
    Spec("version", DataType.INT, filterable=True, rangeable=True),
    _id("thread_id"),
    # "top" for a channel's top level, "t:" + thread id for a reply: the conversation a message
    # sits in, as one filterable value (a filter cannot compare two properties).
    _id("conversation"),
    _id("author_id"),
    Spec("author_name", DataType.TEXT, Tokenization.FIELD),
    Spec("text", DataType.TEXT, Tokenization.WORD),  # what is shown; searched through ``terms``
    Spec("terms", DataType.TEXT, Tokenization.WORD, searchable=True),
    Spec("speaker", DataType.TEXT, Tokenization.WORD, searchable=True),
    Spec("has_text", DataType.BOOL, filterable=True),
    _date("valid_from"),
    _date("valid_to"),
    _date("recorded_from"),
    _date("recorded_to"),
    _id("embedding_key"),
)


@dataclass(frozen=True, slots=True)
class CollectionSchema:
    """One collection as this code creates it: its description (with the version mark), its
    properties and its one named vector."""

    what: str
    description: str
    properties: tuple[Spec, ...]
    vector: str
    fill: str  # how a new collection of this kind is filled (said when one is refused)

    @property
    def names(self) -> frozenset[str]:
        return frozenset(p.name for p in self.properties)


FACTS = CollectionSchema(
    "fact versions",
    DESCRIPTION,
    PROPERTIES,
    VECTOR,
    "`teamlore weaviate load-facts` copies the versions the SQLite file holds; `teamlore reindex`"
    " rebuilds them from the stored messages",
)
MESSAGES = CollectionSchema(
    "message versions",
    f"Teamlore message versions (bitemporal search index). teamlore-schema={SCHEMA_VERSION}",
    MESSAGE_PROPERTIES,
    MESSAGE_VECTOR,
    "`teamlore weaviate load-messages` copies the message index the SQLite file holds; `teamlore"
    " reindex` rebuilds it from the stored messages",
)


def messages_collection(facts_collection: str) -> str:
    return facts_collection + MESSAGES_SUFFIX


def create_collection(client: WeaviateClient, name: str, schema: CollectionSchema = FACTS) -> None:
    client.collections.create(
        name,
        description=schema.description,
        properties=[
            Property(
                name=p.name,
                data_type=p.data_type,
                tokenization=p.tokenization,
                index_filterable=p.filterable,
                index_searchable=p.searchable,
                index_range_filters=p.rangeable,
            )
            for p in schema.properties
        ],
        vector_config=Configure.Vectors.self_provided(
            name=schema.vector,
            vector_index_config=Configure.VectorIndex.hnsw(distance_metric=VectorDistances.COSINE),
        ),
        # No server-side stopwords: Teamlore picks the query's words itself (teamlore.text), the
        # same way for every store, so "the of" still matches what the embedded store matches.
        inverted_index_config=Configure.inverted_index(
            bm25_b=0.75, bm25_k1=1.2, stopwords_preset=StopwordsPreset.NONE
        ),
        multi_tenancy_config=Configure.multi_tenancy(enabled=False),
    )


def schema_differences(config: CollectionConfig, schema: CollectionSchema = FACTS) -> list[str]:
    """How an existing collection differs from what this code expects (empty: it matches)."""
    found = _VERSION_MARK.search(config.description or "")
    if found is None:
        return ["it was not created by Teamlore (no teamlore-schema mark in its description)"]
    problems = []
    if int(found.group(1)) != SCHEMA_VERSION:
        problems.append(f"schema version {found.group(1)}, this Teamlore expects {SCHEMA_VERSION}")
    have = {p.name: p for p in config.properties}
    for spec in schema.properties:
        prop = have.get(spec.name)
        if prop is None:
            problems.append(f"property {spec.name} is missing")
            continue
        actual = (
            prop.data_type,
            prop.tokenization,
            prop.index_filterable,
            prop.index_searchable,
            prop.index_range_filters,
        )
        wanted = (spec.data_type, spec.tokenization, spec.filterable, spec.searchable, spec.rangeable)
        if actual != wanted:
            problems.append(f"property {spec.name} is {_shown(actual)}, expected {_shown(wanted)}")
    extra = sorted(set(have) - schema.names)
    if extra:
        problems.append(f"unexpected properties {', '.join(extra)} (added by auto-schema or by hand?)")
    vectors = config.vector_config or {}
    if set(vectors) != {schema.vector}:
        problems.append(f"named vectors {sorted(vectors)}, expected ['{schema.vector}'] (self-provided)")
    if config.multi_tenancy_config.enabled:
        problems.append("multi-tenancy is on; this store keeps one collection filtered by scope")
    return problems


def check_schema(client: WeaviateClient, name: str, schema: CollectionSchema = FACTS) -> None:
    """Create the collection if it is missing; refuse to run on one with another schema."""
    if not client.collections.exists(name):
        try:
            create_collection(client, name, schema)
            return
        except WeaviateBaseError:
            # Several processes starting at once: another may have created it since we looked.
            # Then its schema is checked like any existing one; otherwise the error stands.
            if not client.collections.exists(name):
                raise
    problems = schema_differences(client.collections.get(name).config.get(), schema)
    if problems:
        raise ConfigurationError(
            f"Weaviate collection {name} ({schema.what}) does not have the schema this Teamlore expects: "
            + "; ".join(problems)
            + f". Set TEAMLORE_WEAVIATE_COLLECTION to a new name and fill it ({schema.fill})."
        )


def _shown(values: tuple[object, ...]) -> str:
    data_type, tokenization, filterable, searchable, rangeable = values
    flags = [
        n for n, on in (("filterable", filterable), ("searchable", searchable), ("range", rangeable)) if on
    ]
    kind = getattr(data_type, "value", data_type)
    token = getattr(tokenization, "value", tokenization)
    return f"{kind}" + (f"/{token}" if token else "") + f" [{','.join(flags) or 'not indexed'}]"
