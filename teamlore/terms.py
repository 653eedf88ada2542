"""Index terms: words (letters and digits), lower-cased, Latin letters without their diacritics,
Porter-stemmed from 3 letters on (PyStemmer), as FTS5's ``porter unicode61 remove_diacritics 2``
does them. Every keyword index Teamlore fills writes these (the file's ``stores/embedded/
keywords.py`` and ``subjects.py``; the Weaviate message index, whose BM25 then matches "hosted"
with "hosting" as the file does). Queries keep only the words that carry meaning
(``teamlore.text.content_words``), or every word when none does.
"""

from __future__ import annotations

import re
import unicodedata

import Stemmer

from teamlore.text import STOPWORDS

_TOKEN = re.compile(r"[^\W_]+")
STEM_CACHE = 200_000  # words whose stems are remembered (then forgotten at once and relearned)


class Tokenizer:
    """Text to index terms. One per index: a stemmer must not be shared between threads."""

    def __init__(self) -> None:
        self._stemmer = Stemmer.Stemmer("porter")
        self._stems: dict[str, str] = {}  # word -> stem, as words recur

    def tokens(self, text: str) -> list[str]:
        return self._stem(_words(text))

    def query_terms(self, text: str) -> list[str]:
        """The terms a query asks for, each once, in order: its words that carry meaning, or
        every word when none does (``teamlore.text.content_words``)."""
        words = _words(text)
        return list(dict.fromkeys(self._stem([w for w in words if w not in STOPWORDS] or words)))

    def _stem(self, words: list[str]) -> list[str]:
        known = self._stems
        if len(known) > STEM_CACHE:
            known.clear()
        for word in set(words).difference(known):
            # As FTS5's porter: a word shorter than 3 or longer than 64 characters stays as it is.
            known[word] = self._stemmer.stemWord(word) if 3 <= len(word) <= 64 else word
        return list(map(known.__getitem__, words))


def _words(text: str) -> list[str]:
    """Runs of letters and digits, lower-cased (not case-folded: "weiß" stays), Latin letters
    without their diacritics, as unicode61 with ``remove_diacritics 2`` splits and folds them."""
    lowered = text.lower()
    if not lowered.isascii():
        lowered = "".join(_plain(c) if _latin(c) else c for c in lowered)
    return _TOKEN.findall(lowered)


def _plain(char: str) -> str:
    return "".join(c for c in unicodedata.normalize("NFD", char) if not unicodedata.combining(c))


def _latin(char: str) -> bool:
    """In the Latin blocks, where FTS5 removes diacritics (a Japanese voicing mark is part of the
    word)."""
    point = ord(char)
    return 0xC0 <= point < 0x250 or 0x1E00 <= point < 0x1F00
