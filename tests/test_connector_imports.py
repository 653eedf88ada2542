"""``teamlore import`` of a DiscordChatExporter JSON file and of Graph channel-messages JSON, and the
admin backfills of ``teamlore connect discord|teams --backfill`` against local platform servers."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from teamlore.connectors.discord import runner as discord_runner
from teamlore.connectors.discord.export import read_discord_export
from teamlore.connectors.teams import runner as teams_runner
from teamlore.connectors.teams.export import read_teams_export
from teamlore.domain import Scope, Visibility

from . import discord_payloads as P
from .local_http import Request, Response, local_server
from .test_cli import run
from .test_discord import discord_rest
from .test_teams import GENERAL, GRAPH_PAGES, GROUP, TENANT, graph_message, graph_server


def dce_file(folder: Path, name: str, channel: dict[str, Any], messages: list[dict[str, Any]]) -> Path:
    """A file as DiscordChatExporter's JSON format writes it."""
    path = folder / name
    path.write_text(
        json.dumps(
            {
                "guild": {
                    "id": "100",
                    "name": "Acme",
                    "iconUrl": "https://cdn.discordapp.com/icons/100/a.png",
                },
                "channel": channel,
                "dateRange": {"after": None, "before": None},
                "exportedAt": "2026-04-01T12:00:00.000+00:00",
                "messages": messages,
                "messageCount": len(messages),
            },
            indent=2,
        )
    )
    return path


def dce_message(mid: str, content: str, *, kind: str = "Default", attachments=None) -> dict[str, Any]:
    return {
        "id": mid,
        "type": kind,
        "timestamp": "2026-03-02T09:00:00.123+01:00",
        "timestampEdited": None,
        "callEndedTimestamp": None,
        "isPinned": False,
        "content": content,
        "author": {
            "id": "901",
            "name": "alice",
            "discriminator": "0000",
            "nickname": "Alice",
            "color": None,
            "isBot": False,
            "roles": [],
            "avatarUrl": "",
        },  # fmt: skip
        "attachments": attachments or [],
        "embeds": [],
        "stickers": [],
        "reactions": [],
        "mentions": [],
    }


def test_a_discordchatexporter_folder_imports_channels_threads_and_attachments(tmp_path: Path):
    folder = tmp_path / "export"
    folder.mkdir()
    general = {
        "id": "200",
        "type": "GuildTextChat",
        "categoryId": "50",
        "category": "Text",
        "name": "general",
    }
    dce_file(folder, "Acme - general [200].json", general, [
        dce_message("1001", "The release train leaves every Tuesday."),
        dce_message("1002", "Bob joined the server.", kind="GuildMemberJoin"),
        dce_message("1003", "The Q3 budget is attached.", attachments=[
            {"id": "7", "url": "https://cdn.discordapp.com/attachments/200/7/q3-budget.xlsx",
             "fileName": "q3-budget.xlsx", "fileSizeBytes": 18022}]),
        {"id": "1004", "type": "Default", "timestamp": "yesterday", "content": "bad time"},
    ])  # fmt: skip
    thread = {"id": "1001", "type": "GuildPrivateThread", "categoryId": "200", "category": "general",
              "name": "release planning"}  # fmt: skip
    dce_file(folder, "Acme - release planning [1001].json", thread, [
        dce_message("1005", "The new cluster region is eu-west-1."),
    ])  # fmt: skip
    items = list(read_discord_export(folder, 40_000))
    events = [i.event for i in items if i.event is not None]
    errors = [f"{i.location}: {i.error}" for i in items if i.error is not None]
    assert [e.message_id for e in events] == ["1001", "1003", "1005"]
    assert len(errors) == 1 and "general [200].json:message 4" in errors[0] and "ts" in errors[0]
    reply = events[2]
    assert (reply.channel, reply.thread_id, reply.channel_visibility) == ("200", "1001", Visibility.PRIVATE)
    assert reply.permalink == "https://discord.com/channels/100/1001/1005"
    assert events[0].ts.isoformat() == "2026-03-02T08:00:00.123000+00:00"  # UTC
    assert events[1].attachments[0].name == "q3-budget.xlsx" and events[1].attachments[0].size == 18022

    done = run("import", str(folder), "--json", data_dir=tmp_path / "data")
    assert done.returncode == 2, done.stderr  # one bad message skipped, the rest imported
    summary = json.loads(done.stdout)
    assert summary["kind"] == "DiscordChatExporter JSON" and summary["taken"] == 3 and summary["skipped"] == 1
    again = json.loads(run("import", str(folder), "--json", data_dir=tmp_path / "data").stdout)
    # Idempotent: the same three messages are recognized, nothing is stored or created again.
    assert sum(again["outcomes"].values()) == 3 and "stored" not in again["outcomes"]
    assert again["facts_created"] == 0


