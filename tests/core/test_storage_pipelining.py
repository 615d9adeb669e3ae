"""The pipeliner of the shared stores (scrapy_rfc9309/storage/pipelining.py), on
its own: plain asyncio, a ``send`` that records what it is given."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor

import pytest

from scrapy_rfc9309.storage import StorageUnavailable
from scrapy_rfc9309.storage.pipelining import Pipeliner


def run(scenario: Callable[[], Awaitable[None]]) -> None:
    """``asyncio.run(scenario())`` in a thread of its own: the test session's
    reactor may already run an event loop in this one."""
    with ThreadPoolExecutor(1) as thread:
        thread.submit(lambda: asyncio.run(scenario())).result()  # type: ignore[arg-type]


class Recorder:
    """A ``send`` that answers ``call * 10``, an exception for a call "bad", and
    fails as a whole while ``down``."""

    def __init__(self) -> None:
        self.sent: list[list[object]] = []
        self.down = False

    async def __call__(self, calls: list[object]) -> list[object]:
        self.sent.append(list(calls))
        await asyncio.sleep(0)  # a round trip
        if self.down:
            raise StorageUnavailable("redis://h: connection refused")
        return [StorageUnavailable(f"{call}: no such script") if call == "bad" else call * 10 for call in calls]


def test_calls_of_one_turn_share_one_send_and_each_gets_its_own_answer():
    async def scenario() -> None:
        send = Recorder()
        pipeliner = Pipeliner(send)
        answers = await asyncio.gather(
            pipeliner.call(1), pipeliner.call(2), pipeliner.call("bad"), pipeliner.call(3), return_exceptions=True
        )
        assert send.sent == [[1, 2, "bad", 3]]
        assert answers[:2] == [10, 20] and answers[3] == 30
        assert isinstance(answers[2], StorageUnavailable) and "no such script" in str(answers[2])

    run(scenario)


def test_a_call_that_may_wait_goes_with_the_next_one_that_cannot_or_after_its_delay():
    async def scenario() -> None:
        loop = asyncio.get_running_loop()
        send = Recorder()
        pipeliner = Pipeliner(send)
        began = loop.time()
        waiting = asyncio.ensure_future(pipeliner.call(1, delay=0.2))
        await asyncio.sleep(0.05)
        assert send.sent == []  # still waiting for company
        assert await pipeliner.call(2) == 20  # cannot wait: takes the waiting one along
        assert await waiting == 10
        assert send.sent == [[1, 2]] and loop.time() - began < 0.2
        # alone, it goes after its delay
        began = loop.time()
        assert await pipeliner.call(3, delay=0.1) == 30
        assert send.sent[-1] == [3] and loop.time() - began >= 0.09
        # a shorter delay is not held up by a longer one queued before it
        began = loop.time()
        late = asyncio.ensure_future(pipeliner.call(4, delay=5.0))
        assert await pipeliner.call(5, delay=0.05) == 50
        assert await late == 40 and loop.time() - began < 1.0

    run(scenario)


def test_a_failed_round_trip_fails_each_of_its_calls_and_the_next_one_goes_again():
    async def scenario() -> None:
        send = Recorder()
        pipeliner = Pipeliner(send)
        send.down = True
        failed = await asyncio.gather(pipeliner.call(1), pipeliner.call(2), return_exceptions=True)
        assert [type(answer) for answer in failed] == [StorageUnavailable, StorageUnavailable]
        assert failed[0] is not failed[1] and "connection refused" in str(failed[0])
        send.down = False
        assert await pipeliner.call(3) == 30

    run(scenario)


def test_drain_sends_what_waits_and_a_cancelled_caller_leaves_the_others_alone():
    async def scenario() -> None:
        send = Recorder()
        pipeliner = Pipeliner(send)
        kept = asyncio.ensure_future(pipeliner.call(1, delay=60.0))
        dropped = asyncio.ensure_future(pipeliner.call(2, delay=60.0))
        await asyncio.sleep(0)
        dropped.cancel()
        await pipeliner.drain()
        assert send.sent == [[1]]  # the cancelled call is not sent
        assert await kept == 10
        with pytest.raises(asyncio.CancelledError):
            await dropped

    run(scenario)


def test_a_full_pipeline_goes_at_once():
    async def scenario() -> None:
        send = Recorder()
        pipeliner = Pipeliner(send, max_calls=3)
        answers = await asyncio.gather(*(pipeliner.call(i, delay=0.1) for i in range(7)))
        assert answers == [i * 10 for i in range(7)]
        assert [len(calls) for calls in send.sent] == [3, 3, 1]

    run(scenario)


def test_calls_that_may_wait_wait_for_the_pipeline_under_way_and_calls_that_cannot_do_not():
    async def scenario() -> None:
        sent: list[list[int]] = []
        answers: dict[int, asyncio.Event] = {}

        async def slow(calls: list[int]) -> list[int]:
            sent.append(list(calls))
            answers[calls[0]] = asyncio.Event()
            await answers[calls[0]].wait()
            return [call * 10 for call in calls]

        pipeliner = Pipeliner(slow)
        first = asyncio.ensure_future(pipeliner.call(1))
        await asyncio.sleep(0.01)
        stores = [asyncio.ensure_future(pipeliner.call(n, delay=0.02)) for n in (2, 3)]
        await asyncio.sleep(0.05)
        stores.append(asyncio.ensure_future(pipeliner.call(4, delay=0.02)))
        await asyncio.sleep(0.05)
        assert sent == [[1]]  # the stores wait for its answer, past their delay
        urgent = asyncio.ensure_future(pipeliner.call(5))  # a look-up does not wait: it takes them along
        await asyncio.sleep(0.01)
        assert sent == [[1], [2, 3, 4, 5]]
        answers[2].set()
        assert await asyncio.gather(*stores, urgent) == [20, 30, 40, 50]
        assert not first.done()
        answers[1].set()
        assert await first == 10
        # stores alone: the one made while a pipeline is under way goes after its answer
        early = asyncio.ensure_future(pipeliner.call(6, delay=0.01))
        await asyncio.sleep(0.03)
        late = asyncio.ensure_future(pipeliner.call(7, delay=0.01))
        await asyncio.sleep(0.05)
        assert sent[2:] == [[6]]
        answers[6].set()
        await asyncio.sleep(0.01)
        assert sent[3:] == [[7]]
        answers[7].set()
        assert await asyncio.gather(early, late) == [60, 70]

    run(scenario)
