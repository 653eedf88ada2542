"""Teams: activities (in Teams' own JSON shape) through the Agents SDK's TestAdapter and TurnContext
pipeline; Graph channel-message history through a local HTTP server with paging and a 429."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import pytest
from microsoft_agents.activity import Activity
from microsoft_agents.testing import TestAdapter

from teamlore.connectors.backfill import run_backfill
from teamlore.connectors.delivery import EventSink
from teamlore.connectors.teams.agent import TeamloreTeamsAgent
from teamlore.connectors.teams.graph import GraphChannelHistory, GraphClient, graph_http
from teamlore.connectors.teams.normalize import Place, to_text
from teamlore.domain import Scope, Visibility
from teamlore.errors import BackendUnavailable

from .local_http import LocalServer, Request, Response

TENANT = "72f988bf-86f1-41af-91ab-2d7cd011db47"
GROUP = "fbe2bf47-16c8-47cf-b4a5-4b9b187c508b"
TEAM_THREAD = "19:team0general@thread.tacv2"
GENERAL = "19:4a95f7d8db4c4e7fae857bcebe0623e6@thread.tacv2"
BOARD = "19:b0a4d1c2private@thread.tacv2"
BOT = {"id": "28:00000000-bot0-app0-0000-000000000001", "name": "Teamlore"}
ALICE = {"id": "29:1alice", "name": "Alice Example", "aadObjectId": "aad-alice"}
OTHER_BOT = {"id": "28:deploy-bot", "name": "Deploy", "role": "bot"}


def activity(
    kind: str,
    mid: str,
    text: str = "",
    *,
    channel: str = GENERAL,
    channel_name: str = "General",
    membership: str | None = "standard",
    root: str | None = None,
    event_type: str | None = None,
    sender: dict[str, Any] = ALICE,
    mention_bot: bool = False,
    minute: int = 0,
) -> dict[str, Any]:
    """A Teams activity as the Bot Connector posts it for a channel conversation."""
    channel_info: dict[str, Any] = {"id": channel, "name": channel_name}
    if membership:
        channel_info["type"] = membership
    data: dict[str, Any] = {
        "type": kind,
        "id": mid,
        "timestamp": f"2026-03-02T09:{minute:02d}:00.000Z",
        "serviceUrl": "https://smba.trafficmanager.net/emea/",
        "channelId": "msteams",
        "from": sender,
        "conversation": {
            "isGroup": True,
            "conversationType": "channel",
            "tenantId": TENANT,
            "id": f"{channel};messageid={root or mid}",
        },
        "recipient": BOT,
        "textFormat": "plain",
        "text": text,
        "channelData": {
            "teamsChannelId": channel,
            "teamsTeamId": TEAM_THREAD,
            "channel": channel_info,
            "team": {"id": TEAM_THREAD, "name": "Acme", "aadGroupId": GROUP},
            "tenant": {"id": TENANT},
        },
    }
    if event_type:
        data["channelData"]["eventType"] = event_type
    if mention_bot:
        data["text"] = f"<at>Teamlore</at> {text}"
        data["entities"] = [{"type": "mention", "text": "<at>Teamlore</at>", "mentioned": BOT}]
    return data


def play(lore, *payloads: dict[str, Any]) -> list[Activity]:
    """Each payload through the SDK's TestAdapter pipeline (middleware, TurnContext, the agent);
    returns what the agent sent back."""

    async def main() -> list[Activity]:
        adapter = TestAdapter(channel_id="msteams")
        agent = TeamloreTeamsAgent(lore)
        for payload in payloads:
            context = adapter.create_turn_context(Activity.model_validate(payload))
            await adapter.run_pipeline(context, agent.on_turn)
        await agent.worker.close()
        return adapter.get_activity_snapshot()

    return asyncio.run(main())


def statements(lore, channel: str) -> list[str]:
    return sorted(v.fact.statement for v in lore.reader.list(Scope(TENANT, [channel]), k=50).hits)


def test_messages_edits_and_soft_deletes_reach_the_fact_store(lore):
    sent = play(
        lore,
        activity("message", "1772441000001", "We decided the launch date is 12 May."),
        activity("message", "1772441000002", "<p>The staging database is in <b>Frankfurt</b>.</p>", minute=1),
        activity(
            "messageUpdate",
            "1772441000001",
            "We decided the launch date is 19 May.",
            event_type="editMessage",
            minute=2,
        ),  # fmt: skip
        activity("messageDelete", "1772441000002", event_type="softDeleteMessage", minute=3),
    )
    assert sent == []  # capture is silent
    now = statements(lore, GENERAL)
    assert len(now) == 1 and "19 May" in now[0]
    first = lore.stores.messages.get_message(TENANT, GENERAL, "1772441000001")
    assert first.author_id == "aad-alice" and first.author_name == "Alice Example"
    assert first.permalink.startswith("https://teams.microsoft.com/l/message/19%3A4a95f7d8")
    assert f"groupId={GROUP}" in first.permalink and f"tenantId={TENANT}" in first.permalink
    assert lore.stores.messages.get_message(TENANT, GENERAL, "1772441000002").deleted_at is not None


def test_replies_carry_their_root_post_as_thread_and_membership_sets_visibility(lore):
    shared = activity("message", "1772441000014", "The Q3 budget sheet is attached.")
    shared["attachments"] = [
        {
            "contentType": "reference",
            "contentUrl": "https://acme.sharepoint.com/sites/eng/Shared%20Documents/q3-budget.xlsx",
            "name": "q3-budget.xlsx",
        }
    ]
    play(
        lore,
        shared,
        activity("message", "1772441000010", "Which region for the new cluster?"),
        activity("message", "1772441000011", "The new cluster region is eu-west-1.", root="1772441000010"),
        activity(
            "message",
            "1772441000012",
            "The Globex renewal price is 40 dollars.",
            channel=BOARD,
            channel_name="Board",
            membership="private",
        ),  # fmt: skip
        activity(
            "message",
            "1772441000013",
            "Maria owns the billing migration.",
            channel="19:unknowntype@thread.tacv2",
            channel_name="Ops",
            membership=None,
        ),  # fmt: skip
    )
    reply = lore.stores.messages.get_message(TENANT, GENERAL, "1772441000011")
    assert reply.thread_id == "1772441000010"
    root = lore.stores.messages.get_message(TENANT, GENERAL, "1772441000010")
    assert root is not None and root.thread_id is None
    channels = {c.channel: c.visibility for c in lore.stores.messages.channels(TENANT)}
    assert channels[GENERAL] is Visibility.PUBLIC and channels[BOARD] is Visibility.PRIVATE
    assert channels["19:unknowntype@thread.tacv2"] is Visibility.PRIVATE  # not known: the narrower audience
    (sheet,) = lore.search_media_references(Scope(TENANT, [GENERAL]), "budget", kind="spreadsheet")
    assert sheet.name == "q3-budget.xlsx" and sheet.message_id == "1772441000014"


def test_a_group_chat_is_dm(lore):
    chat = activity("message", "1772441000020", "The Globex renewal price is 40 dollars.")
    chat["conversation"] = {
        "conversationType": "groupChat",
        "tenantId": TENANT,
        "id": "19:1groupchat@thread.v2",
    }
    del chat["channelData"]["channel"], chat["channelData"]["team"]
    play(lore, chat)
    (dm,) = lore.stores.messages.channels(TENANT)
    assert dm.channel == "19:1groupchat@thread.v2" and dm.visibility is Visibility.DM


def test_a_channel_rename_updates_the_channel(lore):
    renamed = activity(
        "conversationUpdate", "f:rename", channel_name="Announcements", event_type="channelRenamed"
    )
    play(lore, activity("message", "1772441000030", "The release train leaves every Tuesday."), renamed)
    (general,) = lore.stores.messages.channels(TENANT)
    assert general.name == "Announcements" and general.visibility is Visibility.PUBLIC


def test_a_mention_is_answered_from_the_asking_channel_only_and_bots_get_nothing(lore):
    question = "what is the Globex renewal price?"
    sent = play(
        lore,
        activity(
            "message",
            "1772441000040",
            "The Globex renewal price is 40 dollars.",
            channel=BOARD,
            channel_name="Board",
            membership="private",
        ),  # fmt: skip
        activity("message", "1772441000041", "The Globex account manager is Dana."),
        activity("message", "1772441000042", question, mention_bot=True),  # asked in General
        activity(
            "message",
            "1772441000043",
            question,
            mention_bot=True,
            channel=BOARD,
            channel_name="Board",
            membership="private",
        ),  # fmt: skip
        activity(
            "message",
            "1772441000044",
            question,
            mention_bot=True,
            sender=OTHER_BOT,
            channel=BOARD,
            channel_name="Board",
            membership="private",
        ),  # fmt: skip
        activity("message", "1772441000045", "An answer of mine.", sender=BOT),
    )
    assert len(sent) == 2  # nothing for the other bot, nothing for itself
    outside, inside = (a.text for a in sent)
    assert "40 dollars" not in outside and "1772441000040" not in outside
    assert "40 dollars" in inside and "createdTime=1772441000040" in inside  # cites its source message
    assert "1772441000041" not in inside  # nothing from another channel
    assert sent[1].conversation.id == f"{BOARD};messageid=1772441000043"  # answered in the thread
    assert lore.stores.messages.get_message(TENANT, BOARD, "1772441000043") is None  # questions not stored


def test_malformed_and_unknown_activities_are_logged_and_skipped(lore, caplog):
    no_tenant = activity("message", "1772441000050", "The on-call rotation starts on Monday.")
    del no_tenant["channelData"]["tenant"], no_tenant["conversation"]["tenantId"]
    odd_channel_data = activity("message", "1772441000051", "x")
    odd_channel_data["channelData"] = ["not", "an", "object"]
    with caplog.at_level(logging.INFO, logger="teamlore.connectors.teams"):
        play(
            lore,
            no_tenant,
            odd_channel_data,
            activity("messageUpdate", "1772441000052", "x", event_type="undeleteMessage"),
            activity("messageDelete", "1772441000053"),  # no eventType
            activity("messageReaction", "1772441000054"),
            {"type": "somethingNew", "id": "1", "conversation": {"id": "c"}, "from": ALICE, "recipient": BOT},
            activity("message", "1772441000055", "The release train leaves every Tuesday."),
        )
    messages = " ".join(r.getMessage() for r in caplog.records)
    assert "skipped" in messages and "ignored" in messages
    assert statements(lore, GENERAL) == ["The release train leaves every Tuesday."]


def test_html_bodies_become_plain_text_with_mentions_as_names():
    body = '<div><p>Ask <at id="0">Maria Lopez</at> &amp; the team:</p><p>ship&nbsp;it</p></div>'
    assert to_text(body) == "Ask @Maria Lopez & the team:\nship it"


def graph_message(
    mid: str,
    text: str,
    minute: int,
    *,
    replies: list[dict[str, Any]] | None = None,
    reply_to: str | None = None,
    deleted: bool = False,
    kind: str = "message",
) -> dict[str, Any]:
    """A chatMessage resource as Graph v1.0 returns it."""
    return {
        "id": mid,
        "replyToId": reply_to,
        "etag": mid,
        "messageType": kind,
        "createdDateTime": f"2026-02-10T10:{minute:02d}:00.000Z",
        "lastModifiedDateTime": f"2026-02-10T10:{minute:02d}:00.000Z",
        "lastEditedDateTime": None,
        "deletedDateTime": f"2026-02-11T10:{minute:02d}:00.000Z" if deleted else None,
        "subject": None,
        "importance": "normal",
        "locale": "en-us",
        "webUrl": f"https://teams.microsoft.com/l/message/{GENERAL}/{mid}?tenantId={TENANT}&groupId={GROUP}"
        f"&parentMessageId={reply_to or mid}&createdTime={mid}",
        "from": {
            "application": None,
            "device": None,
            "user": {
                "@odata.type": "#microsoft.graph.teamworkUserIdentity",
                "id": "aad-alice",
                "displayName": "Alice Example",
                "userIdentityType": "aadUser",
                "tenantId": TENANT,
            },
        },
        "body": {"contentType": "html", "content": "" if deleted else f"<p>{text}</p>"},
        "channelIdentity": {"teamId": GROUP, "channelId": GENERAL},
        "attachments": [],
        "mentions": [],
        "reactions": [],
        **({"replies": replies} if replies is not None else {}),
    }


GRAPH_PAGES = [
    [
        graph_message(
            "1001",
            "Which region for the new cluster?",
            0,
            replies=[graph_message("1002", "The new cluster region is eu-west-1.", 1, reply_to="1001")],
        ),
        graph_message("1003", "Maria owns the billing migration.", 2),
    ],  # fmt: skip
    [
        graph_message("1004", "The release train leaves every Tuesday.", 3),
        graph_message("1005", "Alice added Bob to the team.", 4, kind="systemEventMessage"),
        graph_message("1006", "The hidden launch is in June.", 5, deleted=True),
    ],
]


def graph_server(pages: list[list[dict[str, Any]]]):
    """Graph's channel messages: ``$top`` pages chained by ``@odata.nextLink`` ($skiptoken), one
    429 with Retry-After on the second page's first call, bearer token required."""
    state = {"limited": False}

    def handle(request: Request) -> Response:
        if request.headers.get("authorization") != "Bearer graph-token":
            return Response(401, {"error": {"code": "InvalidAuthenticationToken"}})
        if not request.path.endswith("/messages"):
            return Response(404, {"error": {"code": "NotFound"}})
        page = int(request.query.get("$skiptoken", "0"))
        if page == 1 and not state["limited"]:
            state["limited"] = True
            return Response(429, {"error": {"code": "TooManyRequests"}}, {"Retry-After": "0"})
        body: dict[str, Any] = {"@odata.context": "https://graph.microsoft.com/v1.0/$metadata#messages",
                                "value": pages[page]}  # fmt: skip
        if page + 1 < len(pages):
            body["@odata.nextLink"] = (
                f"{server.url}/v1.0{request.path.removeprefix('/v1.0')}?$skiptoken={page + 1}"
            )
        return Response(body=body)

    server = LocalServer(handle)
    return server


