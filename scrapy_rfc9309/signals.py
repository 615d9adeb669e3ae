"""Signals sent by scrapy-rfc9309.

Connect to them like Scrapy's own signals::

    crawler.signals.connect(handler, signal=scrapy_rfc9309.signals.robots_txt_ready)
"""

robots_txt_ready = object()
"""Sent (synchronously, with ``send_catch_log``) each time the robots.txt result
of an origin becomes known: a fresh fetch, a re-fetch after expiry, or an
allow-all / deny-all policy.  It is sent *before* the requests waiting for that
origin are released, so a handler can prepare for them (the Crawl-delay
extension sets the download slot's delay here).

Arguments:

* ``origin`` - the canonical origin, ``"scheme://host:port"`` (see
  :func:`scrapy_rfc9309.origins.origin_of`);
* ``robots`` - the :class:`~scrapy_rfc9309.RobotsTxt` that now governs it;
* ``user_agent`` - the product token used for that origin;
* ``request`` - the page request that triggered the fetch.
"""
