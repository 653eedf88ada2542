"""The model page writer and answer composer against a scripted server: one call per dirty page
with only the affected sections, output validated section by section, the template writer (or
the extractive answer) standing in for anything invalid, and the version flagged."""

from __future__ import annotations

import json

import pytest

from teamlore.domain import Scope
from teamlore.extraction import OfflineExtractor

from .conftest import WS, event
from .helpers import put
from .llm_server import Reply, faithful

DECISION = "We decided to use Postgres for billing."
DATE = "The launch is on March 3."


def writes_with(edit):
    """A responder whose page-writer answers are the faithful ones passed through ``edit``."""

    def respond(request):
        reply = faithful(request)
        if request.role == "write":
            reply = Reply(content=json.dumps(edit(json.loads(reply.content), request)))
        return reply

    return respond


@pytest.fixture
def wiki(make_llm_lore, clock):
    def make(**settings):
        lore = make_llm_lore(extractor=OfflineExtractor(), **settings)
        put(lore, event(DECISION, ts="2026-01-05T10:00:00Z"), event(DATE, ts="2026-01-05T10:01:00Z"))
        return lore

    return make


def overview(lore):
    return lore.stores.pages.current(f"{WS}/C1/overview")


def section(version, key):
    return next(s for s in version.sections if s.key == key)


def test_one_writer_call_per_dirty_page_with_only_the_affected_sections(wiki, model, clock):
    lore = wiki()
    report = lore.wiki.flush(everything=True)
    writes = model.chats("write")
    assert len(writes) == report.writer_calls == report.pages_rewritten > 0
    page = overview(lore)
    assert page.flagged is None
    assert section(page, "decisions").body.startswith(f"- Noted: {DECISION} ([alice, 2026-01-05](")
    dates_before = section(page, "dates")
    # A new decision touches the overview's decisions section only: only it is sent and rewritten.
    clock.advance(hours=1)
    put(lore, event("We decided to use Redis for caching.", ts="2026-01-06T10:00:00Z"))
    lore.wiki.flush(everything=True)
    sent = [r for r in model.chats("write")[len(writes) :] if r.data["page"] == "Overview"]
    assert [[s["key"] for s in r.data["sections"]] for r in sent] == [["decisions"]]
    assert [f["statement"] for f in sent[0].data["sections"][0]["facts"]] == [
        "We decided to use Redis for caching.",
        DECISION,
    ]
    page = overview(lore)
    assert page.version == 2 and section(page, "dates") == dates_before  # byte-identical


@pytest.mark.parametrize(
    ("edit", "why"),
    [
        (
            lambda a, r: {"sections": [{**s, "key": "bogus"} for s in a["sections"]]},
            "unexpected section keys",
        ),
        (lambda a, r: {"sections": a["sections"][:-1]}, "missing"),
        (lambda a, r: {"sections": a["sections"] + a["sections"][-1:]}, "returned twice"),
    ],
    ids=["wrong-keys", "missing-key", "repeated-key"],
)
def test_wrong_section_keys_fall_back_to_the_template_and_flag_the_version(wiki, model, edit, why):
    model.default = writes_with(edit)
    lore = wiki()
    lore.wiki.flush(everything=True)
    page = overview(lore)
    assert why in page.flagged and "template used" in page.flagged
    template = {s.key for s in page.sections if not s.body.startswith("- Noted:")}
    flagged = {s.key for s in page.sections if f"{s.key}: {why}" in page.flagged}
    assert template and template == flagged  # exactly the flagged sections fell back
    assert "bogus" not in {s.key for s in page.sections}


def _invent_in_decisions(answer, request):
    for s in answer["sections"]:
        if s["key"] == "decisions":
            s["statements"][0]["fact_ids"] = ["f_invented"]
    return answer


def _leave_out_in_decisions(answer, request):
    for s in answer["sections"]:
        if s["key"] == "decisions":
            s["statements"] = []
    return answer


@pytest.mark.parametrize(
    ("edit", "why"),
    [
        (_invent_in_decisions, "cites facts not given for it: ['f_invented']"),
        (_leave_out_in_decisions, "leaves out"),
    ],
    ids=["invented-id", "fact-left-out"],
)
def test_a_section_citing_badly_falls_back_alone(wiki, model, edit, why):
    model.default = writes_with(edit)
    lore = wiki()
    lore.wiki.flush(everything=True)
    page = overview(lore)
    assert f"decisions: {why}" in page.flagged
    assert section(page, "decisions").body.startswith(f"- {DECISION} (")  # the template's line
    assert section(page, "dates").body.startswith(f"- Noted: {DATE} (")  # the model's, valid
    assert "f_invented" not in section(page, "decisions").citations
    assert "f_invented" not in section(page, "decisions").body


def test_model_text_cannot_add_links_or_markup(wiki, model):
    def linky(answer, request):
        for s in answer["sections"]:
            for statement in s["statements"]:
                statement["text"] = "See [the docs](http://evil.example) <script>x</script> **now**"
        return answer

    model.default = writes_with(linky)
    lore = wiki()
    lore.wiki.flush(everything=True)
    body = section(overview(lore), "decisions").body
    assert "[the docs](" not in body and "<script>" not in body and "**now**" not in body
    assert r"\[the docs\](http://evil.example) \<script\>x\</script\> \*\*now\*\*" in body


