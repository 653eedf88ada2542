"""The write-ahead undo log of the server stack's Weaviate writes (issue 18).

Weaviate has no transactions: a batch's fact and message versions are written before the batch's
MongoDB commit, and undone in the process if the batch fails (``stores.weaviate.journal``). A
worker killed between the two runs no undo, and its writes would stay: facts whose audit events,
routes and messages never committed. So, while a worker holds a channel (``channel_lock``), each
Weaviate write of that channel first appends its undo, as data, to a list named after the channel
and the holder's fencing token; the list is dropped once the batch committed. Whoever takes the
channel next finds the lists older holders left (``leftovers``) and, unless the holder's token
had committed (the channel's fence in MongoDB has reached it), applies them newest first before
writing anything itself. Applying an undo twice changes nothing (delete what is gone, set a value
again, write an object again whole).

An entry is appended only while the channel's lock still holds the writer's token (one Lua step);
otherwise ``append`` raises ``LeaseLost`` and the write it precedes is not made. So a worker that
was paused past its lease (and whose channel another worker may have recovered and written since)
stops at its next write instead of writing over the newer holder's work; what it wrote before its
lease ran out is in its list, which the newer holder undid before writing.

Keys: ``teamlore:channel:undo:<channel hash>:<token>`` (a list of JSON entries) and
``teamlore:channel:undos:<channel hash>`` (the set of tokens with a list).
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from datetime import datetime
from typing import Any

import redis

from teamlore.errors import LeaseLost
from teamlore.stores.redis.channel_lock import Channel, channel_name, lock_key

_PREFIX = "teamlore:channel:"
# Append an undo only while the lock holds the writer's token.
_APPEND = """
if redis.call('GET', KEYS[3]) ~= ARGV[1] then return 0 end
redis.call('SADD', KEYS[1], ARGV[1])
redis.call('RPUSH', KEYS[2], ARGV[2])
return 1
"""
Step = dict[str, Any]


def _encode(value: Any) -> Any:
    if isinstance(value, datetime):
        return {"$dt": value.isoformat()}
    if isinstance(value, dict):
        return {k: _encode(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_encode(v) for v in value]
    return value


def _decode(value: Any) -> Any:
    if isinstance(value, dict):
        if set(value) == {"$dt"}:
            return datetime.fromisoformat(value["$dt"])
        return {k: _decode(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_decode(v) for v in value]
    return value


class UndoLog:
    """See the module. ``append`` writes only for a channel this thread holds (``holding``)."""

    def __init__(self, client: redis.Redis) -> None:
        self._r = client
        self._local = threading.local()
        self._append = client.register_script(_APPEND)

    @classmethod
    def from_url(cls, url: str) -> UndoLog:
        return cls(redis.Redis.from_url(url))

    def _list(self, channel: Channel, token: int) -> str:
        return f"{_PREFIX}undo:{channel_name(channel)}:{token}"

    def _tokens(self, channel: Channel) -> str:
        return f"{_PREFIX}undos:{channel_name(channel)}"

    @contextmanager
    def holding(self, tokens: Mapping[Channel, int]) -> Iterator[None]:
        """Log this thread's writes to these channels under their tokens; the logs are dropped
        when the block ends without an error (its batch committed). After an error they stay
        for the next holder, which applies them again: the undos already ran here, and running
        them twice changes nothing."""
        self._local.tokens = dict(tokens)
        try:
            yield
        finally:
            self._local.tokens = {}
        self.forget(tokens)

    def append(self, channel: Channel, what: str, step: Step) -> None:
        tokens: dict[Channel, int] = getattr(self._local, "tokens", {})
        token = tokens.get(channel)
        if token is None:
            return
        entry = json.dumps({"what": what, "step": _encode(step)})
        keys = [self._tokens(channel), self._list(channel, token), lock_key(channel)]
        if not self._append(keys=keys, args=[str(token), entry]):
            raise LeaseLost(f"the hold on a channel (token {token}) passed to another worker: write not made")

    def leftovers(self, channel: Channel, before: int) -> dict[int, list[tuple[str, Step]]]:
        """The logs older holders (tokens below ``before``) left for ``channel``, each in write
        order."""
        found: dict[int, list[tuple[str, Step]]] = {}
        for raw in self._r.smembers(self._tokens(channel)):
            token = int(raw)
            if token >= before:
                continue
            entries = [json.loads(e) for e in self._r.lrange(self._list(channel, token), 0, -1)]
            found[token] = [(e["what"], _decode(e["step"])) for e in entries]
        return found

    def forget(self, tokens: Mapping[Channel, int]) -> None:
        pipe = self._r.pipeline()
        for channel, token in tokens.items():
            pipe.delete(self._list(channel, token))
            pipe.srem(self._tokens(channel), token)
        pipe.execute()

    def close(self) -> None:
        self._r.close()


__all__ = ["UndoLog"]
