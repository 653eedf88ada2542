"""The Weaviate fact store's command: copy the fact versions a SQLite file holds into Weaviate."""

from __future__ import annotations

import typer

from teamlore.cli.support import DataDir, JsonFlag, emit_json, err, open_lore, out
from teamlore.errors import BackendUnavailable, ConfigurationError
from teamlore.extras import require
from teamlore.stores.embedded.facts import EmbeddedFactBackend

weaviate_app = typer.Typer(no_args_is_help=True, help="The Weaviate fact store (TEAMLORE_WEAVIATE_URL).")


def register(app: typer.Typer) -> None:
    app.add_typer(weaviate_app, name="weaviate")


@weaviate_app.command("load-facts")
def load_facts(data_dir: DataDir = None, as_json: JsonFlag = False) -> int:
    """Copy every fact version of the SQLite file, with its vector, into the Weaviate collection.

    Safe to run again: each version has a fixed object id, so a re-run overwrites. Audit events
    stay in the SQLite file, as they were written.
    """
    require("weaviate")
    from teamlore.stores.weaviate.facts import WeaviateFactBackend
    from teamlore.stores.weaviate.importer import copy_versions

    lore = open_lore(data_dir)
    try:
        target = lore.stores.facts
        if not isinstance(target, WeaviateFactBackend):
            raise ConfigurationError("set TEAMLORE_WEAVIATE_URL to the server to load the facts into")
        source = EmbeddedFactBackend(lore.stores.db, lore.stores.audit)
        report = copy_versions(source, target, lore.stores.embeddings, lore.settings.weaviate_batch_size)
    finally:
        lore.close()
    if as_json:
        emit_json({"copied": report.copied, "failed": report.failed})
    else:
        collection = lore.settings.weaviate_collection
        out.print(f"copied {report.copied} fact version(s) to {collection}", markup=False)
        for line in report.failed:
            err.print(f"refused {line}", markup=False)
    if report.failed:
        raise BackendUnavailable(f"Weaviate refused {len(report.failed)} version(s) (listed above); re-run")
    return 0
