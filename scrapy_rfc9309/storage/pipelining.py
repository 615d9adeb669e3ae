"""Calls to a store's server gathered into one round trip (a pipeline).

A broad crawl meets a new origin every few milliseconds, and each costs a
shared store two calls (a look-up, then the store of the fetched result).
Sent one by one through redis.asyncio, a call costs the crawling process
about 110 to 140 us of CPU (taking a pooled connection, the command's own
machinery, its reply); sent 16 to a pipeline, about 30 us each
(docs/benchmarks_crawl.md, "Why two broad-crawl measurements disagreed").
So calls are queued here and sent together:

* a call that someone waits for (a look-up on the way of a first page, a
  store that notes a Crawl-delay start) goes with the next turn of the event
  loop: every call queued by then shares its pipeline, and it waits for
  nothing else (not for a pipeline under way);
* a call off every request's way (storing a fetched result, which also gives
  the fetch lease back) may wait up to ``delay`` seconds for others, and goes
  sooner with the next call that cannot wait; and while ``max_in_flight``
  pipelines are under way it waits for one of them to answer, then goes with
  the others that waited.

Each caller gets its own call's answer or error; a pipeline that fails as a
whole fails each of its calls.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

#: one call: whatever the store's ``send`` understands (for Redis: script name, keys, arguments)
Call = Any
#: sends calls together; returns one answer per call, an exception standing for a failed call,
#: or raises when the whole round trip failed
Send = Callable[[list[Call]], Awaitable[list[Any]]]

#: a pipeline holds at most this many calls; more are sent at once, in another
MAX_CALLS = 256
#: pipelines under way at once for calls that may wait; those made meanwhile wait for one
#: to answer (a call someone waits for does not: a first page must not wait a round trip more)
MAX_IN_FLIGHT = 1


class Pipeliner:
    """Queues calls and sends them together with ``send`` (see the module docstring)."""

    def __init__(self, send: Send, max_calls: int = MAX_CALLS, max_in_flight: int = MAX_IN_FLIGHT) -> None:
        self._send = send
        self._max_calls = max_calls
        self._max_in_flight = max_in_flight
        self._queue: list[tuple[Call, asyncio.Future[Any]]] = []
        #: the flush of the next turn (a call someone waits for is queued), or _WAITING: what is
        #: queued goes when a pipeline under way answers
        self._soon: asyncio.Handle | None = None
        #: the flush of the calls that may wait, and its loop time.  A flush before it does not
        #: cancel it (it then finds less to send, or nothing): one timer per ``delay`` at most,
        #: not one per call (arming a timer, a push into the loop's heap of every timer of the
        #: crawl, cost as much as a tenth of the call)
        self._timer: asyncio.TimerHandle | None = None
        self._timer_at = 0.0
        self._sending: set[asyncio.Task[None]] = set()

    async def call(self, call: Call, delay: float = 0.0) -> Any:
        """Send ``call`` with the next pipeline, at most ``delay`` seconds from now
        (0: with the next turn of the loop); its answer."""
        loop = asyncio.get_running_loop()
        future: asyncio.Future[Any] = loop.create_future()
        self._queue.append((call, future))
        if len(self._queue) >= self._max_calls:
            self.flush()
        elif delay <= 0:
            if self._soon is None or self._soon is _WAITING:
                self._soon = loop.call_soon(self._flush_urgent)
        elif self._soon is None:  # (else it goes with the next turn, or with the next answer)
            deadline = loop.time() + delay
            if self._timer is None or deadline < self._timer_at:
                if self._timer is not None:
                    self._timer.cancel()
                self._timer, self._timer_at = loop.call_at(deadline, self._flush_timer), deadline
        return await future

    def flush(self, urgent: bool = False) -> None:
        """Send what is queued, now (or, unless ``urgent``, while ``max_in_flight``
        pipelines are under way, as soon as one of them answers)."""
        if self._soon is not None:
            self._soon.cancel()
            self._soon = None
        self._queue = [(call, future) for call, future in self._queue if not future.done()]  # cancelled callers
        if not self._queue:
            return
        while self._queue and (urgent or len(self._sending) < self._max_in_flight):
            batch, self._queue = self._queue[: self._max_calls], self._queue[self._max_calls :]
            task = asyncio.ensure_future(self._deliver(batch))
            self._sending.add(task)
            task.add_done_callback(self._sent)
        if self._queue:  # sent by _sent, with the next answer
            self._soon = _WAITING

    def _flush_urgent(self) -> None:
        """Send what is queued, now, whatever is under way: a call someone waits for."""
        self._soon = None
        self.flush(urgent=True)

    def _flush_timer(self) -> None:
        """The delay of a call that may wait is over: send what is queued."""
        self._timer = None
        self.flush()

    def _sent(self, task: asyncio.Task[None]) -> None:
        """A pipeline answered: what waited for it goes now."""
        self._sending.discard(task)
        if self._soon is _WAITING:
            self._soon = None
            self.flush()

    async def drain(self) -> None:
        """Send what is queued and wait until every pipeline under way has answered."""
        self.flush(urgent=True)
        while self._sending:
            await asyncio.gather(*self._sending, return_exceptions=True)
            if self._queue:
                self.flush(urgent=True)
        if self._timer is not None:  # (nothing left for it)
            self._timer.cancel()
            self._timer = None

    async def _deliver(self, batch: list[tuple[Call, asyncio.Future[Any]]]) -> None:
        try:
            answers = await self._send([call for call, _ in batch])
        except Exception as exc:  # the round trip failed: every call of it did
            for _, future in batch:
                if not future.done():
                    future.set_exception(_copy(exc))
            return
        except BaseException:  # cancelled (the loop closing): nobody waits for ever
            for _, future in batch:
                future.cancel()
            raise
        for (_, future), answer in zip(batch, answers):
            if future.done():
                continue
            if isinstance(answer, BaseException):
                future.set_exception(answer)
            else:
                future.set_result(answer)


class _Waiting:
    """Stands for the pending flush while it waits for a pipeline under way."""

    def cancel(self) -> None:
        pass


_WAITING: Any = _Waiting()


def _copy(exc: Exception) -> Exception:
    """An exception of the same kind and message for one caller (raising one instance
    in several coroutines would tangle their tracebacks)."""
    try:
        copy = type(exc)(*exc.args)
    except Exception:  # an exception class with another signature
        return exc
    copy.__cause__ = exc
    return copy
