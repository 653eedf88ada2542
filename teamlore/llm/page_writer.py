"""Model-backed page writing: one call per dirty page, validated section by section.

The model gets only the affected sections and their live facts, and must return exactly those
section keys, each statement citing only facts given for its section, every given fact cited at
least once (a model leaving a fact out must not make it vanish from the page). A section that
fails any of this is written by the template writer instead, and the page version is flagged
with the reason. Links, flags (contested, due dates) and the "Previously" history are rendered
here from the stored facts, never from model text; model text is escaped so it cannot add links.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Sequence
from typing import Any

from teamlore.capabilities.facts import FactView
from teamlore.errors import ModelOutputInvalid, ModelUnavailable
from teamlore.llm import prompts
from teamlore.llm.client import ModelClient, Role
from teamlore.llm.structured import ask
from teamlore.stores.protocols import ModelCache
from teamlore.timeutil import iso
from teamlore.wiki.model import PageRef, SectionInput
from teamlore.wiki.writer import TemplateWriter, Written, cite, flags, history, shown_live

log = logging.getLogger(__name__)
_MARKUP = re.compile(r"([\[\]<>`*_\\])")
_SPACES = re.compile(r"\s+")


def escape(text: str) -> str:
    """Model text as plain Markdown text: one line, no links, no emphasis, no HTML."""
    return _MARKUP.sub(r"\\\1", _SPACES.sub(" ", text).strip())


class ModelPageWriter:
    def __init__(self, client: ModelClient, fallback: TemplateWriter, cache: ModelCache | None) -> None:
        self.client, self.fallback, self.cache = client, fallback, cache

    def write(self, page: PageRef, sections: Sequence[SectionInput]) -> Written:
        live = {s.key: shown_live(page, s) for s in sections}
        asked = [s for s in sections if live[s.key]]
        out = {s.key: self.fallback.section(page, s) for s in sections if not live[s.key]}
        if not asked:
            return Written(out)  # nothing current to write about: no call
        prompt = prompts.render_page(page.title, [_section_data(s, live[s.key]) for s in asked])
        try:
            answer = ask(
                self.client, Role.WRITE, prompts.WRITE_VERSION, prompt, prompts.WriteAnswer, self.cache
            )
        except (ModelUnavailable, ModelOutputInvalid) as exc:
            self.client.note(Role.WRITE, fallbacks=1)
            log.warning("page %s: model writer failed, template used: %s", page.page_id, exc)
            out.update({s.key: self.fallback.section(page, s) for s in asked})
            return Written(out, f"model writer failed ({exc}); template used for every section")
        problems = _check(answer, {s.key: live[s.key] for s in asked})
        for section in asked:
            if section.key in problems:
                out[section.key] = self.fallback.section(page, section)
            else:
                out[section.key] = _body(page, section, live[section.key], _statements(answer, section.key))
        if not problems:
            return Written(out)
        self.client.note(Role.WRITE, rejected=len(problems))
        reasons = "; ".join(f"{key}: {why}" for key, why in sorted(problems.items()))
        log.warning("page %s: model output rejected, template used: %s", page.page_id, reasons)
        return Written(out, f"model output rejected, template used for {reasons}")


def _section_data(section: SectionInput, live: Sequence[FactView]) -> dict[str, Any]:
    return {
        "key": section.key,
        "title": section.title,
        "facts": [
            {
                "id": v.fact.fact_id,
                "statement": v.fact.statement,
                "type": v.fact.fact_type.value,
                "true_from": iso(v.fact.valid_from),
                **({"contested": True} if v.fact.contested else {}),
            }
            for v in live
        ],
    }


def _statements(answer: prompts.WriteAnswer, key: str) -> list[prompts.WrittenStatement]:
    return next(s.statements for s in answer.sections if s.key == key)


def _check(answer: prompts.WriteAnswer, live: dict[str, Sequence[FactView]]) -> dict[str, str]:
    """section key -> what is wrong with the model's version of it (valid sections absent).
    Keys nobody asked for are dropped; they are reported against every section, since a model
    that renames keys may have put a section's statements under the wrong one."""
    problems: dict[str, str] = {}
    keys = [s.key for s in answer.sections]
    unexpected = sorted(set(keys) - set(live))
    repeated = sorted({k for k in keys if keys.count(k) > 1})
    for key, views in live.items():
        if unexpected:
            problems[key] = f"unexpected section keys {unexpected}"
        elif key in repeated:
            problems[key] = "returned twice"
        elif key not in keys:
            problems[key] = "missing"
        else:
            given = {v.fact.fact_id for v in views}
            cited = {f for statement in _statements(answer, key) for f in statement.fact_ids}
            if cited - given:
                problems[key] = f"cites facts not given for it: {sorted(cited - given)[:5]}"
            elif given - cited:
                problems[key] = f"leaves out facts: {sorted(given - cited)[:5]}"
    return problems


def _body(
    page: PageRef,
    section: SectionInput,
    live: Sequence[FactView],
    statements: Sequence[prompts.WrittenStatement],
) -> tuple[str, tuple[str, ...]]:
    views = {v.fact.fact_id: v for v in live}
    lines, cited = [], []
    for statement in statements:
        ids = list(dict.fromkeys(statement.fact_ids))
        marks = "".join(dict.fromkeys(flags(views[i]) for i in ids))
        sources = " ".join(dict.fromkeys(cite(views[i]) for i in ids))
        lines.append(f"- {escape(statement.text)}{marks} {sources}")
        cited += [i for i in ids if i not in cited]
    old_lines, old_ids = history(page, section)
    return "\n".join(lines + old_lines) + "\n", tuple(cited + old_ids)
