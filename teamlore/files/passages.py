"""A read file's sections as passages, and each passage as a message of the message that shared it.

A passage is a derived message: the sharing message's workspace, channel, thread, author, time
and link, an id made of the sharing message's id, the file's hash and the passage's place, and
``file_ref`` naming the file and where in it ("report.pdf, p. 3"). So extraction, resolution, the
message index, the gate, both time axes, deletion and erasure apply to it as to any message.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterator
from dataclasses import dataclass

from teamlore.domain import IDENTIFIER_MAX, EventKind, MessageEvent, parse_event

# About a paragraph or two: short enough for a passage vector to mean one thing, long enough to
# keep a table row or a slide together.
PASSAGE_CHARS = 1200
_SENTENCE_END = re.compile(r"[.!?:;]\s*$")
_BLANKS = re.compile(r"\n\s*\n")
# What a message may not hold (``untrusted.text_problem``): a file's text loses it, not the file.
_UNSTORABLE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\ud800-\udfff]")


@dataclass(frozen=True, slots=True)
class Passage:
    locator: str  # "p. 3", "sheet Budget", "slide 2", "§ Pricing", "" (the whole file)
    text: str


def reflow(text: str) -> str:
    """Lines joined into the sentences they wrap (PDF text breaks lines mid-sentence, and a
    message's sentences are split at line breaks); a line that ends a sentence, a blank line or a
    list item keeps its break."""
    paragraphs = []
    for block in _BLANKS.split(_UNSTORABLE.sub(" ", text)):
        lines = [" ".join(line.split()) for line in block.splitlines()]
        out: list[str] = []
        for line in filter(None, lines):
            if out and not _SENTENCE_END.search(out[-1]) and not line.startswith(("-", "*", "•")):
                out[-1] = f"{out[-1]} {line}"
            else:
                out.append(line)
        if out:
            paragraphs.append("\n".join(out))
    return "\n\n".join(paragraphs)


def passages(sections: tuple[tuple[str, str], ...], limit: int) -> tuple[list[Passage], bool]:
    """Each section's text in passages of at most about ``PASSAGE_CHARS``, split between
    paragraphs, else lines, else words; at most ``limit`` (and whether some were left out)."""
    found: list[Passage] = []
    for locator, text in sections:
        for chunk in _chunks(reflow(text)):
            if len(found) == limit:
                return found, True
            found.append(Passage(locator, chunk))
    return found, False


def _chunks(text: str) -> Iterator[str]:
    pieces = [
        piece[start : start + PASSAGE_CHARS]
        for piece in re.split(r"(\n\n|\n| )", text)
        for start in range(0, len(piece), PASSAGE_CHARS)
    ]
    current = ""
    for piece in pieces:
        if len(current) + len(piece) > PASSAGE_CHARS and current.strip():
            yield current.strip()
            current = ""
        current += piece
    if current.strip():
        yield current.strip()


def passage_id(message_id: str, sha256: str, number: int) -> str:
    """Stable for the same file shared by the same message (a re-read writes the same ids); a new
    version of the file (another hash) gives new ids. Within the 200-character id limit."""
    stem = message_id if len(message_id) <= 150 else hashlib.sha256(message_id.encode()).hexdigest()[:32]
    made = f"{stem}~f{sha256[:16]}~{number}"
    assert len(made) <= IDENTIFIER_MAX
    return made


def file_ref(name: str, locator: str) -> str:
    return f"{name}, {locator}" if locator else name


def passage_events(
    shared: MessageEvent, name: str, sha256: str, found: list[Passage], max_chars: int
) -> list[MessageEvent]:
    """The passages as messages of ``shared`` (the message that shared the file), validated as
    every event is."""
    base = shared.model_dump(mode="json")
    return [
        parse_event(
            {
                **base,
                "kind": EventKind.CREATED.value,
                "message_id": passage_id(shared.message_id, sha256, number),
                "text": passage.text,
                "attachments": [],
                "shared_in": shared.message_id,
                "file_ref": file_ref(name, passage.locator)[:600],
            },
            max_chars,
        )
        for number, passage in enumerate(found, start=1)
    ]
