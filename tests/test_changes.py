"""Changes recognised however they are phrased, through the CLI: each form with a paired control.

Each case is its own channel (resolution never crosses channels), imported as an events file
with ``teamlore import`` and read back with ``teamlore search --json``: the newer statement
retires the older one in the form's case, and nothing is retired in its control, which differs
only on the other side of the rule's boundary.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import pytest
from typer.testing import CliRunner

from teamlore.cli import app as cli_app

from .change_cases import FORMS, GUARDS

WS = "T1"


def _line(
    channel: str, message_id: str, ts: str, text: str, thread: str | None = None, author: str = "alice"
) -> str:
    return json.dumps(
        {
            "kind": "message.created",
            "platform": "slack",
            "workspace": WS,
            "channel": channel,
            "channel_name": channel.lower(),
            "channel_visibility": "public",
            "message_id": message_id,
            "thread_id": thread,
            "author_id": f"U_{author}",
            "author_name": author,
            "ts": ts,
            "text": text,
            "permalink": f"https://x.example/{channel}/{message_id}",
        }
    )


def _cli(*args: str) -> str:
    done = CliRunner().invoke(cli_app, list(args))
    assert done.exit_code == 0, done.output
    return done.stdout


def _import(data: Path, *lines: str) -> None:
    path = data.parent / f"events-{len(list(data.parent.glob('events-*')))}.jsonl"
    path.write_text("\n".join(lines) + "\n")
    _cli("import", str(path), "--data-dir", str(data))


def _search(data: Path, channel: str, query: str, *extra: str) -> list[dict]:
    found = _cli("search", query, "-w", WS, "-c", channel, "--data-dir", str(data), "--json", *extra)
    return json.loads(found)["results"]


def _current(data: Path, channel: str, query: str, *extra: str) -> list[str]:
    return [r["text"] for r in _search(data, channel, query, *extra) if r["kind"] == "fact"]


@pytest.fixture(scope="module")
def store(tmp_path_factory) -> Path:
    data = tmp_path_factory.mktemp("changes") / "store"
    # People the workspace knows by the messages they wrote (the resolver reads names as people).
    lines = [
        _line("CHELLO", f"0.{i}", "2026-01-01T09:00:00Z", "hi all", author=who)
        for i, who in enumerate(("ben", "tariq", "priya", "uma"))
    ]
    for i, (_, older, newer, _q, _new, _old, control) in enumerate(FORMS):
        for channel, text in ((f"C{i}", newer), (f"C{i}X", control)):
            lines.append(_line(channel, f"{i}.1", "2026-01-10T10:00:00Z", older))
            lines.append(_line(channel, f"{i}.2", "2026-02-10T10:00:00Z", text))
    for i, (_, older, newer, _q, retiring) in enumerate(GUARDS):
        for channel, text in ((f"G{i}", newer), (f"G{i}X", retiring)):
            lines.append(_line(channel, f"{i}.1", "2026-01-10T10:00:00Z", older))
            lines.append(_line(channel, f"{i}.2", "2026-02-10T10:00:00Z", text))
    _import(data, *lines)
    return data


@pytest.mark.parametrize("case", range(len(GUARDS)), ids=[g[0] for g in GUARDS])
def test_each_guard_keeps_both_statements_current_and_its_control_retires_the_older(store, case):
    _, older, newer, query, retiring = GUARDS[case]
    both = _current(store, f"G{case}", query)
    assert older in both and newer in both, both
    control = _current(store, f"G{case}X", query)
    assert retiring in control and older not in control, control


@pytest.mark.parametrize("case", range(len(FORMS)), ids=[f[0] for f in FORMS])
def test_each_form_of_change_retires_the_older_value_and_its_control_retires_nothing(store, case):
    _, older, newer, query, new_value, old_value, control = FORMS[case]
    current = _current(store, f"C{case}", query)
    assert any(new_value in text for text in current), current
    assert not any(old_value in text for text in current), current
    history = _search(store, f"C{case}", query, "--history")
    assert any(r["kind"] == "retired_fact" and r["text"] == older for r in history), history
    # Control: the older statement stays current beside the newer one.
    assert older in _current(store, f"C{case}X", query), _current(store, f"C{case}X", query)


def test_a_chain_of_changes_leaves_only_the_latest_value_current(tmp_path):
    data = tmp_path / "store"
    _import(
        data,
        _line("C1", "1.1", "2026-01-05T10:00:00Z", "The Atlas 2.0 launch date is March 3."),
        _line(
            "C1", "1.2", "2026-02-05T10:00:00Z", "The Atlas 2.0 launch has slipped from March 3 to March 17."
        ),
        _line("C1", "1.3", "2026-03-05T10:00:00Z", "The Atlas 2.0 launch is pushed to March 24."),
    )
    current = _current(data, "C1", "when is the Atlas 2.0 launch")
    assert current == ["The Atlas 2.0 launch is pushed to March 24."]
    # As of mid-February the middle value was the true one.
    assert _current(data, "C1", "when is the Atlas 2.0 launch", "--as-of", "2026-02-20") == [
        "The Atlas 2.0 launch has slipped from March 3 to March 17."
    ]


def test_a_correction_says_the_older_value_was_never_true_and_a_change_does_not(tmp_path):
    data = tmp_path / "store"
    _import(data, _line("C1", "1.1", "2026-01-10T10:00:00Z", "The offsite is in Lisbon."))
    _import(data, _line("C2", "1.1", "2026-01-10T10:00:00Z", "The offsite is in Lisbon."))
    believed = datetime.now(UTC).isoformat().replace("+00:00", "Z")
    _import(
        data,
        _line("C1", "1.2", "2026-01-10T10:10:00Z", "Correction: the offsite is in Porto, not Lisbon."),
        # Control: the same new value as a change, a month later: Lisbon was true until then.
        _line("C2", "1.2", "2026-02-10T10:00:00Z", "The offsite moved to Porto."),
    )
    query = "where is the offsite"
    assert _current(data, "C1", query) == ["Correction: the offsite is in Porto, not Lisbon."]
    # As of a moment before the correction was said, the corrected value holds: Lisbon never did.
    assert _current(data, "C1", query, "--as-of", "2026-01-10T10:05:00Z") == [
        "Correction: the offsite is in Porto, not Lisbon."
    ]
    # What the store believed before it learned of the correction is still readable.
    assert _current(data, "C1", query, "--known-at", believed, "--as-of", "2026-01-10T10:05:00Z") == [
        "The offsite is in Lisbon."
    ]
    # The control: a change closes the older value at the newer one's time, not from its start.
    assert _current(data, "C2", query) == ["The offsite moved to Porto."]
    assert _current(data, "C2", query, "--as-of", "2026-01-20") == ["The offsite is in Lisbon."]


def test_answers_in_threads_replace_older_answers_to_the_same_question(tmp_path):
    data = tmp_path / "store"

    def team(channel: str) -> list[str]:
        # The people of the channel: a thread answer names one of them.
        return [
            _line(channel, "0.1", "2026-01-02T09:00:00Z", "morning all", author="dana"),
            _line(channel, "0.2", "2026-01-02T09:01:00Z", "morning!", author="omar"),
        ]

    _import(
        data,
        *team("C1"),
        _line("C1", "1.1", "2026-01-05T10:00:00Z", "who owns the billing service?"),
        _line("C1", "1.2", "2026-01-05T10:05:00Z", "that's me", thread="1.1", author="dana"),
        _line("C1", "2.1", "2026-03-05T10:00:00Z", "who owns the billing service now?"),
        _line("C1", "2.2", "2026-03-05T10:05:00Z", "omar, since the reorg", thread="2.1"),
        # Control, another channel: the second question asks about something else.
        *team("C2"),
        _line("C2", "1.1", "2026-01-05T10:00:00Z", "who owns the billing service?"),
        _line("C2", "1.2", "2026-01-05T10:05:00Z", "that's me", thread="1.1", author="dana"),
        _line("C2", "2.1", "2026-03-05T10:00:00Z", "who owns the billing docs?"),
        _line("C2", "2.2", "2026-03-05T10:05:00Z", "omar, since the reorg", thread="2.1"),
    )
    current = _current(data, "C1", "who owns the billing service")
    assert any(t.startswith("omar") for t in current), current
    assert not any(t.startswith("dana") for t in current), current
    control = _current(data, "C2", "who owns the billing service")
    assert any(t.startswith("dana owns the billing service") for t in control), control


def test_across_channels_the_newest_value_comes_first_and_the_older_is_flagged(tmp_path):
    data = tmp_path / "store"
    _import(
        data,
        _line("CENG", "1.1", "2026-01-07T10:00:00Z", "The Atlas launch date is March 3."),
        _line("CENG", "1.2", "2026-01-08T10:00:00Z", "The Atlas launch checklist is in the wiki."),
        _line("CPROD", "2.1", "2026-02-12T10:00:00Z", "Heads up: the Atlas launch is pushed to March 24."),
        # A private channel says something newer still; only a reader of it may see it used.
        _line("GLEAD", "3.1", "2026-03-01T10:00:00Z", "The Atlas launch is pushed to April 7."),
    )
    query = "when is the Atlas launch"
    both = _search(data, "CENG", query, "-c", "CPROD")
    facts = [r for r in both if r["kind"] == "fact"]
    assert facts[0]["channel"] == "CPROD", facts
    eng = next(r for r in facts if r["channel"] == "CENG" and "March 3" in r["text"])
    assert eng["newer_elsewhere"]["channel"] == "CPROD"
    assert eng["newer_elsewhere"]["text"] == "Heads up: the Atlas launch is pushed to March 24."
    # The same channel read alone is not flagged (nothing else is in its scope).
    alone = [r for r in _search(data, "CENG", query) if r["kind"] == "fact"]
    assert all(r["newer_elsewhere"] is None for r in alone)
    # The private channel never flags a public fact for a reader without it, and does for one with it.
    assert "April 7" not in json.dumps(both)
    with_private = [r for r in _search(data, "CPROD", query, "-c", "GLEAD") if r["kind"] == "fact"]
    prod = next(r for r in with_private if r["channel"] == "CPROD")
    assert prod["newer_elsewhere"]["channel"] == "GLEAD"
    assert with_private[0]["channel"] == "GLEAD"
    # Nothing was retired in any channel: each channel's own fact stays current there.
    assert [r["text"] for r in alone if "March 3" in r["text"]] == ["The Atlas launch date is March 3."]


OMAR = "Starting today Omar is the owner of the billing service."


def test_a_hedge_is_flagged_and_reviewed_and_never_unsettles_the_settled_fact(tmp_path):
    """(Issue 19, item 5.)"""
    data = tmp_path / "store"
    _import(
        data,
        _line("C1", "1.1", "2026-03-02T09:00:00Z", OMAR),
        _line("C1", "1.2", "2026-04-02T09:00:00Z", "I think Dana owns the billing service again."),
        # Control: the same claim said plainly, in another channel, is a change.
        _line("C2", "1.1", "2026-03-02T09:00:00Z", OMAR),
        _line("C2", "1.2", "2026-04-02T09:00:00Z", "Dana owns the billing service again."),
    )
    query = "who owns the billing service"
    hedged = {r["text"]: r for r in _search(data, "C1", query) if r["kind"] == "fact"}
    settled = hedged[OMAR]
    assert settled["status"] == "active" and not settled["contested"]
    assert hedged["I think Dana owns the billing service again."]["contested"]
    items = json.loads(_cli("review", "list", "-w", WS, "-c", "C1", "--data-dir", str(data), "--json"))
    assert [i["kind"] for i in items] == ["contested"], items
    control = _current(data, "C2", query)
    assert control == ["Dana owns the billing service again."], control
    # A reviewer rejects the hedge: it is retracted, the settled fact stands.
    rejected = ("review", "reject", str(items[0]["id"]), "--by", "rita", "--retract", "newer")
    _cli(*rejected, "--data-dir", str(data))
    assert _current(data, "C1", query) == [OMAR]


def test_a_thread_answer_that_opens_with_sorry_corrects_the_earlier_answer(tmp_path):
    """ "sorry, 4401" under "what's the cost center for the offsite?" corrects the answer given
    there before; the control, the same answer without "sorry" a few minutes later, is two
    answers at about the same time (contested), and retires nothing."""
    data = tmp_path / "store"
    lines = []
    for channel, answer in (
        ("C1", "sorry, 4401 - 4410 is marketing's"),
        ("C2", "4401 - 4410 is marketing's"),
    ):
        lines += [
            _line(channel, "1.1", "2026-01-05T10:00:00Z", "what's the cost center for the offsite?"),
            _line(
                channel, "1.2", "2026-01-05T10:05:00Z", "Use cost center 4410 for the offsite.", thread="1.1"
            ),
            _line(channel, "1.3", "2026-01-05T10:20:00Z", answer, thread="1.1"),
        ]
    _import(data, *lines)
    current = _current(data, "C1", "cost center offsite")
    assert any("4401" in t for t in current), current
    assert not any("4410 for the offsite" in t for t in current), current
    control = _current(data, "C2", "cost center offsite")
    assert any("4410 for the offsite" in t for t in control), control


def test_an_answer_to_who_names_someone_the_channel_has_not_heard_from(tmp_path):
    """The first word of an answer to "who ...?" names someone, in lower case and not among the
    channel's authors; the control's question asks about another thing."""
    data = tmp_path / "store"
    older = "Dana owns the billing service."
    lines = []
    for channel, thing in (("C1", "billing"), ("C2", "payroll")):
        lines += [
            _line(channel, "1.1", "2026-01-05T10:00:00Z", older),
            _line(channel, "2.1", "2026-03-05T10:00:00Z", f"who owns the {thing} service these days?"),
            _line(channel, "2.2", "2026-03-05T10:05:00Z", "kenji, since the reorg", thread="2.1"),
        ]
    _import(data, *lines)
    current = _current(data, "C1", "billing service")
    assert any(t.startswith("kenji") for t in current), current
    assert older not in current, current
    assert older in _current(data, "C2", "billing service")


def test_a_version_read_as_part_of_a_name_is_the_value_beside_the_same_word(tmp_path):
    """ "4.3 LTS" answering "godot version?" replaces "Godot 4.2 LTS" (read as part of the name
    until the other says its number beside "LTS"); the control answers another question."""
    data = tmp_path / "store"
    older = "We're on Godot 4.2 LTS."
    lines = []
    for channel, asked, answer in (
        ("C1", "godot version?", "4.3 LTS as of last week"),
        ("C2", "disk space on the build box?", "4.3 TB free as of last week"),
    ):
        lines += [
            _line(channel, "1.1", "2026-01-05T10:00:00Z", older),
            _line(channel, "2.1", "2026-03-05T10:00:00Z", asked),
            _line(channel, "2.2", "2026-03-05T10:05:00Z", answer, thread="2.1"),
        ]
    _import(data, *lines)
    current = _current(data, "C1", "godot")
    assert any(t.startswith("4.3 LTS") for t in current), current
    assert older not in current, current
    assert older in _current(data, "C2", "godot")


def test_an_answer_replaces_no_answer_to_another_question(tmp_path):
    # "yes, as of today" under "is June 3 still the go-live date?" says nothing of the pilot that an
    # earlier "yes" extended; the control asks the pilot's question again and its answer replaces.
    data = tmp_path / "store"
    older = [
        _line("{c}", "1.1", "2026-01-05T10:00:00Z", "is the Initech pilot still running?", author="dana"),
        _line("{c}", "1.2", "2026-01-05T10:05:00Z", "yes, extended to May 31", thread="1.1", author="omar"),
    ]
    _import(
        data,
        *(line.replace("{c}", "C1") for line in older),
        _line("C1", "2.1", "2026-02-10T10:00:00Z", "is June 3 still the go-live date?", author="dana"),
        _line("C1", "2.2", "2026-02-10T10:05:00Z", "yes, as of today", thread="2.1", author="omar"),
        *(line.replace("{c}", "C2") for line in older),
        _line("C2", "2.1", "2026-02-10T10:00:00Z", "is the Initech pilot still running?", author="dana"),
        _line("C2", "2.2", "2026-02-10T10:05:00Z", "yes, extended to June 30", thread="2.1", author="omar"),
    )
    current = _current(data, "C1", "Initech pilot")
    assert any("May 31" in t for t in current), current
    control = _current(data, "C2", "Initech pilot")
    assert any("June 30" in t for t in control) and not any("May 31" in t for t in control), control
