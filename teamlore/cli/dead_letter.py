"""`teamlore dead-letter`: the events the workers could not take, kept in Redis for an admin."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict
from typing import Annotated, TypeVar

import redis
import typer

from teamlore.capabilities.production import DeadLetter, dead_letters, replay_dead_letters
from teamlore.cli.support import JsonFlag, emit_json, out
from teamlore.config import Settings
from teamlore.errors import BackendUnavailable, InvalidInput

dead_letter_app = typer.Typer(
    no_args_is_help=True,
    help="Events the workers refused or could not take after TEAMLORE_INGEST_MAX_DELIVERIES tries.",
)
Ids = Annotated[list[str] | None, typer.Argument(help="Entry ids (from `list`); none: every entry.")]


T = TypeVar("T")


def _translated(work: Callable[[], T]) -> T:
    try:
        return work()
    except redis.RedisError as exc:
        raise BackendUnavailable(f"Redis is unreachable: {exc}") from exc


@dead_letter_app.command("list")
def list_command(as_json: JsonFlag = False) -> int:
    """Every entry, oldest first: its id, when, the message(s) and why."""
    letters = _translated(dead_letters(Settings()).entries)
    if as_json:
        emit_json([asdict(letter) for letter in letters])
        return 0
    if not letters:
        out.print("the dead-letter list is empty", markup=False)
    for letter in letters:
        out.print(letter.describe(), markup=False)
    return 0


@dead_letter_app.command("replay")
def replay_command(ids: Ids = None, as_json: JsonFlag = False) -> int:
    """Put entries back on the ingest queue (after fixing what made them fail)."""
    settings = Settings()
    done = _translated(lambda: replay_dead_letters(settings, ids))
    return _report("replayed", done, as_json)


@dead_letter_app.command("drop")
def drop_command(
    ids: Ids = None,
    every: Annotated[bool, typer.Option("--all", help="Drop every entry.")] = False,
    as_json: JsonFlag = False,
) -> int:
    """Delete entries for good (name them, or give --all)."""
    if bool(ids) == every:
        raise InvalidInput("name the entries to drop, or give --all (not both)")
    done = _translated(lambda: dead_letters(Settings()).drop(None if every else ids))
    return _report("dropped", done, as_json)


def _report(verb: str, done: list[DeadLetter], as_json: bool) -> int:
    if as_json:
        emit_json({verb: [letter.id for letter in done]})
    else:
        out.print(f"{verb} {len(done)} entr{'y' if len(done) == 1 else 'ies'}", markup=False)
    return 0
