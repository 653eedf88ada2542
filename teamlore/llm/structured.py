"""Ask a model for JSON, validate it against a pydantic schema, cache what passed.

The cache key is a hash of the prompt version, the model and the rendered prompt, so the same
content asked again (a re-index, a rebuilt page) costs nothing, and a new prompt or model never
reuses an old answer. Only validated output is cached; nothing unvalidated leaves this module.
"""

from __future__ import annotations

import hashlib
import json
import logging
import re
from collections.abc import Callable, Mapping, Sequence
from typing import TypeVar

from pydantic import BaseModel, ValidationError

from teamlore.errors import ModelOutputInvalid
from teamlore.llm.client import ModelClient, Role
from teamlore.stores.protocols import ModelCache

log = logging.getLogger(__name__)
T = TypeVar("T", bound=BaseModel)
_FENCE = re.compile(r"^\s*```(?:json)?\s*|\s*```\s*$")


def cache_key(version: str, model: str, messages: Sequence[Mapping[str, str]]) -> str:
    rendered = json.dumps([version, model, [dict(m) for m in messages]], sort_keys=True)
    return hashlib.sha256(rendered.encode()).hexdigest()[:40]


def parse(text: str, schema: type[T]) -> T:
    """The model's text as ``schema``, or ModelOutputInvalid with a one-line reason."""
    try:
        data = json.loads(_FENCE.sub("", text))
    except json.JSONDecodeError as exc:
        raise ModelOutputInvalid(f"the answer is not JSON: {exc}") from None
    try:
        return schema.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "answer"
        raise ModelOutputInvalid(f"the answer does not fit the schema: {where}: {first['msg']}") from None


def ask(
    client: ModelClient,
    role: Role,
    version: str,
    messages: Sequence[Mapping[str, str]],
    schema: type[T],
    cache: ModelCache | None = None,
    retries: int = 0,
    check: Callable[[T], object] | None = None,
) -> T:
    """Validated output for ``messages``; ModelUnavailable or ModelOutputInvalid when none came.

    ``check`` is the caller's own test of a whole answer (raising ModelOutputInvalid): output it
    refuses is counted as rejected, like output that fails the schema, and never cached."""
    model = client.model_for(role)
    key = cache_key(version, model, messages)
    if cache is not None:
        cached = cache.get(key)
        if cached is not None:
            try:
                found = schema.model_validate_json(cached)
            except ValidationError:
                log.warning("cached %s answer no longer fits its schema; asking again", role.value)
            else:
                client.note(role, cache_hits=1)
                return found
    problem = ""
    for _ in range(retries + 1):
        try:
            answer = parse(client.complete(role, messages).text, schema)
            if check is not None:
                check(answer)
        except ModelOutputInvalid as exc:
            problem = str(exc)
            client.note(role, rejected=1)
            log.warning("model %s (%s): output rejected: %s", model, role.value, problem)
            continue
        if cache is not None:
            cache.put(key, role.value, model, answer.model_dump_json())
        return answer
    raise ModelOutputInvalid(problem)
