"""Entities a statement names: people, systems, projects, products. Only names worth a page.

A name is a mention (``@dana``), a code span, a system-like token (``worker-3``, ``billing_api``,
``api.acme.dev``, ``PROJ-123``), or a run of capitalised words that is not the sentence's first
word alone. Weekdays, months, time words and the words chat starts sentences with are never names.
Well-known tools have one name whatever the spelling or version ("Postgres", "PostgreSQL 15" ->
PostgreSQL). Channels (``#eng``) are places, not entities.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Collection

_MENTION = re.compile(r"(?<![\w@])@([\w][\w.-]*[\w]|\w)")
_CODE = re.compile(r"`([^`]{1,60})`")
_URL = re.compile(r"https?://[^\s)>\]]+[^\s)>\].,;:!?]")
_CHANNEL = re.compile(r"(?<![\w&])#[\w-]+")
_SYSTEM = re.compile(
    r"\b(?:[A-Za-z]+\d[\w]*|[A-Za-z][A-Za-z0-9]*(?:[_.][A-Za-z0-9]+)+|[A-Za-z][a-z0-9]*[A-Z][A-Za-z0-9]*|"
    r"[A-Za-z][A-Za-z0-9]*(?:-[A-Za-z0-9]+)+)\b"
)
_SYSTEM_NOUN = re.compile(
    r"^\s+(?:service|svc|api|db|database|cluster|repo|job|bot|pipeline|app|server|queue|bucket|"
    r"dashboard|worker|cron|lambda|module|library|lib|package|channel|board|project|tool)\b",
    re.I,
)
_CAPITALISED = re.compile(r"\b[A-Z][\w&'’-]*(?:\s+(?:[A-Z][\w&'’-]*|\d+(?:\.\d+)*))*")
_NUMBER = re.compile(r"^[\d.:,/-]+(?:st|nd|rd|th)?$")
_POSSESSIVE = re.compile(r"['’]s$")
_VERSION = re.compile(r"\s+v?\d+(?:\.\d+)*$")

_TIME_WORDS = (
    "monday tuesday wednesday thursday friday saturday sunday mon tue tues wed thu thur thurs fri sat sun "
    "january february march april may june july august september october november december "
    "jan feb mar apr jun jul aug sep sept oct nov dec today tomorrow yesterday tonight morning "
    "afternoon evening noon midnight weekend week month year quarter eod eow eom eoy asap am pm utc "
    "gmt cet cest pst pdt est edt bst ist jst montag dienstag mittwoch donnerstag freitag samstag "
    "sonntag januar februar märz mai juni juli oktober dezember lunes martes miércoles jueves "
    "viernes enero febrero marzo abril mayo junio julio agosto septiembre octubre noviembre "
    "diciembre lundi mardi mercredi jeudi vendredi janvier février mars avril juin juillet août "
    "septembre octobre novembre décembre segunda terça quarta quinta sexta janeiro fevereiro março"
)
_CHAT_WORDS = (
    "the a an we i it its this that these those our my your their his her also and but so then if "
    "when while since as at on in for of to by or nor not no yes yep ok okay please thanks thank "
    "hi hey hello morning all everyone team folks guys q a re fyi psa todo eta tbd tba wip lgtm "
    "imo imho btw afaik iirc np heads update updates reminder note notes action actions decision "
    "decisions correction ownership status finally just let can could should would who what where "
    "why how is are do does did has have will was were be been sorry quick question questions "
    "answer new old next last first second third final done good great nice cool sure maybe "
    "probably actually basically also still now here there today's tomorrow's congrats welcome "
    "happy ps edit update: important urgent summary recap agenda context background one two three "
    "four five six seven eight nine ten per via vs etc q1 q2 q3 q4 h1 h2 fy kb mb gb tb ms"
)
# Words chat starts a sentence with that are never names on their own ("Finally", "Looks good").
_STARTERS = (
    "honestly anyway anyways btw well so also actually basically apparently currently hopefully luckily "
    "unfortunately obviously clearly seriously literally already always never sometimes often usually "
    "again even only more less most many much few both either neither such same other another every each "
    "some any all none nothing everything something anything someone everyone nobody somebody looks "
    "seems sounds feels let's lets make send check ping ask see try use add remove fix deploy merge "
    "review ship push pull run stop start keep remember reminder quick small big last next good bad "
    "great perfect nice cool awesome amazing exciting interesting weird strange sad glad ugh wow oops yay "
    "congrats welcome happy hi hey hello morning afternoon evening night weekend tonight there here "
    "because although though unless until after before once like without within over under about "
    "around between during through across against along among behind below near inside outside "
    "we you they he she us them our your their his her its these those i'm i'll i've i'd we're "
    "we'll we've you're they're it's that's there's here's what's who's let don't doesn't didn't "
    "can't won't isn't aren't wasn't weren't shouldn't couldn't wouldn't done fixed resolved shipped "
    "deployed merged live blocked confidential summary recap agenda important urgent context "
    "background question answer thoughts idea ideas plan plans today's yesterday's tomorrow's "
    "everybody folks guys ok okay lol haha hmm nope yeah yup sure maybe probably perhaps definitely"
)
_NOT_NAMES = frozenset((_TIME_WORDS + " " + _CHAT_WORDS + " " + _STARTERS).split())
# Well-known tools under one name, whatever the spelling (lower-cased key).
ALIASES = {
    "postgres": "PostgreSQL",
    "postgresql": "PostgreSQL",
    "pg": "PostgreSQL",
    "psql": "PostgreSQL",
    "k8s": "Kubernetes",
    "kubernetes": "Kubernetes",
    "kube": "Kubernetes",
    "mongo": "MongoDB",
    "mongodb": "MongoDB",
    "es": "Elasticsearch",
    "elastic": "Elasticsearch",
    "elasticsearch": "Elasticsearch",
    "gh actions": "GitHub Actions",
    "github actions": "GitHub Actions",
    "gha": "GitHub Actions",
    "redis": "Redis",
    "mysql": "MySQL",
    "cockroach": "CockroachDB",
    "cockroachdb": "CockroachDB",
    "crdb": "CockroachDB",
    "aws": "AWS",
    "gcp": "GCP",
    "sqs": "SQS",
    "kafka": "Kafka",
    "jenkins": "Jenkins",
    "terraform": "Terraform",
    "tf": "Terraform",
}


def canonical(name: str) -> str:
    """One name for a thing: the alias table, versions of a known tool dropped."""
    key = name.casefold()
    if key in ALIASES:
        return ALIASES[key]
    unversioned = _VERSION.sub("", name)
    return ALIASES.get(unversioned.casefold(), name)


def entities_of(sentence: str, people: Collection[str] = ()) -> tuple[str, ...]:
    """The names in ``sentence``; a known person (``people``: the names the workspace's authors go
    by) is one entity whether mentioned, capitalised or not."""
    found: list[str] = ["@" + m for m in _MENTION.findall(sentence)]
    found += _people_named(sentence, people)
    found += [c for c in _CODE.findall(sentence) if len(c.split()) <= 3]
    found += _URL.findall(sentence)
    text = _CHANNEL.sub(" ", _URL.sub(" ", _CODE.sub(" ", sentence)))
    text = _MENTION.sub(" ", text)
    found += [m.group(0) for m in _SYSTEM.finditer(text) if _is_system(m, text)]
    found += _capitalised(text)
    names = (_person(canonical(_POSSESSIVE.sub("", e.strip(".,:;()'\"’"))), people) for e in found)
    return tuple(dict.fromkeys(n for n in names if _worth_a_name(n)))


def _worth_a_name(name: str) -> bool:
    folded = name.casefold()
    return (
        len(name) > 1
        and not _NUMBER.match(name)
        and folded not in _NOT_NAMES
        and folded.rstrip("s") not in _NOT_NAMES
    )


def _people_named(sentence: str, people: Collection[str]) -> list[str]:
    if not people:
        return []
    words = set(re.findall(r"[^\W\d_][\w.'-]*", sentence.casefold()))
    return ["@" + p for p in sorted(people) if p and (p in words or p.split()[0] in words and " " not in p)]


def _person(name: str, people: Collection[str]) -> str:
    """A known person's name in one form (``@dana``), however it was written."""
    bare = name.lstrip("@").casefold()
    return "@" + bare if people and bare in people else name


