"""The Weaviate stores' commands: copy the fact versions or the message index a SQLite file holds
into Weaviate."""

from __future__ import annotations

import typer

from teamlore.app import load_facts_into_weaviate, load_messages_into_weaviate, weaviate_message_collection
from teamlore.cli.support import DataDir, JsonFlag, emit_json, err, open_lore, out
from teamlore.errors import BackendUnavailable

weaviate_app = typer.Typer(
    no_args_is_help=True, help="The Weaviate stores: facts and the message index (TEAMLORE_WEAVIATE_URL)."
)


def register(app: typer.Typer) -> None:
    app.add_typer(weaviate_app, name="weaviate")


@weaviate_app.command("load-facts")
def load_facts(data_dir: DataDir = None, as_json: JsonFlag = False) -> int:
    """Copy every fact version of the SQLite file, with its vector, into the Weaviate collection.

    Safe to run again: each version has a fixed object id, so a re-run overwrites. Audit events
    stay in the SQLite file, as they were written.
    """
    lore = open_lore(data_dir)
    try:
        report = load_facts_into_weaviate(lore)
    finally:
        lore.close()
    return _reported(
        report.copied, report.failed, "fact version(s)", lore.settings.weaviate_collection, as_json
    )


@weaviate_app.command("load-messages")
def load_messages(data_dir: DataDir = None, as_json: JsonFlag = False) -> int:
    """Copy every version of the SQLite file's message index, with its vector, into Weaviate.

    Run once when a server stack that kept its message index in the file starts keeping it on
    Weaviate (until then its messages are not searchable there). Safe to run again: each version
    has a fixed object id, so a re-run overwrites.
    """
    lore = open_lore(data_dir)
    try:
        report = load_messages_into_weaviate(lore)
    finally:
        lore.close()
    collection = weaviate_message_collection(lore.settings)
    return _reported(report.copied, report.failed, "message version(s)", collection, as_json)


def _reported(copied: int, failed: list[str], what: str, collection: str, as_json: bool) -> int:
    if as_json:
        emit_json({"copied": copied, "failed": failed})
    else:
        out.print(f"copied {copied} {what} to {collection}", markup=False)
        for line in failed:
            err.print(f"refused {line}", markup=False)
    if failed:
        raise BackendUnavailable(f"Weaviate refused {len(failed)} version(s) (listed above); re-run")
    return 0
