"""One statement read again beside the other of a pair: where the other says the words a
shorthand, an acronym, a count in words or a bare hour stands for, the value is read as that
kind in both (``resolver`` calls these after ``claim_parts.split`` reads each statement alone).
"""

from __future__ import annotations

import re

from teamlore.workers.claim_parts import FILLER, NUMBER_WORDS, Parts, Split, stem, time_value, value_kind


def spelled_out(mine: Split, parts: Parts, other: Parts, theirs: Split) -> Split:
    """An acronym written in capitals stands for the words the other statement spells out ("CAB
    meets in NYC" / "The customer advisory board meets in the Chicago office")."""
    if not parts.acronyms:
        return mine
    content = [w for w in other.words if w not in FILLER and w[:1].isalpha()]
    initials = "".join(w[0] for w in content)
    names = mine.values.get("name", frozenset())
    for word in mine.subject | names:
        core = word[:-1] if word.endswith("s") and len(word) > 2 else word
        at = initials.find(core) if core in parts.acronyms else -1
        if at < 0 or word in other.words:
            continue
        spelled = content[at : at + len(core)]
        # Spelled out as names there ("Ember Hollow"), names here too.
        theirs_named = theirs.values.get("name", frozenset())
        values = dict(mine.values)
        values["name"] = (names - {word}) | frozenset(w for w in spelled if w in theirs_named)
        if not values["name"]:
            del values["name"]
        subject = frozenset(stem(w) for w in spelled if w not in theirs_named)
        return Split((mine.subject - {word}) | subject, values, mine.qualifiers)
    return mine


def valued_beside(mine: Split, parts: Parts, other: Parts, theirs: Split) -> Split:
    """A number read as which thing is the value where the other statement gives its number
    value beside the same word, on the same side ("my mistake, 230 pallets" / "The warehouse has
    320 pallets of stock."; "correction, bay 9" / "Returned stock goes in bay 7.")."""
    numbers = theirs.values.get("number")
    if not numbers:
        return mine
    beside = {
        (side, stem(near))
        for i, word in enumerate(other.words)
        if _number(word) in numbers
        for side, near in ((-1, other.words[i - 1] if i else ""), (1, _at(other.words, i + 1)))
        if near.isalpha() and near not in FILLER
    }
    moved = {
        kind[1]
        for i, word in enumerate(parts.words)
        if (kind := value_kind(word, frozenset())) is not None
        and kind[0] == "number"
        # Or read as part of a name ("We're on Unity 2022.3 LTS." / "6000.0 LTS as of last week").
        and (kind[1] in mine.qualifiers or kind[1] in mine.subject)
        and (
            (-1, stem(parts.words[i - 1] if i else "")) in beside
            or (1, stem(_at(parts.words, i + 1))) in beside
        )
    }
    if not moved:
        return mine
    values = dict(mine.values)
    values["number"] = values.get("number", frozenset()) | moved
    return Split(mine.subject - moved, values, mine.qualifiers - moved)


def _number(word: str) -> str:
    """The number a word says, in digits or in words ("two"), or ""."""
    if word in NUMBER_WORDS:
        return str(NUMBER_WORDS[word])
    kind = value_kind(word, frozenset())
    return kind[1] if kind is not None and kind[0] == "number" else ""


def _at(words: tuple[str, ...], i: int) -> str:
    return words[i] if i < len(words) else ""


_VOWELS = frozenset("aeiouy")


def _stands_for(short: str, content: list[str]) -> list[str]:
    """The words of ``content`` a lower-case shorthand stands for: the initials of words said in a
    row ("qp" / "quarterly planning"), or one word's letters in order, first letter first, with
    no vowel after it ("mtg" / "meeting", "pms" / "postmortems")."""
    if len(short) >= 2:
        at = "".join(w[0] for w in content).find(short)
        if at >= 0:
            return content[at : at + len(short)]
    if len(short) >= 3 and not _VOWELS & set(short[1:]):
        for word in content:
            if word.isalpha() and len(word) > len(short) and word[0] == short[0] and _in_order(short, word):
                return [word]
    return []


def _in_order(short: str, word: str) -> bool:
    letters = iter(word)
    return all(c in letters for c in short)


def abbreviated(mine: Split, parts: Parts, other: Parts, theirs: Split) -> Split:
    """A short word in lower case stands for the words the other statement spells out ("lab mtg"
    / "The lab meeting", "qp is in Birch" / "Quarterly planning happens in the Maple room")."""
    # A number between two words breaks their initials ("allows 6 people" is no "cap").
    content = [w for w in other.words if w not in FILLER]
    for word in parts.words:
        core = word[:-1] if word.endswith("s") and len(word) > 3 else word
        if not 2 <= len(core) <= 4 or not core.isalpha() or word in other.words or word in FILLER:
            continue
        # Capitals are ``spelled_out``'s, or a name ("Argo CD").
        if stem(word) not in mine.subject or word in parts.capitalised or core in parts.acronyms:
            continue
        spelled = _stands_for(core, content)
        if not spelled or any(w.startswith(core) for w in spelled):
            continue
        subject = frozenset(stem(w) for w in spelled if w not in theirs.values.get("name", frozenset()))
        return Split((mine.subject - {stem(word)}) | subject, mine.values, mine.qualifiers)
    return mine


