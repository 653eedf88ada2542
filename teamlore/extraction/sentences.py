"""Sentences of a chat message: split at sentence ends and line breaks, nowhere else.

A semicolon or a comma list belongs to its sentence ("From now on deploys go through Argo; Jenkins
is being retired." is one statement). A period after a known abbreviation or an initial does not
end a sentence; Japanese and Chinese sentence marks do, with no space after them.
"""

from __future__ import annotations

import re

# Words whose period is not a sentence end ("e.g. the staging box", "approx. 5 min").
_ABBREVIATIONS = frozenset(
    "e.g i.e etc vs approx incl excl min max dept mr mrs ms dr st no nr ca cf fig vol ver eta "
    "z.b u.a bzw usw evtl ggf d.h p.ej aprox etc. cf.".split()
)
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
    return last in _ABBREVIATIONS or (len(last) == 1 and last.isalpha()) or listed
