"""Teams catch-up after downtime: on start, Graph's ``messages/delta`` filtered on
lastModifiedDateTime from the high-water mark brings what changed while the endpoint was down
(edits, deletes, new posts and replies); the store ends equal to one that never stopped (here:
one that read the whole channel afterwards). A local server speaks Graph's protocol."""

from __future__ import annotations

from typing import Any

from teamlore.app import Teamlore
from teamlore.config import Settings
from teamlore.connectors.teams import runner
from teamlore.connectors.teams.catchup import catch_up_all

from .catchup_check import snapshot
from .local_http import LocalServer, Request, Response
from .test_teams import GENERAL, GROUP, TENANT, graph_message


def connector(tmp_path, name: str, embedder, clock, url: str) -> Teamlore:
    settings = Settings(
        data_dir=tmp_path / name,
        teams_tenant_id=TENANT,
        teams_team_id=GROUP,
        teams_graph_url=f"{url}/v1.0",
        _env_file=None,
    )
    return Teamlore(settings, embedder=embedder, clock=clock)


def graph(state: dict[str, list[dict[str, Any]]]) -> LocalServer:
    """The channel, its messages (all, or changed since a time through delta)."""

    def handle(request: Request) -> Response:
        if request.headers.get("authorization") != "Bearer graph-token":
            return Response(401, {"error": {"code": "InvalidAuthenticationToken"}})
        if request.path.endswith("/messages/delta"):
            since = request.query["$filter"].removeprefix("lastModifiedDateTime gt ")
            changed = [m for m in state["messages"] if m["lastModifiedDateTime"][:19] > since[:19]]
            return Response(body={"value": changed, "@odata.deltaLink": "https://graph.example/delta?t=1"})
        if request.path.endswith("/messages"):
            return Response(body={"value": state["messages"]})
        return Response(body={"id": GENERAL, "displayName": "General", "membershipType": "standard"})

    return LocalServer(handle)


def changed(message: dict[str, Any], minute: int, **update: Any) -> dict[str, Any]:
    return {**message, "lastModifiedDateTime": f"2026-02-10T11:{minute:02d}:00.000Z", **update}


def test_a_teams_endpoint_stopped_catches_up_from_graph_delta_on_start(tmp_path, embedder, clock):
    reply = graph_message("1002", "The billing migration ships in June.", 1, reply_to="1001")
    root = graph_message("1001", "Alice owns the billing migration.", 0, replies=[reply])
    old = graph_message("1003", "The launch date is 12 May.", 2)
    gone = graph_message("1004", "The office moves to Berlin.", 3)
    state = {"messages": [root, old, gone]}
    with graph(state) as server:
        always = connector(tmp_path, "always", embedder, clock, server.url)
        restarted = connector(tmp_path, "restarted", embedder, clock, server.url)
        for lore in (always, restarted):
            runner.backfill(
                lore, GENERAL, say=lambda _: None, token=lambda: "graph-token", sleep=lambda _s: None
            )
        # Down: an edit, a delete, a new post and a new reply (which changes its root).
        answer = graph_message("1006", "Bob reviews the billing migration.", 6, reply_to="1001")
        state["messages"] = [
            changed(root, 6, replies=[reply, answer]),
            changed(old, 4, body={"contentType": "html", "content": "<p>The launch date is 19 May.</p>"}),
            changed(
                gone,
                5,
                deletedDateTime="2026-02-10T11:05:00.000Z",
                body={"contentType": "html", "content": ""},
            ),
            graph_message("1005", "The design review is on Thursdays.", 7)
            | {"lastModifiedDateTime": "2026-02-10T11:07:00.000Z"},
        ]
        assert snapshot(always, TENANT, [GENERAL]) == snapshot(restarted, TENANT, [GENERAL])
        runner.backfill(
            always,
            GENERAL,
            say=lambda _: None,
            token=lambda: "graph-token",
            restart=True,
            sleep=lambda _s: None,
        )
        assert snapshot(always, TENANT, [GENERAL]) != snapshot(restarted, TENANT, [GENERAL])  # control
        said: list[str] = []
        reports = catch_up_all(restarted, lambda: "graph-token", say=said.append, sleep=lambda _s: None)
        asked = [r for r in server.requests if r.path.endswith("/delta")]
    assert len(reports) == 1 and asked and said
    expected = snapshot(always, TENANT, [GENERAL], deleted=["1004"])
    assert snapshot(restarted, TENANT, [GENERAL], deleted=["1004"]) == expected
    assert expected["deleted"] == {(GENERAL, "1004"): True}
    assert expected["messages"][(GENERAL, "1003")][0] == "The launch date is 19 May."
    assert expected["messages"][(GENERAL, "1006")][1] == "1001"
    always.close()
    restarted.close()
