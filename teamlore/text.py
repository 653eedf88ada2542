"""Words of a query or a statement, for keyword matching. One definition for every store and reader."""

from __future__ import annotations

import re

# Words too common to help a match; without this "what is the launch date" ranks by "the".
STOPWORDS = frozenset(
    (
        "a an and are as at be but by did do does for from had has have how i in is it its me my of on or"
        " our so that the their them they this to us was we were what when where which who whom why will"
        " with you your"
    ).split()
)
_WORD = re.compile(r"\w+", re.UNICODE)


def words_of(text: str) -> list[str]:
    """Every word, case-folded, in order."""
    return _WORD.findall(text.casefold())


def content_words(text: str) -> list[str]:
    """The words that carry meaning (stopwords left out), case-folded, in order."""
    return [w for w in words_of(text) if w not in STOPWORDS]


# Words compare on their first letters so "launch" meets "launches" and "launched"; five keeps
# "deploy"/"deployment" together without merging "office"/"officer"-sized words too eagerly.
STEM = 5


def stems(text: str) -> set[str]:
    """The meaningful words of ``text``, each cut to its first ``STEM`` letters."""
    return {w[:STEM] for w in content_words(text)}
