"""A model-backed answer composer for ``ask``, behind the extractive one.

The model sees the question and only the facts ``ask`` retrieved (already gated and scoped),
writes sentences each citing the ids of the facts it rests on, and says what the facts do not
tell. Output citing anything else is refused here (and ``ask`` would refuse it too): the reader
then gets the extractive answer, with a note saying why. Model text loses brackets and angle
brackets, so it can neither fake a citation marker nor add a link.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Sequence

from teamlore.capabilities.answers import Composed
from teamlore.capabilities.hits import FactView, Hit
from teamlore.errors import ModelOutputInvalid, ModelUnavailable
from teamlore.llm import prompts
from teamlore.llm.client import ModelClient, Role
from teamlore.llm.structured import ask
from teamlore.stores.protocols import ModelCache
from teamlore.timeutil import iso

log = logging.getLogger(__name__)
_UNSAFE = re.compile(r"[\[\]<>]")
_SPACES = re.compile(r"\s+")


def _plain(text: str) -> str:
    return _SPACES.sub(" ", _UNSAFE.sub("", text)).strip()


class ModelComposer:
    name = "model"

    def __init__(self, client: ModelClient, cache: ModelCache | None) -> None:
        self.client, self.cache = client, cache

    def compose(self, question: str, facts: Sequence[Hit]) -> Composed:
        data = [_datum(v) for v in facts]
        prompt = prompts.render_answer(question, data)
        given = {v.key for v in facts}
        try:
            # The citation check runs inside ``ask``: an answer citing what it was not given is
            # counted as rejected output (as the extractor and writer count theirs), never cached.
            answer = ask(
                self.client,
                Role.ANSWER,
                prompts.ANSWER_VERSION,
                prompt,
                prompts.AnswerAnswer,
                self.cache,
                check=lambda a: _composed(a, given),
            )
            return _composed(answer, given)
        except (ModelUnavailable, ModelOutputInvalid) as exc:
            self.client.note(Role.ANSWER, fallbacks=1)
            log.warning("answer composer failed, extractive answer used: %s", exc)
            raise


def _datum(hit: Hit) -> dict[str, object]:
    """What the model sees of one result: a fact's statement, or a message no fact covers."""
    if not isinstance(hit, FactView):
        return {"id": hit.key, "statement": hit.text, "said_on": iso(hit.since), "kind": "message"}
    return {
        "id": hit.key,
        "statement": hit.text,
        "true_from": iso(hit.fact.valid_from),
        **({"contested": True} if hit.fact.contested else {}),
        **({"past_due": True} if hit.past_due else {}),
    }


def _composed(answer: prompts.AnswerAnswer, given: set[str]) -> Composed:
    cited: list[str] = []
    lines = []
    for sentence in answer.sentences:
        invented = [f for f in sentence.fact_ids if f not in given]
        if invented:
            raise ModelOutputInvalid(f"the answer cites facts it was not given: {', '.join(invented[:5])}")
        ids = list(dict.fromkeys(sentence.fact_ids))
        cited += [f for f in ids if f not in cited]
        lines.append(_plain(sentence.text) + " " + "".join(f"[{cited.index(f) + 1}]" for f in ids))
    if not lines:
        raise ModelOutputInvalid("the answer has no sentence")
    if answer.unknown.strip():
        lines.append(f"Not known from the facts: {_plain(answer.unknown)}")
    return Composed("\n".join(lines), tuple(cited))