def test_graph_channel_messages_json_imports_with_the_channel_resource_beside_it(tmp_path: Path):
    folder = tmp_path / "graph"
    folder.mkdir()
    for n, page in enumerate(GRAPH_PAGES):
        (folder / f"messages-{n}.json").write_text(
            json.dumps(
                {
                    "@odata.context": "https://graph.microsoft.com/v1.0/$metadata#teams('x')/messages",
                    "value": page,
                }
            )  # fmt: skip
        )
    (folder / "channel.json").write_text(
        json.dumps({"id": GENERAL, "displayName": "Board", "membershipType": "private", "description": None})
    )
    items = list(read_teams_export(folder, 40_000))
    events = [i.event for i in items if i.event is not None]
    assert {e.message_id for e in events} == {"1001", "1002", "1003", "1004", "1006"}  # system event skipped
    assert all(e.workspace == TENANT and e.channel == GENERAL for e in events)
    assert all(e.channel_name == "Board" and e.channel_visibility is Visibility.PRIVATE for e in events)
    assert next(e for e in events if e.message_id == "1006").kind.value == "message.deleted"

    done = run("import", str(folder), "--json", data_dir=tmp_path / "data")
    assert done.returncode == 0, done.stderr
    summary = json.loads(done.stdout)
    assert summary["kind"] == "Teams channel messages (Graph JSON)" and summary["taken"] == 5
    channels = run("channels", "-w", TENANT, "--json", data_dir=tmp_path / "data")
    assert '"private"' in channels.stdout and "Board" in channels.stdout


def test_a_graph_message_without_a_tenant_needs_the_workspace_option(tmp_path: Path):
    message = graph_message("2001", "Maria owns the billing migration.", 0)
    message["from"]["user"].pop("tenantId")
    message["webUrl"] = None
    path = tmp_path / "page.json"
    path.write_text(json.dumps({"value": [message]}))
    (bad,) = read_teams_export(path, 40_000)
    assert bad.event is None and "--workspace" in str(bad.error)
    (good,) = read_teams_export(path, 40_000, workspace=TENANT)
    assert good.event is not None and good.event.workspace == TENANT


def test_the_discord_admin_backfill_reads_a_channel_over_rest(lore, monkeypatch):
    history = {
        P.LEADERSHIP: [P.message(P.snowflake(1), P.LEADERSHIP, "The Globex renewal price is 40 dollars.")]
    }
    rest = discord_rest(history, [], limit_once=False)

    def handle(request: Request) -> Response:
        if request.path.endswith(f"/channels/{P.LEADERSHIP}"):
            return Response(
                body=P.text_channel(P.LEADERSHIP, "leadership", [P.deny_everyone(), P.allow_bot()])
            )
        if request.path.endswith(f"/guilds/{P.GUILD}"):
            return Response(
                body={k: v for k, v in P.guild_create().items() if k not in ("channels", "members")}
            )
        return rest(request)

    said: list[str] = []
    with local_server(handle) as server:
        monkeypatch.setattr(lore.settings, "discord_token", "test-token")
        monkeypatch.setattr(lore.settings, "discord_api_url", f"{server.url}/api/v10")
        monkeypatch.setattr("discord.http.Route.BASE", "https://discord.com/api/v10")  # restored after
        report = discord_runner.backfill(lore, P.LEADERSHIP, say=said.append)
    assert report.done and report.total_fetched == 1
    (channel,) = lore.stores.messages.channels(P.GUILD)
    assert channel.name == "leadership" and channel.visibility is Visibility.PRIVATE
    hits = lore.reader.list(Scope(P.GUILD, [P.LEADERSHIP])).hits
    assert [h.fact.statement for h in hits] == ["The Globex renewal price is 40 dollars."]


def test_the_teams_admin_backfill_takes_visibility_from_the_channel_membership(lore, monkeypatch):
    pages = [[graph_message("3001", "The Globex renewal price is 40 dollars.", 0)]]
    inner = graph_server(pages)
    messages = inner.handler

    def handle(request: Request) -> Response:
        if request.path.endswith("/channels/19%3A4a95f7d8db4c4e7fae857bcebe0623e6%40thread.tacv2"):
            return Response(body={"id": GENERAL, "displayName": "Board", "membershipType": "private"})
        return messages(request)

    inner.handler = handle
    with inner as server:
        monkeypatch.setattr(lore.settings, "teams_tenant_id", TENANT)
        monkeypatch.setattr(lore.settings, "teams_graph_url", f"{server.url}/v1.0")
        report = teams_runner.backfill(
            lore,
            f"{GROUP}/{GENERAL}",
            say=lambda line: None,
            token=lambda: "graph-token",
            sleep=lambda s: None,
        )
        paths = [r.path for r in server.requests]
    assert report.done and report.total_fetched == 1
    assert paths[0] == f"/v1.0/teams/{GROUP}/channels/19%3A4a95f7d8db4c4e7fae857bcebe0623e6%40thread.tacv2"
    (channel,) = lore.stores.messages.channels(TENANT)
    assert channel.name == "Board" and channel.visibility is Visibility.PRIVATE
