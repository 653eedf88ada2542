"""The wiki's dirty set on Redis: the same contract as the embedded one, each step atomic.

Keys, under one prefix:
    {p}due            ZSET page_id -> due time (epoch microseconds); the first mark fixes it
    {p}claims         ZSET page_id -> lease end of the current claim
    {p}token          HASH page_id -> claim token
    {p}facts:{page}   HASH fact_id -> sequence number of its latest mark
    {p}seq            counter for those sequence numbers
Claiming and completing are Lua scripts, so a claim and its lease, or a completion and what it
drops, happen as one step even with many maintainers.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterable
from datetime import datetime, timedelta
from typing import cast

import redis

from teamlore.errors import BackendUnavailable
from teamlore.stores.protocols import Claim
from teamlore.timeutil import from_micros, to_micros

_CLAIM = """
local now, lease_end, token, limit, p = tonumber(ARGV[1]), ARGV[2], ARGV[3], tonumber(ARGV[4]), ARGV[5]
local out = {}
for _, page in ipairs(redis.call('ZRANGEBYSCORE', p .. 'due', '-inf', now)) do
  if #out >= limit then break end
  local held = redis.call('ZSCORE', p .. 'claims', page)
  if (not held) or tonumber(held) <= now then
    redis.call('ZADD', p .. 'claims', lease_end, page)
    redis.call('HSET', p .. 'token', page, token)
    table.insert(out, {page, redis.call('HGETALL', p .. 'facts:' .. page)})
  end
end
return cjson.encode(out)
"""
_COMPLETE = """
local page, token, max_seq, next_due, p = ARGV[1], ARGV[2], tonumber(ARGV[3]), ARGV[4], ARGV[5]
if redis.call('HGET', p .. 'token', page) ~= token then return 0 end
local facts = p .. 'facts:' .. page
local entries = redis.call('HGETALL', facts)
for i = 1, #entries, 2 do
  if tonumber(entries[i + 1]) <= max_seq then redis.call('HDEL', facts, entries[i]) end
end
redis.call('ZREM', p .. 'claims', page)
redis.call('HDEL', p .. 'token', page)
if redis.call('HLEN', facts) == 0 then
  redis.call('ZREM', p .. 'due', page)
else
  redis.call('ZADD', p .. 'due', next_due, page)
end
return 1
"""


class RedisDirtySet:
    def __init__(self, client: redis.Redis, prefix: str = "teamlore:wiki:") -> None:
        self._redis = client
        self._prefix = prefix
        self._claim = client.register_script(_CLAIM)
        self._complete = client.register_script(_COMPLETE)

    @classmethod
    def from_url(cls, url: str, prefix: str = "teamlore:wiki:") -> RedisDirtySet:
        return cls(redis.Redis.from_url(url, decode_responses=True), prefix)

    def close(self) -> None:
        """Close the client's connections (the app closes it with the stores)."""
        self._redis.close()

    def mark(
        self, page_ids: Iterable[str], fact_ids: Iterable[str], now: datetime, window: timedelta
    ) -> None:
        pages, facts = sorted(set(page_ids)), sorted(set(fact_ids))
        p = self._prefix
        try:
            seq = self._redis.incr(f"{p}seq")
            pipe = self._redis.pipeline(transaction=True)
            for page in pages:
                pipe.zadd(f"{p}due", {page: to_micros(now + window)}, nx=True)
                if facts:
                    pipe.hset(f"{p}facts:{page}", mapping={fact: seq for fact in facts})
            pipe.execute()
        except redis.RedisError as exc:
            raise BackendUnavailable(f"Redis dirty set unavailable: {exc}") from exc

    def claim_due(self, now: datetime, lease: timedelta, limit: int = 100) -> list[Claim]:
        token = uuid.uuid4().hex
        try:
            raw = self._claim(args=[to_micros(now), to_micros(now + lease), token, limit, self._prefix])
        except redis.RedisError as exc:
            raise BackendUnavailable(f"Redis dirty set unavailable: {exc}") from exc
        claims = []
        for page, flat in json.loads(raw) or []:
            pairs = dict(zip(flat[::2], flat[1::2], strict=True)) if flat else {}
            claims.append(
                Claim(page, token, tuple(sorted(pairs)), max((int(v) for v in pairs.values()), default=0))
            )
        return claims

    def complete(self, claim: Claim, now: datetime, window: timedelta) -> bool:
        try:
            done = self._complete(
                args=[claim.page_id, claim.token, claim.max_seq, to_micros(now + window), self._prefix]
            )
        except redis.RedisError as exc:
            raise BackendUnavailable(f"Redis dirty set unavailable: {exc}") from exc
        return bool(done)

    def pending(self) -> list[tuple[str, datetime, int]]:
        p = self._prefix
        # With scores, as (member, score) pairs; members are str (decode_responses), which the
        # stub's return type (members alone or pairs, bytes or str) cannot tell.
        rows = cast(list[tuple[str, float]], self._redis.zrange(f"{p}due", 0, -1, withscores=True))
        return [(page, from_micros(int(due)), self._redis.hlen(f"{p}facts:{page}")) for page, due in rows]
