"""Statements that stand alone: first person becomes the author, a thread answer names its subject.

"yep, that's me" under "who owns the billing service?", said by dana, becomes "dana owns the
billing service"; "the 14th" under "when is the code freeze?" becomes "the code freeze is the
14th"; any other short or deictic answer keeps its question beside it ("yes (re: is the offsite
still on?)"). A sentence that already stands alone is left as it was said.
"""

from __future__ import annotations

import re
from collections.abc import Collection

MAX_QUESTION_CHARS = 200
# An answer this short (in words), or leaning on its question ("yes", "that one", "me"), needs it.
SHORT_ANSWER_WORDS = 12

_QUESTION_PREFIX = re.compile(r"^(?:q|question|quick (?:one|q(?:uestion)?))\s*[:,-]\s*", re.I)
_WHO = re.compile(r"^who(?:'s| is| are)?\s+(?P<rest>.+?)\s*\?*$", re.I)
_COPULA = re.compile(
    r"^(?:when|where|what|which|how (?:many|much|long|big)|what time)(?:'s|\s+(?P<be>is|are|was|were))\s+"
    r"(?P<subject>.+?)\s*\?*$",
    re.I,
)
_FILLER = re.compile(
    r"^(?:yes|yep|yeah|yup|sure|correct|right|indeed|that(?:'s| is| would be)|it(?:'s| is)|"
    r"that one|ja|sí|si|oui|sim)\b[\s,.!:;-]*",
    re.I,
)
_ME = re.compile(
    r"^(?:(?:that(?:'s| is|'d be|d be|s) )?me|i do|(?:i am|i'm)(?=[\s.!,]*$)|myself|mine)\b[\s,.!;:-]*", re.I
)
# A reply that does not name anyone: "not sure, ask omar", "no idea", "check the wiki".
_UNSURE = re.compile(
    r"^(?:not sure|no idea|dunno|idk|ask|check|maybe|probably|perhaps|i think|i guess|no one|nobody|"
    r"not|no|nope|unclear|good question|hmm+)\b",
    re.I,
)
_HEAD = re.compile(r"^(?P<head>[^,.;!?()]+?)(?:\s*(?:[,.;!?(]|\s-\s)\s*(?P<rest>.*))?$")
_LEANS = re.compile(
    r"^(?:yes|yep|yeah|yup|no|nope|nah|sure|correct|right|that|this|it|they|he|she|same|"
    r"both|neither|ja|nein|sí|si|oui|non|sim|não)\b",
    re.I,
)
MAX_NAME_WORDS = 4
_TEAM = re.compile(r"^(?:the\s+)?[\w -]+\b(?:team|squad|group|crew|guild|department|dept)$", re.I)
_IMPERATIVE = frozenset("send ask check ping see try use go look talk reach message dm".split())
_FUNCTION_WORDS = frozenset(
    "the and for are was were has have had will would can could should does did not but you your our "
    "this that these those there here with from what when where which who whom whose why how its it's "
    "they them their then than into onto about just also still any some all yes yeah yep".split()
)
# First person -> the author. Verbs after "I" take the third person ("I own" -> "dana owns").
_PRONOUN_I = re.compile(
    r"\bI(?P<tail>'m|'ll|'ve|'d| am| will| have| had| was| do| did)?\b(?!\s+(?:think|guess|believe|"
    r"feel|suppose|wonder|mean)\b)(?P<verb>\s+[a-z]+)?",
)
_TAILS = {
    "'m": " is",
    " am": " is",
    "'ll": " will",
    " will": " will",
    "'ve": " has",
    " have": " has",
    "'d": " would",
    " had": " had",
    " was": " was",
    " do": " does",
    " did": " did",
}
_NO_S = frozenset(
    "will would can could should shall might must may did was had also just really still never always "
    "already usually often then now too only think guess believe feel suppose wonder mean found made took "
    "went said got saw sent put set ran wrote built broke left knew thought told came gave kept lost paid "
    "read met led held brought bought caught fell felt forgot hit let meant quit shut spent split stood "
    "understood won began chose drove flew grew heard hid hung lay lent sat slept sold spoke stuck swore "
    "taught threw woke wore".split()
)
_OBJECT_ME = re.compile(r"(?<=\s)(?:me|myself)\b(?![-'])")
_MY = re.compile(r"\b(?:my|mine)\b", re.I)