def test_a_failing_endpoint_means_the_template_for_every_section_and_a_flag(wiki, model):
    model.default = lambda r: (
        faithful(r) if r.role != "write" else Reply(status=429, headers={"Retry-After": "600"})
    )
    lore = wiki()
    report = lore.wiki.flush(everything=True)
    assert report.pages_rewritten > 0
    page = overview(lore)
    assert "model writer failed" in page.flagged and "429" in page.flagged
    assert section(page, "decisions").body.startswith(f"- {DECISION} (")
    row = next(r for r in lore.stores.spend.totals() if r.role == "write")
    assert row.fallbacks == report.pages_rewritten and row.calls == 0


# --- answers -----------------------------------------------------------------------------


def answers_with(content):
    def respond(request):
        if request.role != "answer":
            return faithful(request)
        return Reply(content=content(request) if callable(content) else json.dumps(content))

    return respond


@pytest.fixture
def asked(make_llm_lore, model):
    def make(content):
        model.default = answers_with(content)
        lore = make_llm_lore(extractor=OfflineExtractor())
        put(
            lore,
            event(DATE, ts="2026-01-05T10:00:00Z"),
            event("The launch date of Globex is June 9.", channel="CPRIV", channel_visibility="private"),
        )
        return lore

    return make


def _first_fact(text: str, unknown: str = ""):
    def content(request):
        fact = request.data["facts"][0]
        return json.dumps({"sentences": [{"text": text, "fact_ids": [fact["id"]]}], "unknown": unknown})

    return content


def test_the_model_answers_from_the_retrieved_facts_with_citations_and_says_what_it_does_not_know(
    asked, model
):
    lore = asked(_first_fact("The launch is planned for March 3.", "who approved the date"))
    answer = lore.ask("When is the launch?", Scope(WS, ["C1"]))
    assert answer.composer == "model" and answer.note is None
    assert answer.text == (
        "The launch is planned for March 3. [1]\nNot known from the facts: who approved the date"
    )
    assert [c.fact.statement for c in answer.citations] == [DATE]
    [request] = model.chats("answer")
    assert request.data["question"] == "When is the launch?"
    # Only facts the asker may read reach the model (control: the private channel's own scope).
    assert [f["statement"] for f in request.data["facts"]] == [DATE]
    private = lore.ask("When is the launch of Globex?", Scope(WS, ["CPRIV"]))
    assert "Globex" in model.chats("answer")[-1].data["facts"][0]["statement"] and private.known


def test_an_answer_citing_a_fact_it_was_not_given_gives_the_extractive_answer(asked, model):
    lore = asked({"sentences": [{"text": "It is on the moon.", "fact_ids": ["f_invented"]}], "unknown": ""})
    answer = lore.ask("When is the launch?", Scope(WS, ["C1"]))
    assert answer.composer == "extractive" and "moon" not in answer.text and DATE in answer.text
    assert "model composer failed" in answer.note and "f_invented" in answer.note
    assert next(r for r in lore.stores.spend.totals() if r.role == "answer").fallbacks == 1


def test_an_answer_citing_a_fact_it_was_not_given_is_rejected_output_in_the_ledger(asked, model):
    """Through the HTTP API: the refusal is counted as rejected (as the extractor and writer count
    theirs) and as a fallback, and the refused answer is not cached: asking again asks again."""
    import httpx

    from teamlore.web import create_app

    from .web_server import serving

    lore = asked({"sentences": [{"text": "It is on the moon.", "fact_ids": ["f_invented"]}], "unknown": ""})
    token = lore.access.create("asker", "reader", WS, ["C1"])[1]
    with (
        serving(create_app(lore, flush_pages=False)) as url,
        httpx.Client(base_url=url, headers={"Authorization": f"Bearer {token}"}, timeout=30) as client,
    ):
        answers = [client.get("/api/ask", params={"q": "When is the launch?"}).json() for _ in range(2)]
    assert all(a["composer"] == "extractive" and "moon" not in a["answer"] for a in answers)
    row = next(r for r in lore.stores.spend.totals() if r.role == "answer")
    assert (row.calls, row.rejected, row.fallbacks, row.cache_hits) == (2, 2, 2, 0)
    assert len(model.chats("answer")) == 2
    # Control: an answer citing what it was given is neither rejected nor a fallback, and is cached.
    model.default = answers_with(_first_fact("The launch is planned for March 3."))
    lore.ask("When is the launch, really?", Scope(WS, ["C1"]))
    lore.ask("When is the launch, really?", Scope(WS, ["C1"]))
    row = next(r for r in lore.stores.spend.totals() if r.role == "answer")
    assert (row.calls, row.rejected, row.fallbacks, row.cache_hits) == (3, 2, 2, 1)


def test_model_answer_text_cannot_fake_citation_markers_or_links(asked):
    lore = asked(_first_fact("The launch [2] is <b>March 3</b>, see [here](http://evil.example)."))
    answer = lore.ask("When is the launch?", Scope(WS, ["C1"]))
    assert answer.text == "The launch 2 is bMarch 3/b, see here(http://evil.example). [1]"
