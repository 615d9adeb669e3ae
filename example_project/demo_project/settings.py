"""Settings of the example project.

The plugin is enabled by the add-on alone; the rest shows the knobs a user
turns first.  The demo spider adds spider-level overrides in its
``custom_settings``.
"""

from demo_project.demo_site import ORIGINS

BOT_NAME = "demo_project"
SPIDER_MODULES = ["demo_project.spiders"]
NEWSPIDER_MODULE = "demo_project.spiders"

# One line enables scrapy-rfc9309: it replaces Scrapy's RobotsTxtMiddleware with the
# RFC 9309 one and enables the Crawl-delay floor.
ADDONS = {"scrapy_rfc9309.Addon": 0}

# As `scrapy startproject` writes it, and with Scrapy's meaning: False (here, in a
# spider's custom_settings, or `-s ROBOTSTXT_OBEY=False`) turns robots.txt off. The
# add-on disables Scrapy's own robots.txt middleware, so only ours runs.
ROBOTSTXT_OBEY = True

# The product token (ExampleBot) is derived from this; the demo spider overrides it.
USER_AGENT = "ExampleBot/1.0 (+https://example.com/bot)"

# Per-origin overrides. ORIGINS["intranet"] is "http://127.0.0.12:9309", the demo's
# stand-in for a site you own: its robots.txt says "Disallow: /", but it is never fetched.
RFC9309_ORIGINS = {
    ORIGINS["intranet"]: {"obey": False},
}

# AutoThrottle may raise a download delay, never lower it under a robots.txt Crawl-delay.
AUTOTHROTTLE_ENABLED = True
AUTOTHROTTLE_START_DELAY = 0
DOWNLOAD_DELAY = 0
CONCURRENT_REQUESTS_PER_DOMAIN = 8

# The demo site answers at once; a stuck page should not hold the demo for minutes.
DOWNLOAD_TIMEOUT = 15
RETRY_ENABLED = False
TELNETCONSOLE_ENABLED = False
# DEBUG adds one line per dropped request: "Forbidden by robots.txt: ...".
LOG_LEVEL = "INFO"