def question_of(parent_text: str | None) -> str | None:
    """The question a thread's opening message asks (its first sentence ending in "?")."""
    if not parent_text:
        return None
    from teamlore.extraction.sentences import split_sentences

    for sentence in split_sentences(parent_text):
        if sentence.rstrip().endswith(("?", "？")):
            return _QUESTION_PREFIX.sub("", sentence).strip()[:MAX_QUESTION_CHARS]
    return None


def first_person(sentence: str, author: str) -> str:
    """A leading or inner first person as the author's name ("I'll review it" -> "dana will
    review it"); hedges ("I think ...") stay as said."""
    if not author:
        return sentence

    def subject(match: re.Match[str]) -> str:
        tail, verb = match.group("tail"), match.group("verb") or ""
        if tail:
            return author + _TAILS[tail] + verb
        word = verb.strip()
        past = word.endswith("ed") and not word.endswith("eed")
        if word and word not in _NO_S and not past:
            verb = verb + ("es" if word.endswith(("s", "sh", "ch", "x", "o")) else "s")
        return author + verb

    said = _PRONOUN_I.sub(subject, sentence)
    # Functions, not templates: a name is text ("a\\b" must not read as a group reference).
    said = _OBJECT_ME.sub(lambda _: author, said)
    return _MY.sub(lambda _: f"{author}'s", said)


def names_the_one_asked_for(answer: str, question: str, author: str, people: Collection[str] = ()) -> bool:
    """A reply to a "who" question that names a person ("that's me", "dana", "@omar")."""
    return _WHO.match(question) is not None and _answering_person(answer, author, people)[0] is not None


def thread_answer(answer: str, question: str, author: str, people: Collection[str] = ()) -> str:
    """The answer as a statement that names what it answers."""
    who = _WHO.match(question)
    if who is not None and _content(who.group("rest")) <= _content(answer):
        return first_person(answer, author)  # "Dana owns billing." already says it all
    if who is not None:
        person, rest = _answering_person(answer, author, people)
        if person:
            predicate = who.group("rest")
            be = "is " if re.match(r"^who(?:'s| is)\b", question, re.I) else ""
            said = f"{person} {be}{predicate}".strip()
            return f"{said} ({rest})" if rest else said
    copula = _COPULA.match(question)
    if copula is not None and len(answer.split()) <= SHORT_ANSWER_WORDS:
        be = copula.group("be") or "is"
        value = _FILLER.sub("", answer).strip() or answer
        return f"{copula.group('subject')} {be} {value}"
    if _leans_on(answer, question):
        return f"{first_person(answer, author).rstrip('.')} (re: {question})"
    return first_person(answer, author)


def _leans_on(answer: str, question: str) -> bool:
    """An answer that means little without its question: it starts "yes", "that", "it", or it is
    short and names nothing the question names."""
    if _LEANS.match(answer):
        return True
    words = _content(answer)
    return len(answer.split()) <= SHORT_ANSWER_WORDS and not words & _content(question)


def _content(text: str) -> set[str]:
    return {w for w in re.findall(r"[^\W_]{3,}|\d+", text.casefold()) if w not in _FUNCTION_WORDS}


def _answering_person(answer: str, author: str, people: Collection[str]) -> tuple[str | None, str]:
    """Who a reply to a "who" question names, and what else it says."""
    text = _FILLER.sub("", answer.strip()).strip()
    me = _ME.match(text)
    if me is not None:
        return author, first_person(text[me.end() :].strip(), author)
    if len(text.split()) > SHORT_ANSWER_WORDS or _UNSURE.match(text):
        return None, ""
    named = _HEAD.match(text)
    if named is None or len(named.group("head").split()) > MAX_NAME_WORDS:
        return None, ""
    head = named.group("head").strip()
    if not _is_person(head, people):
        return None, ""
    rest = (named.group("rest") or "").strip().rstrip(").!")
    return head.lstrip("@"), first_person(rest, author)


def _is_person(head: str, people: Collection[str]) -> bool:
    """A mention, a known person, a capitalised name, or a team ("the platform team")."""
    words = head.split()
    known = {p.casefold() for p in people}
    return (
        head.startswith("@")
        or head.casefold() in known
        or words[0].casefold() in known
        or (words[0][:1].isupper() and words[0].casefold() not in _FUNCTION_WORDS | _IMPERATIVE)
        or _TEAM.match(head) is not None
    )
