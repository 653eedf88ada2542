"""Extractors: from a message to candidate facts. The heuristic one needs no model.

The heuristic splits a message into sentences, keeps the informative ones (decisions, dates,
owners, numbers, statuses, definitions, action items, questions and the answers to them in
threads), drops chit-chat, tags entities and classifies the fact type. It is deliberately
conservative: a sentence is kept only when a cue says it carries knowledge.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Protocol, runtime_checkable

from teamlore.dates import due_date
from teamlore.domain import CandidateFact, FactType, Message

MIN_WORDS = 3
MAX_STATEMENT_CHARS = 400


class ExtractionStatus(StrEnum):
    OK = "ok"
    NOOP = "noop"  # the message carried nothing worth keeping; distinct from a failure


@dataclass(frozen=True, slots=True)
class Extraction:
    status: ExtractionStatus
    facts: tuple[CandidateFact, ...]
    # Set when the configured extractor failed and the heuristic one stood in: the reason.
    fallback: str | None = None


# A message to extract, with the first message of its thread when it is a reply (context).
ExtractionRequest = tuple[Message, Message | None]


class Extractor(Protocol):
    def extract(self, message: Message, thread_parent: Message | None) -> Extraction: ...


@runtime_checkable
class BatchExtractor(Extractor, Protocol):
    """An extractor that is cheaper given many messages at once (a model: one call per batch)."""

    def extract_batch(self, requests: Sequence[ExtractionRequest]) -> list[Extraction]: ...


def extract_many(extractor: Extractor, requests: Sequence[ExtractionRequest]) -> list[Extraction]:
    """One extraction per request, in order; batched when the extractor can batch."""
    if isinstance(extractor, BatchExtractor):
        return extractor.extract_batch(requests)
    return [extractor.extract(message, parent) for message, parent in requests]


# --- Slack-style markup, cleaned before anything else looks at the text ---
_USER_LINK = re.compile(r"<@([A-Z0-9]+)(?:\|([^>]+))?>")
_CHANNEL_LINK = re.compile(r"<#([A-Z0-9]+)(?:\|([^>]*))?>")
_URL_LINK = re.compile(r"<(https?://[^|>]+)(?:\|([^>]+))?>")
_SPECIAL = re.compile(r"<!(here|channel|everyone)[^>]*>")
_EMOJI = re.compile(r":[a-z0-9_+\-]+:")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9@#\"'(`*_-])|\n+|(?<=;)\s+")
_WORD = re.compile(r"[\w'’$%@#./:-]+")

_CHITCHAT = re.compile(
    r"^(?:(?:good )?morning|hi|hey|hello|yo|thanks?(?: you)?|thx|ty|lol|haha\w*|ok(?:ay)?|kk|"
    r"nice|cool|great|awesome|sounds good|\+1|same|yep|yes|no|nope|sure|agreed|np|congrats\w*|"
    r"welcome|brb|lunch\??|coffee\??|gm|gn|ship it)\b[\s!.?,:)]*(?:all|everyone|team|folks)?[\s!.]*$",
    re.IGNORECASE,
)
_CUES: dict[FactType, re.Pattern[str]] = {
    FactType.DEFINITION: re.compile(
        r"\b(means|is defined as|stands for|refers to|is short for|definition)\b|^\w[\w\s'-]{0,40} = ", re.I
    ),
    FactType.DECISION: re.compile(
        r"\b(decided|decision|agreed|we(?:'ll| will) (?:go with|use|adopt)|going with|chose|"
        r"switch(?:ed|ing)? (?:from|to)|moving|moved|migrat\w+ to|standardi[sz]e on|"
        r"instead of|no longer|replac\w+ (?:by|with)|we use|we're using|is now|changed to|"
        r"approved|rejected|final(?:ly)?|policy)\b",
        re.I,
    ),
    FactType.ACTION_ITEM: re.compile(
        r"\b(todo|to-do|action item|will (?:write|send|fix|update|review|prepare|set up|look|ship|"
        r"handle|draft|file|follow up|own|take)|needs? to|please|by (?:eod|eow|monday|tuesday|"
        r"wednesday|thursday|friday|tomorrow|next week)|follow[- ]up|assigned to)\b|^@\w+ (?:to|will)\b",
        re.I,
    ),
    FactType.OWNERSHIP: re.compile(
        r"\b(owns?|owner|ownership|responsible for|in charge of|on[- ]call|point of contact|"
        r"takes? over|took over|leads?|lead on|maintainer|dri)\b",
        re.I,
    ),
    FactType.SCHEDULE: re.compile(
        r"\b(jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?|"
        r"sep(?:t(?:ember)?)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?|monday|tuesday|wednesday|"
        r"thursday|friday|q[1-4]|deadline|due|launch\w*|release[sd]?|freeze|slipp?(?:ed|ing)?|"
        r"pushed|postponed|rescheduled|standup|at \d{1,2}(?::\d{2})?\s?(?:am|pm)?|"
        r"\d{4}-\d{2}-\d{2}|\d{1,2}:\d{2})\b",
        re.I,
    ),
    FactType.STATUS: re.compile(
        r"\b(blocked|unblocked|done|shipped|launched|live|deployed|rolled (?:out|back)|resolved|"
        r"fixed|broken|down|outage|degraded|in progress|complete[d]?|finished|merged|paused|"
        r"cancel+ed|on hold|green|red|healthy|failing|stable)\b",
        re.I,
    ),
    FactType.METRIC: re.compile(
        r"(\$\s?\d|\d+(?:\.\d+)?\s?(?:%|ms|s\b|sec|seconds|minutes|hours|days|weeks|gb|mb|tb|k\b|"
        r"requests|rps|qps|users|seats|engineers|per (?:minute|second|hour|day|month|seat))|"
        r"\b(?:budget|limit|latency|p9[59]|slo|sla|quota|cost|price|pricing|headcount)\b)",
        re.I,
    ),
    FactType.ANNOUNCEMENT: re.compile(
        r"\b(announc\w+|heads[- ]up|fyi|psa|starting (?:on |from )?\w+|from now on|effective|"
        r"welcome to the team|joined|is joining|leaving|reminder)\b",
        re.I,
    ),
}
# Order in which cues decide the type when several match: the most specific meaning first.
_TYPE_PRIORITY = (
    FactType.DEFINITION,
    FactType.DECISION,
    FactType.ACTION_ITEM,
    FactType.OWNERSHIP,
    FactType.STATUS,
    FactType.SCHEDULE,
    FactType.METRIC,
    FactType.ANNOUNCEMENT,
)
IMPORTANCE = {
    FactType.DECISION: 0.9,
    FactType.DEFINITION: 0.7,
    FactType.OWNERSHIP: 0.8,
    FactType.SCHEDULE: 0.8,
    FactType.STATUS: 0.6,
    FactType.METRIC: 0.7,
    FactType.ACTION_ITEM: 0.7,
    FactType.ANNOUNCEMENT: 0.6,
    FactType.QUESTION: 0.4,
    FactType.ANSWER: 0.7,
    FactType.STATEMENT: 0.4,
}
_HEDGE = re.compile(
    r"\b(i think|maybe|might|probably|perhaps|not sure|i guess|possibly|"
    r"i believe|could be|iirc|afaik|would)\b|^if\b",
    re.I,
)
_ASSERTION = re.compile(
    r"\b(is|are|uses?|runs? on|lives? in|hosted on|based on|supports?|"
    r"requires?|depends on|contains?)\b",
    re.I,
)
_MENTION = re.compile(r"@[\w.-]+")
_HASHTAG = re.compile(r"#[\w-]+")
_CODE = re.compile(r"`([^`]{1,60})`")
_URL = re.compile(r"https?://[^\s)>\]]+[^\s)>\].,;:!?]")
_SYSTEM = re.compile(r"\b[A-Za-z][A-Za-z0-9]*(?:[-_.][A-Za-z0-9]+)+\b|\b[A-Za-z]+\d+(?:\.\d+)*\b")
_CAPITALISED = re.compile(r"\b[A-Z][a-zA-Z0-9]+(?:\s+(?:[A-Z][a-zA-Z0-9]+|\d+(?:\.\d+)?))*")
_SENTENCE_STARTERS = frozenset(
    [
        "The",
        "A",
        "An",
        "We",
        "I",
        "It",
        "This",
        "That",
        "These",
        "Those",
        "Our",
        "Also",
        "And",
        "But",
        "So",
        "Then",
        "If",
        "When",
        "Please",
        "Yes",
        "No",
        "Q",
        "A:",
        "Re",
        "FYI",
        "PSA",
        "TODO",
        "Starting",
        "From",
        "Heads",
        "Reminder",
        "Update",
        "Just",
        "Let",
        "Can",
        "Could",
        "Should",
        "Would",
        "Who",
        "What",
        "Where",
        "When",
        "Why",
        "How",
        "Is",
        "Are",
        "Do",
        "Does",
        "Did",
        "Has",
        "Have",
        "Will",
    ]
)
# "I think ..." stays as it is: it is a hedge, not a statement about the author.
_FIRST_PERSON = re.compile(
    r"^(I(?:'ll| will| am|'m)?)\b(?!\s+(?:think|guess|believe|feel|suppose|wonder|mean)\b)"
)


def clean(text: str) -> str:
    """Turn platform markup into plain words: <@U1|bob> -> @bob, <url|label> -> label (url)."""
    text = _USER_LINK.sub(lambda m: f"@{m.group(2) or m.group(1)}", text)
    text = _CHANNEL_LINK.sub(lambda m: f"#{m.group(2) or m.group(1)}", text)
    text = _URL_LINK.sub(lambda m: f"{m.group(2)} ({m.group(1)})" if m.group(2) else m.group(1), text)
    text = _SPECIAL.sub(lambda m: f"@{m.group(1)}", text)
    text = _EMOJI.sub("", text)
    return re.sub(r"[ \t]+", " ", text).strip()


def split_sentences(text: str) -> list[str]:
    parts = (p.strip(" -*•\t>") for p in _SENTENCE_END.split(text))
    return [p for p in parts if p]


def entities_of(sentence: str) -> tuple[str, ...]:
    found: list[str] = []
    found += _MENTION.findall(sentence)
    found += _HASHTAG.findall(sentence)
    found += _CODE.findall(sentence)
    found += _URL.findall(sentence)
    without_urls = _URL.sub(" ", sentence)
    found += [m for m in _SYSTEM.findall(without_urls) if not re.fullmatch(r"[\d.:]+", m)]
    for match in _CAPITALISED.finditer(without_urls):
        words = match.group(0).split()
        while words and words[0].rstrip(":") in _SENTENCE_STARTERS:
            words = words[1:]
        if words:
            found.append(" ".join(words))
    clean_found = [e.strip(".,:;()'\"") for e in found]
    return tuple(dict.fromkeys(e for e in clean_found if len(e) > 1))


def classify(sentence: str) -> list[FactType]:
    return [kind for kind in _TYPE_PRIORITY if _CUES[kind].search(sentence)]


def topic_of(entities: tuple[str, ...], sentence: str) -> str:
    if entities:
        return entities[0].lstrip("@#").casefold()
    words = [w.casefold() for w in re.findall(r"[A-Za-z]{4,}", sentence)]
    common = Counter(w for w in words if w not in {"that", "this", "with", "will", "have", "from"})
    return common.most_common(1)[0][0] if common else "general"


class HeuristicExtractor:
    """Cue-based extraction; deterministic and fast (no model, no network)."""

    def extract(self, message: Message, thread_parent: Message | None) -> Extraction:
        text = clean(message.text)
        facts: list[CandidateFact] = []
        parent_question = _question_of(thread_parent)
        for sentence in split_sentences(text):
            candidate = self._candidate(sentence, message, parent_question)
            if candidate is not None:
                facts.append(candidate)
        unique = {f.statement.casefold(): f for f in facts}
        status = ExtractionStatus.OK if unique else ExtractionStatus.NOOP
        return Extraction(status, tuple(unique.values()))

    def _candidate(
        self, sentence: str, message: Message, parent_question: str | None
    ) -> CandidateFact | None:
        words = _WORD.findall(sentence)
        if _CHITCHAT.match(sentence) or not words:
            return None
        kinds = classify(sentence)
        is_question = sentence.rstrip().endswith("?")
        if is_question:
            # A question is knowledge only as the other half of an answer, or when it names
            # something concrete; "anyone around?" is not.
            if len(words) < MIN_WORDS or not (kinds or entities_of(sentence)):
                return None
            fact_type = FactType.QUESTION
        elif parent_question is not None and len(words) >= 1 and (kinds or len(words) <= 12):
            fact_type = FactType.ANSWER
        elif kinds and len(words) >= MIN_WORDS:
            fact_type = kinds[0]
        elif len(words) >= MIN_WORDS + 1 and _ASSERTION.search(sentence) and entities_of(sentence):
            # "The staging database is PostgreSQL 14." names something and says what it is.
            fact_type = FactType.STATEMENT
        else:
            return None
        statement = _self_contained(sentence, message.author_name)
        if fact_type is FactType.ANSWER and parent_question and len(words) <= 6:
            # A short reply ("Dana.", "yes, Friday") means nothing without its question.
            statement = f"{statement.rstrip('.')} (answer to: {parent_question})"
        statement = statement[:MAX_STATEMENT_CHARS]
        entities = entities_of(statement)
        confidence = 0.5 if _HEDGE.search(sentence) else 0.8
        return CandidateFact(
            statement=statement,
            fact_type=fact_type,
            entities=entities,
            topic=topic_of(entities, statement),
            importance=IMPORTANCE[fact_type],
            confidence=confidence,
            valid_from=message.ts,
            due_at=due_date(sentence, message.ts)
            if fact_type in (FactType.ACTION_ITEM, FactType.SCHEDULE)
            else None,
        )


def _self_contained(sentence: str, author: str) -> str:
    """Replace a leading first person with the author's name so the fact stands alone."""
    if not author:
        return sentence
    return _FIRST_PERSON.sub(
        lambda m: {
            "I": author,
            "I'll": f"{author} will",
            "I will": f"{author} will",
            "I am": f"{author} is",
            "I'm": f"{author} is",
        }.get(m.group(1), author),
        sentence,
        count=1,
    )


def _question_of(parent: Message | None) -> str | None:
    if parent is None or not parent.text:
        return None
    for sentence in split_sentences(clean(parent.text)):
        if sentence.endswith("?"):
            return sentence[:200]
    return None
