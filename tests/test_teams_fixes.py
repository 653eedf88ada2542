"""Teams: a 1:1 chat with the bot is a conversation of questions (answered without a mention, never
stored), and Graph replies past the 1,000 inlined are followed (SDK pipeline; local Graph)."""

from __future__ import annotations

from typing import Any

from teamlore.connectors.backfill import run_backfill
from teamlore.connectors.delivery import EventSink
from teamlore.connectors.teams.graph import GraphChannelHistory, GraphClient, graph_http
from teamlore.connectors.teams.normalize import Place
from teamlore.domain import Visibility

from .local_http import LocalServer, Request, Response
from .test_teams import BOARD, GENERAL, GROUP, TENANT, activity, graph_message, play


def personal(mid: str, text: str) -> dict[str, Any]:
    chat = activity("message", mid, text)
    chat["conversation"] = {"conversationType": "personal", "tenantId": TENANT, "id": "a:1personalchat"}
    del chat["channelData"]["channel"], chat["channelData"]["team"]
    return chat


def test_a_personal_chat_is_answered_without_a_mention_and_not_stored(lore):
    sent = play(
        lore,
        activity("message", "1772441000050", "The Globex renewal price is 40 dollars."),  # General: standard
        activity(
            "message",
            "1772441000051",
            "The Initech renewal price is 90 dollars.",
            channel=BOARD,
            channel_name="Board",
            membership="private",
        ),  # fmt: skip
        personal("1772441000052", "what is the Globex renewal price?"),
        personal("1772441000053", "what is the Initech renewal price?"),  # control: a private channel's
    )
    assert len(sent) == 2
    globex, initech = (a.text for a in sent)
    assert "40 dollars" in globex and "createdTime=1772441000050" in globex
    assert "90 dollars" not in initech and "1772441000051" not in initech
    assert sent[0].conversation.id == "a:1personalchat"
    assert lore.stores.messages.get_message(TENANT, "a:1personalchat", "1772441000052") is None
    assert {c.channel for c in lore.stores.messages.channels(TENANT)} == {GENERAL, BOARD}


def test_a_personal_chat_with_no_standard_channel_known_says_so(lore):
    (reply,) = play(lore, personal("1772441000054", "what is the Globex renewal price?"))
    assert reply.text == "I know no standard channel here yet."


def test_replies_past_those_graph_inlines_follow_their_next_link(lore):
    replies = [graph_message(f"20{n:02d}", f"Step {n} of the migration is owned by team {n}.", n,
                             reply_to="2000") for n in range(1, 6)]  # fmt: skip

    def handle(request: Request) -> Response:
        if request.headers.get("authorization") != "Bearer graph-token":
            return Response(401, {"error": {"code": "InvalidAuthenticationToken"}})
        base = f"{server.url}/v1.0/teams/{GROUP}/channels/{GENERAL}/messages/2000/replies"
        if request.path.endswith("/replies"):
            page = int(request.query["$skiptoken"])
            body: dict[str, Any] = {"value": replies[2 * page : 2 * page + 2]}
            if 2 * page + 2 < len(replies):
                body["@odata.nextLink"] = f"{base}?$skiptoken={page + 1}"
            return Response(body=body)
        root = graph_message("2000", "The migration plan is in the wiki.", 0, replies=replies[:2])
        return Response(body={"value": [{**root, "replies@odata.nextLink": f"{base}?$skiptoken=1"}]})

    with LocalServer(handle) as server:
        graph = GraphClient(graph_http(f"{server.url}/v1.0"), lambda: "graph-token")
        history = GraphChannelHistory(
            graph, GROUP, Place(TENANT, GENERAL, "General", Visibility.PUBLIC), 40_000
        )
        report = run_backfill("teams", TENANT, GENERAL, history, EventSink(lore), lore.stores.checkpoints)
        asked = [r.query.get("$skiptoken") for r in server.requests if r.path.endswith("/replies")]
    assert report.done and report.fetched == 6 and asked == ["1", "2"]
    for n in range(1, 6):
        stored = lore.stores.messages.get_message(TENANT, GENERAL, f"20{n:02d}")
        assert stored is not None and stored.thread_id == "2000"
