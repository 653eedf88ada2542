"""Sentences of a chat message: split at sentence ends and line breaks, nowhere else.

A semicolon or a comma list belongs to its sentence ("From now on deploys go through Argo; Jenkins
is being retired." is one statement). A period after a known abbreviation or an initial does not
end a sentence, nor does the period of a German ordinal ("bis zum 5. Oktober", "im 2. Stock");
Japanese and Chinese sentence marks do, with no space after them.
"""

from __future__ import annotations

import re

# Words whose period is not a sentence end ("e.g. the staging box", "approx. 5 min").
_ABBREVIATIONS = frozenset(
    "e.g i.e etc vs approx incl excl min max dept mr mrs ms dr st no nr ca cf fig vol ver eta "
    "z.b u.a bzw usw evtl ggf d.h p.ej aprox etc. cf.".split()
)
# Words before a German ordinal ("am 3.", "bis zum 31.", "im 2. Stock"): there "N." is not a
# sentence end (2026-12-02, out of fold on the training split: three lines typed from a fragment).
_BEFORE_ORDINAL = frozenset("am im zum zur vom bis ab seit den dem der des jeden jedem".split())
_END = re.compile(r"(?<=[.!?…])[\"')\]]*\s+|(?<=[。！？])\s*")
_BULLET = " -*•\t>"


def split_sentences(text: str) -> list[str]:
    sentences: list[str] = []
    for line in text.split("\n"):
        sentences += _split_line(line)
    return sentences


def _split_line(line: str) -> list[str]:
    parts: list[str] = []
    start = 0
    for match in _END.finditer(line):
        head = line[start : match.start()]
        if match.end() >= len(line) or not head.strip() or _is_abbreviation(head):
            continue
        parts.append(head)
        start = match.end()
    parts.append(line[start:])
    return [p for p in (part.strip().strip(_BULLET).strip() for part in parts) if p]


def _is_abbreviation(head: str) -> bool:
    """The text before a period ends in an abbreviation or an initial, or is a list number ("3.")."""
    if not head.endswith("."):
        return False
    last = head.rsplit(None, 1)[-1].rstrip(".").lower().lstrip("(\"'@")  # "@Mr." too
    listed = last.isdigit() and head.strip() == f"{last}."
    return last in _ABBREVIATIONS or (len(last) == 1 and last.isalpha()) or listed or _is_ordinal(head)


def _is_ordinal(head: str) -> bool:
    """'bis zum 5.': a number of one or two digits after an article or preposition of a date or
    a floor, as German writes ordinals."""
    words = head[:-1].split()
    if len(words) < 2 or len(words[-1]) > 2 or not words[-1].isdigit():
        return False
    return words[-2].lower() in _BEFORE_ORDINAL
