"""Signals of scrapy-rfc9309, connected to like Scrapy's own (docs/middleware.md#signals)."""

robots_txt_ready = object()
"""Sent synchronously each time an origin's robots.txt result becomes known (a fetch, a re-fetch, an allow-all or
deny-all policy), before the requests waiting for it go on.  Arguments: ``origin`` (``"scheme://host:port"``),
``robots`` (the :class:`~scrapy_rfc9309.RobotsTxt` that now governs it), ``user_agent`` (its product token) and
``request`` (the request that triggered the fetch, or one for the robots.txt URL)."""
