"""A local Mattermost server: REST API v4 (the calls the connector makes, the real pagination,
errors in Mattermost's schema, 429 with Retry-After), the files API (``/files/{id}`` and its
``/info``, served to the bot token only, recording the Authorization header of every download)
and the websocket on the same port, as the driver expects (authentication challenge, then
"hello", then the events a test pushes)."""

from __future__ import annotations

import asyncio
import json
import threading
from typing import Any

from aiohttp import web

TOKEN = "mm-bot-token"
BOT = {"id": "bot1", "username": "teamlore", "is_bot": True}


class FakeMattermost:
    def __init__(self) -> None:
        self.users: dict[str, dict[str, Any]] = {BOT["id"]: dict(BOT)}
        self.teams: dict[str, dict[str, Any]] = {"team1": {"id": "team1", "name": "acme"}}
        self.channels: dict[str, dict[str, Any]] = {}
        self.members: dict[str, set[str]] = {}
        self.posts: dict[str, list[dict[str, Any]]] = {}  # channel -> posts, oldest first
        self.created: list[dict[str, Any]] = []  # POST /posts bodies
        self.post_calls: list[dict[str, str]] = []  # query strings of channel post listings
        self.rate_limit_calls: dict[int, int] = {}  # listing call number -> Retry-After seconds
        self.sockets = 0
        self.files: dict[str, tuple[dict[str, Any], bytes]] = {}  # file id -> (FileInfo, bytes)
        self.file_redirects: dict[str, str] = {}  # file id -> where its download redirects
        self.downloads: list[tuple[str, str]] = []  # (path, Authorization header or "")
        self._loop = asyncio.new_event_loop()
        self._pending: list[str] = []  # frames pushed while no socket is connected
        self._current: asyncio.Queue[str | None] | None = None
        self._runner: web.AppRunner | None = None
        self.port = 0
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def __enter__(self) -> FakeMattermost:
        self._thread.start()
        asyncio.run_coroutine_threadsafe(self._start(), self._loop).result(10)
        return self

    def __exit__(self, *exc: object) -> None:
        asyncio.run_coroutine_threadsafe(self._stop(), self._loop).result(10)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(5)
        self._loop.close()

    def add_channel(self, channel_id: str, name: str, kind: str = "O", *, bot_member: bool = True) -> None:
        self.channels[channel_id] = {
            "id": channel_id,
            "name": name,
            "display_name": name.title(),
            "type": kind,
            "team_id": "" if kind in "DG" else "team1",
        }
        self.members[channel_id] = {BOT["id"]} if bot_member else set()

    def share(self, file_id: str, name: str, mime_type: str, data: bytes) -> dict[str, Any]:
        """Upload a file; its FileInfo, as a post's ``metadata.files`` carries it."""
        info = {
            "id": file_id,
            "name": name,
            "extension": name.rpartition(".")[2],
            "size": len(data),
            "mime_type": mime_type,
        }
        self.files[file_id] = (info, data)
        return dict(info)

    def push(self, frame: dict[str, Any] | str) -> None:
        """Send a frame to the connected websocket (queued until one connects)."""
        raw = frame if isinstance(frame, str) else json.dumps(frame)
        self._loop.call_soon_threadsafe(self._deliver, raw)

    def _deliver(self, raw: str) -> None:
        if self._current is None:
            self._pending.append(raw)
        else:
            self._current.put_nowait(raw)

    async def _start(self) -> None:
        app = web.Application()
        app.router.add_get("/api/v4/websocket", self._websocket)
        app.router.add_get("/api/v4/users/{user_id}", self._user)
        app.router.add_get("/api/v4/teams/{team_id}", self._team)
        app.router.add_get("/api/v4/channels/{channel_id}", self._channel)
        app.router.add_get("/api/v4/channels/{channel_id}/members/{user_id}", self._member)
        app.router.add_get("/api/v4/channels/{channel_id}/posts", self._channel_posts)
        app.router.add_post("/api/v4/posts", self._create_post)
        app.router.add_get("/api/v4/files/{file_id}", self._file)
        app.router.add_get("/api/v4/files/{file_id}/info", self._file_info)
        self._runner = web.AppRunner(app)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        self.port = self._runner.addresses[0][1]

    async def _stop(self) -> None:
        if self._current is not None:
            self._current.put_nowait(None)
        if self._runner is not None:
            await self._runner.cleanup()

    # --- websocket ---------------------------------------------------------------------------

    async def _websocket(self, request: web.Request) -> web.WebSocketResponse:
        socket = web.WebSocketResponse()
        await socket.prepare(request)
        challenge = json.loads((await socket.receive()).data)
        seq = challenge.get("seq")
        if challenge.get("action") != "authentication_challenge" or challenge["data"].get("token") != TOKEN:
            await socket.send_json(
                {
                    "status": "FAIL",
                    "seq_reply": seq,
                    "error": {"id": "api.web_socket_router.not_authenticated.app_error"},
                }
            )
            await socket.close()
            return socket
        self.sockets += 1
        await socket.send_json(
            {
                "event": "hello",
                "data": {"server_version": "10.5.0"},
                "broadcast": {"user_id": BOT["id"]},
                "seq": 0,
            }
        )
        await socket.send_json({"status": "OK", "seq_reply": seq})
        queue: asyncio.Queue[str | None] = asyncio.Queue()
        for raw in self._pending:
            queue.put_nowait(raw)
        self._pending.clear()
        self._current = queue

        async def until_closed() -> None:  # the client leaving ends this connection's sender
            async for _ in socket:
                pass
            if self._current is queue:
                self._current = None
            queue.put_nowait(None)

        reader = asyncio.create_task(until_closed())
        while (raw := await queue.get()) is not None and not socket.closed:
            await socket.send_str(raw)
        if self._current is queue:
            self._current = None
        reader.cancel()
        await socket.close()
        return socket

    # --- REST ---------------------------------------------------------------------------------

    def _authorized(self, request: web.Request) -> bool:
        return request.headers.get("Authorization") == f"Bearer {TOKEN}"

    async def _user(self, request: web.Request) -> web.Response:
        if not self._authorized(request):
            return _error(401, "api.context.session_expired.app_error")
        user_id = request.match_info["user_id"]
        found = self.users.get(BOT["id"] if user_id == "me" else user_id)
        return _json(found) if found else _error(404, "store.sql_user.missing")

    async def _team(self, request: web.Request) -> web.Response:
        found = self.teams.get(request.match_info["team_id"])
        return _json(found) if found else _error(404, "app.team.get.find.app_error")

    async def _channel(self, request: web.Request) -> web.Response:
        found = self.channels.get(request.match_info["channel_id"])
        if found is None:
            return _error(404, "app.channel.get.existing.app_error")
        return _json({**found, "total_msg_count": len(self.posts.get(found["id"], []))})

    async def _member(self, request: web.Request) -> web.Response:
        channel, user = request.match_info["channel_id"], request.match_info["user_id"]
        if user in self.members.get(channel, set()):
            return _json({"channel_id": channel, "user_id": user, "roles": "channel_user"})
        return _error(404, "app.channel.get_member.missing.app_error")

    async def _channel_posts(self, request: web.Request) -> web.Response:
        """GetPostsForChannel: newest first, page/per_page, before/after a post id."""
        self.post_calls.append(dict(request.query))
        retry = self.rate_limit_calls.get(len(self.post_calls))
        if retry is not None:
            return web.Response(status=429, text="limit exceeded", headers={"Retry-After": str(retry)})
        channel = request.match_info["channel_id"]
        if channel not in self.channels:
            return _error(404, "app.channel.get.existing.app_error")
        if since := int(request.query.get("since") or 0):
            # GetPostsSince: every post changed after the time, deleted ones too; not paged.
            changed = [p for p in self.posts.get(channel, []) if p.get("update_at", 0) > since]
            order = [p["id"] for p in reversed(changed)]
            return _json({"order": order, "posts": {p["id"]: p for p in changed}, "prev_post_id": ""})
        newest_first = [p for p in reversed(self.posts.get(channel, [])) if not p.get("delete_at")]
        ids = [p["id"] for p in newest_first]
        if before := request.query.get("before"):
            newest_first = newest_first[ids.index(before) + 1 :] if before in ids else []
        if after := request.query.get("after"):
            newest_first = newest_first[: ids.index(after)] if after in ids else []
        page, per_page = int(request.query.get("page", 0)), int(request.query.get("per_page", 60))
        chosen = newest_first[page * per_page : (page + 1) * per_page]
        rest = newest_first[(page + 1) * per_page :]
        return _json(
            {
                "order": [p["id"] for p in chosen],
                "posts": {p["id"]: p for p in chosen},
                "next_post_id": "",
                "prev_post_id": rest[0]["id"] if rest else "",
                "has_next": bool(rest),
            }
        )

    async def _create_post(self, request: web.Request) -> web.Response:
        if not self._authorized(request):
            return _error(401, "api.context.session_expired.app_error")
        body = await request.json()
        self.created.append(body)
        return _json({"id": f"answer{len(self.created)}", "create_at": 1_767_700_000_000, **body}, 201)

    async def _file(self, request: web.Request) -> web.Response:
        file_id = request.match_info["file_id"]
        self.downloads.append((request.path, request.headers.get("Authorization", "")))
        if not self._authorized(request):
            return _error(401, "api.context.session_expired.app_error")
        if file_id in self.file_redirects:
            raise web.HTTPFound(self.file_redirects[file_id])
        found = self.files.get(file_id)
        if found is None:
            return _error(404, "app.file_info.get.app_error")
        info, data = found
        return web.Response(body=data, content_type=info["mime_type"] or "application/octet-stream")

    async def _file_info(self, request: web.Request) -> web.Response:
        if not self._authorized(request):
            return _error(401, "api.context.session_expired.app_error")
        found = self.files.get(request.match_info["file_id"])
        return _json(found[0]) if found else _error(404, "app.file_info.get.app_error")


def _json(data: Any, status: int = 200) -> web.Response:
    # Mattermost answers "application/json" without a charset; the driver checks for exactly that.
    return web.Response(status=status, body=json.dumps(data).encode(), content_type="application/json")


def _error(status: int, error_id: str) -> web.Response:
    return _json(
        {
            "id": error_id,
            "message": error_id,
            "detailed_error": "",
            "request_id": "r1",
            "status_code": status,
        },
        status,
    )
