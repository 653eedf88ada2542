"""A local Slack Web API: the methods the connector calls, Slack's cursor pagination, 429s.

It speaks the real protocol (``/api/METHOD``, form, query or JSON arguments, a bearer token,
``{"ok": ...}`` bodies, ``response_metadata.next_cursor``, ``Retry-After``), so slack_sdk's
WebClient and Bolt talk to it exactly as to slack.com. Tests fill its tables and read what it
recorded.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qsl, urlsplit

TOKEN = "xoxb-test-token"
APP_TOKEN = "xapp-test-token"
SECRET = "test-signing-secret"
TEAM = "T1"
BOT_USER = "UBOT"
BOT_ID = "BBOT"


class FakeSlack:
    def __init__(self) -> None:
        self.channels: dict[str, dict[str, Any]] = {}
        self.users: dict[str, dict[str, Any]] = {}
        self.history: dict[str, list[dict[str, Any]]] = {}  # channel -> messages, newest first
        self.replies: dict[tuple[str, str], list[dict[str, Any]]] = {}  # (channel, parent ts) -> thread
        self.calls: list[tuple[str, dict[str, Any]]] = []
        self.posted: list[dict[str, Any]] = []
        self.responses: list[dict[str, Any]] = []  # what came to a response_url
        self.rate_limit_calls: dict[int, int] = {}  # history/replies call number -> Retry-After
        self._history_calls = 0
        self.socket_url = ""  # what apps.connections.open hands out (Socket Mode)
        # Shared files' bytes by file id, served at url_private (``/files-pri/T1-F1/name``) to the
        # bot token only; anyone else gets Slack's sign-in page (HTML, status 200), as from Slack.
        self.files: dict[str, tuple[str, str, bytes]] = {}  # id -> (name, mimetype, bytes)
        self.downloads: list[tuple[str, str]] = []  # (path, the Authorization header sent)
        self.file_status: dict[str, int] = {}  # file id -> an HTTP status to answer instead
        self._lock = threading.Lock()
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self.thread = threading.Thread(target=self.server.serve_forever, args=(0.05,), daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_port}/api/"

    @property
    def response_url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_port}/response/1"

    def __enter__(self) -> FakeSlack:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()

    def add_channel(self, channel_id: str, name: str, *, private: bool = False, member: bool = True) -> None:
        self.channels[channel_id] = {
            "id": channel_id,
            "name": name,
            "is_private": private,
            "is_member": member,
            "created": 1_767_225_600,  # 2026-01-01
        }

    def share(self, file_id: str, name: str, mimetype: str, data: bytes) -> dict[str, Any]:
        """Hold a file and return the file object Slack puts on a ``file_share`` message."""
        self.files[file_id] = (name, mimetype, data)
        base = f"http://127.0.0.1:{self.server.server_port}"
        return {
            "id": file_id,
            "name": name,
            "title": name,
            "mimetype": mimetype,
            "filetype": name.rpartition(".")[2],
            "size": len(data),
            "url_private": f"{base}/files-pri/{TEAM}-{file_id}/{name}",
            "url_private_download": f"{base}/files-pri/{TEAM}-{file_id}/download/{name}",
            "permalink": f"https://acme.slack.com/files/U1/{file_id}/{name}",
        }

    def method_calls(self, method: str) -> list[dict[str, Any]]:
        return [args for name, args in self.calls if name == method]

    # --- the API --------------------------------------------------------------------------

    def _answer(self, method: str, args: dict[str, Any]) -> tuple[int, dict[str, Any], dict[str, str]]:
        with self._lock:
            self.calls.append((method, args))
            if method in ("conversations.history", "conversations.replies"):
                self._history_calls += 1
                retry = self.rate_limit_calls.get(self._history_calls)
                if retry is not None:
                    return 429, {"ok": False, "error": "ratelimited"}, {"Retry-After": str(retry)}
        handler = getattr(self, "_" + method.replace(".", "_"), None)
        if handler is None:
            return 200, {"ok": False, "error": "unknown_method"}, {}
        return 200, handler(args), {}

    def _auth_test(self, args: dict[str, Any]) -> dict[str, Any]:
        return {
            "ok": True,
            "url": "https://acme.slack.com/",
            "team": "Acme",
            "user": "teamlore",
            "team_id": TEAM,
            "user_id": BOT_USER,
            "bot_id": BOT_ID,
        }

    def _conversations_info(self, args: dict[str, Any]) -> dict[str, Any]:
        found = self.channels.get(args.get("channel", ""))
        return {"ok": True, "channel": found} if found else {"ok": False, "error": "channel_not_found"}

    def _conversations_join(self, args: dict[str, Any]) -> dict[str, Any]:
        found = self.channels.get(args.get("channel", ""))
        if found is None or found["is_private"]:
            return {"ok": False, "error": "channel_not_found"}
        found["is_member"] = True
        return {"ok": True, "channel": found}

    def _users_info(self, args: dict[str, Any]) -> dict[str, Any]:
        found = self.users.get(args.get("user", ""))
        return {"ok": True, "user": found} if found else {"ok": False, "error": "user_not_found"}

    def _conversations_history(self, args: dict[str, Any]) -> dict[str, Any]:
        channel = self.channels.get(args.get("channel", ""))
        if channel is None:
            return {"ok": False, "error": "channel_not_found"}
        if not channel["is_member"]:
            return {"ok": False, "error": "not_in_channel"}
        listed = self.history.get(channel["id"], [])
        if args.get("oldest"):  # only messages after it (Slack's default: exclusive)
            listed = [m for m in listed if float(m["ts"]) > float(args["oldest"])]
        return _paged(listed, args, "messages")

    def _conversations_replies(self, args: dict[str, Any]) -> dict[str, Any]:
        thread = self.replies.get((args.get("channel", ""), args.get("ts", "")))
        if thread is None:
            return {"ok": False, "error": "thread_not_found"}
        return _paged(thread, args, "messages")

    def _chat_postMessage(self, args: dict[str, Any]) -> dict[str, Any]:
        self.posted.append(args)
        ts = f"{time.time():.6f}"
        return {"ok": True, "channel": args.get("channel"), "ts": ts, "message": {"text": args.get("text")}}

    def _served_file(self, handler: BaseHTTPRequestHandler) -> bool:
        """Answer a url_private request (True), or leave it to the API (False)."""
        if not handler.path.startswith("/files-pri/"):
            return False
        status, mimetype, data = self._file_answer(handler.path, handler.headers.get("Authorization") or "")
        handler.send_response(status)
        handler.send_header("Content-Type", mimetype)
        handler.send_header("Content-Length", str(len(data)))
        handler.end_headers()
        handler.wfile.write(data)
        return True

    def _file_answer(self, path: str, auth: str) -> tuple[int, str, bytes]:
        """url_private: the bytes to the bot token; Slack's sign-in page (200, HTML) to anyone else."""
        self.downloads.append((path, auth))
        file_id = path.split("/")[2].removeprefix(f"{TEAM}-")
        held = self.files.get(file_id)
        status = self.file_status.get(file_id)
        if status is not None or held is None:
            return status or 404, "text/plain", b"not found"
        if auth != f"Bearer {TOKEN}":
            return 200, "text/html; charset=utf-8", b"<!DOCTYPE html><title>Slack</title>Sign in"
        return 200, held[1], held[2]

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: object) -> None:  # noqa: A002
                pass

            def do_GET(self) -> None:
                if not fake._served_file(self):
                    self._serve(dict(parse_qsl(urlsplit(self.path).query)))

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length).decode()
                if self.headers.get("Content-Type", "").startswith("application/json"):
                    args = json.loads(raw or "{}")
                else:
                    args = dict(parse_qsl(raw))
                args.update(parse_qsl(urlsplit(self.path).query))
                if self.path.startswith("/response/"):
                    fake.responses.append(args)
                    self._send(200, {"ok": True}, {})
                    return
                self._serve(args)

            def _serve(self, args: dict[str, Any]) -> None:
                method = urlsplit(self.path).path.removeprefix("/api/")
                if method == "apps.connections.open":
                    ok = self.headers.get("Authorization") == f"Bearer {APP_TOKEN}"
                    body = (
                        {"ok": True, "url": fake.socket_url} if ok else {"ok": False, "error": "invalid_auth"}
                    )
                    self._send(200, body, {})
                    return
                if self.headers.get("Authorization") != f"Bearer {TOKEN}":
                    self._send(200, {"ok": False, "error": "invalid_auth"}, {})
                    return
                self._send(*fake._answer(method, args))

            def _send(self, status: int, body: dict[str, Any], headers: dict[str, str]) -> None:
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json; charset=utf-8")
                self.send_header("Content-Length", str(len(data)))
                for key, value in headers.items():
                    self.send_header(key, value)
                self.end_headers()
                self.wfile.write(data)

        return Handler


