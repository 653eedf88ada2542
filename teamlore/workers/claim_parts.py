"""A statement read for resolution: what it is about (subject) and what it says (values by kind).

The resolver compares two statements by their subjects with the values masked, and by the values
of each kind. Values: dates (months, weekdays, days, years), times, money, numbers, identifiers
(hostnames, codes, versions), statuses, people and named things. Everything else that carries
content is the subject. Cue phrases say how the statement relates to what was said before: a
change ("pushed to", "from now on", "not ... anymore", "renamed to"), a correction ("scratch
that", "actually it's"), a hedge or hearsay ("I think", "someone said"). Chat is lowercase and
terse, so a word capitalised in either statement of a pair names a thing in both (see
``resolver``), and a few chat abbreviations are read as the words they stand for.
"""

from __future__ import annotations

import functools
import re
import unicodedata
from collections.abc import Iterable
from dataclasses import dataclass, field

from teamlore.domain import normalize_statement

_MONTHS = {
    **{m: m[:3] for m in "january february march april may june july august".split()},
    **{m: m[:3] for m in "september october november december".split()},
    **{m: m for m in "jan feb mar apr jun jul aug sep oct nov dec".split()},
    "sept": "sep",
    # German, French, Spanish, Portuguese month names that differ from the English.
    **{m: "jan" for m in "januar janvier enero janeiro".split()},
    **{m: "feb" for m in "februar février fevrier febrero fevereiro".split()},
    **{m: "mar" for m in "märz maerz mars marzo março marco".split()},
    **{m: "apr" for m in "avril abril".split()},
    **{m: "may" for m in "mai mayo maio".split()},
    **{m: "jun" for m in "juni juin junio junho".split()},
    **{m: "jul" for m in "juli juillet julio julho".split()},
    **{m: "aug" for m in "august août aout agosto".split()},
    **{m: "sep" for m in "septembre septiembre setembro".split()},
    **{m: "oct" for m in "oktober octobre octubre outubro".split()},
    **{m: "nov" for m in "novembre noviembre novembro".split()},
    **{m: "dec" for m in "dezember décembre decembre diciembre dezembro".split()},
}
_WEEKDAYS = {
    **{d: d[:3] for d in "monday tuesday wednesday thursday friday saturday sunday".split()},
    **{d: d[:3] for d in "mon tue wed thu fri sat sun".split()},
    "tues": "tue",
    "thur": "thu",
    "thurs": "thu",
    "weds": "wed",
    **{d: "mon" for d in "montag lundi lunes segunda".split()},
    **{d: "tue" for d in "dienstag mardi martes terça terca".split()},
    **{d: "wed" for d in "mittwoch mercredi miércoles miercoles quarta".split()},
    **{d: "thu" for d in "donnerstag jeudi jueves quinta".split()},
    **{d: "fri" for d in "freitag vendredi viernes sexta".split()},
    **{d: "sat" for d in "samstag samedi sábado sabado".split()},
    **{d: "sun" for d in "sonntag dimanche domingo".split()},
}
STATUS_WORDS = frozenset(
    "blocked unblocked done finished complete completed shipped launched live degraded healthy "
    "down up broken fixed resolved progress paused cancelled canceled open closed green red amber "
    "yellow stable failing hold pending approved rejected delayed active inactive deprecated "
    "frozen passed failed".split()
)
# Words that carry neither subject nor value.
FILLER = frozenset(
    "a an the is are was were be been being am to of on in at for by with from as and or but so "
    "it its it's this that these those our we us you they all each every any some still again now "
    "currently also just really very use uses used using run runs ran running go goes going "
    "through happen happens happening set there here has have had do does did will shall "
    "then than after before get gets got per pls please ok okay fyi heads up btw same as always "
    "ask ping contact see check update reminder psa note today tonight tomorrow yesterday again "
    "ugh hmm wait oh lol haha c'est je me suis tu il elle ils es sí si ja oui sim "
    "usual confirmed official yes yeah yep sure thanks thx team's "
    "i me my he she him her his their them what which who when where how why "
    "le la les l un une des de du d et est sont à au aux en dans pour par sur avec ce cette on nous "
    "der die das den dem des ein eine ist sind und mit für fur im am zum zur von wir "
    "el los las una uno es son y con para por del al en nos lo "
    "o os as um uma é são e com para pelo pela do da dos das no na nos nas em "
    # Time zones belong to the time beside them: no thing's name ("10:00 UTC").
    "utc gmt cet cest pst pdt est edt bst ist jst aest".split()
)
# Chat shorthand read as the word it stands for (so subjects compare).
ABBREVIATIONS = {
    "mo": "month",
    "mon": "monday",
    "yr": "year",
    "wk": "week",
    "req": "requests",
    "reqs": "requests",
    "min": "minute",
    "mins": "minutes",
    "hr": "hour",
    "hrs": "hours",
    "mgr": "manager",
    # Words for the same slot ("lunch ends 1:30" / "stops serving lunch at 2pm").
    "begin": "start",
    "begins": "starts",
    "began": "started",
    "ends": "stops",
    "ended": "stopped",
    "responsible": "owner",  # "the person responsible for APAC renewals" / "APAC renewals owner"
    "mktg": "marketing",
    "eng": "engineering",
    "ops": "operations",
    "hm": "manager",
    "poc": "contact",
    "prod": "production",
    "env": "environment",
    "db": "database",
    "k8s": "kubernetes",
    "pw": "password",
    "dept": "department",
    "docs": "documentation",
    "doc": "documentation",
    "repo": "repository",
    "whs": "warehouse",
    "wh": "warehouse",
    "fri": "friday",
    "info": "information",
    "msg": "message",
    "approx": "about",
    "qty": "quantity",
    "avg": "average",
    "cfg": "config",
    "config": "configuration",
}

