"""One line enables the plugin: ``ADDONS = {"scrapy_rfc9309.Addon": 0}``: our middleware in the place of
Scrapy's RobotsTxtMiddleware, the nofollow spider middleware, and the gate around the project's scheduler
(moved to ``RFC9309_SCHEDULER``); ``RFC9309_ENABLED = False`` gives Scrapy's own back."""

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
        from .lifecycle import check_early
        from .middleware import RobotsTxtMiddleware
        from .nofollow import PRIORITY, NofollowMiddleware
        from .settings import DEFAULTS, GATE, _bool, project_scheduler

        try:  # RFC9309_ENABLED as the plugin reads it; a bad value counts as on (refused at start-up)
            enabled = _bool(settings.get("RFC9309_ENABLED", DEFAULTS["RFC9309_ENABLED"]), "RFC9309_ENABLED")
        except ValueError:
            enabled = True
        if enabled:  # else Scrapy's own stays; ours is NotConfigured and says so (lifecycle.rfc9309_settings)
            compat.disable_component(settings, "DOWNLOADER_MIDDLEWARES", BuiltinMiddleware)
        settings.set_in_component_priority_dict("DOWNLOADER_MIDDLEWARES", RobotsTxtMiddleware, MIDDLEWARE_PRIORITY)
        settings.set_in_component_priority_dict("SPIDER_MIDDLEWARES", NofollowMiddleware, PRIORITY)
        if project_scheduler(settings) is settings.get("SCHEDULER"):  # not wrapped yet
            priority = max(settings.getpriority("SCHEDULER") or 0, SETTINGS_PRIORITIES["addon"])
            settings.set("RFC9309_SCHEDULER", settings.get("SCHEDULER"), priority)
            settings.set("SCHEDULER", GATE, priority)
        if self.crawler is not None:  # a bad setting is said now, before Scrapy lists its components
            check_early(self.crawler, settings)
