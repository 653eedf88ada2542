"""Cue rules: words and shapes that hint at what a sentence is. Features for the heads, never gates.

Each rule has a name; ``fired`` lists the names whose words (one to three word phrases, looked up
in the sentence's lower-cased words) or shape (a regular expression) a sentence has. The learned
heads (``head``) weigh them with everything else, so no single cue keeps or drops a sentence.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_I = re.I | re.UNICODE
_TOKEN = re.compile(r"[^\W_]+(?:['’][^\W_]+)*|[+$€%=]", re.UNICODE)


@dataclass(frozen=True, slots=True)
class _Rule:
    words: frozenset[str]
    shape: re.Pattern[str] | None = None


def _words(*groups: str) -> frozenset[str]:
    """Phrases separated by commas ("going with, from now on, no longer")."""
    return frozenset(p.strip().replace("’", "'") for g in groups for p in g.split(",") if p.strip())


def _forms(stems: str, endings: str) -> str:
    return ",".join(f"{s}{e}" for s in stems.split() for e in [""] + endings.split())


_PROMISED = "write send fix update review prepare set look ship handle draft file follow own take"
_RULES: dict[str, _Rule] = {
    "definition": _Rule(
        _words(
            "means, is defined as, stands for, refers to, is short for, definition, aka, bedeutet,"
            "steht für, significa, signifie, veut dire, quer dizer, intendiamo, betekent, とは,"
            "のことです, 意味"
        ),
        re.compile(r"^\w[\w\s'-]{0,40} = "),
    ),
    "decision": _Rule(
        _words(
            "decided, decision, agreed, we'll go with, we will go with, we'll use, we will use, going with,"
            "chose, switch from, switch to, switched from, switched to, switching from, switching to,"
            "moving, moved, migrate to, migrated to, migrating to, standardize on, standardise on,"
            "instead of, no longer, replaced by, replaced with, we use, we're using, is now, changed to,"
            "approved, rejected, final, finally, policy, going forward, from now on, entschieden,"
            "beschlossen, ab sofort, decidimos, decidido, a partir de, hemos decidido, décidé, dorénavant,"
            "désormais, abbiamo deciso, d'ora in poi, besloten, vanaf nu, 決定, 決まり,"
            "ことになりました, 廃止, 移行"
        )
    ),
    "action_item": _Rule(
        _words(
            "todo, to-do, action item, needs to, need to, please, pls, follow up, follow-up, assigned to,"
            "can you, could you, by eod, by eow, by monday, by tuesday, by wednesday, by thursday,"
            "by friday, by tomorrow, by next week, bitte, por favor, s'il te plaît, merci de, per favore,"
            "alsjeblieft, お願いします, kannst du, könntest du, puedes, podrías, tu peux,"
            "peux tu, pourrais tu, pode, poderia, você pode, puoi, potresti, wil jij, kun je, kan je,"
            "してください, お願い",
            ",".join(f"will {verb}" for verb in _PROMISED.split()),
        ),
        re.compile(r"^@\w+ (?:to|will)\b"),
    ),
    "ownership": _Rule(
        _words(
            "own, owns, owner, owners, ownership, responsible for, in charge of, on call, on-call,"
            "point of contact, take over, takes over, took over, lead, leads, lead on, maintainer, dri,"
            "zuständig, verantwortlich, responsable, encargado, encargada, se encarga, s'occupe, gère,"
            "cuida, responsabile, verantwoordelijk, 担当, 責任者, 管理者"
        )
    ),
    "schedule": _Rule(
        _words(
            "january, jan, february, feb, march, mar, april, apr, may, june, jun, july, jul, august, aug,"
            "september, sep, sept, october, oct, november, nov, december, dec, monday, tuesday, wednesday,"
            "thursday, friday, q1, q2, q3, q4, deadline, due, freeze, standup, postponed, rescheduled,"
            "pushed, slipped, slip, slipping, montag, dienstag, mittwoch, donnerstag, freitag, lunes,"
            "martes, miércoles, jueves, viernes, lundi, mardi, mercredi, jeudi, vendredi, segunda, terça,"
            "quarta, quinta, sexta, lunedì, martedì, mercoledì, giovedì, venerdì, 締め切り, 締切, 期限,"
            "予定, 月末, 毎週, 来週",
            _forms("launch release", "ed es ing s d"),
        ),
        re.compile(r"\d{4}-\d{2}-\d{2}|\b\d{1,2}:\d{2}\b|\bat \d{1,2}\s?(?:am|pm)\b|\d+月\d+日|曜日", _I),
    ),
    "status": _Rule(
        _words(
            "blocked, unblocked, done, shipped, launched, live, deployed, rolled out, rolled back,"
            "resolved, fixed, broken, down, outage, degraded, in progress, complete, completed, finished,"
            "merged, paused, canceled, cancelled, on hold, green, red, healthy, failing, stable, erledigt,"
            "fertig, behoben, listo, resuelto, caído, terminé, résolu, en panne, pronto, resolvido,"
            "fora do ar, risolto, 完了, 解決, 済み, 直りました, 障害, 対応中, 停止"
        )
    ),
    "metric": _Rule(
        _words("budget, limit, latency, p95, p99, slo, sla, quota, cost, price, pricing, headcount, %"),
        re.compile(
            r"[$€£]\s?\d|\d\s?[€%]|\d+(?:[.,]\d+)?\s?(?:ms|s|sec|seconds|minutes|hours|days|weeks|gb|mb|tb|"
            r"k|requests|rps|qps|users|seats|engineers|people)\b|"
            r"\bper (?:minute|second|hour|day|month|seat)\b",
            _I,
        ),
    ),
    "announcement": _Rule(
        _words(
            "announce, announced, announcement, announcing, heads up, heads-up, fyi, psa, effective,"
            "welcome to the team, joined, is joining, leaving, reminder, new hire, starting, willkommen,"
            "bienvenido, bienvenida, bienvenue, bem-vindo, bem-vinda, benvenuto, benvenuta, welkom,"
            "入社, お知らせ, 加わります"
        )
    ),
    "hedge": _Rule(
        _words(
            "i think, maybe, might, probably, perhaps, not sure, i guess, possibly, i believe, could be,"
            "iirc, afaik, would, ich glaube, vielleicht, creo que, quizás, je pense, peut-être, acho que,"
            "talvez, forse, penso che, misschien, たぶん, かもしれない"
        ),
        re.compile(r"^if\b", _I),
    ),
    "assertion": _Rule(
        _words(
            "is, are, was, were, has, have, use, uses, run on, runs on, live in, lives in, hosted on,"
            "hosted by, based on, support, supports, require, requires, depends on, contain, contains,"
            "ist, sind, hat, es, son, est, sont, é, são, è, sono, zijn"
        )
    ),
    "chatter": _Rule(
        frozenset(),
        re.compile(
            r"^(?:(?:good )?morning|hi|hey|hello|yo|thanks?(?: you)?|thx|ty|tysm|lol|lmao|rofl|haha\w*|"
            r"hehe\w*|ok(?:ay)?|kk|k|nice|cool|great|awesome|sounds good|\+1|same|yep|yes|no|nope|sure|"
            r"agreed|np|congrats\w*|welcome|brb|lunch\??|coffee\??|gm|gn|ship it|on it|will do|"
            r"noted|got it|hmm+|ah+|oh+|wow|omg|nice one|love it|danke(?: schön)?|hallo|moin|servus|"
            r"gracias|hola|buenos días|jaja\w*|merci(?: beaucoup)?|bonjour|salut|mdr|obrigad[oa]|olá|"
            r"bom dia|kkk+|grazie|ciao|buongiorno|bedankt|dank je|goedemorgen|ありがとう\w*|"
            r"おはよう\w*|お疲れ様\w*|了解\w*|草|w+)\b[\s!.?,:)]*"
            r"(?:all|everyone|team|folks|guys|y'all|alle|todos|tout le monde|a tutti)?[\s!.]*$",
            _I,
        ),
    ),
    "opens_with_chatter": _Rule(
        frozenset(),
        re.compile(
            r"^(?:lol|lmao|rofl|haha\w*|hehe\w*|omg|wow|ugh|yay|woo+|oops|meh|phew|(?:good )?morning|"
            r"afternoon|evening|gm|hi|hey|hello|thanks|thank you|ty|thx|congrats\w*|happy \w+day|"
            r"happy (?:friday|weekend|holidays|new year)|good (?:night|weekend|luck)|"
            r"have a (?:good|great|nice)|"
            r"jaja\w*|mdr|kkk+|danke|gracias|merci|obrigad[oa]|grazie|bedankt|おはよう|ありがとう)\b",
            _I,
        ),
    ),
    "emoji": _Rule(frozenset(), re.compile(r"[\U0001F300-\U0001FAFF\u2600-\u27BF]")),
    "ends_with_emoji": _Rule(frozenset(), re.compile(r"[\U0001F300-\U0001FAFF\u2600-\u27BF]\W*$")),
    "exclamation": _Rule(frozenset(), re.compile(r"!")),
    "question_word": _Rule(
        frozenset(),
        re.compile(
            r"^(?:who|what|when|where|why|how|which|is|are|do|does|did|can|could|should|will|has|have|"
            r"anyone|any idea|does anyone|wer|was|wann|wo|wie|warum|welche[rs]?|gibt es|hat jemand|"
            r"quién|qué|cuándo|dónde|cómo|alguien|qui|que|quand|où|comment|est-ce que|quelqu'un|"
            r"quem|quando|onde|como|alguém|chi|cosa|dove|qualcuno|wat|wanneer|waar|hoe|iemand)\b",
            _I,
        ),
    ),
    "question_mark": _Rule(frozenset(), re.compile(r"[?？]\W*$")),
    "japanese_question": _Rule(frozenset(), re.compile(r"(?:ですか|ますか|でしょうか|かな)[。？?]?\s*$")),
    "digit": _Rule(frozenset(), re.compile(r"\d")),
    "url": _Rule(frozenset(), re.compile(r"https?://")),
    "mention": _Rule(frozenset(), re.compile(r"@\w")),
    "code": _Rule(frozenset(), re.compile(r"`[^`]+`|\w[._/]\w+\.\w")),
    "no_letters": _Rule(frozenset(), re.compile(r"^[\W_]*$")),
    "first_person": _Rule(_words("i, i'm, i'll, i've, me, my, mine, ich, yo, je, eu, io")),
    "future": _Rule(_words("will, going to, gonna, wird, werde, vamos a, va a, vou, vai")),
    "capitalised_name": _Rule(frozenset(), re.compile(r"\w [A-Z][a-z]")),
}
_LONGEST = 3


def phrases(sentence: str) -> set[str]:
    """The sentence's lower-cased words and their two- and three-word runs."""
    words = [w.replace("’", "'") for w in _TOKEN.findall(sentence.casefold())]
    found = set(words)
    for n in range(2, _LONGEST + 1):
        found.update(" ".join(words[i : i + n]) for i in range(len(words) - n + 1))
    return found


# Phrases in a script written without spaces (Japanese, Chinese): found inside the text, since
# its words cannot be looked up one by one ("金曜までにお願いします" is a single run of letters).
UNSPACED = re.compile(r"[\u3040-\u30ff\u3400-\u9fff]")
_INSIDE = {name: tuple(w for w in rule.words if UNSPACED.search(w)) for name, rule in _RULES.items()}


def fired(sentence: str) -> list[str]:
    """Names of the rules whose words or shape ``sentence`` has."""
    said = phrases(sentence)
    unspaced = UNSPACED.search(sentence) is not None
    return [
        name
        for name, rule in _RULES.items()
        if not rule.words.isdisjoint(said)
        or (unspaced and any(w in sentence for w in _INSIDE[name]))
        or (rule.shape is not None and rule.shape.search(sentence))
    ]


def matches(rule: str, sentence: str) -> bool:
    found = _RULES[rule]
    if found.words:
        return rule in fired(sentence)
    assert found.shape is not None  # a rule without words has a shape
    return bool(found.shape.search(sentence))
