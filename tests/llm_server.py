"""A local server speaking the OpenAI chat-completions and embeddings protocol over real HTTP,
scripted per test: queued replies first (an answer, a status with headers, a delay), then a
default responder that reads the request. Every request is recorded, with when it arrived.

Also the "faithful model" the tests and bench/llm_calls.py use as a default: for each role it
returns valid output built only from what the prompt gave it.
"""

from __future__ import annotations

import email.policy
import hashlib
import json
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from email.parser import BytesParser
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from teamlore.extraction import entities_of
from teamlore.extraction.cues import fired
from teamlore.extraction.head import TYPES
from teamlore.llm.prompts import BEGIN, END


@dataclass
class Reply:
    status: int = 200
    content: str | None = None  # the assistant message's text (a chat completion is built around it)
    body: bytes | None = None  # or the raw HTTP body
    headers: dict[str, str] = field(default_factory=dict)
    delay_s: float = 0.0
    usage: tuple[int, int] | None = None  # None: estimated from the text, 4 characters a token
    finish_reason: str = "stop"


@dataclass
class Request:
    path: str
    headers: dict[str, str]
    body: dict[str, Any]
    at: float

    @property
    def user(self) -> str:
        content = next(m["content"] for m in self.body["messages"] if m["role"] == "user")
        if isinstance(content, list):  # a vision request: its text parts (images are not text)
            return "\n".join(part["text"] for part in content if part.get("type") == "text")
        return content

    @property
    def images(self) -> list[str]:
        """The data URIs of a vision request's image parts."""
        content = next(m["content"] for m in self.body["messages"] if m["role"] == "user")
        if not isinstance(content, list):
            return []
        return [part["image_url"]["url"] for part in content if part.get("type") == "image_url"]

    @property
    def system(self) -> str:
        return next(m["content"] for m in self.body["messages"] if m["role"] == "system")

    @property
    def data(self) -> Any:
        """The JSON between the data markers of the user message."""
        text = self.user
        return json.loads(text[text.index(BEGIN) + len(BEGIN) : text.rindex(END)])

    @property
    def role(self) -> str:
        first = self.user.split("\n", 1)[0]
        for prefix, role in (
            ("Extract", "extract"),
            ("How does", "judge"),
            ("Write", "write"),
            ("Answer", "answer"),
        ):
            if first.startswith(prefix):
                return role
        return "unknown"


Responder = Callable[[Request], Reply]


