"""A project's own scheduler, for the tests that check the add-on wraps it
wherever it is chosen (settings.py, ``-s``, a spider's ``custom_settings``).

Importable in a ``scrapy crawl`` subprocess as ``own_scheduler.OwnScheduler``
(tests/crawl is on its PYTHONPATH: accounting.subprocess_env)."""

from __future__ import annotations

from typing import Any

from scrapy.core.scheduler import Scheduler

#: the stat it counts the requests given to it under
ENQUEUED = "own_scheduler/enqueued"


class OwnScheduler(Scheduler):
    """Scrapy's scheduler, counting the requests it is given."""

    def enqueue_request(self, request: Any) -> bool:
        assert self.stats is not None
        self.stats.inc_value(ENQUEUED)
        return super().enqueue_request(request)