def test_graph_history_pages_through_next_links_and_waits_out_a_429(lore):
    with graph_server(GRAPH_PAGES) as server:
        graph = GraphClient(graph_http(f"{server.url}/v1.0"), lambda: "graph-token")
        place = Place(TENANT, GENERAL, "General", Visibility.PUBLIC)
        history = GraphChannelHistory(graph, GROUP, place, lore.settings.max_message_chars)
        slept: list[float] = []
        report = run_backfill(
            "teams", TENANT, GENERAL, history, EventSink(lore), lore.stores.checkpoints, sleep=slept.append
        )
        calls = [(r.path, r.query) for r in server.requests]
    assert report.done and report.pages == 2 and report.rate_limited == 1 and slept == [0.0]
    assert calls[0][0].startswith(f"/v1.0/teams/{GROUP}/channels/") and calls[0][0].endswith("/messages")
    assert calls[0][1] == {"$top": "50", "$expand": "replies"}
    assert [q.get("$skiptoken") for _, q in calls] == [None, "1", "1"]  # the 429, then the same page
    assert statements(lore, GENERAL) == [
        "Maria owns the billing migration.",
        # The reply was read with its root post (it stands alone, so it is stated as it was said);
        # the question is no fact, its answer is.
        "The new cluster region is eu-west-1.",
        "The release train leaves every Tuesday.",
    ]
    reply = lore.stores.messages.get_message(TENANT, GENERAL, "1002")
    assert reply.thread_id == "1001" and "parentMessageId=1001" in reply.permalink