def _is_system(match: re.Match[str], text: str) -> bool:
    token = match.group(0)
    if _NUMBER.match(token) or token.casefold() in _NOT_NAMES:
        return False
    if "-" in token and "_" not in token and "." not in token and not any(c.isdigit() for c in token):
        # "first-week", "follow-up" are words; "billing-export service", "PROJ-ABC" are systems.
        return token.isupper() or _SYSTEM_NOUN.match(text[match.end() :]) is not None
    # "e.g", "i.e", "a.m" are not systems.
    return not ("." in token and token.replace(".", "").isalpha() and len(token) <= 5)


def _capitalised(text: str) -> list[str]:
    """Runs of capitalised words, without the time, chat and sentence-starting words around them
    (a page needs repeated mentions across messages too: ``wiki.maintainer``)."""
    names: list[str] = []
    for match in _CAPITALISED.finditer(text):
        words = match.group(0).split()
        while words and words[0].casefold().rstrip(":") in _NOT_NAMES:
            words = words[1:]
        while words and words[-1].casefold() in _NOT_NAMES:
            words = words[:-1]
        if words:
            names.append(" ".join(words))
    return names


def topic_of(entities: tuple[str, ...], sentence: str) -> str:
    """What a statement is about, for its section on a role page: the first entity it names, else
    the subject before its verb ("the office lease ends in December" -> "office lease"), else its
    most frequent content word."""
    if entities:
        return entities[0].lstrip("@#").casefold()
    subject = _subject(sentence)
    if subject:
        return subject
    words = [w.casefold() for w in re.findall(r"[^\W\d_]{4,}", sentence)]
    common = Counter(w for w in words if w not in _NOT_NAMES and w not in _TOPIC_STOP)
    return common.most_common(1)[0][0] if common else "general"


_LABEL = re.compile(r"^\s*(?:[\w ]{1,24}:\s+)+")
_VERB = re.compile(
    r"\b(?:is|are|was|were|will|would|has|have|had|can|should|must|goes|go|runs|run|lives|live|moves|"
    r"moved|starts|started|ends|ended|stays|needs|gets|got|became|becomes|means|uses|used|owns|"
    r"lands|launches|slipped|shipped|broke|works|went|comes|came|takes|took|costs)\b|'s\b",
    re.I,
)
_TOPIC_STOP = frozenset(
    "that this with will have from they them there their what when been into about".split()
)


def _subject(sentence: str) -> str | None:
    """The last two content words before the main verb, if they come early in the sentence."""
    text = _LABEL.sub("", sentence)
    verb = _VERB.search(text)
    if verb is None or verb.start() == 0:
        return None
    words = [w.casefold() for w in re.findall(r"[^\W\d_][\w-]*", text[: verb.start()])]
    content = [w for w in words if w not in _NOT_NAMES and w not in _TOPIC_STOP and len(w) > 2]
    if not content or len(words) > 8:
        return None
    return " ".join(content[-2:])
