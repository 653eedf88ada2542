"""A circuit breaker per model role: a dead endpoint costs a few requests, not one per call.

Closed: calls go through. After ``threshold`` failed requests in a row (timeouts, refused
connections, 5xx and 4xx answers, each retry counted, as the spend ledger counts failures; a 429
is the endpoint pacing us and counts neither way) the role's breaker opens: every call of the
role is refused at once with ``ModelUnavailable``, so its caller falls back, for ``cooldown_s``.
Then the next call is the one trial (half-open; others are still refused): an answer closes the
breaker, a failure opens it for another cool-down. Each process keeps its own breakers; every
change of state is published (``teamlore status`` shows the last one per role).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from datetime import datetime, timedelta
from enum import StrEnum

from teamlore.errors import ModelUnavailable
from teamlore.stores.protocols import BreakerRow
from teamlore.timeutil import utc_now

log = logging.getLogger(__name__)


class BreakerState(StrEnum):
    CLOSED = "closed"
    OPEN = "open"
    HALF_OPEN = "half_open"


class CircuitBreaker:
    def __init__(
        self,
        role: str,
        threshold: int,
        cooldown_s: float,
        publish: Callable[[BreakerRow], None] = lambda status: None,
        clock: Callable[[], float] = time.monotonic,
        wall: Callable[[], datetime] = utc_now,
    ) -> None:
        self.role, self.threshold, self.cooldown_s = role, threshold, cooldown_s
        self._publish, self._clock, self._wall = publish, clock, wall
        self._lock = threading.Lock()
        self.state = BreakerState.CLOSED
        self.failures = 0
        self._opened_at = 0.0
        self._trial_at: float | None = None

    @property
    def is_open(self) -> bool:
        return self.state is BreakerState.OPEN

    def admit(self) -> None:
        """Let a call through, or refuse it at once (``ModelUnavailable``) while open."""
        with self._lock:
            now = self._clock()
            if self.state is BreakerState.CLOSED:
                return
            waited = now - self._opened_at
            trial_running = self._trial_at is not None and now - self._trial_at < self.cooldown_s
            trial = (self.state is BreakerState.OPEN and waited >= self.cooldown_s) or (
                self.state is BreakerState.HALF_OPEN and not trial_running
            )
            if trial:
                # This call is the trial; one whose caller vanished is replaced after a cool-down.
                self._trial_at = now
                changed = self._change(BreakerState.HALF_OPEN)
            left = max(self.cooldown_s - waited, 0.0)
        if trial:
            self._publish(changed)
            return
        raise ModelUnavailable(
            f"the {self.role} model is skipped: {self.failures} failed requests in a row; "
            f"next try in {left:.0f} s (circuit breaker, TEAMLORE_LLM_BREAKER_COOLDOWN_S)"
        )

    def succeeded(self) -> None:
        with self._lock:
            if self.state is BreakerState.CLOSED and not self.failures:
                return
            self.failures = 0
            self._trial_at = None
            changed = self._change(BreakerState.CLOSED) if self.state is not BreakerState.CLOSED else None
        if changed is not None:
            self._publish(changed)

    def failed(self) -> None:
        with self._lock:
            self.failures += 1
            changed = None
            if self.state is BreakerState.HALF_OPEN or (
                self.state is BreakerState.CLOSED and self.failures >= self.threshold
            ):
                self._opened_at = self._clock()
                self._trial_at = None
                changed = self._change(BreakerState.OPEN)
        if changed is not None:
            self._publish(changed)

    def _change(self, state: BreakerState) -> BreakerRow:
        self.state = state
        now = self._wall()
        retry_at = now + timedelta(seconds=self.cooldown_s) if state is BreakerState.OPEN else None
        log.warning("model role %s: circuit %s (%d failed in a row)", self.role, state, self.failures)
        return BreakerRow(self.role, state.value, self.failures, now, retry_at)
