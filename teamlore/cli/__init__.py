"""The ``teamlore`` command. Surfaces call capabilities, never stores.

Exit codes: 0 success; 2 bad input (one line on stderr, no traceback); 1 a backend failed.
Every read command takes ``--json``.
"""

from __future__ import annotations

import shutil
import sys
from collections.abc import Iterable
from dataclasses import replace
from datetime import datetime
from importlib import resources
from pathlib import Path
from typing import Annotated

import typer
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

from teamlore.app import Teamlore
from teamlore.capabilities import views
from teamlore.capabilities.facts import SearchMode, SearchResult
from teamlore.capabilities.hits import FactView, Hit, MessageView
from teamlore.capabilities.importing import BATCH_SIZE, ImportSummary, import_items, open_source
from teamlore.cli import (
    asking,
    connect,
    curation,
    mcp_command,
    media,
    production,
    reindexing,
    serving,
    weaviate,
)
from teamlore.cli.dead_letter import dead_letter_app
from teamlore.cli.pages import pages_app
from teamlore.cli.support import (
    Channels,
    DataDir,
    JsonFlag,
    Workspace,
    emit_json,
    err,
    open_lore,
    out,
    parse_option_time,
)
from teamlore.cli.tokens import tokens_app
from teamlore.config import Settings
from teamlore.connectors import ImportItem
from teamlore.domain import MessageEvent, ReadView, Scope, Source
from teamlore.errors import InvalidInput, NotFound, TeamloreError
from teamlore.files.carried import CarriedFiles
from teamlore.timeutil import SENTINEL, iso
from teamlore.untrusted import printable

app = typer.Typer(
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    help="Turn a team's chat into cited, time-aware facts.",
)
facts_app = typer.Typer(no_args_is_help=True, help="Show, add, correct facts; see their history.")
app.add_typer(facts_app, name="facts")
app.add_typer(curation.review_app, name="review")
app.add_typer(pages_app, name="pages")
app.add_typer(tokens_app, name="tokens")
app.add_typer(dead_letter_app, name="dead-letter")
curation.register(app, facts_app)
production.register(app)
asking.register(app)
media.register(app)
connect.register(app)
serving.register(app)
reindexing.register(app)
mcp_command.register(app)
weaviate.register(app)
# Imports larger than this show a progress bar.
PROGRESS_THRESHOLD = 300


@app.command("import")
def import_command(
    path: Annotated[
        Path,
        typer.Argument(
            help="Events file (.jsonl), Slack export (zip/folder), Mattermost export, "
            "DiscordChatExporter JSON or Graph channel-messages JSON (file or folder)."
        ),
    ],
    workspace: Annotated[
        str | None,
        typer.Option(help="Workspace id for a Slack/Mattermost export; the tenant id for Graph JSON."),
    ] = None,
    data_dir: DataDir = None,
    as_json: JsonFlag = False,
) -> int:
    """Import messages; importing the same file twice changes nothing."""
    lore = open_lore(data_dir)
    source = open_source(path, lore.settings.max_message_chars, workspace)
    if lore.settings.redis_url:
        return _enqueue_import(lore, source.items, as_json, source.carried)
    summary = _run_import(lore, source.items, source.total, f"importing {source.kind}", source.carried)
    if as_json:
        emit_json(
            {
                "path": str(path),
                "kind": source.kind,
                "taken": summary.taken,
                "skipped": summary.skipped,
                "outcomes": dict(summary.outcomes),
                "facts_created": summary.facts_created,
                "evidence_added": summary.evidence_added,
                "retracted": summary.retracted,
                "superseded": summary.superseded,
                "pages_rewritten": summary.pages_rewritten,
                "extraction_fallbacks": summary.extraction_fallbacks,
                "errors": summary.errors,
            }
        )
    else:
        _print_summary(summary)
    return 2 if summary.skipped else 0


