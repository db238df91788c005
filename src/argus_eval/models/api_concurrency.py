"""Adaptive concurrency for served models: halve when the server throttles, grow back while latency holds.

AIMD like TCP's congestion control: a 429 (or a 503 with Retry-After) halves the number of requests in
flight; a window of successful requests whose p95 latency stays within `LATENCY_SLACK` of the best window
seen adds one, up to the ceiling (`max_concurrency`). Every change is kept in a timeline (seconds since
the first request, the new limit and why) that the run writes to run_log.json.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np

LATENCY_SLACK = 1.25  # a window's p95 may exceed the best window's by this factor and still grow
MIN_WINDOW = 4  # successes before a window's p95 is judged, at the least


class AdaptiveLimit:
    """A counting gate whose limit moves with the server's answers (fixed when adaptive is off)."""

    def __init__(self, start: int, ceiling: int, adaptive: bool = True) -> None:
        self.limit = start
        self.start = start
        self.ceiling = max(ceiling, start)
        self.adaptive = adaptive
        self._in_flight = 0
        self._cond = threading.Condition()
        self._window: list[float] = []
        self._best_p95: float | None = None
        self._t0: float | None = None
        self.throttled = 0
        self.timeline: list[dict[str, Any]] = []
        # requests in flight, sampled as each one starts (itself included): how full the slots were kept
        self.peak_in_flight = 0
        self._starts = 0
        self._in_flight_sum = 0

    @contextmanager
    def slot(self) -> Iterator[None]:
        """Hold one of the `limit` request slots while a request is in flight."""
        with self._cond:
            if self._t0 is None:
                self._t0 = time.monotonic()
                self._log("start")
            while self._in_flight >= self.limit:
                self._cond.wait()
            self._in_flight += 1
            self._starts += 1
            self._in_flight_sum += self._in_flight
            self.peak_in_flight = max(self.peak_in_flight, self._in_flight)
        try:
            yield
        finally:
            with self._cond:
                self._in_flight -= 1
                self._cond.notify_all()

    def on_throttle(self) -> None:
        """The server said slow down: halve the limit (never below 1) and start a new latency window."""
        with self._cond:
            self.throttled += 1
            self._window = []
            if self.adaptive and self.limit > 1:
                self.limit = max(1, self.limit // 2)
                self._log("throttled")

    def on_success(self, latency_s: float) -> None:
        """One answered request: judge the window once it holds enough answers, and grow if p95 held."""
        with self._cond:
            self._window.append(latency_s)
            if not self.adaptive or len(self._window) < max(MIN_WINDOW, 2 * self.limit):
                return
            p95 = float(np.percentile(self._window, 95))
            self._window = []
            best = self._best_p95
            if best is None or p95 < best:
                self._best_p95 = best = p95
            if self.limit < self.ceiling and p95 <= LATENCY_SLACK * best:
                self.limit += 1
                self._log("p95 held")
                self._cond.notify_all()

    def _log(self, why: str) -> None:
        t0 = self._t0 if self._t0 is not None else time.monotonic()
        self.timeline.append({"t_s": round(time.monotonic() - t0, 3), "limit": self.limit, "why": why})

    def report(self) -> dict[str, Any]:
        """What run_log.json keeps: start, ceiling, lowest and final limit, throttles, the requests in
        flight (sampled as each request starts: the peak and the mean) and the timeline."""
        limits = [e["limit"] for e in self.timeline] or [self.limit]
        return {
            "adaptive": self.adaptive,
            "start": self.start,
            "ceiling": self.ceiling,
            "lowest": min(limits),
            "final": self.limit,
            "throttled": self.throttled,
            "in_flight": {
                "peak": self.peak_in_flight,
                "mean_at_start": round(self._in_flight_sum / self._starts, 2) if self._starts else None,
                "requests": self._starts,
            },
            "timeline": list(self.timeline),
        }
