"""Signals sent by scrapy-rfc9309, connected to like Scrapy's own::

crawler.signals.connect(handler, signal=scrapy_rfc9309.signals.robots_txt_ready)
"""

robots_txt_ready = object()
"""Sent (synchronously, with ``send_catch_log``) each time an origin's robots.txt result becomes known
(a fresh fetch, a re-fetch after expiry, an allow-all / deny-all policy), *before* the requests waiting
for it are released, so a handler can prepare for them (the Crawl-delay extension sets the download
slot's delay here).  Arguments:

* ``origin`` - the canonical origin, ``"scheme://host:port"`` (:func:`scrapy_rfc9309.origins.origin_of`);
* ``robots`` - the :class:`~scrapy_rfc9309.RobotsTxt` that now governs it;
* ``user_agent`` - the product token used for that origin;
* ``request`` - the page request that triggered the fetch.
"""