def _enqueue_import(
    lore: Teamlore, items: Iterable[ImportItem], as_json: bool, carried: CarriedFiles | None = None
) -> int:
    """With Redis configured, an import hands its events to the workers in batches (the files
    the export carries kept first: the workers do not have the export)."""
    producer = lore.producer()
    sent = spooled = skipped = 0
    batch: list[MessageEvent] = []

    def hand_over() -> None:
        nonlocal sent, spooled
        if carried is not None:
            lore.stage_export_files(batch, carried)
        delivery = producer.enqueue(batch)
        sent, spooled = sent + delivery.sent + delivery.replayed, spooled + delivery.spooled
        batch.clear()

    for item in items:
        if item.error is not None:
            skipped += 1
            _print_skipped(f"{item.location}: {item.error}")
            continue
        if item.event is not None:  # an item holds an event or the reason it has none
            batch.append(item.event)
        if len(batch) >= BATCH_SIZE:
            hand_over()
    if batch:
        hand_over()
    if as_json:
        emit_json({"enqueued": sent, "spooled": spooled, "skipped": skipped})
    else:
        out.print(
            f"enqueued {sent} event(s) for the workers, spooled {spooled}, skipped {skipped}", markup=False
        )
    return 2 if skipped else 0


def _run_import(
    lore: Teamlore,
    items: Iterable[ImportItem],
    total: int,
    label: str,
    carried: CarriedFiles | None = None,
) -> ImportSummary:
    summary = _import_with_progress(lore, items, total, label, carried)
    # The import is over: nothing more will collapse into these rewrites, so write pages now.
    summary.pages_rewritten = lore.wiki.flush(everything=True).pages_rewritten
    return summary


def _import_with_progress(
    lore: Teamlore, items: Iterable[ImportItem], total: int, label: str, carried: CarriedFiles | None
) -> ImportSummary:
    files = lore.files if carried is None else replace(lore.files, carried=carried)
    if total <= PROGRESS_THRESHOLD:
        return import_items(items, lore.pipeline, on_skip=_print_skipped, files=files)
    columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeRemainingColumn())
    with Progress(*columns, console=err, transient=True) as progress:
        task = progress.add_task(label, total=total)
        advance = lambda n: progress.advance(task, n)  # noqa: E731
        return import_items(items, lore.pipeline, advance, _print_skipped, files=files)


def _print_skipped(line: str) -> None:
    """Each refused item, one line, as it is refused (not only the first ones a summary keeps)."""
    err.print(f"skipped {printable(line)}", markup=False)


def _print_summary(summary: ImportSummary) -> None:
    outcomes = ", ".join(f"{v} {k}" for k, v in sorted(summary.outcomes.items())) or "none"
    out.print(
        f"taken {summary.taken}, skipped {summary.skipped} ({outcomes}); "
        f"facts created {summary.facts_created}, evidence added {summary.evidence_added}, "
        f"retracted {summary.retracted}, superseded {summary.superseded}; "
        f"pages rewritten {summary.pages_rewritten}",
        markup=False,
    )
    if summary.extraction_fallbacks:
        out.print(
            f"the model extractor failed for {summary.extraction_fallbacks} message(s); the heuristic "
            "extractor stood in (see the log and `teamlore status`)",
            markup=False,
        )


@app.command()
def search(
    query: Annotated[str, typer.Argument(help="What to look for.")],
    workspace: Workspace = None,
    channel: Channels = None,
    mode: Annotated[SearchMode, typer.Option(help="Search mode.")] = SearchMode.HYBRID,
    limit: Annotated[int, typer.Option(help="How many facts (k).")] = 10,
    as_of: Annotated[str | None, typer.Option("--as-of", help="What was true then.")] = None,
    known_at: Annotated[str | None, typer.Option("--known-at", help="What the store knew then.")] = None,
    history: Annotated[bool, typer.Option("--history", help="Include retired facts.")] = False,
    data_dir: DataDir = None,
    as_json: JsonFlag = False,
) -> int:
    """Search facts inside a scope (workspace and channels) at a moment on both time axes."""
    scope = Scope(workspace or "", channel or [])
    view = ReadView(parse_option_time(as_of, "--as-of"), parse_option_time(known_at, "--known-at"), history)
    result = open_lore(data_dir).reader.search(query, scope, view, mode, limit)
    if as_json:
        emit_json(views.search_json(result))
    else:
        _print_result(result, scope)
    return 0


def _print_result(result: SearchResult, scope: Scope) -> None:
    if not result.hits:
        out.print(f"Nothing found in {', '.join('#' + c for c in sorted(scope.channels))}.", markup=False)
    for rank, hit in enumerate(result.hits, start=1):
        if isinstance(hit, MessageView):
            _print_message(rank, hit)
        else:
            _print_fact(rank, hit)
    r = result.receipt
    withheld = ", ".join(f"{v} {k}" for k, v in r.withheld.items()) or "none"
    fallback = f"; fell back from {r.mode_requested}: {r.fallback_reason}" if r.fallback_taken else ""
    short = f" (fewer than {r.k} found)" if r.fewer_than_k else ""
    out.print(f"{r.returned} result(s) by {r.mode_used}{short}; withheld: {withheld}{fallback}", markup=False)