CHANGE_CUE = re.compile(
    r"\b(moved|moving|move[sd]? to|pushed|slipped|slips|postponed|rescheduled|delayed|brought forward|"
    r"switched|switching|switch(?:es)? to|migrated|migrating|replaced|replacing|no longer|instead|now|"
    r"changed|changes|changing|raised|lowered|increased|reduced|decreased|bumped|took over|taking over|"
    r"takes over|handed over|handed|hands over|from now on|going forward|effective|updated|starting|"
    r"as of|renamed|rebranded|now called|is called|anymore|any more|new|newly|upgraded|downgraded|"
    r"expanded|shrunk|grew|dropped to|went (?:up|down)|goes (?:up|down)|ownership|reassigned|"
    r"transferred|these days|nowadays|this year|moved over|no more|cut to|revised|scaled|down to|"
    r"from (?:next|this) (?:week|month|quarter|term|year)|from q[1-4]|"
    r"ab sofort|jetzt|nicht mehr|neu|verschoben|stattdessen|umbenannt|"
    r"maintenant|désormais|desormais|plus|déplacée?s?|deplacee?s?|reportée?s?|reportee?s?|remplacée?s?|"
    r"renommée?s?|passe (?:à|a|au)|à partir d[eu]|a partir d[eu]|"
    r"ahora|ya no|cambió|cambio|movido|pasó|paso|en vez de|"
    r"agora|não .{0,30} mais|nao .{0,30} mais|mudou|mudamos|passou|passa pr[ao]|em vez de)\b",
    re.I,
)
CORRECTION_CUE = re.compile(
    r"\b(scratch that|correction|correcting|i meant|meant to say|my mistake|my bad|i stand corrected|"
    r"typo|misread|mis-?typed|misspoke|fat-?fingered|that was wrong|erratum|"
    r"ignore that|correção|corrección|quise decir|me suis trompé|trompé|"
    r"ignore (?:that|my last)|i was wrong|mea culpa|korrektur|tippfehler|je voulais dire|"
    r"me equivoqué|corrijo|errei|corrigindo)\b"
    # Words that correct only when they open the statement ("actually it's B", "sorry, 4401"),
    # not in passing ("I actually went there"), nor sympathy ("sorry to hear about the studio").
    r"|^\W*(?:actually|sorry(?!\s+(?:to hear|for|about)\b)|oops|wait,? no|pardon|wrong|en fait|"
    r"eigentlich|falsch|perdón|perdon|en realidad|desculpa|na verdade)\b"
    # ... or open a thread answer made a statement ("the cost center for the offsite is sorry, 4401").
    r"|^[^,.;:!?]*\b(?:is|are)\s+(?:sorry|oops|wait,? no),",
    re.I,
)
# Uncertainty: the speaker does not settle the value ("I think", "maybe", "pretty sure").
HEDGE = re.compile(
    r"\b(not sure(?: but)?|i think|i believe|i guess|maybe|might|may be|"
    r"probably|perhaps|possibly|could be|iirc|afaik|apparently|pretty sure|"
    r"not (?:yet )?(?:official|confirmed)|unconfirmed|"
    r"no eta confirmed|tbc|tbd|to be confirmed|can someone confirm|anyone confirm|"
    r"ich glaube|vielleicht|wohl|je crois|peut-être|peut-etre|"
    r"creo|quizás|quizas|tal vez|acho|alguém confirma|alguem confirma|talvez)\b",
    re.I,
)
# Hearsay: someone else said so ("someone said", "told me"). It doubts a settled value as a hedge
# does, but on its own it is a report, not a guess.
HEARSAY = re.compile(
    r"\b(i'd heard|i heard|heard|someone said|somebody said|rumou?r|told me|says|said|angeblich|"
    r"quelqu'un m'a dit|serait)\b",
    re.I,
)
QUESTION = re.compile(
    r"[?？¿]|^(are|is|do|does|did|who|what|when|where|which|how|should|can|could|will|has|have|"
    r"wasn't|isn't|aren't|weren't|didn't|doesn't)\b",
    re.I,
)
# A statement about the past leaves the present as it was ("we used to use X").
PAST = re.compile(
    r"\b(used to|back in|back when|originally|previously|formerly|in the past|once was|"
    r"at first|initially|last year'?s?|years ago)\b",
    re.I,
)
# The older value stops: "no longer open on saturdays", "not jira anymore", "on n'utilise plus".
NEGATION = re.compile(
    r"\b(no longer|not .{0,40}(?:anymore|any more)|no more|nicht mehr|n'\w+ plus|ne \w+ plus|ya no|"
    r"não .{0,30}mais|nao .{0,30}mais|isn't .{0,30}anymore)\b"
    r"|(?<=\w)n't .{0,40}(?:anymore|any more)\b",  # "doesn't use paper MAR anymore"
    re.I,
)
RENAME = re.compile(
    r"\b(renamed|rebranded|now called|is called|now named|umbenannt|renommé|renombrado|renomeado)\b", re.I
)
# What a thread answer carries after its statement: "(re: who owns billing?)" is context, not a question.
_CONTEXT = re.compile(r"\s*\(re: [^)]*\)\s*$")
HYPOTHETICAL = re.compile(r"^\s*if\b|\bwhat if\b|\bwould\b|\bsuppose\b|\bimagine\b", re.I)
# "switched from X", "instead of X", "no longer use X", "X was replaced", "not X anymore",
# "renamed from X", "X got renamed", "X is now called": X is the value the newer statement retires.
OLD_VALUE = re.compile(
    # "comes from X" says where the new value comes from.
    r"\b(?:(?<!comes )(?<!come )(?<!came )from|instead of|in place of|rather than|"
    r"no longer (?:use|uses|on|using|runs on|in|at)|"
    r"not (?:using|use|on|in|with)|replaced|not|não|nao|pas|nicht|no es)"
    r"\s+(?:the\s+)?([$€£]?[\w.@'-]+)"
    r"|n't (?:using|use|run on)\s+(?:the\s+)?([$€£]?[\w.@'-]+)"  # "we don't use DHL anymore"
    r"|\b([\w.@'-]+)\s+(?:was|were|has been|is being|got|is)\s+"
    r"(?:replaced|renamed|rebranded|retired|dropped)\b"
    r"|\b([\w.@'-]+)\s+(?:is no longer|isn't|não é mais|nao e mais|ist nicht mehr|n'est plus|ya no es)\b"
    r"|\b([\w.@'-]+)\s+(?:is now called|is now|now called)\b"
    # "(katrin left)", "master is gone", "jenkins is off", "hilton was full": the old one, gone.
    r"|\b([a-z][\w.@'-]*)\s+(?:left|quit|is gone|'s gone|is off|is archived|was full|is retired|"
    r"is being renovated|couldn't keep up)\b"
    r"|\bplus\s+([\w.@'-]+)|\bnicht mehr\s+([\w.@'-]+)|\bya no\s+\w+\s+([\w.@'-]+)",
    re.I,
)

