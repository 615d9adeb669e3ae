"""How long robots.txt work holds the crawl's loop, measured in a real crawl.

The crawl's own functions are wrapped: each call is delegated unchanged and
timed in the CPU time of the loop's thread (``time.thread_time``), so what
the loopback servers' threads or other processes on a shared machine do
meanwhile is not counted.  A full garbage collection of the test process
(60-100 ms: the whole heap of pytest, Scrapy and Twisted, whatever code
allocated last) is taken out of the call it falls in and reported apart, as
benchmarks/hostile_bench.py does (docs/reliability.md, "Not solved here").
"""

from __future__ import annotations

import gc
import time


class RobotsWork:
    """The CPU time of each piece of robots.txt work a crawl runs on its loop,
    timed where it runs: the crawl's own functions, each call delegated
    unchanged and timed in the loop thread's CPU time (``time.thread_time``),
    the time of any full garbage collection in it taken out (``collections``
    keeps them; see the module docstring):

    * ``runs``: each ``robots.steps.run`` call, one hold of the loop each
      (``compat.in_steps`` runs steps for a budget, then gives the loop a
      turn; a lazily built bucket runs to its end);
    * ``checks``, ``usages``: each ``RobotsTxt.check`` and ``RobotsTxt.usage``
      (the middleware asks both of every request; ``usage`` asks ``check``);
    * ``decodes``: each ``robots.bodies.decode_content`` (a compressed robots.txt body).
    """

    def __init__(self, monkeypatch) -> None:
        from scrapy_rfc9309.robots import bodies, steps
        from scrapy_rfc9309.robots.robotstxt import RobotsTxt

        self.runs: list[float] = []
        self.checks: list[float] = []
        self.usages: list[float] = []
        self.decodes: list[float] = []
        self.collections: list[float] = []
        self._collected = 0.0  # seconds of full collections so far
        self._began = 0.0
        monkeypatch.setattr(steps, "run", self._timed(steps.run, self.runs))
        monkeypatch.setattr(RobotsTxt, "check", self._timed(RobotsTxt.check, self.checks))
        monkeypatch.setattr(RobotsTxt, "usage", self._timed(RobotsTxt.usage, self.usages))
        monkeypatch.setattr(bodies, "decode_content", self._timed(bodies.decode_content, self.decodes))

    def __enter__(self) -> RobotsWork:
        gc.callbacks.append(self._gc)
        return self

    def __exit__(self, *exc: object) -> None:
        gc.callbacks.remove(self._gc)

    def _gc(self, phase: str, info: dict) -> None:
        if phase == "start":
            self._began = time.thread_time()
        elif info["generation"] == 2:
            took = time.thread_time() - self._began
            self._collected += took
            self.collections.append(took)

    def _timed(self, func, into: list[float]):
        def timed(*args, **kwargs):
            started, collected = time.thread_time(), self._collected
            try:
                return func(*args, **kwargs)
            finally:
                into.append(time.thread_time() - started - (self._collected - collected))

        return timed

    def longest(self) -> float:
        return max(self.runs + self.checks + self.usages + self.decodes)

    def per_request(self) -> float:
        """The mean CPU time of a request's check and usage look-up."""
        assert self.checks and self.usages
        return sum(self.checks) / len(self.checks) + sum(self.usages) / len(self.usages)
