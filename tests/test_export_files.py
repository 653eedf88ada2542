"""Files an export carries as bytes (issue 21, item 1): DiscordChatExporter's media saved beside
its JSON (``--media``) and a Mattermost bulk export's ``data/`` attachments are read by
``teamlore import`` like fetched files: found by search with the file and page, private where
their channel is. Only paths inside the export are read (``files.carried``), and a live event or
an events file naming such a link gets no bytes."""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
import sys
import time
import zipfile
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from teamlore.app import Teamlore
from teamlore.cli import app as cli_app
from teamlore.config import Settings
from teamlore.domain import MessageEvent, Scope
from teamlore.errors import FetchFailed
from teamlore.files.carried import CarriedFiles, carried_link
from teamlore.stores.protocols import FileStatus

from . import files_made as made
from .test_connector_imports import dce_file, dce_message
from .test_mattermost_export import export_lines
from .test_shared_files import BUDGET_PAGES

GENERAL = {"id": "200", "type": "GuildTextChat", "categoryId": "50", "category": "Text", "name": "general"}
SECRET_PAGES = [p.replace("40 thousand", "70 thousand") for p in BUDGET_PAGES]


def imported(export: Path, data: Path) -> dict[str, Any]:
    result = CliRunner().invoke(cli_app, ["import", str(export), "--data-dir", str(data), "--json"])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def budget_hits(lore: Teamlore, workspace: str, channel: str) -> list[Any]:
    hits = lore.reader.search("Falcon launch budget", Scope(workspace, [channel]), k=10).hits
    return [h for h in hits if h.kind == "fact"]


def test_media_saved_beside_a_discordchatexporter_json_is_read_and_nothing_outside_it(tmp_path: Path):
    folder = tmp_path / "export"
    media = folder / "Acme - general [200].json_Files"
    media.mkdir(parents=True)
    (media / "report-6A1F3.pdf").write_bytes(made.pdf(BUDGET_PAGES))
    (tmp_path / "secret.pdf").write_bytes(made.pdf(SECRET_PAGES))  # beside the export, not in it
    dce_file(folder, "Acme - general [200].json", GENERAL, [
        dce_message("1001", "The Falcon report.", attachments=[
            {"id": "7", "url": "Acme%20-%20general%20%5B200%5D.json_Files/report-6A1F3.pdf",
             "fileName": "report.pdf", "fileSizeBytes": 1}]),
        dce_message("1002", "And the other one.", attachments=[
            {"id": "8", "url": "../secret.pdf", "fileName": "secret.pdf", "fileSizeBytes": 1}]),
    ])  # fmt: skip
    data = tmp_path / "store"

    summary = imported(folder, data)

    assert summary["taken"] == 2 and summary["skipped"] == 0  # both messages stored
    lore = Teamlore(Settings(data_dir=data, _env_file=None))
    try:
        hits = budget_hits(lore, "100", "200")
        budget = [h for h in hits if "40 thousand" in h.fact.statement]
        assert budget and [s.file_ref for s in budget[0].sources] == ["report.pdf, p. 2"]
        assert not any("70 thousand" in h.text for h in hits)  # the file outside the export: unread
        records = lore.stores.files.of_messages("100", [("200", "1001"), ("200", "1002")])
        assert [(r.message_id, r.status) for r in records] == [("1001", FileStatus.EXTRACTED)]
    finally:
        lore.close()


def test_a_mattermost_export_zip_carries_its_files_and_a_private_channels_stay_in_it(tmp_path: Path):
    lines = export_lines()[:-1]
    lines[6]["post"]["attachments"] = [{"path": "data/2026/01/05/xyz/report.pdf"}]  # the #deals post
    archive = tmp_path / "mm_export.zip"
    with zipfile.ZipFile(archive, "w") as z:
        z.writestr("import.jsonl", "\n".join(json.dumps(line) for line in lines) + "\n")
        z.writestr("data/2026/01/05/xyz/report.pdf", made.pdf(BUDGET_PAGES))
    data = tmp_path / "store"

    assert imported(archive, data)["skipped"] == 0

    lore = Teamlore(Settings(data_dir=data, _env_file=None))
    try:
        inside = [h for h in budget_hits(lore, "acme", "acme/deals") if "40 thousand" in h.fact.statement]
        assert inside and [s.file_ref for s in inside[0].sources] == ["report.pdf, p. 2"]
        outside = budget_hits(lore, "acme", "acme/eng")  # paired: the same query, another channel
        assert not any("40 thousand" in h.text for h in outside)
    finally:
        lore.close()


def test_a_carried_link_outside_an_import_gets_no_bytes_and_its_message_is_stored(tmp_path: Path, embedder):
    (tmp_path / "store").mkdir()
    (tmp_path / "store" / "report.pdf").write_bytes(made.pdf(BUDGET_PAGES))  # even where it exists
    lore = Teamlore(Settings(data_dir=tmp_path / "store", _env_file=None), embedder=embedder)
    try:
        event = MessageEvent.model_validate(
            {
                "kind": "message.created",
                "platform": "mattermost",
                "workspace": "acme",
                "channel": "eng",
                "message_id": "m1",
                "author_id": "u1",
                "author_name": "alice",
                "ts": datetime(2026, 1, 5, tzinfo=UTC),
                "text": "The Falcon report.",
                "attachments": [{"name": "report.pdf", "download_url": "export:report.pdf"}],
            }
        )
        (result,) = lore.ingest([event])
        assert result.outcome.value == "stored"
        (record,) = lore.stores.files.of_messages("acme", [("eng", "m1")])
        assert record.status is FileStatus.FAILED and "carried by an export" in record.detail
        assert not any("40 thousand" in h.text for h in budget_hits(lore, "acme", "eng"))
    finally:
        lore.close()