_TOKEN = re.compile(
    r"[$€£]\s?\d[\d.,]*\s?[kmb]?\b"  # money
    r"|\d[\d.,]*\s?(?:k|m|bn|€|eur|usd|gbp)\b"  # 80k, 6M
    r"|\d{1,2}(?::\d{2})?\s?(?:am|pm)\b|\d{1,2}:\d{2}|\d{1,2}h\d{0,2}\b"  # times
    r"|\d{4}-\d{2}-\d{2}"  # ISO dates
    r"|-?\d+(?:[.,]\d+)*(?:st|nd|rd|th|%|x)?"  # numbers
    r"|[^\W\d_][\w@'.-]*[\w@]|[^\W\d_]",  # words and identifiers
    re.UNICODE,
)
_TIME = re.compile(r"\d{1,2}(?::\d{2})?\s?(?:am|pm)|\d{1,2}:\d{2}|\d{1,2}h\d{0,2}")
_MONEY = re.compile(r"[$€£]\s?\d[\d.,]*\s?[kmb]?|\d[\d.,]*\s?(?:k|m|bn|€|eur|usd|gbp)")
_ORDINAL = re.compile(r"\d+(?:st|nd|rd|th)")
_YEAR = re.compile(r"(?:19|20)\d\d")
_IDENTIFIER = re.compile(r".*(?:\d.*[a-z]|[a-z].*\d|[a-z]\.[a-z]|@).*")


