"""Resolution: does a new statement repeat, replace, contradict or leave alone an older one?

Every rule that can retire a fact lives here. The heuristic compares two statements as a
*subject* (what the statement is about: content words, and the unit of any number) and *values*
(what it says about it: dates, times, numbers, statuses, people, named systems). It supersedes
only when the subjects match and a value of the same kind differs, and then only with a
replacement cue or enough time between the two. Each guard below names the false positive it
prevents. A model judge can replace ``HeuristicResolver`` behind the ``Resolver`` protocol.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from enum import StrEnum
from typing import Protocol

from teamlore.domain import normalize_statement


class Resolution(StrEnum):
    SUPERSEDES = "supersedes"
    DUPLICATE = "duplicate"
    CONTESTED = "contested"
    UNRELATED = "unrelated"


@dataclass(frozen=True, slots=True)
class Judgement:
    resolution: Resolution
    reason: str
    confidence: float = 1.0


@dataclass(frozen=True, slots=True)
class Claim:
    """A statement to compare, with the moment it became true."""

    text: str
    valid_from: datetime
    fact_type: str = ""


class Resolver(Protocol):
    def judge(self, older: Claim, newer: Claim) -> Judgement: ...


# Two different values for the same slot stated this close together, with no cue saying one
# replaces the other, are two people disagreeing, not a change: a reviewer decides.
CONTEST_WINDOW = timedelta(hours=1)
# With a replacement cue, subjects may differ in wording ("Legal signed off, so the pricing page
# launch is no longer blocked"); this share of the older subject must still be present.
CUE_SUBJECT_OVERLAP = 0.75
PARSE_CACHE_SIZE = 50_000

# "The migration runbook is done" closes "omar will write the migration runbook by Friday" when
# at least this share of the action's subject is named; a bare "done!" closes nothing.
ACTION_DONE_OVERLAP = 0.5
_COMPLETED = re.compile(
    r"\b(done|finished|completed|shipped|merged|delivered|sent|published|cancel+ed|called off|"
    r"dropped|no longer needed)\b",
    re.I,
)

_MONTHS = (
    "january february march april may june july august september october november december "
    "jan feb mar apr jun jul aug sep sept oct nov dec"
).split()
_WEEKDAYS = "monday tuesday wednesday thursday friday saturday sunday".split()
_DATE_WORDS = frozenset(_MONTHS + _WEEKDAYS + [d + "s" for d in _WEEKDAYS])
_STATUS_WORDS = frozenset(
    "blocked unblocked done finished complete completed shipped launched live degraded healthy "
    "down up broken fixed resolved progress paused cancelled canceled open closed green red "
    "stable failing".split()
)
# Words that carry neither subject nor value ("uses", "is", "now", articles...).
_FILLER = frozenset(
    "a an the is are was were be been being am to of on in at for by with from as and or but so "
    "it its this that these those our we us you they all each every any some still again now "
    "currently also just really very use uses used using run runs ran running go goes going "
    "through happen happens happening set there here has have had do does did will shall "
    "then than after before".split()
)
_CUE = re.compile(
    r"\b(moved|moving|pushed|slipped|postponed|rescheduled|delayed|brought forward|switched|"
    r"switching|migrated|replaced|replacing|no longer|instead|now|changed|raised|lowered|"
    r"increased|reduced|bumped|took over|taking over|handed over|handed|from now on|"
    r"effective|updated to|ownership moved)\b",
    re.I,
)
_CUE_WORDS = frozenset(
    "moved moving pushed slipped postponed rescheduled delayed switched switching migrated "
    "replaced replacing longer instead changed raised lowered increased reduced bumped took "
    "taking over handed effective updated back forward brought".split()
)
# "switched from X", "replaced X with", "X was replaced by", "no longer use X", "from X to",
# "instead of X", "took over ... from X": X is the old value the newer statement retires.
_OLD_VALUE = re.compile(
    r"\b(?:from|instead of|no longer (?:use|uses|on|using|runs on)|replaced)\s+"
    r"(\$?[\w.@-]+)|\b([\w.@-]+) (?:was|were|has been|is being) replaced\b",
    re.I,
)
_HEDGE = re.compile(
    r"\b(not sure(?: but)?|i think|i believe|i guess|maybe|might|may|probably|perhaps|possibly|"
    r"could be|iirc|afaik|apparently)\b",
    re.I,
)
_QUESTION = re.compile(
    r"\?\s*$|^(are|is|do|does|did|who|what|when|where|which|how|should|can|could|will|has|have)\b",
    re.I,
)
# A quoted old value describes the past, it does not change the present ("we used to use X").
_PAST = re.compile(
    r"\b(used to|back in|back when|originally|previously|formerly|in the past|once was|"
    r"at first|initially)\b",
    re.I,
)
_HYPOTHETICAL = re.compile(r"^\s*if\b|\bwhat if\b|\bwould\b|\bsuppose\b|\bimagine\b", re.I)
_TOKEN = re.compile(r"\$?\d+(?:[.:]\d+)*(?:st|nd|rd|th)?%?|[A-Za-z@][\w'@-]*")


@dataclass(frozen=True)
class Parsed:
    subject: frozenset[str]
    values: dict[str, frozenset[str]] = field(default_factory=dict)
    cue: bool = False
    hedged: bool = False
    not_a_claim: str | None = None  # why the statement asserts nothing about the present
    old_values: frozenset[str] = frozenset()
    normalized: str = ""


_TIME = re.compile(r"\d{1,2}:\d{2}")
_ORDINAL_OR_YEAR = re.compile(r"\d+(?:st|nd|rd|th)|(?:19|20)\d\d")
_NUMBER = re.compile(r"\$?\d+(?:\.\d+)*%?")
_THOUSANDS = re.compile(r"(\d),(\d{3})")
_GLUED_UNIT = re.compile(r"(\d)(ms|s|k|gb|mb)\b", re.I)
_NOT_BLOCKED = re.compile(r"\b(?:no longer|not) blocked\b", re.I)


def _stem(word: str) -> str:
    for suffix in ("ership", "ers", "er", "ing", "ed", "es", "s"):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            return word[: -len(suffix)]
    return word


def _kind(token: str, position: int, people: frozenset[str]) -> str | None:
    """The value kind of a token, or None when it belongs to the subject."""
    low = token.lower().strip("'")
    if low[:1].isdigit() or low[:1] == "$":
        if _TIME.fullmatch(low):
            return "time"
        if _ORDINAL_OR_YEAR.fullmatch(low):
            return "date"
        if _NUMBER.fullmatch(low):
            return "number"
    if low in _DATE_WORDS:
        return "date"
    if low in _STATUS_WORDS:
        return "status"
    if low.lstrip("@") in people:
        return "person"
    # A capitalised word inside the sentence names a system, product or person: a value. Short
    # acronyms (CI, API, CDN) name the subject instead ("CI runs on Jenkins").
    if token.isupper() and len(token) <= 5:
        return None
    if position > 0 and token[0].isupper() and low not in _FILLER:
        return "entity"
    return None


def _names_an_item(previous: str) -> bool:
    low = previous.lower()
    return bool(previous) and previous[0].islower() and low not in _FILLER and low not in _CUE_WORDS


def parse(text: str, people: Iterable[str] = ()) -> Parsed:
    known = frozenset(p.lower() for p in people)
    hedged = bool(_HEDGE.search(text))
    not_a_claim = None
    if _QUESTION.search(text.strip()):
        not_a_claim = "a question asserts nothing"
    elif _HYPOTHETICAL.search(text):
        not_a_claim = "a hypothetical asserts nothing"
    elif _PAST.search(text):
        not_a_claim = "it quotes an old value"
    old_values = frozenset((m.group(1) or m.group(2)).lower().strip(".,;") for m in _OLD_VALUE.finditer(text))
    clean = _HEDGE.sub(" ", text)
    clean = _THOUSANDS.sub(r"\1\2", clean)  # 40,000 -> 40000
    clean = _GLUED_UNIT.sub(r"\1 \2", clean)  # 250ms -> 250 ms
    clean = clean.replace("in progress", "progress").replace("on call", "oncall")
    clean = _NOT_BLOCKED.sub("unblocked", clean)
    subject: set[str] = set()
    values: dict[str, set[str]] = {}
    previous = ""
    for position, token in enumerate(_TOKEN.findall(clean)):
        kind = _kind(token, position, known)
        low = token.lower()
        if kind == "number" and _names_an_item(previous):
            # "step 3", "batch 2", "host 4": the number says which thing, not how much; without
            # this "step 1 is done" would retire "step 0 is done".
            kind = None
        previous = token
        if kind is not None:
            values.setdefault(kind, set()).add(low.rstrip("s") if kind == "date" else low)
        elif low not in _FILLER and low not in _CUE_WORDS:
            subject.add(_stem(low))
    return Parsed(
        normalized=normalize_statement(text),
        subject=frozenset(subject),
        values={k: frozenset(v) for k, v in values.items()},
        cue=bool(_CUE.search(text)),
        hedged=hedged,
        not_a_claim=not_a_claim,
        old_values=old_values,
    )


def _differing_kinds(a: Parsed, b: Parsed) -> list[str]:
    return [k for k in a.values if k in b.values and a.values[k] != b.values[k]]


def _another_named_thing(differing: list[str], newer: Parsed) -> bool:
    """The named thing changed and so did its value, with no cue: two things, not one thing
    changing ("the lease on the Tilburg warehouse ends on December 31" does not retire "the lease
    on the Venlo warehouse ends on March 31")."""
    return "entity" in differing and len(differing) > 1 and not newer.cue


class HeuristicResolver:
    """Subject-and-slot matching plus explicit replacement cues; no model."""

    def __init__(self, people: Iterable[str] = ()) -> None:
        self.people = frozenset(p.lower() for p in people)
        self._parsed: dict[str, Parsed] = {}

    def _parse(self, text: str) -> Parsed:
        # Each new statement is judged against up to CANDIDATES stored ones: parse each once.
        found = self._parsed.get(text)
        if found is None:
            if len(self._parsed) > PARSE_CACHE_SIZE:
                self._parsed.clear()
            found = self._parsed[text] = parse(text, self.people)
        return found

    def judge(self, older: Claim, newer: Claim) -> Judgement:
        a, b = self._parse(older.text), self._parse(newer.text)
        if b.not_a_claim:
            return Judgement(Resolution.UNRELATED, b.not_a_claim)
        if a.normalized == b.normalized:
            return Judgement(Resolution.DUPLICATE, "the same statement")
        same_subject = a.subject == b.subject
        if same_subject and a.values == b.values:
            return Judgement(Resolution.DUPLICATE, "same subject, same values")
        shared = a.subject & b.subject
        # A deadline passing never retires an action item; evidence that it was done does.
        if (
            older.fact_type == "action_item"
            and _COMPLETED.search(newer.text)
            and a.subject
            and len(shared) / len(a.subject) >= ACTION_DONE_OVERLAP
        ):
            return Judgement(Resolution.SUPERSEDES, "the action item was done or called off")
        differing = _differing_kinds(a, b)
        # Explicit retirement of the older value ("switched from Jenkins", "no longer use X"),
        # provided the older statement holds that value and shares something of its subject:
        # prevents "moved from the old office" retiring an unrelated fact that names no office.
        named = {v for vs in a.values.values() for v in vs} | a.subject
        if b.old_values & named and (shared or not a.subject) and not b.hedged:
            return Judgement(Resolution.SUPERSEDES, "the newer statement retires the older value")
        if not differing:
            # Similar wording alone never retires a fact ("the launch checklist is in the wiki").
            return Judgement(Resolution.UNRELATED, "no value of the same kind differs")
        if not self._same_slot(a, b, shared) or _another_named_thing(differing, b):
            # "office lease" vs "device lab lease"; "per minute" vs "per day": another slot.
            return Judgement(Resolution.UNRELATED, "different subjects")
        if b.hedged:
            return Judgement(Resolution.CONTESTED, "the newer value is hedged", 0.5)
        if b.cue:
            return Judgement(Resolution.SUPERSEDES, f"{differing[0]} changed, with a cue")
        # A status moves on by itself ("blocked on the vendor" -> "unblocked"): the newer may
        # drop the older's reason clause. Any other partial match without a cue is not enough.
        status_moved = differing == ["status"] and b.subject <= a.subject
        if not same_subject and not status_moved:
            return Judgement(Resolution.UNRELATED, "subjects only partly match and no cue")
        if newer.valid_from - older.valid_from < CONTEST_WINDOW:
            return Judgement(Resolution.CONTESTED, "two values stated at about the same time", 0.5)
        return Judgement(Resolution.SUPERSEDES, f"{differing[0]} changed later")

    def guard(self, older: Claim, newer: Claim) -> Judgement | None:
        """The deterministic guard a model judge sits behind: a final verdict when the pair is
        not about one thing (then no judge may retire anything), None when it may be: the same
        subject and slot, a shared named entity, or a pair the rules themselves would act on."""
        a, b = self._parse(older.text), self._parse(newer.text)
        if b.not_a_claim:
            return Judgement(Resolution.UNRELATED, b.not_a_claim)
        if a.normalized == b.normalized:
            return Judgement(Resolution.DUPLICATE, "the same statement")
        verdict = self.judge(older, newer)
        if verdict.resolution is not Resolution.UNRELATED:
            return None
        shared = a.subject & b.subject
        entities = a.values.get("entity", frozenset()) & b.values.get("entity", frozenset())
        if a.subject == b.subject or entities or self._same_slot(a, b, shared):
            return None
        return verdict

    def hedged(self, text: str) -> bool:
        return self._parse(text).hedged

    @staticmethod
    def _same_slot(a: Parsed, b: Parsed, shared: frozenset[str]) -> bool:
        if not shared:
            return False
        if a.subject == b.subject or (b.subject <= a.subject and set(a.values) == {"status"}):
            return True
        if not b.cue:
            return False
        # With a cue the newer may leave words out ("The launch moved to March 24") or add a
        # clause, but may not name another thing: most of the older subject must be there.
        return b.subject <= a.subject or len(shared) / len(a.subject) >= CUE_SUBJECT_OVERLAP


def candidate_terms(text: str) -> str:
    """The words worth looking up related facts by: no numbers, dates or filler. A fact can only
    be retired by one that shares its subject, and values ("10", "march") match half the store."""
    words = [w for w in _TOKEN.findall(text) if not w[:1].isdigit() and not w.startswith("$")]
    return " ".join(w for w in words if w.lower() not in _FILLER and w.lower() not in _DATE_WORDS)