@pytest.mark.parametrize(
    "path",
    ["../secret.pdf", "/etc/passwd", "a/../../secret.pdf", "https://example.com/a.pdf", "C:/x.pdf", ""],
)
def test_a_path_that_leaves_the_export_is_no_carried_link(path: str) -> None:
    assert carried_link(path) == ""


def test_carried_files_serve_only_the_export_within_the_size_limit(tmp_path: Path) -> None:
    folder = tmp_path / "export"
    (folder / "media").mkdir(parents=True)
    (folder / "media" / "a b.txt").write_bytes(b"inside")
    (tmp_path / "outside.txt").write_bytes(b"outside")
    os.symlink(tmp_path / "outside.txt", folder / "media" / "link.txt")
    files = CarriedFiles(folder)

    assert carried_link("media/a%20b.txt") == "export:media/a b.txt"
    assert files.fetch("export:media/a b.txt", 100) == b"inside"  # control for each refusal below
    for url, reason in [
        ("export:../outside.txt", "not a file inside"),
        ("export:media/link.txt", "leads outside"),
        ("export:media/missing.txt", "not in the export"),
        ("https://example.com/a", "not a file inside"),
    ]:
        with pytest.raises(FetchFailed, match=reason):
            files.fetch(url, 100)
    with pytest.raises(FetchFailed, match="the limit is 5"):
        files.fetch("export:media/a b.txt", 5)

    archive = tmp_path / "e.zip"
    with zipfile.ZipFile(archive, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("top/data/a.txt", b"zipped")
        z.writestr("data/big.txt", b"0" * 10_000)
    zipped = CarriedFiles(archive)
    assert zipped.fetch("export:data/a.txt", 100) == b"zipped"  # under the zip's top folder
    with pytest.raises(FetchFailed, match="the limit is 100"):
        zipped.fetch("export:data/big.txt", 100)
    with pytest.raises(FetchFailed, match="not in e.zip"):
        zipped.fetch("export:a.txt", 100)


def _file_statuses(data_dir: Path) -> dict[str, str]:
    db = sqlite3.connect(data_dir / "teamlore.sqlite3")
    try:
        return dict(db.execute("SELECT message_id, status FROM shared_files").fetchall())
    finally:
        db.close()


# With Redis, `teamlore import` hands the events to a worker, which does not have the export: the
# import keeps the files the export carries first (status "carried"), and the worker reads them
# from the blob store when it stores their message.
def test_with_redis_the_import_keeps_the_carried_files_and_the_worker_reads_them(tmp_path: Path):
    from .redis_server import OwnRedis
    from .test_hostile_input import _Worker

    folder = tmp_path / "export"
    media = folder / "general_Files"
    media.mkdir(parents=True)
    (media / "report.pdf").write_bytes(made.pdf(BUDGET_PAGES))
    dce_file(folder, "Acme - general [200].json", GENERAL, [
        dce_message("1001", "The Falcon report.", attachments=[
            {"id": "7", "url": "general_Files/report.pdf", "fileName": "report.pdf", "fileSizeBytes": 1}]),
        dce_message("1002", "A file the export lost.", attachments=[
            {"id": "8", "url": "general_Files/gone.pdf", "fileName": "gone.pdf", "fileSizeBytes": 1}]),
    ])  # fmt: skip
    broker = OwnRedis(tmp_path / "redis", aof=False).start()
    data_dir = tmp_path / "prod"
    env = {"TEAMLORE_REDIS_URL": broker.url, "TEAMLORE_DATA_DIR": str(data_dir)}
    env["TEAMLORE_WIKI_WINDOW_S"] = "0"
    worker = _Worker(data_dir, tmp_path / "worker.log", env)
    try:
        done = subprocess.run(
            [sys.executable, "-m", "teamlore.cli", "import", str(folder)],
            capture_output=True,
            text=True,
            env={**os.environ, **env},
            timeout=120,
        )
        assert done.returncode == 0 and "enqueued 2 event(s)" in done.stdout, done.stderr
        shutil.rmtree(folder)  # the worker never needed it
        deadline = time.monotonic() + 90
        while _file_statuses(data_dir).get("1001") != "extracted" and time.monotonic() < deadline:
            time.sleep(0.2)
        statuses = _file_statuses(data_dir)
        assert statuses == {"1001": "extracted", "1002": "skipped"}  # control: a file not in the export
    finally:
        worker.stop()
        broker.stop()
    lore = Teamlore(Settings(data_dir=data_dir, _env_file=None))
    try:
        budget = [h for h in budget_hits(lore, "100", "200") if "40 thousand" in h.fact.statement]
        assert budget and [s.file_ref for s in budget[0].sources] == ["report.pdf, p. 2"]
    finally:
        lore.close()