def _paged(items: list[dict[str, Any]], args: dict[str, Any], key: str) -> dict[str, Any]:
    """Slack's cursor pagination: an opaque cursor, ``has_more``, ``response_metadata``."""
    limit = int(args.get("limit") or 100)
    cursor = args.get("cursor") or ""
    start = int(base64.b64decode(cursor).decode().removeprefix("next:")) if cursor else 0
    page = items[start : start + limit]
    more = start + limit < len(items)
    following = base64.b64encode(f"next:{start + limit}".encode()).decode() if more else ""
    return {"ok": True, key: page, "has_more": more, "response_metadata": {"next_cursor": following}}


def sign(body: bytes, timestamp: int, secret: str = SECRET) -> dict[str, str]:
    """Slack's request signature: v0=HMAC-SHA256(secret, "v0:{timestamp}:{body}")."""
    base = b"v0:" + str(timestamp).encode() + b":" + body
    digest = hmac.new(secret.encode(), base, hashlib.sha256).hexdigest()
    return {"X-Slack-Request-Timestamp": str(timestamp), "X-Slack-Signature": f"v0={digest}"}


class SocketModeServer:
    """Slack's Socket Mode end: "hello", then envelopes the test sends; records the acks."""

    def __init__(self) -> None:
        import asyncio

        self._asyncio = asyncio
        self.acks: list[dict[str, Any]] = []
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)
        self._sockets: list[Any] = []
        self._runner: Any = None
        self.port = 0

    @property
    def url(self) -> str:
        return f"ws://127.0.0.1:{self.port}/link"

    def __enter__(self) -> SocketModeServer:
        self._thread.start()
        self._asyncio.run_coroutine_threadsafe(self._start(), self._loop).result(10)
        return self

    def __exit__(self, *exc: object) -> None:
        self._asyncio.run_coroutine_threadsafe(self._stop(), self._loop).result(10)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(5)
        self._loop.close()

    def send(self, envelope: dict[str, Any]) -> None:
        async def push() -> None:
            for socket in list(self._sockets):
                await socket.send_str(json.dumps(envelope))

        self._asyncio.run_coroutine_threadsafe(push(), self._loop).result(10)

    @property
    def connected(self) -> int:
        return len(self._sockets)

    async def _start(self) -> None:
        from aiohttp import web

        app = web.Application()
        app.router.add_get("/link", self._link)
        self._runner = web.AppRunner(app)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        self.port = self._runner.addresses[0][1]

    async def _stop(self) -> None:
        for socket in list(self._sockets):
            await socket.close()
        await self._runner.cleanup()

    async def _link(self, request: Any) -> Any:
        from aiohttp import WSMsgType, web

        socket = web.WebSocketResponse()
        await socket.prepare(request)
        self._sockets.append(socket)
        await socket.send_str(json.dumps({"type": "hello", "num_connections": 1, "debug_info": {}}))
        async for message in socket:
            if message.type == WSMsgType.TEXT:
                self.acks.append(json.loads(message.data))
        self._sockets.remove(socket)
        return socket
