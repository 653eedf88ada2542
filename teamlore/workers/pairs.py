"""Two statements read side by side for the resolver (``resolver.HeuristicResolver``): how much of
each one's subject the other names, which kinds of value differ, and the tests that say the two
are about two things of one sort rather than one thing changing. Each test names the wrong
retirement it prevents; ``docs/architecture.md`` lists them."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass

from teamlore.workers.claim_parts import (
    CHANGE_CUE,
    FILLER,
    NUMBER_WORDS,
    Parts,
    Split,
    stem,
    tokens,
    value_kind,
)

# A change with no cue at all needs the whole subject on both sides: chat restates many-valued
# things in near words ("I went to the pottery class" / "... the support group"), and a change
# read into them hides what was said (LoCoMo, docs/benchmarks.md).
IMPLICIT_CHANGE_COVER = 1.0
# A single-valued slot is said in few words ("the release date is May 5"); two long chat sentences
# close in meaning share a topic, not a slot ("Laura wrote us a letter expressing her gratitude" /
# "Cindy wrote it"). Beyond this many subject words on either side, words alone decide (chosen on
# train.jsonl and LoCoMo's tuning samples conv-30 and conv-41).
MEANING_MAX_SUBJECT = 6

# Words of the cue phrases: they say how the statement relates, not what it is about ("the
# waitlist hit 410": "hit" and "reached" only here, not as change cues, where "is at 9:45" was read
# as one).
CUE_WORDS = frozenset(
    "moved moving move moves pushed slipped slips postponed rescheduled delayed switched switching switch "
    "switches migrated migrating replaced replacing longer instead changed changes changing raised "
    "lowered increased reduced decreased bumped took taking takes over handed hands effective updated "
    "back forward brought starting renamed rebranded called anymore more new newly upgraded downgraded "
    "expanded shrunk grew dropped went goes reassigned transferred since nowadays "
    "correction correcting meant sorry mistake bad stand corrected typo wrong misread actually oops "
    "think believe guess heard maybe might probably perhaps possibly iirc afaik apparently pretty "
    "someone somebody said says told rumour rumor confirm confirms not no hit reached".split()
)


def _unmatched(mine: frozenset[str], theirs: frozenset[str]) -> list[str]:
    """The words of ``mine`` not ``similar`` to any of ``theirs``, in ``mine``'s order. Two words
    are similar only if equal or sharing their first four letters: a set look-up settles most
    (as in ``cover``)."""
    heads = {t[:4] for t in theirs if len(t) >= 4}
    return [
        w
        for w in mine
        if not (w in theirs or (len(w) >= 4 and w[:4] in heads and any(similar(w, t) for t in theirs)))
    ]


@dataclass(frozen=True, slots=True)
class Pair:
    a: Parts
    b: Parts
    sa: Split
    sb: Split
    cover_a: float  # share of the older subject the newer names
    cover_b: float  # share of the newer subject the older names
    differing: tuple[str, ...]  # value kinds both state, with different values
    old_named: bool  # the newer names the older's value as the one it replaces

    @property
    def changed(self) -> bool:
        return bool(self.differing) or self.old_named

    @property
    def kept_values(self) -> frozenset[str]:
        """Values both state (what a negation in the newer one says has stopped); an amount is a
        number said without its currency too ("refunds over $500" / "refunds >500")."""
        same = frozenset(
            v for k, vs in self.sa.values.items() for v in vs & self.sb.values.get(k, frozenset())
        )
        empty: frozenset[str] = frozenset()
        money_a, money_b = self.sa.values.get("money", empty), self.sb.values.get("money", empty)
        numbers_a, numbers_b = self.sa.values.get("number", empty), self.sb.values.get("number", empty)
        return same | (money_a & numbers_b) | (numbers_a & money_b)

    @property
    def substituted(self) -> bool:
        """Each names something the other does not, of the same sort: two things, not one
        ("Q3 budget" / "Q4 budget", "dock 4" / "dock 5", "Tilburg warehouse" / "Venlo warehouse")."""
        qa, qb = self.sa.qualifiers, self.sb.qualifiers
        if qa and qb and qa != qb:
            return True
        na, nb = self.sa.values.get("name", frozenset()), self.sb.values.get("name", frozenset())
        other_kinds = [k for k in self.differing if k != "name"]
        # A cue says it is one thing changing; a correction names the thing it corrects too ("meant
        # her CT is at 3pm, the MRI slot is 5pm").
        return bool(na and nb and na != nb and other_kinds and not (self.b.change or self.b.correction))

    @property
    def added(self) -> bool:
        """The newer names something the older does not ("the *mobile* platform team")."""
        a_words = frozenset(self.a.words)
        return any(
            w not in a_words and not any(similar(w, t) for t in self.sa.subject) for w in self.sb.subject
        )

    @property
    def own_words(self) -> tuple[list[str], list[str]]:
        """The subject words each names that the other's subject does not."""
        return _unmatched(self.sa.subject, self.sb.subject), _unmatched(self.sb.subject, self.sa.subject)

    @property
    def swapped(self) -> bool:
        """Without a cue, each side naming a thing the other does not is two things ("free
        accounts" / "paid accounts", "nights" / "days", "the Atlas freeze" / "orion's freeze"),
        and so are two numbers that both differ ("-80 freezer in room 214" / "-20 ... 118")."""
        b_words = frozenset(self.b.words)
        a_words = frozenset(self.a.words)
        only_a, only_b = self.own_words
        only_a += [n for n in self.sa.values.get("name", ()) if n not in b_words]
        only_b = [w for w in only_b if w not in a_words]
        numbers_a = self.sa.values.get("number", frozenset())
        numbers_b = self.sb.values.get("number", frozenset())
        two_numbers = len(numbers_a) >= 2 and len(numbers_b) >= 2 and not numbers_a & numbers_b
        return bool(only_a and only_b) or two_numbers


