"""Copy the plugin's provenance into every item: which robots.txt allowed the page.

scrapy-rfc9309 puts ``response.meta["rfc9309"]`` on every response robots.txt
allowed (the verdict, the deciding rule and its line, the robots.txt URL after
redirects, its status, when it was fetched and the SHA-256 of its body).  An
item pipeline sees items but not the response they came from, so the copy is
made one step earlier, by a spider middleware, which sees both.  Enable it
where items should carry it (``sitemap_demo`` does, in ``custom_settings``)::

    SPIDER_MIDDLEWARES = {"demo_project.provenance.RobotsProvenanceMiddleware": 900}

Each dict item gets ``item["robots_txt"]``; an item of another kind is left as
it is (give it a ``robots_txt`` field to receive it).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

from scrapy import Request

FIELD = "robots_txt"


class RobotsProvenanceMiddleware:
    # an async generator serves every supported Scrapy; **kwargs takes the spider
    # argument Scrapy 2.13 passes and later releases do not
    async def process_spider_output(
        self, response: Any, result: AsyncIterator[Any], **kwargs: Any
    ) -> AsyncIterator[Any]:
        provenance = response.meta.get("rfc9309")
        async for output in result:
            if provenance is not None and not isinstance(output, Request):
                try:
                    output[FIELD] = dict(provenance)
                except (TypeError, KeyError):
                    pass  # an item class without the field: left alone
            yield output
