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


APP_ID = "00000000-0000-0000-0000-00000000a991"
BF_ISSUER = "https://api.botframework.com"


def rsa_key():
    from cryptography.hazmat.primitives.asymmetric import rsa

    return rsa.generate_private_key(public_exponent=65537, key_size=2048)


def signed(key, kid: str, **claims: Any) -> str:
    import time

    import jwt

    now = int(time.time())
    body = {"iss": BF_ISSUER, "aud": APP_ID, "nbf": now - 10, "exp": now + 600, **claims}
    return jwt.encode(body, key, algorithm="RS256", headers={"kid": kid})


class OutboundToken:
    """The SDK's connection manager with a fixed token for the outbound Bot Connector clients,
    whose edge is Entra's token endpoint; inbound validation, under test, is untouched."""

    def __new__(cls, **options: Any):
        from microsoft_agents.authentication.msal import MsalConnectionManager
        from microsoft_agents.hosting.core.authorization.anonymous_token_provider import (
            AnonymousTokenProvider,
        )

        class Fixed(AnonymousTokenProvider):
            async def get_access_token(
                self, resource_url: str, scopes: list[str], force_refresh: bool = False
            ):
                return "outbound-token"

        manager = MsalConnectionManager(**options)
        manager.get_token_provider = lambda *_args: Fixed()
        return manager


def test_the_endpoint_accepts_only_tokens_signed_by_the_published_keys_for_this_app(
    lore, tmp_path, monkeypatch
):
    """Real Bot Framework token validation (the SDK's JWT middleware, PyJWT, a JWKS fetched over
    HTTP) against a local OpenID metadata endpoint and key set, with a locally signed JWT."""
    import asyncio
    import json

    import jwt
    from aiohttp import ClientSession, web
    from microsoft_agents.hosting.aiohttp import CloudAdapter
    from microsoft_agents.hosting.core.authorization.jwt import jwt_token_validator

    from teamlore.config import Settings
    from teamlore.connectors.teams import runner
    from teamlore.connectors.teams.agent import TeamloreTeamsAgent

    trusted, stranger = rsa_key(), rsa_key()
    published = {
        **json.loads(jwt.algorithms.RSAAlgorithm.to_jwk(trusted.public_key())),
        "kid": "k1",
        "use": "sig",
    }

    async def main() -> list[int]:
        async def key_set(_request: web.Request) -> web.Response:
            return web.json_response({"keys": [published]})

        async def metadata(request: web.Request) -> web.Response:
            jwks = f"{request.url.origin()}/v1/.well-known/keys"
            return web.json_response({"issuer": BF_ISSUER, "jwks_uri": jwks})

        keys = web.Application()
        keys.router.add_get("/v1/.well-known/keys", key_set)
        keys.router.add_get("/v1/.well-known/openidconfiguration", metadata)
        keys_runner = web.AppRunner(keys)
        await keys_runner.setup()
        site = web.TCPSite(keys_runner, "127.0.0.1", 0)
        await site.start()
        keys_url = f"http://127.0.0.1:{site._server.sockets[0].getsockname()[1]}"
        async with (
            ClientSession() as session,
            session.get(f"{keys_url}/v1/.well-known/openidconfiguration") as r,
        ):
            jwks_uri = (await r.json())["jwks_uri"]  # where the Bot Framework's metadata says its keys are
        # The SDK goes straight to the key set published for a token's issuer; here it is local (for
        # the foreign issuer too, so that token fails on its issuer, not on an unreachable host).
        for issuer in (BF_ISSUER, "https://issuer.example"):
            monkeypatch.setitem(jwt_token_validator.BOTFRAMEWORK_JWKS_URIS, issuer, jwks_uri)
        settings = Settings(data_dir=tmp_path / "teams", teams_app_id=APP_ID, teams_tenant_id=TENANT,
                            teams_app_password="secret", _env_file=None)  # fmt: skip
        configured = runner.auth_configuration(type("L", (), {"settings": settings})())
        manager = OutboundToken(connections_configurations={"SERVICE_CONNECTION": configured})
        agent = TeamloreTeamsAgent(lore)
        app_runner = web.AppRunner(
            runner.web_app(agent, CloudAdapter(connection_manager=manager), configured)
        )
        await app_runner.setup()
        app_site = web.TCPSite(app_runner, "127.0.0.1", 0)
        await app_site.start()
        url = f"http://127.0.0.1:{app_site._server.sockets[0].getsockname()[1]}{runner.MESSAGES_PATH}"
        tokens = [
            signed(stranger, "k1"),  # signed by a key the key set does not hold
            signed(trusted, "k1", aud="someone-else"),  # for another app
            signed(trusted, "k1", exp=1_000_000, nbf=999_000),  # expired long ago
            signed(trusted, "k1", iss="https://issuer.example"),  # right key, an issuer not allowed
            signed(trusted, "k1"),  # control: Microsoft's key, this app
        ]
        statuses = []
        async with ClientSession() as session:
            for n, token in enumerate(tokens):
                payload = activity(
                    "message", f"17724410001{n:02d}", f"Decision {n}: the build server moves to rack {n}."
                )
                headers = {"Authorization": f"Bearer {token}"}
                async with session.post(url, json=payload, headers=headers) as response:
                    statuses.append(response.status)
        await agent.worker.close()
        await app_runner.cleanup()
        await keys_runner.cleanup()
        return statuses

    statuses = asyncio.run(main())
    assert statuses == [401, 401, 401, 401, 202]
    stored = [n for n in range(5) if lore.stores.messages.get_message(TENANT, GENERAL, f"17724410001{n:02d}")]
    assert stored == [4]