def test_graph_refuses_to_send_its_token_to_another_host(lore):
    pages = [[graph_message("1001", "Maria owns the billing migration.", 0)], []]
    with graph_server(pages) as server:
        graph = GraphClient(graph_http(f"{server.url}/v1.0"), lambda: "graph-token")
        place = Place(TENANT, GENERAL, "General", Visibility.PUBLIC)
        history = GraphChannelHistory(graph, GROUP, place, lore.settings.max_message_chars)
        first = history("")
        assert first.next_cursor is not None and first.next_cursor.startswith(server.url)  # control
        with pytest.raises(BackendUnavailable, match="outside the configured Graph host"):
            history("https://attacker.example/v1.0/teams/x/channels/y/messages?$skiptoken=1")


def test_the_messaging_endpoint_takes_activities_over_http_and_replies_through_the_connector(lore):
    """The whole hosted path: POST /api/messages (the SDK's aiohttp hosting and JWT middleware),
    the reply posted to the activity's serviceUrl as the Bot Connector REST API expects."""
    from aiohttp import ClientSession, web
    from microsoft_agents.authentication.msal import MsalConnectionManager
    from microsoft_agents.hosting.aiohttp import CloudAdapter
    from microsoft_agents.hosting.core import AgentAuthConfiguration

    from teamlore.connectors.teams.runner import MESSAGES_PATH, web_app

    async def serve(app: web.Application) -> tuple[web.AppRunner, str]:
        runner = web.AppRunner(app)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        return runner, f"http://127.0.0.1:{site._server.sockets[0].getsockname()[1]}"

    async def main() -> tuple[list[tuple[str, dict[str, Any]]], list[int]]:
        posted: list[tuple[str, dict[str, Any]]] = []

        async def connector(request: web.Request) -> web.Response:
            posted.append((request.path, await request.json()))
            return web.json_response({"id": "reply-1"})

        connector_app = web.Application()
        connector_app.router.add_post("/{tail:.*}", connector)
        connector_runner, connector_url = await serve(connector_app)
        statuses = []
        for anonymous in (False, True):  # control first: without a token the endpoint refuses
            auth = AgentAuthConfiguration(anonymous_allowed=anonymous)
            manager = MsalConnectionManager(connections_configurations={"SERVICE_CONNECTION": auth})
            agent = TeamloreTeamsAgent(lore)
            runner, url = await serve(web_app(agent, CloudAdapter(connection_manager=manager), auth))
            fact = activity("message", "1772441000060", "The Globex renewal price is 40 dollars.")
            question = activity(
                "message", "1772441000061", "what is the Globex renewal price?", mention_bot=True
            )
            async with ClientSession() as session:
                for payload in (fact, question, {"type": 5, "conversation": {"id": "c"}}):
                    payload["serviceUrl"] = f"{connector_url}/"
                    async with session.post(url + MESSAGES_PATH, json=payload) as response:
                        statuses.append(response.status)
            await agent.worker.close()
            await runner.cleanup()
        await connector_runner.cleanup()
        return posted, statuses

    posted, statuses = asyncio.run(main())
    assert statuses == [401, 401, 401, 202, 202, 400]  # refused without a token; a bad body is a 400
    (path, reply) = posted[0], posted[0][1]
    assert (
        len(posted) == 1
        and path[0] == f"/v3/conversations/{GENERAL};messageid=1772441000061/activities/1772441000061"
    )
    assert "40 dollars" in reply["text"] and reply["replyToId"] == "1772441000061"
    assert reply["from"]["id"] == BOT["id"] and reply["textFormat"] == "markdown"
