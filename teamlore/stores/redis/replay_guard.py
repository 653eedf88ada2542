"""The push replay guard on Redis: keys of accepted signed pushes, shared by every API process,
each expiring by itself.

One key per remembered push key, ``{p}{key}`` -> the time it was accepted (epoch microseconds),
with a TTL of the remembering window. A claim is one Lua script, so of two processes claiming
the same key at once exactly one wins, and a claim with a key already seen remembers nothing.
The stored time is compared with ``forget_before`` as well, so the guard answers by the caller's
clock exactly as the embedded one does; the TTL only lets Redis drop what nobody needs.

Used only where the claim is outside any transaction: with Redis configured a push is queued,
never ingested inline (``teamlore.app``). The inline path claims inside the event's SQLite
transaction, so a failed ingest frees the key for the sender's retry; there the file keeps it.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime

import redis

from teamlore.errors import BackendUnavailable
from teamlore.timeutil import to_micros

_CLAIM = """
local at, forget_before, ttl_ms = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3])
for _, key in ipairs(KEYS) do
  local seen = redis.call('GET', key)
  if seen and tonumber(seen) >= forget_before then return 0 end
end
for _, key in ipairs(KEYS) do
  redis.call('SET', key, at, 'PX', ttl_ms)
end
return 1
"""


class RedisReplayGuard:
    def __init__(self, client: redis.Redis, prefix: str = "teamlore:push:") -> None:
        self._redis = client
        self._prefix = prefix
        self._claim = client.register_script(_CLAIM)

    @classmethod
    def from_url(cls, url: str, prefix: str = "teamlore:push:") -> RedisReplayGuard:
        return cls(redis.Redis.from_url(url, decode_responses=True), prefix)

    def close(self) -> None:
        self._redis.close()

    def claim(self, keys: Iterable[str], at: datetime, forget_before: datetime) -> bool:
        names = [self._prefix + key for key in dict.fromkeys(keys)]
        ttl_ms = max(1, (to_micros(at) - to_micros(forget_before)) // 1000)
        try:
            won = self._claim(keys=names, args=[to_micros(at), to_micros(forget_before), ttl_ms])
        except redis.RedisError as exc:
            raise BackendUnavailable(f"Redis replay guard unavailable: {exc}") from exc
        return bool(won)
