"""LoCoMo (``../shared/data/locomo10.json``, CC BY-NC 4.0: evaluation only, never bundled) as
Teamlore sees it: one normalized message event per dialogue turn, and the questions with their
evidence turn ids repaired.

Each sample becomes its own workspace and channel. A turn's message id is its ``dia_id``; its time
is its session's date plus one minute per position in the session (LoCoMo gives sessions a date
and time, turns only an order). Only the turn's text is ingested: a shared photo's caption is not
text anyone typed.

Evidence ids are repaired as follows (and counted in the report):
- a field holding several ids (``'D8:6; D9:17'``, ``'D9:1 D4:4 D4:6'``) is split on ``;``, ``,``
  and spaces;
- ``'D:11:26'`` reads ``'D11:26'``; a zero-padded turn (``'D30:05'``) reads ``'D30:5'``;
- an id that is not a turn of the sample after that (``'D'``, ``'D10:19'`` in a session of 18
  turns) is dropped; a question left with no evidence is not asked.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

TUNING = ("conv-26", "conv-30", "conv-41", "conv-42", "conv-43")
CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop", 5: "adversarial"}
_SESSION = re.compile(r"session_(\d+)")
_ID = re.compile(r"D:?(\d+):0*(\d+)")


@dataclass(frozen=True, slots=True)
class Turn:
    dia_id: str
    session: int
    speaker: str
    text: str
    ts: datetime


@dataclass(frozen=True, slots=True)
class Question:
    text: str
    evidence: tuple[str, ...]
    category: int


@dataclass(frozen=True, slots=True)
class Sample:
    sample_id: str
    speakers: tuple[str, str]
    turns: tuple[Turn, ...]
    questions: tuple[Question, ...]
    evidence_repaired: int  # fields that needed splitting or rewriting
    evidence_dropped: int  # ids that name no turn of the sample

    @property
    def tuning(self) -> bool:
        return self.sample_id in TUNING


def session_time(text: str) -> datetime:
    """'1:56 pm on 8 May, 2023' -> 2023-05-08 13:56 UTC."""
    return datetime.strptime(text.strip(), "%I:%M %p on %d %B, %Y").replace(tzinfo=UTC)


def repair_evidence(raw: list[str], known: set[str]) -> tuple[tuple[str, ...], int, int]:
    """(ids, fields repaired, ids dropped)."""
    ids: list[str] = []
    repaired = dropped = 0
    for field in raw:
        parts = [p for p in re.split(r"[;,\s]+", field) if p]
        for part in parts:
            match = _ID.fullmatch(part)
            fixed = f"D{match.group(1)}:{match.group(2)}" if match else part
            if fixed != field:
                repaired += 1
            if fixed in known:
                ids.append(fixed)
            else:
                dropped += 1
    return tuple(dict.fromkeys(ids)), repaired, dropped


def load(path: Path | str) -> list[Sample]:
    samples = []
    for raw in json.loads(Path(path).read_text(encoding="utf-8")):
        conversation = raw["conversation"]
        turns: list[Turn] = []
        sessions = sorted(int(m.group(1)) for k in conversation if (m := _SESSION.fullmatch(k)))
        for number in sessions:
            start = session_time(conversation[f"session_{number}_date_time"])
            for position, turn in enumerate(conversation[f"session_{number}"]):
                turns.append(
                    Turn(
                        turn["dia_id"],
                        number,
                        turn["speaker"],
                        turn["text"],
                        start + timedelta(minutes=position),
                    )
                )
        known = {t.dia_id for t in turns}
        questions: list[Question] = []
        repaired = dropped = 0
        for qa in raw["qa"]:
            evidence, fixed, lost = repair_evidence(qa.get("evidence", []), known)
            repaired += fixed
            dropped += lost
            if evidence:
                questions.append(Question(qa["question"], evidence, int(qa["category"])))
        samples.append(
            Sample(
                raw["sample_id"],
                (conversation["speaker_a"], conversation["speaker_b"]),
                tuple(turns),
                tuple(questions),
                repaired,
                dropped,
            )
        )
    return samples


def events(sample: Sample) -> list[dict[str, object]]:
    """The sample as normalized events (the events-file contract), one per turn."""
    channel = sample.sample_id.replace("-", "")
    return [
        {
            "kind": "message.created",
            "platform": "slack",
            "workspace": "LOCOMO",
            "channel": channel,
            "channel_name": sample.sample_id,
            "channel_visibility": "public",
            "message_id": turn.dia_id,
            "thread_id": None,
            "author_id": turn.speaker.casefold(),
            "author_name": turn.speaker,
            "ts": turn.ts.isoformat().replace("+00:00", "Z"),
            "text": turn.text,
            "permalink": f"https://locomo.example/{sample.sample_id}/{turn.dia_id}",
        }
        for turn in sample.turns
    ]