def _print_fact(rank: int, hit: FactView) -> None:
    fact = hit.fact
    flag = " [contested]" if fact.contested else ""
    until = "" if fact.valid_to == SENTINEL else f" until {iso(fact.valid_to)}"
    out.print(f"{rank}. {fact.statement}{flag}", markup=False)
    out.print(
        f"   {hit.kind}: {fact.fact_type.value}, {fact.status.value}, #{fact.channel}, valid from "
        f"{iso(fact.valid_from)}{until}  ({fact.fact_id})",
        markup=False,
        style="dim",
    )
    for source in hit.sources:
        out.print(
            f"   source: {source.author_name} {iso(source.ts)}{_in_file(source)} {source.permalink}",
            markup=False,
            style="dim",
        )
    if hit.newer_elsewhere is not None:
        newer = hit.newer_elsewhere
        out.print(
            f"   older than #{newer.channel}, which says since {iso(newer.valid_from)}: {newer.statement}",
            markup=False,
        )
    for said in hit.replaced:
        out.print(
            f"   replaces what {said.source.author_name or 'someone'} said on {iso(said.since)}: {said.text}"
            f"  {said.source.permalink}",
            markup=False,
            style="dim",
        )
    _print_answer(hit)


def _in_file(source: Source) -> str:
    """ ", in report.pdf, p. 3" for a passage of a shared file."""
    return f", in {source.file_ref}" if source.file_ref else ""


def _print_message(rank: int, hit: MessageView) -> None:
    out.print(f"{rank}. {hit.text}", markup=False)
    out.print(
        f"   message (no fact covers it), #{hit.channel}, said by {hit.source.author_name} on "
        f"{iso(hit.since)}{_in_file(hit.source)}  {hit.source.permalink}",
        markup=False,
        style="dim",
    )
    _print_answer(hit)


def _print_answer(hit: Hit) -> None:
    if hit.answer is not None:
        out.print(f"   answered (above): {hit.answer.text}", markup=False)


@facts_app.command("show")
def facts_show(
    fact_id: str,
    workspace: Workspace = None,
    channel: Channels = None,
    as_of: Annotated[str | None, typer.Option("--as-of")] = None,
    known_at: Annotated[str | None, typer.Option("--known-at")] = None,
    data_dir: DataDir = None,
    as_json: JsonFlag = False,
) -> int:
    """One fact as it stood at a moment (retired facts included)."""
    scope = Scope(workspace or "", channel or [])
    view = ReadView(
        parse_option_time(as_of, "--as-of"), parse_option_time(known_at, "--known-at"), include_history=True
    )
    shown = open_lore(data_dir).reader.get(fact_id, scope, view)
    if shown is None:
        raise NotFound(
            f"no fact {fact_id} in workspace {scope.workspace}, channels {', '.join(sorted(scope.channels))}"
        )
    if as_json:
        emit_json(views.fact_view_json(shown))
    else:
        for key, value in views.fact_view_json(shown).items():
            out.print(f"{key}: {value}", markup=False)
    return 0


@facts_app.command("history")
def facts_history(
    fact_id: str,
    workspace: Workspace = None,
    channel: Channels = None,
    data_dir: DataDir = None,
    as_json: JsonFlag = False,
) -> int:
    """Every version of a fact on both time axes, and its audit events."""
    scope = Scope(workspace or "", channel or [])
    history = open_lore(data_dir).reader.history(fact_id, scope)
    if not history.versions:
        raise NotFound(
            f"no fact {fact_id} in workspace {scope.workspace}, channels {', '.join(sorted(scope.channels))}"
        )
    if as_json:
        emit_json(views.history_json(history))
        return 0
    for v in history.versions:
        f = v.fact
        out.print(f"v{f.version} {f.status.value}: {f.statement}", markup=False)
        out.print(
            f"   valid {iso(f.valid_from)} .. {_open_bound(f.valid_to)}; recorded "
            f"{iso(f.recorded_from)} .. {_open_bound(f.recorded_to)}",
            markup=False,
        )
    for e in history.audit:
        out.print(f"{iso(e.at)} {e.event} by {e.actor}: {e.reason}", markup=False)
    return 0