def kinds_differing(sa: Split, sb: Split) -> tuple[str, ...]:
    """Kinds both state with another value; a name added beside the same one is more detail,
    not a change."""
    return tuple(
        k
        for k in sa.values
        if k in sb.values and (sa.values[k] - sb.values[k] or (k != "name" and sb.values[k] - sa.values[k]))
    )


def substitutes(p: Pair) -> bool:
    """Each names a subject word the other does not: perhaps a value the reader did not see as
    one ("hosted on Statuspage" / "lives on instatus")."""
    only_a, only_b = p.own_words
    return bool(only_a and only_b)


def one_for_one(p: Pair) -> bool:
    """Each subject names one word the other does not, in place of it, and they share the rest:
    another thing of the same sort ("the security sync" / "the support sync", "owns
    kafka-cluster" / "owns feature-flags"), not the same one changing. Short words ("PT" for
    "parent-teacher", "go out" for "processed") and the cue's own words ("target revised") are
    rewordings, not things."""
    only_a, only_b = p.own_words
    if len(only_a) != 1 or len(only_b) != 1 or min(len(p.sa.subject), len(p.sb.subject)) < 2:
        return False
    (mine,), (theirs,) = only_a, only_b
    cue = " ".join(m.group(0) for m in CHANGE_CUE.finditer(p.b.text)).lower()
    return min(len(mine), len(theirs)) >= 4 and theirs not in p.a.words and theirs not in cue


# A system's or a service's own id: words joined by hyphens, from a letter on ("kafka-cluster",
# "k8s-prod", "audit-trail"), not a date or a negative number.
_HYPHENATED_ID = re.compile(r"(?<![\w-])[a-z][a-z0-9]*(?:-[a-z0-9]+)+(?![\w-])", re.IGNORECASE)


def ids(text: str) -> frozenset[str]:
    return frozenset(m.group(0).lower() for m in _HYPHENATED_ID.finditer(text))