@dataclass(frozen=True)
class Parts:
    """A statement read once for resolution (see the module); ``split`` divides its words for a
    pair."""

    text: str
    normalized: str
    words: tuple[str, ...]  # content words in order, casefolded, abbreviations expanded
    capitalised: frozenset[str]  # words written with a capital inside the sentence
    initial: str = ""  # the first word, when capitalised ("Dana owns billing"): maybe a name
    values: dict[str, frozenset[str]] = field(default_factory=dict)
    change: bool = False
    negated: bool = False
    rename: bool = False
    correction: bool = False
    hedged: bool = False  # uncertain or hearsay: it may doubt a value, never settle one
    uncertain: bool = False  # uncertain by the speaker's own words (a hedge on its own)
    question: bool = False
    not_a_claim: str | None = None
    old_values: frozenset[str] = frozenset()
    acronyms: frozenset[str] = frozenset()  # words written in capitals ("CAB", "PMs"), folded

    @functools.cached_property
    def word_set(self) -> frozenset[str]:
        return frozenset(self.words)

    # What ``rereading`` asks of one statement, read once: each statement meets up to 16 others.

    @functools.cached_property
    def shorthand(self) -> tuple[str, ...]:
        """Short lower-case words that may stand for words spelled out elsewhere ("mtg", "qp")."""
        return tuple(
            w
            for w in self.words
            if 2 <= len(core := w[:-1] if w.endswith("s") and len(w) > 3 else w) <= 4
            and core.isalpha()
            and w not in FILLER
            and w not in self.capitalised
            and core not in self.acronyms
        )

    @functools.cached_property
    def counts_in_words(self) -> dict[str, str]:
        """Number words said as a count, before a word that is not filler ("two weeks", "one qa
        contractor"; not "one of", "no one"). Read only: shared by every pair."""
        found = {}
        for i, word in enumerate(self.words):
            following = self.words[i + 1] if i + 1 < len(self.words) else ""
            if word in NUMBER_WORDS and following[:1].isalpha() and following not in FILLER:
                found[word] = str(NUMBER_WORDS[word])
        return found

    @functools.cached_property
    def short_hours(self) -> frozenset[str]:
        """Words like "12h"."""
        return frozenset(w for w in self.words if re.fullmatch(r"\d{1,2}h", w))