def _open_bound(moment: datetime) -> str:
    return "open" if moment == SENTINEL else iso(moment)


@app.command()
def channels(workspace: Workspace = None, data_dir: DataDir = None, as_json: JsonFlag = False) -> int:
    """Channels the store holds for a workspace (ids to use with --channel)."""
    if not workspace:
        raise InvalidInput("channels needs a workspace (--workspace)")
    found = open_lore(data_dir).stores.messages.channels(workspace)
    if as_json:
        emit_json(
            [
                {
                    "channel": c.channel,
                    "name": c.name,
                    "visibility": c.visibility.value,
                    "platform": c.platform,
                }
                for c in found
            ]
        )
    else:
        for c in found:
            out.print(f"{c.channel}  #{c.name}  {c.visibility.value}", markup=False)
    return 0


SAMPLE_WORKSPACE = "T0ACME"
DEMO_QUERIES = (
    ("When does Atlas 2.0 launch?", "C02PRODUCT"),
    ("What is the primary datastore for Atlas?", "C01ENG"),
    ("Who owns the billing service?", "C01ENG"),
)


@app.command()
def demo(
    data_dir: Annotated[Path, typer.Option(help="Where the demo store goes.")] = Path("teamlore-demo"),
    serve: Annotated[bool, typer.Option("--serve", help="Then serve the wiki and the API.")] = False,
    host: serving.Host = "127.0.0.1",
    port: serving.Port = 8000,
) -> int:
    """Import the bundled sample workspace into a fresh store and ask it a few questions; with
    --serve, then serve the wiki with a fresh admin token."""
    db = data_dir / "teamlore.sqlite3"
    for leftover in (db, db.with_name(db.name + "-wal"), db.with_name(db.name + "-shm")):
        leftover.unlink(missing_ok=True)
    lore = Teamlore(Settings(data_dir=data_dir))
    sample = resources.files("teamlore.samples").joinpath("acme.jsonl")
    with resources.as_file(sample) as path:
        source = open_source(path, lore.settings.max_message_chars)
        summary = _run_import(lore, source.items, source.total, "importing the sample workspace")
    _print_summary(summary)
    for query, channel in DEMO_QUERIES:
        out.print(
            f"\n$ teamlore ask {query!r} -w {SAMPLE_WORKSPACE} -c {channel} --data-dir {data_dir} --limit 3",
            markup=False,
            style="bold",
        )
        asking.print_answer(lore.ask(query, Scope(SAMPLE_WORKSPACE, [channel]), k=3))
    width = shutil.get_terminal_size((100, 20)).columns
    out.print("\n" + "-" * min(width, 80))
    pages = [p for p, v in lore.stores.pages.pages(SAMPLE_WORKSPACE, ["C01ENG"]) if v]
    out.print(f"Wiki: {len(pages)} pages in #eng, for example:", markup=False)
    for page in pages[:8]:
        out.print(
            f"  teamlore pages show {page.slug} -w {SAMPLE_WORKSPACE} -c C01ENG --data-dir {data_dir}",
            markup=False,
        )
    out.print(
        f"Store: {db}. Channels: teamlore channels -w {SAMPLE_WORKSPACE} --data-dir {data_dir}", markup=False
    )
    if serve:
        _, secret = lore.access.create("demo admin", "admin", SAMPLE_WORKSPACE, None)
        out.print(f"\nWiki: http://{host}:{port}/wiki  (API docs: http://{host}:{port}/docs)", markup=False)
        out.print(f"Admin token for {SAMPLE_WORKSPACE} (paste it to sign in): {secret}", markup=False)
        serving.run(lore, host, port)
    return 0


def main(argv: list[str] | None = None) -> None:
    try:
        code = app(args=argv, standalone_mode=False)
    except typer.Abort:
        sys.exit(130)
    except typer.TyperException as exc:  # usage errors: unknown option, bad value, ...
        message = exc.format_message() if hasattr(exc, "format_message") else str(exc)
        err.print(f"error: {' '.join(message.split())}", markup=False)
        sys.exit(getattr(exc, "exit_code", 2))
    except (InvalidInput, NotFound) as exc:
        err.print(f"error: {exc}", markup=False)
        sys.exit(2)
    except TeamloreError as exc:
        err.print(f"error: {exc}", markup=False)
        sys.exit(1)
    sys.exit(code if isinstance(code, int) else 0)
