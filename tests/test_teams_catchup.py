"""Teams catch-up after downtime: on start, Graph's ``messages/delta`` filtered on
lastModifiedDateTime from the high-water mark brings what changed while the endpoint was down
(edits, deletes, new posts and replies), and the store ends equal to that of an agent that never
stopped (activities through the Agents SDK's pipeline; a local server speaking Graph)."""

from __future__ import annotations

from typing import Any

from teamlore.app import Teamlore
from teamlore.config import Settings
from teamlore.connectors.teams.catchup import catch_up_all

from .catchup_check import snapshot
from .local_http import LocalServer, Request, Response
from .test_teams import GENERAL, GROUP, TENANT, activity, graph_message, play

ROOT, REPLY, OLD, GONE, NEW, ANSWER = "1001", "1002", "1003", "1004", "1005", "1006"


def connector(tmp_path, name: str, embedder, clock, url: str) -> Teamlore:
    settings = Settings(
        data_dir=tmp_path / name,
        teams_tenant_id=TENANT,  # no TEAMLORE_TEAMS_TEAM_ID: the agent records each channel's team
        teams_graph_url=f"{url}/v1.0",
        _env_file=None,
    )
    return Teamlore(settings, embedder=embedder, clock=clock)


def graph(state: dict[str, list[dict[str, Any]]]) -> LocalServer:
    """The channel, and its messages changed since a time (delta, filtered), bearer token required."""

    def handle(request: Request) -> Response:
        if request.headers.get("authorization") != "Bearer graph-token":
            return Response(401, {"error": {"code": "InvalidAuthenticationToken"}})
        if request.path.endswith("/messages/delta"):
            since = request.query["$filter"].removeprefix("lastModifiedDateTime gt ")
            changed = [m for m in state["messages"] if m["lastModifiedDateTime"][:19] > since[:19]]
            return Response(body={"value": changed, "@odata.deltaLink": "https://graph.example/delta?t=1"})
        return Response(body={"id": GENERAL, "displayName": "General", "membershipType": "standard"})

    return LocalServer(handle)


def at(message: dict[str, Any], minute: int, modified: int | None = None, **update: Any) -> dict[str, Any]:
    """A Graph message created at 09:minute on the day the activities are sent."""
    created = f"2026-03-02T09:{minute:02d}:00.000Z"
    changed = f"2026-03-02T09:{modified if modified is not None else minute:02d}:00.000Z"
    return {**message, "createdDateTime": created, "lastModifiedDateTime": changed, **update}


def test_a_teams_endpoint_stopped_catches_up_from_graph_delta_on_start(tmp_path, embedder, clock):
    before = [
        activity("message", ROOT, "Alice owns the billing migration."),
        activity("message", REPLY, "The billing migration ships in June.", root=ROOT, minute=1),
        activity("message", OLD, "The launch date is 12 May.", minute=2),
        activity("message", GONE, "The office moves to Berlin.", minute=3),
    ]
    while_down = [
        activity("messageUpdate", OLD, "The launch date is 19 May.", event_type="editMessage", minute=4),
        activity("messageDelete", GONE, event_type="softDeleteMessage", minute=5),
        activity("message", NEW, "The design review is on Thursdays.", minute=6),
        activity("message", ANSWER, "Bob reviews the billing migration.", root=ROOT, minute=7),
    ]
    reply = at(graph_message(REPLY, "The billing migration ships in June.", 0, reply_to=ROOT), 1)
    answer = at(graph_message(ANSWER, "Bob reviews the billing migration.", 0, reply_to=ROOT), 7)
    state = {
        "messages": [  # the channel after the downtime; a new reply changes its root post
            at(graph_message(ROOT, "Alice owns the billing migration.", 0, replies=[reply, answer]), 0, 7),
            at(graph_message(OLD, "The launch date is 19 May.", 0), 2, 4),
            at(graph_message(GONE, "", 0, deleted=True), 3, 5, deletedDateTime="2026-03-02T09:05:00.000Z"),
            at(graph_message(NEW, "The design review is on Thursdays.", 0), 6),
        ]
    }
    with graph(state) as server:
        always = connector(tmp_path, "always", embedder, clock, server.url)
        restarted = connector(tmp_path, "restarted", embedder, clock, server.url)
        play(always, *before, *while_down)
        play(restarted, *before)  # then down
        assert snapshot(always, TENANT, [GENERAL]) != snapshot(restarted, TENANT, [GENERAL])  # control
        said: list[str] = []
        reports = catch_up_all(restarted, lambda: "graph-token", say=said.append, sleep=lambda _s: None)
        asked = [r for r in server.requests if r.path.endswith("/messages/delta")]
    assert len(reports) == 1 and said
    assert asked[0].query["$filter"] == "lastModifiedDateTime gt 2026-03-01T09:03:00Z"  # mark - window
    assert asked[0].path.startswith(f"/v1.0/teams/{GROUP}/channels/")  # the team the activities named
    expected = snapshot(always, TENANT, [GENERAL], deleted=[GONE])
    assert snapshot(restarted, TENANT, [GENERAL], deleted=[GONE]) == expected
    assert expected["deleted"] == {(GENERAL, GONE): True}
    assert expected["messages"][(GENERAL, OLD)][0] == "The launch date is 19 May."
    assert expected["messages"][(GENERAL, ANSWER)][1] == ROOT
    always.close()
    restarted.close()