def two_slots(p: Pair) -> bool:
    """Each names its own id, none shared, and another value differs besides: two things, each
    with its value ("the audit-trail deploys go through Grafana" / "the k8s-prod deploys go
    through Sentry"; "Felix owns kafka-cluster" / "Ximena owns feature-flags"). Where the ids
    are all that differ, one may be the new value ("the on-call tool is pager-duty" / "... is
    ops-genie now") and the other rules decide."""
    ids_a, ids_b = ids(p.a.text), ids(p.b.text)
    if not ids_a - ids_b or not ids_b - ids_a or ids_a & ids_b:
        return False
    named = ids_a | ids_b
    return any({v.lower() for v in p.sa.values[k] ^ p.sb.values[k]} - named for k in p.differing)


# A glossary entry: a quoted term and what it means ('"canary" means the first 5% of traffic',
# 'A "seat" in Falcon means ...').
_DEFINED = re.compile(r"[\"“']([^\"”']{1,40})[\"”'][^.?!]{0,40}?\b(?:means|stands for|refers to)\b", re.I)


def two_terms(p: Pair) -> bool:
    """Each defines its own term: two words of a glossary, even with one meaning ("canary" /
    "hot path" both "the first 5% of traffic"); a term's meaning changing keeps its term."""
    a, b = _DEFINED.search(p.a.text), _DEFINED.search(p.b.text)
    return bool(a and b and a.group(1).strip().lower() != b.group(1).strip().lower())


# What a statement gives as the reason for its value: not what it is about.
_CAUSE = re.compile(r"\b(?:because of|due to|caused by|thanks to|blocked (?:on|by)|waiting on)\b(.*)$", re.I)


def only_the_cause(p: Pair) -> bool:
    """All the subject the two share is in one's reason ("the audit-trail deploys go through
    Grafana" / "Drift v4.15 release slipped to November 27 because of audit-trail"): another
    thing changed, and the other's subject is why."""
    shared = [w for w in p.sa.subject if any(similar(w, t) for t in p.sb.subject)]
    return bool(shared) and (_in_reason(shared, p.b.text) or _in_reason(shared, p.a.text))


def _in_reason(shared: list[str], text: str) -> bool:
    clause = _CAUSE.search(text)
    if clause is None:
        return False
    reason = {stem(t) for t in tokens(clause.group(1))} | set(tokens(clause.group(1)))
    before = {stem(t) for t in tokens(text[: clause.start()])}
    return all(any(similar(w, t) for t in reason) and not any(similar(w, t) for t in before) for w in shared)


def other_modifier(p: Pair) -> bool:
    """A word both name, each with its own word before it that the other never says: another
    thing of one sort ("the design sprint" / "the hiring sprint", "the iPad kiosks" / "the
    android kiosks", "staging deploy window" / "prod deploy window")."""
    a, b = p.a.words, p.b.words
    for i, word in enumerate(b):
        if i == 0 or word in FILLER or not word.isalpha() or word not in a[1:]:
            continue
        theirs, mine = a[a.index(word, 1) - 1], b[i - 1]
        if (
            _modifier(mine, p)
            and _modifier(theirs, p)
            and mine not in p.b.acronyms  # "CAB meets" / "the customer advisory board meets"
            and theirs not in p.a.acronyms
            and not any(_short_for(mine, w) for w in a)
            and not any(_short_for(theirs, w) for w in b)
        ):
            return True
    return False


def _short_for(x: str, y: str) -> bool:
    """The same word, or one a short form of the other ("max" / "maximum", "tourney" /
    "tournament", "log" / "logs")."""
    short, long_ = sorted((x, y), key=len)
    return len(short) >= 3 and len(os.path.commonprefix((short, long_))) >= max(3, len(short) - 2)


def _modifier(word: str, p: Pair) -> bool:
    """A plain word that can say which thing: not a value (a name, a person, a date), not filler."""
    values = {v for split in (p.sa, p.sb) for vs in split.values.values() for v in vs}
    return (
        len(word) >= 3
        and word.isalpha()
        and word not in FILLER
        and word not in CUE_WORDS
        and word not in values
        and word not in p.a.capitalised | p.b.capitalised
        and value_kind(word, frozenset()) is None
        and word not in _NUMBER_WORDS
        and not word.endswith("ed")  # "are processed within" / "go out within": a verb
    )


