"""One line to enable the plugin: ``ADDONS = {"scrapy_rfc9309.Addon": 0}``.

The add-on swaps Scrapy's RobotsTxtMiddleware for ours at the same place in
the chain (priority 100, after OffsiteMiddleware, before everything that
touches the request) by their ``DOWNLOADER_MIDDLEWARES`` entries, enables
the nofollow spider middleware (:mod:`.nofollow`), and puts the gate
(:mod:`.gate`, where requests wait for robots.txt and Crawl-delay) in front of the
project's scheduler: ``SCHEDULER`` becomes the gate, and the project's own
(Scrapy's, scrapy-redis's, a custom one) moves to ``RFC9309_SCHEDULER``, at
the priority it had, so the gate wraps whatever the project, the spider or the
command line chose.  It leaves ``ROBOTSTXT_OBEY`` to the user, where it
keeps its Scrapy meaning: set to False (project, spider ``custom_settings``,
``-s ROBOTSTXT_OBEY=False``) it turns robots.txt handling off, ours included.
``RFC9309_ENABLED = False`` turns the plugin off and gives Scrapy's own
RobotsTxtMiddleware back (it obeys robots.txt when ``ROBOTSTXT_OBEY`` is true,
as without the add-on); one INFO line at start-up says which one runs.  A
Scrapy setting the plugin reads that Scrapy cannot read
(``CONCURRENT_REQUESTS=abc``) is one ERROR line here, not a traceback
(:func:`.lifecycle.check_early`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from scrapy.settings import BaseSettings

MIDDLEWARE_PRIORITY = 100


class Addon:
    """Scrapy add-on that enables scrapy-rfc9309."""

    def __init__(self, crawler: Any = None) -> None:
        self.crawler = crawler

    @classmethod
    def from_crawler(cls, crawler: Any) -> Addon:
        return cls(crawler)

    def update_settings(self, settings: BaseSettings) -> None:
        from scrapy.downloadermiddlewares.robotstxt import RobotsTxtMiddleware as BuiltinMiddleware
        from scrapy.settings import SETTINGS_PRIORITIES

        from . import compat
        from .middleware import RobotsTxtMiddleware
        from .nofollow import PRIORITY, NofollowMiddleware
        from .settings import GATE, project_scheduler

        if _enabled(settings):
            compat.disable_component(settings, "DOWNLOADER_MIDDLEWARES", BuiltinMiddleware)
        # else Scrapy's own stays; ours is NotConfigured and says so (lifecycle.rfc9309_settings)
        settings.set_in_component_priority_dict("DOWNLOADER_MIDDLEWARES", RobotsTxtMiddleware, MIDDLEWARE_PRIORITY)
        settings.set_in_component_priority_dict("SPIDER_MIDDLEWARES", NofollowMiddleware, PRIORITY)
        if project_scheduler(settings) is settings.get("SCHEDULER"):  # not wrapped yet
            priority = max(settings.getpriority("SCHEDULER") or 0, SETTINGS_PRIORITIES["addon"])
            settings.set("RFC9309_SCHEDULER", settings.get("SCHEDULER"), priority)
            settings.set("SCHEDULER", GATE, priority)
        if self.crawler is not None:  # a bad setting is said now, before Scrapy lists its components
            from .lifecycle import check_early

            check_early(self.crawler, settings)


def _enabled(settings: BaseSettings) -> bool:
    """``RFC9309_ENABLED`` as the plugin reads it; a bad value counts as on (the
    plugin refuses it at start-up, naming the setting)."""
    from .settings import DEFAULTS, _bool

    value = settings.get("RFC9309_ENABLED")
    try:
        return _bool(DEFAULTS["RFC9309_ENABLED"] if value is None else value, "RFC9309_ENABLED")
    except ValueError:
        return True
