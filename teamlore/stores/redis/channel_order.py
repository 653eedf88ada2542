"""A channel's batches applied in the order they were queued (issue 18).

The channel lock (``channel_lock``) keeps two workers off one channel, not its batches in order: a
batch that finds its channel held goes back on the queue, and a later batch of that channel may be
taken first. What the pipeline makes of a channel depends on that order (a change retires what
came before it), so order is set at the source. The producer numbers each channel's batches as it
queues them (``INCR {p}queued:{channel}``); a worker holding the channel applies batch n only once
batch n-1 has been (``{p}applied:{channel}``) and records n after its commit, before it lets go of
the channel. A batch that comes early goes back on the queue untried, as the batches of a held
channel do. A batch at or behind the record (a re-delivery, or a late one) is applied at once: the
event ledger makes a re-delivery change nothing, and nothing is ever dropped for being late.

A batch that never comes (its producer died between numbering and queueing it) would stop its
channel for good; so a channel that has waited ``gap_s`` for the batch after its record goes on
without it (``turn`` says so, and logs it), and that batch, should it still come, is applied late.
The worker sets ``gap_s`` to twice the visibility timeout, a minute at least: longer than a lost
worker can hold a batch back. Every step runs while the caller holds the channel's lock, and the
record only grows (a Lua step), so a stale holder cannot move it back.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import suppress

import redis

from teamlore.stores.redis.channel_lock import Channel, channel_name

log = logging.getLogger(__name__)

_PREFIX = "teamlore:channel:"
# The record only grows; the wait for the batch after it is forgotten when it moves.
_DONE = """
local applied = tonumber(redis.call('GET', KEYS[1]) or '0')
if applied < tonumber(ARGV[1]) then
  redis.call('SET', KEYS[1], ARGV[1])
  redis.call('DEL', KEYS[2])
  return 1
end
return 0
"""

Order = dict[Channel, int]  # a batch's number in each of its channels


def _key(kind: str, channel: Channel) -> str:
    return f"{_PREFIX}{kind}:{channel_name(channel)}"


def to_wire(order: Order) -> list[list[str | int]]:
    """An order as JSON carries it on the queue: ``[[workspace, channel, n], ...]``."""
    return [[workspace, channel, n] for (workspace, channel), n in order.items()]


def from_wire(value: object) -> Order:
    """The order a task carries; none (an older task, an admin's replay) is an empty order."""
    order: Order = {}
    for item in value if isinstance(value, list) else ():
        with suppress(TypeError, ValueError):
            workspace, channel, n = item
            order[(str(workspace), str(channel))] = int(n)
    return order


class ChannelOrder:
    def __init__(self, client: redis.Redis, gap_s: float, clock: Callable[[], float] = time.time) -> None:
        self._r, self.gap_s, self._clock = client, gap_s, clock
        self._done = client.register_script(_DONE)

    @classmethod
    def from_url(cls, url: str, gap_s: float = 0.0) -> ChannelOrder:
        return cls(redis.Redis.from_url(url, socket_timeout=5, socket_connect_timeout=5), gap_s)

    def number(self, channels: Iterable[Channel]) -> Order:
        """The next number of each channel (the producer, once per batch, before queueing it)."""
        wanted = list(dict.fromkeys(channels))
        pipe = self._r.pipeline(transaction=False)
        for channel in wanted:
            pipe.incr(_key("queued", channel))
        return {channel: int(n) for channel, n in zip(wanted, pipe.execute(), strict=True)}

    def applied(self, channel: Channel) -> int:
        value = self._r.get(_key("applied", channel))
        return int(value) if value is not None else 0

    def turn(self, channel: Channel, n: int) -> bool:
        """Whether batch ``n`` of ``channel`` may be applied now (the caller holds the channel):
        its predecessor is recorded, it is behind the record, or the channel has waited ``gap_s``
        for a predecessor that never came."""
        applied = self.applied(channel)
        if n <= applied + 1:
            return True
        key, now = _key("waiting", channel), self._clock()
        since = self._waiting_since(key, applied)
        if since is None:  # the first early batch since the record last moved starts the clock
            self._r.set(key, f"{applied} {now}", ex=max(60, int(self.gap_s * 4)))
            return False
        if now - since < self.gap_s:
            return False
        log.warning(
            "batch %d of a channel never came in %.0f s; going on with batch %d", applied + 1, now - since, n
        )
        return True

    def _waiting_since(self, key: str, applied: int) -> float | None:
        raw = self._r.get(key)
        if raw is None:
            return None
        seen, since = (raw.decode() if isinstance(raw, bytes) else str(raw)).split()
        return float(since) if int(seen) == applied else None

    def done(self, order: Order) -> None:
        """Record the batches as applied (after their commit, before the channels are let go)."""
        for channel, n in order.items():
            self._done(keys=[_key("applied", channel), _key("waiting", channel)], args=[n])

    def ready(self, order: Order, held: Iterable[Channel]) -> Iterator[Channel]:
        """The held channels whose batch may go now (a channel the batch has no number for, always)."""
        return (channel for channel in held if channel not in order or self.turn(channel, order[channel]))

    def close(self) -> None:
        self._r.close()


__all__ = ["ChannelOrder", "Order", "from_wire", "to_wire"]