def _fold(text: str) -> str:
    return unicodedata.normalize("NFKC", text).replace("’", "'").replace("‘", "'")


def _money(token: str) -> str:
    digits = re.sub(r"[^\d.kmb]", "", token.lower().replace(",", ""))
    if digits.endswith("k"):
        return (
            str(round(float(digits[:-1] or 0) * 1000)) if digits[:-1].replace(".", "").isdigit() else digits
        )
    if digits.endswith("m") and digits[:-1].replace(".", "").isdigit():
        return str(round(float(digits[:-1]) * 1_000_000))
    return digits


def _time(token: str) -> str:
    low = token.lower().replace(" ", "")
    match = re.fullmatch(r"(\d{1,2})(?::|h)?(\d{2})?(am|pm)?", low)
    if match is None:
        return low
    hour, minute, half = int(match.group(1)), int(match.group(2) or 0), match.group(3)
    if half == "pm" and hour < 12:
        hour += 12
    if half == "am" and hour == 12:
        hour = 0
    return f"{hour:02d}:{minute:02d}"


@functools.lru_cache(maxsize=65_536)
def value_kind(token: str, people: frozenset[str]) -> tuple[str, str] | None:
    """(kind, canonical value) of a token, or None when it is a subject word. Kept per token:
    each pair re-reads the same words (a statement meets up to 16 candidates)."""
    low = token.lower()
    if _MONEY.fullmatch(low):
        return "money", _money(low)
    if _TIME.fullmatch(low):
        return "time", _time(low)
    if low[:1].isdigit() or (low[:1] == "-" and low[1:2].isdigit()):
        if re.fullmatch(r"\d{4}-\d{2}-\d{2}", low) or _ORDINAL.fullmatch(low) or _YEAR.fullmatch(low):
            return "date", re.sub(r"(?<=\d)(st|nd|rd|th)$", "", low)
        if _IDENTIFIER.fullmatch(low):
            return "identifier", low
        return "number", low.rstrip("%x").replace(",", "")
    if low in _MONTHS:
        return "date", _MONTHS[low]
    if low.rstrip("s") in _WEEKDAYS or low in _WEEKDAYS:
        return "date", _WEEKDAYS.get(low, _WEEKDAYS.get(low.rstrip("s"), low))
    if low in STATUS_WORDS:
        return "status", low
    if low.lstrip("@") in people:
        return "person", low.lstrip("@")
    if _IDENTIFIER.fullmatch(low) and len(low) > 2:
        return "identifier", low.rstrip(".")
    return None


# Phrases that say nothing of the subject; "same time" says the time stayed ("board mtg moved to
# fri, same time"), it names no other thing; "this term" says when ("grad seminar is thursdays
# this term").
_PHRASES = re.compile(
    r"\b(?:heads[- ]up|as of today|as of now|up to date|follow[- ]up|same (?:time|place)|"
    r"this (?:term|semester))\b",
    re.I,
)


