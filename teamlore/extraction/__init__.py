"""Extraction: from a message to candidate facts.

The offline extractor (``offline``) needs no model: markup decoded (``markup``), sentences split
(``sentences``), chatter dropped and fact types read by small learned heads (``head``, over
``features`` and the ``cues``), statements made to stand alone (``statements``), entities tagged
(``entities``). A model extractor (``teamlore.llm.extractor``) replaces it when configured and
falls back to it.
"""

from teamlore.extraction.base import (
    IMPORTANCE,
    BatchExtractor,
    Extraction,
    ExtractionRequest,
    ExtractionStatus,
    Extractor,
    extract_many,
)
from teamlore.extraction.entities import entities_of, topic_of
from teamlore.extraction.markup import clean
from teamlore.extraction.offline import OfflineExtractor
from teamlore.extraction.sentences import split_sentences

__all__ = [
    "IMPORTANCE",
    "BatchExtractor",
    "Extraction",
    "ExtractionRequest",
    "ExtractionStatus",
    "Extractor",
    "OfflineExtractor",
    "clean",
    "entities_of",
    "extract_many",
    "split_sentences",
    "topic_of",
]
