"""A page diff for people: the text as it reads (links as their labels, no Markdown marks), compared
line by line and, where a line changed, word by word."""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass

from markdown_it import MarkdownIt
from markdown_it.token import Token

_md = MarkdownIt("commonmark", {"html": False}).enable("strikethrough")
_WORDS = re.compile(r"\s+|[^\s]+")
CONTEXT = 2  # unchanged lines shown around each change


@dataclass(frozen=True, slots=True)
class Word:
    text: str
    kind: str  # same | added | removed


@dataclass(frozen=True, slots=True)
class Row:
    kind: str  # same | added | removed | changed | gap
    words: tuple[Word, ...] = ()


def plain_lines(markdown: str) -> list[str]:
    """Each heading, paragraph and list item of ``markdown`` as one line of plain text."""
    lines: list[str] = []
    bullet = False
    for token in _md.parse(markdown):
        if token.type == "list_item_open":
            bullet = True
        elif token.type == "inline":
            text = "".join(_inline_text(token.children or []))
            lines.append(("• " if bullet else "") + text.strip())
            bullet = False
    return lines


def _inline_text(children: list[Token]) -> list[str]:
    return [
        child.content if child.type in ("text", "code_inline") else " " if "break" in child.type else ""
        for child in children
    ]


def word_diff(older: str, newer: str) -> list[Row]:
    """Rows of the newer text against the older: unchanged lines near a change, lines added or
    removed whole, and changed lines with their words marked."""
    a, b = plain_lines(older), plain_lines(newer)
    rows: list[Row] = []
    for group in difflib.SequenceMatcher(None, a, b, autojunk=False).get_grouped_opcodes(CONTEXT):
        if rows:
            rows.append(Row("gap"))
        for op, i1, i2, j1, j2 in group:
            if op == "equal":
                rows += [Row("same", (Word(line, "same"),)) for line in a[i1:i2]]
            elif op == "replace":
                rows += _replaced(a[i1:i2], b[j1:j2])
            else:
                rows += [Row("removed", (Word(line, "removed"),)) for line in a[i1:i2]]
                rows += [Row("added", (Word(line, "added"),)) for line in b[j1:j2]]
    return rows


def _replaced(old: list[str], new: list[str]) -> list[Row]:
    rows = [Row("changed", _words(x, y)) for x, y in zip(old, new, strict=False)]
    rows += [Row("removed", (Word(line, "removed"),)) for line in old[len(new) :]]
    rows += [Row("added", (Word(line, "added"),)) for line in new[len(old) :]]
    return rows


def _words(old: str, new: str) -> tuple[Word, ...]:
    x, y = _WORDS.findall(old), _WORDS.findall(new)
    out: list[Word] = []
    for op, i1, i2, j1, j2 in difflib.SequenceMatcher(None, x, y, autojunk=False).get_opcodes():
        if op == "equal":
            out.append(Word("".join(x[i1:i2]), "same"))
            continue
        if i2 > i1:
            out.append(Word("".join(x[i1:i2]), "removed"))
        if j2 > j1:
            out.append(Word("".join(y[j1:j2]), "added"))
    return tuple(out)