def _counts_in_words(parts: Parts) -> dict[str, str]:
    """Number words said as a count, before a word that is not filler ("two weeks", "one qa
    contractor"; not "one of", "no one")."""
    found = {}
    for i, word in enumerate(parts.words):
        following = _at(parts.words, i + 1)
        if word in NUMBER_WORDS and following[:1].isalpha() and following not in FILLER:
            found[word] = str(NUMBER_WORDS[word])
    return found


def counted_in_words(mine: Split, parts: Parts, other: Parts, theirs: Split) -> Split:
    """A count said in words is a number where the other statement says a count too ("Sprint
    length is two weeks." / "we're doing 3-week sprints"; "two QA contractors" / "down to one")."""
    said = {w: n for w, n in _counts_in_words(parts).items() if w in mine.subject}
    if not said or "number" in mine.values:
        return mine
    if not ("number" in theirs.values or theirs.qualifiers or _counts_in_words(other)):
        return mine
    values = dict(mine.values)
    values["number"] = frozenset(said.values())
    return Split(mine.subject - said.keys(), values, mine.qualifiers)


def qualified_alike(mine: Split, theirs: Split) -> Split:
    """A number the other statement says *which* thing with is which thing here too, where it is
    no value the two differ on ("The patch 1.4 release is planned for June 12." / "1.4 slips to
    june 19")."""
    same = {
        v for k in ("number", "identifier") for v in mine.values.get(k, frozenset()) if v in theirs.qualifiers
    }
    if not same:
        return mine
    values = {k: vs - same for k, vs in mine.values.items() if vs - same}
    return Split(mine.subject | same, values, mine.qualifiers | same)


_HOURS = frozenset({"hour", "hours"})


def hours_alike(mine: Split, parts: Parts, other: Parts) -> Split:
    """ "12h" is twelve hours, not noon, where the other statement counts hours ("Ticket SLA for
    P2 is 8 hours." / "p2 sla 12h")."""
    if not any(w in _HOURS and _number(p) for p, w in zip(other.words, other.words[1:], strict=False)):
        return mine
    said = {w for w in parts.words if re.fullmatch(r"\d{1,2}h", w)}
    if not said:
        return mine
    times = mine.values.get("time", frozenset()) - {time_value(w) for w in said}
    values = {k: v for k, v in mine.values.items() if k != "time"}
    if times:
        values["time"] = times
    values["number"] = values.get("number", frozenset()) | {w[:-1] for w in said}
    return Split(mine.subject | {"hour"}, values, mine.qualifiers)


_AT_HOUR = frozenset("at um till until à às a".split())


def timed_alike(mine: Split, parts: Parts, theirs: Split) -> Split:
    """A bare hour after "at", "till", "um" ... is a time where the other statement says a time
    ("Die Kantine öffnet um 11:30." / "kantine macht jetzt erst um 12 auf")."""
    if "time" not in theirs.values or "number" not in mine.values:
        return mine
    hours = {
        w
        for i, w in enumerate(parts.words)
        if i
        and parts.words[i - 1] in _AT_HOUR
        and w.isdigit()
        and 1 <= int(w) <= 24
        and w in mine.values["number"]
    }
    if not hours:
        return mine
    values = dict(mine.values)
    values["number"] = values["number"] - hours
    if not values["number"]:
        del values["number"]
    values["time"] = values.get("time", frozenset()) | {time_value(w) for w in hours}
    return Split(mine.subject, values, mine.qualifiers)


def lettered(mine: Split, parts: Parts, other: Parts, theirs: Split) -> Split:
    """A letter and a number stand for a word and that number the other statement says in a row
    ("head of y8" / "head of year 8", "t2 escalations" / "Tier 2 escalations")."""
    for word in parts.words:
        m = re.fullmatch(r"([a-z])(\d{1,3})", word)
        if m is None or word in other.words:
            continue
        letter, digits = m.groups()
        for spelled, number in zip(other.words, other.words[1:], strict=False):
            if number == digits and spelled.isalpha() and spelled[0] == letter and len(spelled) > 2:
                kind = value_kind(word, frozenset())
                said = {kind[1]} if kind is not None else set()
                values = {k: vs - said for k, vs in mine.values.items() if vs - said}
                qualifiers = mine.qualifiers | ({digits} if digits in theirs.qualifiers else set())
                subject = (mine.subject - {word, stem(word)}) | {stem(spelled), digits}
                return Split(subject, values, qualifiers)
    return mine