def tokens(text: str) -> list[str]:
    """The statement's words and numbers, folded, with digit groups joined and units apart."""
    clean = re.sub(r"(\d),(\d{3})\b", r"\1\2", _PHRASES.sub(" ", _fold(text)))
    clean = re.sub(r"(\d)(ms|gb|mb|tb)\b", r"\1 \2", clean, flags=re.I)
    return [t.strip(".'") or t for t in _TOKEN.findall(clean)]


def _capitalised(folded: str, found: list[str]) -> frozenset[str]:
    """Words written with a capital inside the sentence, and quoted names."""
    return frozenset(
        t.lower() for i, t in enumerate(found) if i > 0 and t[:1].isupper() and t.lower() not in FILLER
    ) | frozenset(q.lower() for q in re.findall(r"['\"“]([^'\"”]{2,40})['\"”]", folded))


# A thread answer to "who ...?", its answer first ("omar, since the reorg (re: who owns billing?)").
_WHO_ASKED = re.compile(r"\(re: who(?:'s| is| owns| does| signs| handles| approves)?\b[^)]*\)\s*$", re.I)


def _answer_to_who(folded: str, found: list[str]) -> frozenset[str]:
    """The first word of an answer to "who ...?" names someone, written in lower case or not."""
    if not found or not _WHO_ASKED.search(folded) or not found[0].isalpha() or found[0].lower() in FILLER:
        return frozenset()
    return frozenset({found[0].lower()})


def read(text: str) -> Parts:
    """The parts of one statement that do not depend on the other one."""
    folded = _fold(text)
    question = bool(QUESTION.search(_CONTEXT.sub("", folded).strip()))
    not_a_claim = None
    if HYPOTHETICAL.search(folded):
        not_a_claim = "a hypothetical asserts nothing"
    # A correction says what was wrong, perhaps in the past ("correction: enrollment closes nov
    # 22, nov 30 was last year's date"): a claim still.
    elif PAST.search(folded) and not CORRECTION_CUE.search(folded):
        not_a_claim = "it speaks of the past"
    found = tokens(folded)
    capitalised = _capitalised(folded, found) | _answer_to_who(folded, found)
    old = frozenset(
        next(g for g in m.groups() if g).lower().strip(".,;'") for m in OLD_VALUE.finditer(folded)
    )
    first = found[0] if found else ""
    return Parts(
        initial=first.lower() if first[:1].isupper() and first.lower() not in FILLER else "",
        text=folded,
        normalized=normalize_statement(text),
        words=tuple(ABBREVIATIONS.get(t.lower(), t.lower()) for t in found),
        capitalised=capitalised,
        change=bool(CHANGE_CUE.search(folded)),
        negated=bool(NEGATION.search(folded)),
        rename=bool(RENAME.search(folded)),
        correction=bool(CORRECTION_CUE.search(folded)),
        hedged=bool(HEDGE.search(folded) or HEARSAY.search(folded)),
        uncertain=bool(HEDGE.search(folded)),
        question=question,
        not_a_claim=not_a_claim,
        old_values=old - FILLER,
        acronyms=frozenset(m.lower() for m in re.findall(r"\b([A-Z]{2,4})s?\b", folded)),
    )


# What a value is replaced by in the masked statement: the kind, worded as chat would say it.
_KIND_WORDS = {
    "date": "a date",
    "time": "a time",
    "money": "an amount",
    "number": "a number",
    "identifier": "an id",
    "status": "a status",
    "person": "someone",
    "name": "something",
}


def masked(text: str) -> str:
    """The statement with each value replaced by its kind ("The release date is May 5." -> "The
    release date is a date"): what it is about, to compare by meaning. It depends on the statement
    alone (names are the words it capitalises), so a statement's masked form is embedded once."""
    folded = _fold(text)
    found = tokens(folded)
    capitalised = _capitalised(folded, found)
    out: list[str] = []
    after_value = False
    for position, token in enumerate(found):
        low = token.lower()
        kind = value_kind(low, frozenset())
        if kind is None and position > 0 and low in capitalised:
            kind = ("name", low)
        if kind is None:
            out.append(token)
        elif not after_value:  # "May 5", "Atlas 2.0": one value
            out.append(_KIND_WORDS[kind[0]])
        after_value = kind is not None
    return " ".join(out)