def strangers(p: Pair) -> bool:
    """The names differ, none shared, and so do the people: a change replaces one value of one
    thing ("Ben took over the Yukon migration from Tariq." / "Priya took over the Atlas migration
    from Uma." are two migrations; "MySQL 8" / "PostgreSQL 15" is one value, name and number)."""
    na, nb = p.sa.values.get("name", frozenset()), p.sb.values.get("name", frozenset())
    return bool(na and nb and not na & nb and "person" in p.differing)


# Days a value holds on ("closes at 7 on fridays", "every saturday", "at weekends").
_SOME_DAYS = re.compile(
    r"\b(?:on|every|at)\s+(?:(?:mon|tues?|wed(?:nes)?|thu(?:rs)?|fri|sat(?:ur)?|sun)(?:day)?s|weekends)\b"
    r"|\bevery\s+(?:mon|tues|wednes|thurs|fri|satur|sun)day\b",
    re.I,
)


def some_days(p: Pair) -> bool:
    """The newer gives the days its value holds on, where the older names none: a value for those
    days beside the older's, not in its place ("The pharmacy closes at 6:30pm." / "pharmacy now
    closes at 7 on fridays")."""
    return "date" not in p.sa.values and bool(_SOME_DAYS.search(p.b.text))


def names_only(p: Pair) -> bool:
    """The older's own subject (two words or more, names and values aside) is nowhere in the
    newer: what they share is a name, the product or team both mention, and each says something
    else about it ("Atlas docs freeze is March 10." / "the Atlas 2.0 launch is pushed to March
    24."). A subject of one word is left to the other rules ("Die Kantine öffnet um 11:30." /
    "kantine macht jetzt erst um 12 auf": the name is the subject)."""
    own = frozenset(w for w in p.sa.subject if len(w) >= 3 and w.isalpha())
    return len(own) >= 2 and cover(own, p.sb.subject) == 0


def restated(p: Pair) -> bool:
    """The newer states again each value the older holds now, and no other, of every kind that
    differs: it adds to the older or speaks of something beside it, and changes nothing ("The API rate limit
    is now 250 requests per minute, raised from 100." / "the new 250 requests/min limit has
    nothing to do with the 250 ms budget"; "pricing will rise to $49 per seat, from $39" /
    "only 3 of 40 renewals pushed back on the $49 price"). A value the older says it replaced
    ("from $39") is not one it holds; an amount is a number said without its currency too; a kind
    of value only the newer names is added beside the older's, not in its place."""
    replaced = {_bare(v) for v in p.a.old_values}
    compared = False
    for kind in p.differing:
        held = {_bare(v) for v in p.sa.values.get(kind, frozenset())} - replaced
        if not held:
            continue  # a kind only the newer names: added beside the older, not in its place
        said = {_bare(v) for v in p.sb.values.get(kind, frozenset())}
        if kind in _AMOUNTS:
            other = _AMOUNTS[kind]
            said |= held & {_bare(v) for v in p.sb.values.get(other, frozenset())}
        if said != held:
            return False  # one missing, or a new one beside it ("lab mtg is in B117, B204 is ...")
        compared = True
    return compared


# What a thread answer carries after its statement (``extraction.statements``): its question.
_ASKED = re.compile(r"\(re: ([^)]*)\)\s*$")


def two_questions(older: str, newer: str) -> bool:
    """Both are thread answers kept beside their questions, and the questions are about different
    things: an answer replaces only an earlier answer to the same question ("yes, their trial was
    extended to March 31 (re: is Globex still in trial?)" / "yes, as of today (re: is March 17
    still solid for the launch?)")."""
    asked_a, asked_b = _asked(older), _asked(newer)
    return bool(asked_a and asked_b) and cover(asked_a, asked_b) < 0.5 and cover(asked_b, asked_a) < 0.5


