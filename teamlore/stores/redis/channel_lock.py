"""One worker at a time per channel (issue 18, step 4): a Redis lock per (workspace, channel) with
a fencing token.

Facts are channel-scoped, so the events of one channel are applied by one worker at a time while
other channels run in parallel on any node. A worker takes ``SET {p}lock:{channel} token NX PX
lease`` with a token from ``INCR {p}fence:{channel}`` (tokens only grow); a channel it cannot take
is handed back to the queue for later, never waited on. Releasing deletes the lock only while it
still holds the releaser's token (a Lua step), so a worker whose lease ran out never frees a lock
another worker has since taken. The token is the fence: a store that records the highest token
it has seen per channel can refuse a late writer whose lease expired (the server stack's MongoDB
transaction checks it: ``stores.mongo.journal``; docs/deployment.md). The lease is short
(``TEAMLORE_CHANNEL_LOCK_LEASE_S``) and renewed by the holder every third of it while it works
(``holding``), so a worker that is killed frees its channels within one lease, while one that
works for minutes keeps them.
"""

from __future__ import annotations

import hashlib
import logging
import threading
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager

import redis

from teamlore.errors import BackendUnavailable

log = logging.getLogger(__name__)

_RELEASE = """
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
"""
_EXTEND = """
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('PEXPIRE', KEYS[1], ARGV[2]) end
return 0
"""
_PREFIX = "teamlore:channel:"

Channel = tuple[str, str]  # (workspace, channel)


def channel_name(channel: Channel) -> str:
    # Workspace and channel ids may hold any character: hashed, they make one unambiguous key.
    return hashlib.sha256("\x1f".join(channel).encode()).hexdigest()[:32]


def _key(kind: str, channel: Channel) -> str:
    return f"{_PREFIX}{kind}:{channel_name(channel)}"


def lock_key(channel: Channel) -> str:
    """The key that holds the channel's lock (its holder's token) while it is held."""
    return _key("lock", channel)


def fence_key(channel: Channel) -> str:
    """The channel's name in a store that records its fence (``stores.mongo.journal``)."""
    return _key("fence", channel)


class ChannelsBusy(BackendUnavailable):
    """Another worker kept a channel for longer than an admin job waits (it is tried again later)."""


class ChannelLocks:
    def __init__(self, client: redis.Redis, lease_ms: int) -> None:
        self._r, self.lease_ms = client, max(1, lease_ms)
        self._release = client.register_script(_RELEASE)
        self._extend = client.register_script(_EXTEND)

    @classmethod
    def from_url(cls, url: str, lease_s: float) -> ChannelLocks:
        return cls(redis.Redis.from_url(url), int(lease_s * 1000))

    def take(self, channels: Iterable[Channel]) -> dict[Channel, int]:
        """The channels taken now, each with its fencing token; the others are held elsewhere."""
        taken: dict[Channel, int] = {}
        for channel in dict.fromkeys(channels):
            token = int(self._r.incr(_key("fence", channel)))
            if self._r.set(_key("lock", channel), str(token), nx=True, px=self.lease_ms):
                taken[channel] = token
        return taken

    @contextmanager
    def holding(self, channels: Iterable[Channel]) -> Iterator[dict[Channel, int]]:
        """``take``, renew every third of the lease while the body runs, then ``release``."""
        with self._kept(self.take(channels)) as taken:
            yield taken

    @contextmanager
    def holding_all(self, channels: Iterable[Channel], wait_s: float) -> Iterator[dict[Channel, int]]:
        """Every one of ``channels`` or none: an admin job (re-index, erasure) waits up to
        ``wait_s`` for each, taking them in one order, so two such jobs cannot each hold what the
        other waits for (ingest never waits: it hands a held channel back to the queue). Raises
        ``ChannelsBusy``, holding nothing, when the wait runs out."""
        taken: dict[Channel, int] = {}
        deadline = time.monotonic() + wait_s
        try:
            for channel in sorted(set(channels)):
                while not (got := self.take([channel])):
                    if time.monotonic() > deadline:
                        raise ChannelsBusy(
                            f"channel {channel[1]} stayed held by a worker for {wait_s:g} s: try again later"
                        )
                    time.sleep(min(0.2, self.lease_ms / 4000))
                taken |= got
        except BaseException:
            self.release(taken)
            raise
        with self._kept(taken):
            yield taken

    @contextmanager
    def _kept(self, taken: dict[Channel, int]) -> Iterator[dict[Channel, int]]:
        """Renew every third of the lease while the body runs, then ``release``."""
        done = threading.Event()
        renewer = threading.Thread(target=self._renew, args=(taken, done), daemon=True)
        renewer.start()
        try:
            yield taken
        finally:
            done.set()
            renewer.join()
            self.release(taken)

    def _renew(self, taken: dict[Channel, int], done: threading.Event) -> None:
        while taken and not done.wait(self.lease_ms / 3000):
            try:
                for channel, token in taken.items():
                    if not self._extend(keys=[_key("lock", channel)], args=[str(token), self.lease_ms]):
                        log.warning("lost the hold on a channel (its lease ran out): token %d", token)
            except redis.RedisError as exc:  # the lease may run out: the fence is what protects then
                log.warning("could not renew channel holds: %s", exc)

    def release(self, taken: dict[Channel, int]) -> None:
        for channel, token in taken.items():
            self._release(keys=[_key("lock", channel)], args=[str(token)])

    def holder(self, channel: Channel) -> int | None:
        """The token holding ``channel`` now, if any."""
        value = self._r.get(_key("lock", channel))
        return None if value is None else int(value)

    def close(self) -> None:
        self._r.close()


__all__ = ["Channel", "ChannelLocks", "ChannelsBusy", "channel_name", "fence_key", "lock_key"]