def stem(word: str) -> str:
    for suffix in ("ership", "ation", "ers", "ies", "er", "ing", "ed", "es", "s"):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            return word[: -len(suffix)]
    return word


# "Quiz 3 covers ...", "the dock 4 door ...": a number right after a noun near the start of the
# statement says which thing; later ("goes in bay 7") it is the value.
QUALIFIER_POSITION = 2
# ... or right before the verb ("Kafka migration step 1 is done").
_VERBS = frozenset("is are was were has have will covers starts ends stops opens closes goes runs".split())


@dataclass(frozen=True)
class Split:
    """A statement's words split, in the light of the pair, into subject and values."""

    subject: frozenset[str]
    values: dict[str, frozenset[str]]
    qualifiers: frozenset[str]  # numbers and names that say *which* thing ("dock 4", "Q3")


def split(parts: Parts, names: frozenset[str], people: frozenset[str], cue_words: Iterable[str]) -> Split:
    subject: set[str] = set()
    qualifiers: set[str] = set()
    values: dict[str, set[str]] = {}
    skip = frozenset(cue_words)
    previous = ""
    for position, word in enumerate(parts.words):
        kind = value_kind(word, people)
        if kind is None and word in names and word not in FILLER:
            kind = ("name", word)
        if kind is not None and _after_from(position, parts.words):
            previous = word
            continue  # "slipped from March 3 to March 17": March 3 is the past value
        if kind is not None and kind[0] == "number" and "." in word and previous in names:
            subject.add(word)  # "Atlas 2.0": part of the name
            previous = word
            continue
        following = parts.words[position + 1] if position + 1 < len(parts.words) else ""
        # Said last ("entrance code 9930", "kafka retention 3d"), a number is the value.
        last = not following or (position + 2 == len(parts.words) and len(following) <= 2)
        head = (
            (position <= QUALIFIER_POSITION or following in _VERBS)
            and not previous.endswith("ed")
            and not last
        )
        if kind is not None and kind[0] in ("number", "identifier") and head and _names_an_item(previous):
            qualifiers.add(kind[1])  # "step 3", "dock 4": which thing, not how much
            subject.add(kind[1])
        elif kind is not None and re.fullmatch(r"q[1-4]|h[12]|fy\d+", word):
            qualifiers.add(word)
            subject.add(word)
        elif kind is not None and kind[0] == "date" and previous == "for" and following in _VERBS:
            qualifiers.add(kind[1])  # "the Aurora budget for December is ...": which budget
            subject.add(kind[1])
        elif kind is not None and kind[0] == "number" and _day_of_month(word, position, parts.words):
            values.setdefault("date", set()).add(word)  # "March 17", "the 17th of march"
        elif kind is not None:
            values.setdefault(kind[0], set()).add(kind[1])
        elif word not in FILLER and word not in skip and len(word) > 1:
            subject.add(stem(word))
        previous = word
    return Split(frozenset(subject), {k: frozenset(v) for k, v in values.items()}, frozenset(qualifiers))


def _after_from(position: int, words: tuple[str, ...]) -> bool:
    before = words[max(0, position - 2) : position]
    return "from" in before and "to" in words[position + 1 : position + 4]


def _day_of_month(word: str, position: int, words: tuple[str, ...]) -> bool:
    if not word.isdigit() or not 1 <= int(word) <= 31:
        return False
    near = words[max(0, position - 2) : position + 3]
    return any(w in _MONTHS for w in near)


def _names_an_item(previous: str) -> bool:
    return (
        bool(previous)
        and previous.isalpha()
        and previous not in FILLER
        and previous not in _MONTHS
        and previous not in STATUS_WORDS
    )


NUMBER_WORDS = dict(
    zip("one two three four five six seven eight nine ten eleven twelve".split(), range(1, 13), strict=True)
)