def _asked(text: str) -> frozenset[str]:
    """The content words of the question a thread answer carries, or none."""
    m = _ASKED.search(text)
    if m is None:
        return frozenset()
    words = (w.lower() for w in tokens(m.group(1)))
    return frozenset(
        stem(w) for w in words if len(w) >= 3 and w[0].isalnum() and w not in FILLER and w not in CUE_WORDS
    )


_AMOUNTS = {"money": "number", "number": "money"}


def _bare(value: str) -> str:
    return value.strip("$€£¥").lstrip("0") or value


def another_thing(p: Pair) -> bool:
    """The guards a change must pass, with or without a cue: two things of one sort."""
    return (
        one_for_one(p)
        or strangers(p)
        or two_slots(p)
        or two_terms(p)
        or only_the_cause(p)
        or other_modifier(p)
        or some_days(p)
    )


def one_subject(p: Pair) -> bool:
    """With no cue, both name the whole of each other's subject, or, between short statements,
    the newer names nothing new and the older only one word more ("the default branch of the
    mobile app repo is develop" / "default branch on the mobile repo is main"), where neither names
    an id the other does not ("on-call for sso-bridge" / "on-call for k8s-prod": a prefix of one
    id covers another, "deploy-bot" / "deploy")."""
    if p.cover_a >= IMPLICIT_CHANGE_COVER and p.cover_b >= IMPLICIT_CHANGE_COVER:
        return True
    return (
        max(len(p.sa.subject), len(p.sb.subject)) <= MEANING_MAX_SUBJECT
        and p.cover_b >= IMPLICIT_CHANGE_COVER
        and len(p.own_words[0]) == 1
        and ids(p.a.text) == ids(p.b.text)
    )


_NUMBER_WORDS = NUMBER_WORDS
# "two more joined, so 9 now", "lost 3, down to 14": a count the newer derives from the older one.
_DELTA = re.compile(
    r"\b(\d+|" + "|".join(_NUMBER_WORDS) + r")\s+(?:(more|new|extra|additional)|(fewer|less))\b"
    r"|\b(?:(added|hired|another)|(lost|removed))\s+(\d+|" + "|".join(_NUMBER_WORDS) + r")\b",
    re.I,
)


def counted_on(p: Pair) -> bool:
    """The newer statement leans on the older count: a delta and a total that add up ("The platform
    team is 7 people." / "two more joined, so 9 now"). The sum ties the two however few words
    they share; a count of things ("7 people") only, not a room or a version; short subjects only."""
    old, new = p.sa.values.get("number", frozenset()), p.sb.values.get("number", frozenset())
    m = _DELTA.search(p.b.text)
    if m is None or len(old) != 1 or p.b.question:
        return False
    if max(len(p.sa.subject), len(p.sb.subject)) > MEANING_MAX_SUBJECT:
        return False
    (before,) = old
    words = p.a.words
    at = words.index(before) if before in words else -1
    if at < 0 or at + 1 >= len(words) or not words[at + 1].isalpha() or words[at + 1] in FILLER:
        return False
    said = (m.group(1) or m.group(6)).lower()
    delta = int(said) if said.isdigit() else _NUMBER_WORDS[said]
    sign = -1 if (m.group(3) or m.group(5)) else 1
    totals = {n for n in new - {said} if n.isdigit()}
    return before.isdigit() and totals == {str(int(before) + sign * delta)}


def similar(x: str, y: str) -> bool:
    """The same word, or one a short form of the other ("cert" / "certification")."""
    if x == y:
        return True
    short, long_ = sorted((x, y), key=len)
    return len(short) >= 4 and long_.startswith(short[: max(4, len(short) - 1)])


def cover(mine: frozenset[str], theirs: frozenset[str]) -> float:
    if not mine:
        return 0.0
    # Two words are alike only if equal or sharing their first four letters (``similar``): most
    # pairs are settled by a set look-up (import profile: 2.6 million ``similar`` calls for
    # 10,000 messages).
    heads = {t[:4] for t in theirs if len(t) >= 4}
    return sum(
        1
        for w in mine
        if w in theirs or (w[:4] in heads and len(w) >= 4 and any(similar(w, t) for t in theirs))
    ) / len(mine)