class ScriptedModel:
    def __init__(self, default: Responder | None = None) -> None:
        self.requests: list[Request] = []
        self.queue: deque[Reply] = deque()
        self.default = default or faithful
        self.models = ["gpt-4o-mini"]  # what GET /v1/models lists
        self._stop = threading.Event()
        model = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):  # noqa: N802 - http.server's name
                raw = self.rfile.read(int(self.headers["Content-Length"]))
                kind = self.headers.get("Content-Type", "")
                body = _multipart(kind, raw) if kind.startswith("multipart/") else json.loads(raw)
                request = Request(
                    self.path, {k.lower(): v for k, v in self.headers.items()}, body, time.monotonic()
                )
                model.requests.append(request)
                reply = model._reply(request)
                if reply.delay_s and model._stop.wait(reply.delay_s):
                    return
                payload = reply.body if reply.body is not None else model._payload(request, reply)
                try:
                    self.send_response(reply.status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(payload)))
                    for name, value in reply.headers.items():
                        self.send_header(name, value)
                    self.end_headers()
                    self.wfile.write(payload)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up (a timeout test)

            def do_GET(self):  # noqa: N802 - http.server's name
                if not self.path.endswith("/models"):
                    self.send_error(404)
                    return
                listed = [
                    {"id": name, "object": "model", "created": 0, "owned_by": "test"} for name in model.models
                ]
                payload = json.dumps({"object": "list", "data": listed}).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            def log_message(self, *args):
                pass

        class Server(ThreadingHTTPServer):
            daemon_threads = True

            def handle_error(self, request, client_address):
                pass

        self.server = Server(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"
        threading.Thread(
            target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        ).start()

    def _reply(self, request: Request) -> Reply:
        if request.path.endswith("/embeddings"):
            return Reply()
        return self.queue.popleft() if self.queue else self.default(request)

    def _payload(self, request: Request, reply: Reply) -> bytes:
        if request.path.endswith("/embeddings"):
            return json.dumps(_embeddings(request.body)).encode()
        if reply.status != 200:
            return json.dumps({"error": {"message": "scripted failure", "type": "scripted"}}).encode()
        if request.path.endswith("/audio/transcriptions"):
            return json.dumps({"text": reply.content or ""}).encode()
        prompt, completion = reply.usage or (
            sum(len(m["content"]) for m in request.body["messages"]) // 4,
            len(reply.content or "") // 4,
        )
        return json.dumps(
            {
                "id": "chatcmpl-test",
                "object": "chat.completion",
                "created": 0,
                "model": request.body["model"],
                "choices": [
                    {
                        "index": 0,
                        "message": {"role": "assistant", "content": reply.content},
                        "finish_reason": reply.finish_reason,
                    }
                ],
                "usage": {
                    "prompt_tokens": prompt,
                    "completion_tokens": completion,
                    "total_tokens": prompt + completion,
                },
            }
        ).encode()

    def then(self, *replies: Reply | dict) -> ScriptedModel:
        """Queue replies; a dict is an answer whose content is that JSON."""
        for r in replies:
            self.queue.append(r if isinstance(r, Reply) else Reply(content=json.dumps(r)))
        return self

    def chats(self, role: str | None = None) -> list[Request]:
        return [r for r in self.requests if r.path.endswith("/chat/completions") and role in (None, r.role)]

    def close(self) -> None:
        self._stop.set()
        self.server.shutdown()
        self.server.server_close()


def _multipart(content_type: str, raw: bytes) -> dict[str, Any]:
    """A multipart/form-data body (``/audio/transcriptions``): its fields, and each file part as
    ``{"filename", "content_type", "data"}`` under its field name."""
    message = BytesParser(policy=email.policy.HTTP).parsebytes(
        f"Content-Type: {content_type}\r\n\r\n".encode() + raw
    )
    body: dict[str, Any] = {}
    for part in message.iter_parts():
        name = part.get_param("name", header="content-disposition")
        data = part.get_payload(decode=True) or b""
        filename = part.get_filename()
        if filename is None:
            body[str(name)] = data.decode()
        else:
            body[str(name)] = {"filename": filename, "content_type": part.get_content_type(), "data": data}
    return body


def _embeddings(body: dict) -> dict:
    inputs = body["input"] if isinstance(body["input"], list) else [body["input"]]
    rows = []
    for i, text in enumerate(inputs):
        # Deterministic: bag of hashed words, so texts sharing words are close.
        vector = [0.0] * 64
        for word in str(text).lower().split():
            vector[int(hashlib.sha256(word.encode()).hexdigest(), 16) % 64] += 1.0
        rows.append({"object": "embedding", "index": i, "embedding": vector})
    return {
        "object": "list",
        "data": rows,
        "model": body["model"],
        "usage": {"prompt_tokens": 1, "total_tokens": 1},
    }


# --- the faithful model: valid output from what the prompt gave --------------------------


def _cue_type(text: str) -> str:
    """The first fact type (in the guideline's order) whose cue words the text has."""
    said = fired(text)
    return next((t.value for t in TYPES if t.value in said), "statement")


def faithful(request: Request) -> Reply:
    data = request.data
    role = request.role
    if role == "extract":
        # Typed and tagged as the heuristics would, so facts route to pages as real ones do.
        facts = [
            {
                "statement": m["text"][:300],
                "type": _cue_type(m["text"]),
                "message_ids": [m["id"]],
                "entities": list(entities_of(m["text"])[:3]),
                "topic": "",
                "confidence": 0.8,
            }
            for m in data["messages"]
            if len(m["text"].split()) >= 4 and not m["text"].rstrip().endswith("?")
        ]
        return Reply(content=json.dumps({"facts": facts}))
    if role == "judge":
        return Reply(
            content=json.dumps({"reasoning": "No clear change.", "decision": "unrelated", "confidence": 0.9})
        )
    if role == "write":
        sections = [
            {
                "key": s["key"],
                "statements": [
                    {"text": f"Noted: {f['statement']}", "fact_ids": [f["id"]]} for f in s["facts"]
                ],
            }
            for s in data["sections"]
        ]
        return Reply(content=json.dumps({"sections": sections}))
    if role == "answer":
        first = data["facts"][0]
        return Reply(
            content=json.dumps(
                {"sentences": [{"text": first["statement"], "fact_ids": [first["id"]]}], "unknown": ""}
            )
        )
    return Reply(status=400)
