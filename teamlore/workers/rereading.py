"""A statement's split read again beside the other statement of its pair (``resolver``): where the
other spells out words this one shortens ("qp session" / "the quarterly planning session"),
counts in words, says a time or a number of hours the same way, gives its number as a value
beside the same word, or qualifies the same thing. Each function takes ``claim_parts.split``'s
reading of one statement and returns it re-read; nothing here reads a statement alone.
"""

from __future__ import annotations

from teamlore.workers.claim_parts import FILLER, NUMBER_WORDS, Parts, Split, _time, stem, value_kind


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


def counted_in_words(mine: Split, parts: Parts, other: Parts, theirs: Split) -> Split:
    """A count said in words is a number where the other statement says a count too ("Sprint
    length is two weeks." / "we're doing 3-week sprints"; "two security guards" / "down to one")."""
    said = {w: n for w, n in parts.counts_in_words.items() if w in mine.subject}
    if not said or "number" in mine.values:
        return mine
    if not ("number" in theirs.values or theirs.qualifiers or other.counts_in_words):
        return mine
    values = dict(mine.values)
    values["number"] = frozenset(said.values())
    return Split(mine.subject - said.keys(), values, mine.qualifiers)


_AT_HOUR = frozenset("at um till until à às".split())


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
    values["time"] = values.get("time", frozenset()) | {_time(w) for w in hours}
    return Split(mine.subject, values, mine.qualifiers)


_HOURS = frozenset({"hour", "hours"})


def _number(word: str) -> str:
    """The number a word says, in digits or in words ("two"), or ""."""
    if word in NUMBER_WORDS:
        return str(NUMBER_WORDS[word])
    kind = value_kind(word, frozenset())
    return kind[1] if kind is not None and kind[0] == "number" else ""


def hours_alike(mine: Split, parts: Parts, other: Parts) -> Split:
    """ "12h" is twelve hours, not noon, where the other statement counts hours ("Ticket SLA for
    P2 is 8 hours." / "p2 sla 12h")."""
    said = parts.short_hours
    if not said:
        return mine
    if not any(w in _HOURS and _number(n) for n, w in zip(other.words, other.words[1:], strict=False)):
        return mine
    times = mine.values.get("time", frozenset()) - {_time(w) for w in said}
    values = {k: v for k, v in mine.values.items() if k != "time"}
    if times:
        values["time"] = times
    values["number"] = values.get("number", frozenset()) | {w[:-1] for w in said}
    return Split(mine.subject | {"hour"}, values, mine.qualifiers)


def valued_beside(mine: Split, parts: Parts, other: Parts, theirs: Split) -> Split:
    """A number read as which thing is the value where the other statement gives its number
    value beside the same word, on the same side ("correction: 230 pallets in the stockroom" /
    "The stockroom has 320 pallets."). Not where the other reads its number as which thing too:
    "Decision 2: the build server number 2 ..." / "Decision 3: the build server number 3 ..."
    name two decisions and two servers, each by its number."""
    numbers = theirs.values.get("number", frozenset()) - theirs.qualifiers
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
        # Or read as part of a name ("We're on Godot 4.2 LTS." / "4.3 LTS as of last week").
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
    / "The lab meeting", "qp session" / "The quarterly planning session")."""
    # A number between two words breaks their initials ("allows 6 people" is no "cap").
    # (``Parts.shorthand``: capitals are ``spelled_out``'s, or a name, "Argo CD".)
    if not parts.shorthand:
        return mine
    content = [w for w in other.words if w not in FILLER]
    for word in parts.shorthand:
        core = word[:-1] if word.endswith("s") and len(word) > 3 else word
        if word in other.word_set or stem(word) not in mine.subject:
            continue
        spelled = _stands_for(core, content)
        if not spelled or any(w.startswith(core) for w in spelled):
            continue
        subject = frozenset(stem(w) for w in spelled if w not in theirs.values.get("name", frozenset()))
        return Split((mine.subject - {stem(word)}) | subject, mine.values, mine.qualifiers)
    return mine


def qualified_alike(mine: Split, theirs: Split) -> Split:
    """A number the other statement says *which* thing with is which thing here too, where it is
    no value the two differ on ("The hotfix 2.3 release is planned for May 12." / "2.3 slips to
    may 19")."""
    same = {
        v for k in ("number", "identifier") for v in mine.values.get(k, frozenset()) if v in theirs.qualifiers
    }
    if not same:
        return mine
    values = {k: vs - same for k, vs in mine.values.items() if vs - same}
    return Split(mine.subject | same, values, mine.qualifiers | same)
