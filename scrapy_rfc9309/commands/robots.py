"""``scrapy robots``: why would the plugin allow or drop this URL?

::

    scrapy robots URL [URL ...] [--agent TOKEN] [--file PATH]
    scrapy robots --lint PATH

Without ``--file`` the robots.txt of each URL's origin is fetched in a tiny
crawl through that crawl's robots service
(:meth:`scrapy_rfc9309.service.RobotsService.inspect`: the crawl's one fetcher,
and the same access-result step a crawl applies): redirects across hosts, 4xx
= allow all, 429/5xx/errors = unreachable = deny all, the size limit, and the
project's ``RFC9309_*`` settings (per-origin overrides included).  So the
answer is the one a crawl would get on its first request to that origin.

Exit status: 0 when every URL is allowed, 1 when any is denied (``--lint``:
when the file has diagnostics), 2 on a usage error (no URL, a bad token, an
unreadable file, an invalid setting) or when the fetch could not run.

Scrapy imports this module on every ``scrapy`` invocation (entry point), so it
imports little at the top.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any

from scrapy import Spider
from scrapy.commands import ScrapyCommand
from scrapy.exceptions import UsageError

if TYPE_CHECKING:
    import argparse
    from collections.abc import AsyncIterator

    from ..fetch import FetchResult
    from ..robots import Decision, RobotsTxt
    from ..settings import Rfc9309Settings

    #: what the service's inspect() gives: the fetch, and the policy it means
    Inspected = tuple[FetchResult, RobotsTxt]

#: exit status when the command could not produce an answer
EXIT_USAGE = 2


class Command(ScrapyCommand):
    requires_project = False
    # Logs go to stderr; stdout carries only the report. -L DEBUG shows each robots.txt request.
    default_settings = {"LOG_LEVEL": "WARNING", "TELNETCONSOLE_ENABLED": False}

    def syntax(self) -> str:
        return "[options] URL [URL ...] | --lint PATH"

    def short_desc(self) -> str:
        return "Check URLs against robots.txt exactly as scrapy-rfc9309 would"

    def long_desc(self) -> str:
        return (
            "For each URL print the verdict and the deciding robots.txt rule with its line, the "
            "Crawl-delay and Request-rate for the agent, the sitemaps and the file's diagnostics. "
            "Without --file, robots.txt is fetched as the scrapy-rfc9309 middleware fetches it "
            "(redirects, 4xx = allow all, 429/5xx/errors = deny all, size limit, RFC9309_* settings). "
            "Exit status: 0 all allowed, 1 any denied, 2 usage error. "
            "--lint PATH prints the file's diagnostics only (exit 0 clean, 1 with diagnostics)."
        )

    def add_options(self, parser: argparse.ArgumentParser) -> None:
        super().add_options(parser)
        parser.add_argument(
            "--agent",
            metavar="TOKEN",
            help="product token (or a User-Agent string that names one) to match User-agent lines with; "
            "by default ROBOTSTXT_USER_AGENT, "
            "else the product token of USER_AGENT",
        )
        parser.add_argument(
            "--file",
            metavar="PATH",
            help="check against this robots.txt ('-' for stdin) instead of fetching; URLs may then be paths",
        )
        parser.add_argument(
            "--lint", metavar="PATH", help="print the diagnostics of this robots.txt ('-' for stdin) and exit"
        )

    def process_options(self, args: list[str], opts: argparse.Namespace) -> None:
        super().process_options(args, opts)
        if not opts.loglevel:
            # stdout is the report: a project's LOG_LEVEL = "INFO" must not fill stderr with the crawl's log
            assert self.settings is not None
            self.settings.set("LOG_LEVEL", "WARNING", priority="cmdline")

    # -- entry point -----------------------------------------------------------
    def run(self, args: list[str], opts: argparse.Namespace) -> None:
        if opts.lint is not None:
            if args or opts.file is not None:
                raise UsageError("--lint PATH takes no URL and no --file", print_help=False)
            self.exitcode = self._lint(opts.lint)
            return
        if not args:
            raise UsageError("give at least one URL (or --lint PATH)", print_help=False)
        config = self._config(opts.agent)
        if opts.file is not None:
            self.exitcode = self._check_file(opts.file, args, config)
        else:
            self.exitcode = self._check_online(args, config, agent_given=opts.agent is not None)

    # -- the three modes ---------------------------------------------------------
    def _lint(self, path: str) -> int:
        from ..robots import parse
        from .report import lint_lines

        assert self.settings is not None
        max_bytes = self.settings.getint("RFC9309_MAX_BYTES", 512_000)
        lines, status = lint_lines(_label(path), parse(_read(path), max_bytes=max_bytes))
        _print(lines)
        return status

    def _check_file(self, path: str, targets: list[str], config: Rfc9309Settings) -> int:
        from ..robots import parse
        from .report import exit_status, file_lines, verdict_lines

        for target in targets:
            if not target.startswith("/") and not target.lower().startswith(("http://", "https://")):
                raise UsageError(
                    f"{target!r} is neither a path (starting with '/') nor an http(s) URL", print_help=False
                )
        robots = parse(_read(path), max_bytes=config.max_bytes)
        token = config.user_agent
        decisions = [robots.check(target, token) for target in targets]
        lines = [f"robots.txt from {_label(path)}", *file_lines(robots, token)]
        lines.extend(verdict_lines(targets, decisions))
        _print(lines)
        return exit_status(decisions)

    def _check_online(self, urls: list[str], config: Rfc9309Settings, agent_given: bool) -> int:
        from ..origins import origin_of
        from .report import exit_status

        by_origin: dict[str, list[str]] = {}
        for url in urls:
            origin = origin_of(url)
            if origin is None:
                raise UsageError(
                    f"{url!r} is not an absolute http(s) URL (to check paths, give --file PATH)",
                    print_help=False,
                )
            by_origin.setdefault(origin, []).append(url)
        to_fetch = [origin for origin in by_origin if config.for_origin(origin).obey]
        results = self._fetch(to_fetch, config) if to_fetch else {}
        missing = [origin for origin in to_fetch if origin not in results]
        if missing:
            print(f"scrapy robots: could not fetch robots.txt of {', '.join(missing)}", file=sys.stderr)
            return EXIT_USAGE

        lines: list[str] = []
        decisions: list[Decision] = []
        for origin, targets in by_origin.items():
            block, origin_decisions = _origin_block(origin, targets, config, results.get(origin), agent_given)
            lines.extend(block)
            decisions.extend(origin_decisions)
        _print(lines)
        return exit_status(decisions)

    # -- helpers -----------------------------------------------------------------
    def _config(self, agent: str | None) -> Rfc9309Settings:
        """The project's RFC9309_* settings, with ``--agent`` as the token."""
        from ..settings import Rfc9309Settings
        from ..useragent import derive_token

        assert self.settings is not None
        settings = self.settings.copy()
        if agent is not None:
            try:
                derive_token(agent)  # the plugin's one rule: "ExampleBot/1.0 (...)" gives ExampleBot
            except ValueError as exc:
                raise UsageError(f"--agent: {exc}", print_help=False) from None
            settings.set("ROBOTSTXT_USER_AGENT", agent, priority="cmdline")
        try:
            return Rfc9309Settings.from_settings(settings)
        except ValueError as exc:
            raise UsageError(f"invalid setting: {exc}", print_help=False) from None

    def _fetch(self, origins: list[str], config: Rfc9309Settings) -> dict[str, Inspected]:
        """Fetch every origin's robots.txt in one small crawl, through the
        crawl's robots service (the one fetcher a crawl has)."""
        assert self.crawler_process is not None
        results: dict[str, Inspected] = {}
        self.crawler_process.crawl(RobotsFetchSpider, origins=origins, config=config, results=results)
        self.crawler_process.start()
        return results


