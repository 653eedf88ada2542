"""A sliding-window limit on requests and tokens per minute for one endpoint.

``acquire`` blocks until the request fits the window; ``settle`` replaces the estimate with the
tokens the endpoint reported, so the window counts what was really used.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable

WINDOW_S = 60.0


class RateLimiter:
    def __init__(
        self,
        requests_per_minute: int,
        tokens_per_minute: int,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
        window_s: float = WINDOW_S,
    ) -> None:
        self.requests_per_minute = requests_per_minute
        self.tokens_per_minute = tokens_per_minute
        self._clock, self._sleep, self._window = clock, sleep, window_s
        self._used: deque[list[float]] = deque()  # [when, tokens], oldest first
        self._lock = threading.Lock()
        self.waited_s = 0.0

    def acquire(self, tokens: int) -> list[float]:
        """Wait until one more request of ``tokens`` fits; return its handle for ``settle``."""
        with self._lock:
            while True:
                now = self._clock()
                while self._used and self._used[0][0] <= now - self._window:
                    self._used.popleft()
                if self._fits(tokens):
                    entry = [now, float(tokens)]
                    self._used.append(entry)
                    return entry
                wait = max(self._used[0][0] + self._window - now, 0.001)
                self.waited_s += wait
                self._sleep(wait)

    def _fits(self, tokens: int) -> bool:
        if self.requests_per_minute and len(self._used) >= self.requests_per_minute:
            return False
        if not self.tokens_per_minute or not self._used:
            # An empty window always admits one request, even one larger than the whole budget:
            # refusing it forever would hang the caller.
            return True
        return sum(t for _, t in self._used) + tokens <= self.tokens_per_minute

    def settle(self, handle: list[float], tokens: int) -> None:
        with self._lock:
            handle[1] = float(tokens)
