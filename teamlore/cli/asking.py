"""Reader commands beyond search: ask a question, see recent activity."""

from __future__ import annotations

from typing import Annotated

import typer

from teamlore.capabilities import views
from teamlore.capabilities.answers import Answer
from teamlore.cli.support import (
    Channels,
    DataDir,
    JsonFlag,
    Workspace,
    emit_json,
    open_lore,
    out,
    parse_option_time,
)
from teamlore.domain import ReadView, Scope
from teamlore.timeutil import iso


def register(app: typer.Typer) -> None:
    app.command("ask")(ask_command)
    app.command("activity")(activity_command)


def ask_command(
    question: Annotated[str, typer.Argument(help="A question, in words.")],
    workspace: Workspace = None,
    channel: Channels = None,
    limit: Annotated[int, typer.Option(help="At most this many facts cited.")] = 5,
    as_of: Annotated[str | None, typer.Option("--as-of", help="Answer as things stood then.")] = None,
    data_dir: DataDir = None,
    as_json: JsonFlag = False,
) -> int:
    """Answer a question from the facts of the given channels, with citations."""
    scope = Scope(workspace or "", channel or [])
    answer = open_lore(data_dir).ask(question, scope, ReadView(parse_option_time(as_of, "--as-of")), limit)
    if as_json:
        emit_json(views.answer_json(answer))
        return 0
    print_answer(answer)
    return 0


def print_answer(answer: Answer) -> None:
    out.print(answer.text, markup=False)
    for number, cited in enumerate(answer.citations, start=1):
        for source in cited.sources:
            out.print(
                f"  [{number}] {source.author_name}, {iso(source.ts)}"
                f"{', ' + source.file_ref if source.file_ref else ''}: {source.permalink}",
                markup=False,
                style="dim",
            )
    if answer.note:
        out.print(answer.note, markup=False, style="dim")


def activity_command(
    workspace: Workspace = None,
    channel: Channels = None,
    since: Annotated[str | None, typer.Option(help="From this moment (default: a week ago).")] = None,
    limit: Annotated[int, typer.Option(help="At most this many events.")] = 50,
    data_dir: DataDir = None,
    as_json: JsonFlag = False,
) -> int:
    """What changed recently in the given channels, newest first."""
    scope = Scope(workspace or "", channel or [])
    items = open_lore(data_dir).recent_activity(scope, parse_option_time(since, "--since"), limit)
    if as_json:
        emit_json([views.activity_json(a) for a in items])
        return 0
    for item in items:
        event = item.event
        out.print(
            f"{iso(event.at)} {event.event} in {event.channel} by {event.actor}: {event.reason}", markup=False
        )
        for view in item.facts:
            out.print(f"   {view.fact.statement}", markup=False, style="dim")
    if not items:
        out.print("no activity in that period")
    return 0