class RobotsFetchSpider(Spider):
    """Fetches robots.txt files through the crawl's robots service and nothing
    else: it schedules no request, so the crawl ends once the fetches are done."""

    name = "scrapy_rfc9309_robots"

    def __init__(
        self, origins: list[str], config: Rfc9309Settings, results: dict[str, Inspected], **kwargs: Any
    ) -> None:
        super().__init__(**kwargs)
        self.origins = origins
        self.config = config
        self.results = results

    async def start(self) -> AsyncIterator[Any]:
        from scrapy.utils.defer import deferred_from_coro, maybe_deferred_to_future
        from twisted.internet.defer import DeferredList

        from ..wiring import robots_service

        service = robots_service(self.crawler)

        async def fetch(origin: str) -> None:
            try:
                self.results[origin] = await service.inspect(origin, self.config.for_origin(origin).unreachable)
            except Exception:  # a bug, not a network problem (those are results)
                self.logger.exception("could not fetch the robots.txt of %s", origin)

        await maybe_deferred_to_future(DeferredList([deferred_from_coro(fetch(o)) for o in self.origins]))
        return
        yield  # an async generator that yields nothing


def _origin_block(
    origin: str,
    targets: list[str],
    config: Rfc9309Settings,
    inspected: Inspected | None,
    agent_given: bool,
) -> tuple[list[str], list[Decision]]:
    """The lines and decisions of one origin."""
    from ..origins import robots_url
    from ..robots import RobotsTxt, Verdict
    from .report import file_lines, row, verdict_lines

    policy = config.for_origin(origin)
    token = config.user_agent if agent_given else policy.user_agent
    lines = [origin]
    robots: RobotsTxt
    if inspected is None:  # obey: False for this origin
        robots = RobotsTxt.allow_all(Verdict.ALLOWED_NOT_OBEYED)
        lines.append(row("robots.txt", "not fetched (RFC9309_ORIGINS: obey: False)"))
    else:
        result, robots = inspected
        lines.append(row("robots.txt", describe_fetch(robots_url(origin), result, config, policy.unreachable)))
    lines.extend(file_lines(robots, token))
    decisions = [robots.check(target, token) for target in targets]
    lines.extend(verdict_lines(targets, decisions))
    return lines, decisions


def describe_fetch(url: str, result: FetchResult, config: Rfc9309Settings, unreachable: str) -> str:
    """``GET URL -> 2 redirects -> FINAL: status 200 (success)`` and what it means."""
    from ..robots.access import Access

    text = f"GET {url}"
    if result.redirects:
        text += f" -> {result.redirects} redirect{'s' if result.redirects > 1 else ''} -> {result.url}"
    if result.error is not None:
        text += f": {type(result.error).__name__}: {result.error}"
    else:
        text += f": status {result.status}"
    text += f" ({result.access.value})"
    if result.note:
        text += f"; {result.note}, so every URL is allowed"
    if result.truncated_bytes:
        text += f"; at least {result.truncated_bytes:,} bytes past the {config.max_bytes:,}-byte limit were ignored"
    if result.access is Access.UNREACHABLE and unreachable == "wait":
        text += f"; a crawl would retry it for up to {config.unreachable_wait:g} s before denying"
    return text


def _read(path: str) -> bytes:
    try:
        if path == "-":
            return sys.stdin.buffer.read()
        with open(path, "rb") as handle:
            return handle.read()
    except OSError as exc:
        raise UsageError(f"cannot read {path}: {exc.strerror or exc}", print_help=False) from None


def _label(path: str) -> str:
    return "<stdin>" if path == "-" else path


def _print(lines: list[str]) -> None:
    sys.stdout.write("\n".join(lines) + "\n")
    sys.stdout.flush()
