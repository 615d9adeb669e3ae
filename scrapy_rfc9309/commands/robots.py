"""``scrapy robots``: why would the plugin allow or drop this URL?

::

    scrapy robots URL [URL ...] [--agent TOKEN ...] [--file PATH] [--spider NAME] [--usage PURPOSE ...] [--page [--fetch-denied]]
    scrapy robots --lint PATH
    scrapy robots --audit FILE URL [URL ...] [--audit-key-file PATH]
    scrapy robots --audit FILE --summary [--audit-key-file PATH]

Without ``--file`` the robots.txt of each URL's origin is fetched in a tiny
crawl through that crawl's robots service
(:meth:`scrapy_rfc9309.service.RobotsService.inspect`: the crawl's one fetcher,
and the same access-result step a crawl applies): redirects across hosts, 4xx
= allow all, 429/5xx/errors = unreachable = deny all, the size limit, and the
project's ``RFC9309_*`` settings (per-origin overrides included).  So the
answer is the one a crawl would get on its first request to that origin.

``--audit FILE`` replays a crawl's audit trail (``RFC9309_AUDIT``): each URL is
checked against the robots.txt that governed it during that crawl (the body
kept by its SHA-256 beside the trail), not against today's file, and the
output says when that file was fetched.  ``--summary`` prints, per origin, the
fetches, the last result, the changes and the allowed/denied counts.  Either
way the trail is verified first: its chain, line by line, and every body its
records name.  A trail sealed with a key is checked with the key from
``--audit-key-file PATH`` (``-``: stdin), else ``RFC9309_AUDIT``'s ``"key"``
(``-s``, the project's), else the environment variable ``RFC9309_AUDIT_KEY``.

``--spider NAME`` (inside a project) uses that spider's settings, its
``custom_settings`` over the project's, as ``scrapy fetch --spider`` does: its
token, its ``RFC9309_ORIGINS``, its store.

``--agent`` may be given several times: a URL is allowed only when every
token allows it (as with a list in ``ROBOTSTXT_USER_AGENT``).

``--usage PURPOSE`` (``train-ai``, ``search``, ``ai-input``; repeatable) declares
the crawl's purposes as ``RFC9309_USAGE`` does: a URL whose robots.txt usage
preferences (``Content-Usage``, ``Content-Signal``) disallow one is DENIED,
with the deciding line.  The preferences of every URL are printed whenever
the file states any.  With ``--audit`` the purposes the crawl declared are
used unless ``--usage`` is given.  Online, where a purpose is declared (or
with ``--page``), the origin's ``/.well-known/tdmrep.json`` is fetched too and
its rule for each URL shown (``no tdmrep.json`` when there is none) and
counted, as a crawl counts it.  ``--page`` also fetches each URL a crawl would
download (through the robots.txt lane) and shows what its headers and HTML head
state (``Content-Usage``, ``tdm-*``, ``X-Robots-Tag``, robots / token meta
tags, ``nofollow``), combined as a crawl combines them on the response.  Like a
crawl, it fetches no page robots.txt disallows, nor one its usage preferences
deny for a declared purpose (reported as not fetched), unless ``--fetch-denied``;
nor anything but the pages of an origin that is not obeyed (``obey: False``,
``ROBOTSTXT_OBEY = False`` with a purpose declared).

Exit status: 0 when every URL is allowed, 1 when any is denied (``--lint``:
when the file has diagnostics) and never otherwise, 2 when there is no
answer: a bad input, the fetch could not run, a keyed trail and no key, or a
bug (its traceback printed).  A bad input (a URL that is no absolute http(s)
URL, an unreadable file, an unknown option, spider or usage category, options
that do not go together, any bad ``RFC9309_*`` setting) is refused before
anything is fetched, with one line on stderr that shows it, masked and
shortened (:mod:`.inputs`), and says what to write instead.  With ``--audit``:
3 when the trail does not verify (one line names the first line that does not
fit: edited, deleted, reordered, forged, another key, a body that does not
match; nothing is replayed), 4 when it verifies but a crawl in it has no
closing record (truncated, or killed: the replay is printed, then the line);
3 and 4 outrank 0 and 1.

Scrapy imports this module on every ``scrapy`` invocation (entry point), so it
imports little at the top.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any

from scrapy import Spider
from scrapy.commands import ScrapyCommand
from scrapy.exceptions import UsageError

from ..masking import mask_text, mask_url
from .inputs import shown

if TYPE_CHECKING:
    import argparse
    from collections.abc import AsyncIterator

    from ..fetch import FetchResult
    from ..robots import RobotsTxt
    from ..robots.usage import Usage
    from ..settings import Rfc9309Settings

    #: what the service's inspect() gives: the fetch, and the policy it means
    Inspected = tuple[FetchResult, RobotsTxt]

#: exit status when the command could not produce an answer
EXIT_USAGE = 2
#: --audit: the trail does not verify (edited, deleted, reordered, forged, a body altered)
EXIT_TAMPERED = 3
#: --audit: the trail verifies, but a crawl in it has no closing record (truncated, or killed)
EXIT_UNFINISHED = 4


class Command(ScrapyCommand):
    requires_project = False
    _spider: type[Spider] | None = None
    #: the project's RFC9309_AUDIT and its priority, before the command's own crawl turns it off
    _audit_setting: tuple[Any, Any] = (None, None)
    # Logs go to stderr; stdout carries only the report. -L DEBUG shows each robots.txt request.
    default_settings = {"LOG_LEVEL": "WARNING", "TELNETCONSOLE_ENABLED": False}

    def syntax(self) -> str:
        return "[options] URL [URL ...] | --lint PATH | --audit FILE (URL [URL ...] | --summary)"

    def short_desc(self) -> str:
        return "Check URLs against robots.txt exactly as scrapy-rfc9309 would"

    def long_desc(self) -> str:
        return (
            "For each URL print the verdict and the deciding robots.txt rule with its line, the "
            "Crawl-delay and Request-rate for the agent, the sitemaps and the file's diagnostics. "
            "Without --file, robots.txt is fetched as the scrapy-rfc9309 middleware fetches it "
            "(redirects, 4xx = allow all, 429/5xx/errors = deny all, size limit, RFC9309_* settings). "
            "Exit status: 0 all allowed, 1 any denied, 2 no answer: a bad URL, option, file or setting "
            "(one line on stderr says which and what to write instead), the fetch could not run, or a bug. "
            "--lint PATH prints the file's diagnostics only (exit 0 clean, 1 with diagnostics). "
            "--audit FILE URL ... answers from the robots.txt in force during the crawl that wrote the "
            "audit trail FILE (RFC9309_AUDIT); --audit FILE --summary prints its per-origin summary. "
            "The trail is verified first: exit 3 when it was altered (the first line that does not fit is "
            "named), 4 when a crawl in it has no closing record (truncated or killed)."
        )

    def add_options(self, parser: argparse.ArgumentParser) -> None:
        super().add_options(parser)
        parser.add_argument(
            "--agent",
            metavar="TOKEN",
            action="append",
            help="product token (or a User-Agent string that names one) to match User-agent lines with; "
            "repeat it for several tokens, all of which must allow; by default ROBOTSTXT_USER_AGENT, "
            "else the product token of USER_AGENT",
        )
        parser.add_argument(
            "--audit",
            metavar="FILE",
            help="replay the audit trail FILE (RFC9309_AUDIT): check the URLs against the robots.txt "
            "in force during that crawl",
        )
        parser.add_argument(
            "--summary", action="store_true", help="with --audit: fetches, results, changes and counts per origin"
        )
        parser.add_argument(
            "--audit-key-file",
            metavar="PATH",
            help="with --audit: the file ('-' for stdin) holding the key the trail was sealed with; by default "
            'RFC9309_AUDIT\'s "key", else the environment variable RFC9309_AUDIT_KEY',
        )
        parser.add_argument(
            "--file",
            metavar="PATH",
            help="check against this robots.txt ('-' for stdin) instead of fetching; URLs may then be paths",
        )
        parser.add_argument(
            "--usage",
            metavar="PURPOSE",
            action="append",
            help="a declared purpose (train-ai, search, ai-input), as RFC9309_USAGE: a URL whose robots.txt "
            "usage preferences disallow it is denied; repeat it for several",
        )
        parser.add_argument(
            "--page",
            action="store_true",
            help="also fetch each URL a crawl would download and show what its headers and HTML head state "
            "(X-Robots-Tag, tdm-*, robots meta tags, Content-Usage)",
        )
        parser.add_argument(
            "--fetch-denied",
            action="store_true",
            help="with --page: fetch too the pages robots.txt's usage preferences deny for a declared purpose "
            "(a crawl never downloads them; a Disallow still holds)",
        )
        parser.add_argument(
            "--lint", metavar="PATH", help="print the diagnostics of this robots.txt ('-' for stdin) and exit"
        )
        parser.add_argument(
            "--spider",
            metavar="NAME",
            help="use this spider's settings (its custom_settings over the project's): its token, "
            "RFC9309_ORIGINS and store, as `scrapy fetch --spider` does",
        )

    def process_options(self, args: list[str], opts: argparse.Namespace) -> None:
        super().process_options(args, opts)
        if not opts.loglevel:
            # stdout is the report: a project's LOG_LEVEL = "INFO" must not fill stderr with the crawl's log
            assert self.settings is not None
            self.settings.set("LOG_LEVEL", "WARNING", priority="cmdline")
        # the command's own small crawl (it fetches robots.txt, decides nothing) writes no audit
        # trail; the key the project's RFC9309_AUDIT gives still checks one (--audit FILE)
        assert self.settings is not None
        self._audit_setting = (self.settings.get("RFC9309_AUDIT"), self.settings.getpriority("RFC9309_AUDIT"))
        self.settings.set("RFC9309_AUDIT", None, priority="cmdline")

    # -- entry point -----------------------------------------------------------
    def run(self, args: list[str], opts: argparse.Namespace) -> None:
        try:
            self.exitcode = self._run(args, opts)
        except UsageError as exc:
            # one line, not Scrapy's usage block: the message says what to write instead
            _fail(str(exc))
            self.exitcode = EXIT_USAGE
        except Exception:
            # a bug: its traceback for the report, and never status 1, which means "denied"
            import traceback

            traceback.print_exc()
            _fail("an unexpected error (a bug in scrapy-rfc9309: please report it with the traceback above)")
            self.exitcode = EXIT_USAGE

    def _run(self, args: list[str], opts: argparse.Namespace) -> int:
        """The exit status; ``UsageError`` for anything the user gave that it
        cannot use, checked before anything runs: options, then the spider and
        the settings (every ``RFC9309_*`` one, as a crawl reads them), then the
        URLs."""
        # Scrapy hands options it does not know to the command as arguments
        unknown = [arg for arg in args if arg.startswith("-") and arg != "-"]
        if unknown:
            raise UsageError(f"unknown option {shown(unknown[0])} (see scrapy robots -h)", print_help=False)
        _check_options(args, opts)
        self._spider = self._spider_class(opts.spider)
        config = self._config(opts.agent, opts.usage)
        if opts.lint is not None:
            return self._lint(opts.lint, config)
        _check_urls(args, paths=opts.file is not None, online=opts.file is None and opts.audit is None)
        if opts.audit is not None:
            key = self._audit_key(opts.audit_key_file)
            return self._replay(opts.audit, args, opts.summary, opts.agent, opts.usage, key)
        if opts.file is not None:
            return self._check_file(opts.file, args, config)
        return self._check_online(args, config, opts.agent is not None, opts.page, opts.fetch_denied)

    # -- the three modes ---------------------------------------------------------
    def _lint(self, path: str, config: Rfc9309Settings) -> int:
        from ..robots import parse
        from .report import lint_lines

        lines, status = lint_lines(_label(path), parse(_read(path), max_bytes=config.max_bytes))
        _print(lines)
        return status

    def _check_file(self, path: str, targets: list[str], config: Rfc9309Settings) -> int:
        from ..robots import parse
        from .report import exit_status, usage_lines, verdict_lines

        robots = parse(_read(path), max_bytes=config.max_bytes)
        tokens = config.user_agents
        decisions = [_decide(robots, target, tokens, config.usage) for target in targets]
        lines = [f"robots.txt from {_label(path)}", *_file_lines(robots, tokens)]
        lines.extend(verdict_lines(targets, decisions))
        lines.extend(usage_lines(targets, [d.usage for d in decisions], config.usage))
        _print(lines)
        return exit_status(decisions)

    def _check_online(
        self, urls: list[str], config: Rfc9309Settings, agent_given: bool, page: bool = False, denied: bool = False
    ) -> int:
        from ..origins import origin_of
        from .report import exit_status

        by_origin: dict[str, list[str]] = {}
        for url in urls:
            origin = origin_of(url)
            assert origin is not None, url  # _check_urls refused it
            by_origin.setdefault(origin, []).append(url)
        to_fetch = [origin for origin in by_origin if config.for_origin(origin).obey]
        # the other sources: where a purpose is declared (the origin's tdmrep.json), or --page
        sources = [origin for origin in by_origin if page or config.for_origin(origin).usage]
        extras = Extras({origin: by_origin[origin] if page else [] for origin in sources}, denied)
        results = self._fetch(to_fetch, config, extras) if to_fetch or sources else {}
        missing = [origin for origin in to_fetch if origin not in results]
        if missing:
            _fail(f"could not fetch robots.txt of {', '.join(missing)} (the log above says why)")
            return EXIT_USAGE

        lines: list[str] = []
        decisions: list[_Decided] = []
        for origin, targets in by_origin.items():
            block, origin_decisions = _origin_block(
                origin, targets, config, results.get(origin), agent_given, extras if origin in extras.wanted else None
            )
            lines.extend(block)
            decisions.extend(origin_decisions)
        _print(lines)
        return exit_status(decisions)

    def _setting_key(self) -> Any:
        """The key ``RFC9309_AUDIT`` gives (its dict's ``"key"``) as the crawl reads it:
        the project's or ``-s``'s value, under ``--spider``'s own, before the command
        turned the trail off for its own crawl."""
        from scrapy.settings import BaseSettings

        from ..settings import audit_setting_key

        value, priority = self._audit_setting
        settings = BaseSettings()
        settings.set("RFC9309_AUDIT", value, priority=priority or "default")
        if self._spider is not None:
            self._spider.update_settings(settings)
        return audit_setting_key(settings.get("RFC9309_AUDIT"))

    def _audit_key(self, path: str | None) -> bytes | None:
        """The key a trail is checked with: ``--audit-key-file``, else RFC9309_AUDIT's
        ``"key"``, else the environment variable RFC9309_AUDIT_KEY.  Never printed."""
        from ..settings import audit_key

        try:
            if path is not None:
                text = _read(path).rstrip(b"\r\n")  # (a key file's last newline is not part of the key)
                secret = audit_key(text, "--audit-key-file")
            else:
                secret = audit_key(self._setting_key())
        except ValueError as exc:
            raise UsageError(str(exc), print_help=False) from None
        return secret.reveal() if secret is not None else None

    def _replay(
        self,
        path: str,
        urls: list[str],
        summary: bool,
        agents: list[str] | None,
        usage: list[str] | None = None,
        trail_key: bytes | None = None,
    ) -> int:
        """``--audit FILE``: verify the trail, then answer from the robots.txt in
        force during the crawl."""
        from ..audit import Trail, TrailError, TrailKeyNeeded, TrailTampered
        from ..origins import origin_of
        from .report import exit_status, row, usage_lines, verdict_lines

        by_origin: dict[str, list[str]] = {}
        for url in urls:
            origin = origin_of(url)
            assert origin is not None, url  # _check_urls refused it
            by_origin.setdefault(origin, []).append(url)
        forced = _agent_tokens(agents) if agents else None
        try:
            trail = Trail(path, trail_key, by_origin, summary=summary)  # streamed: memory bounded (docs/audit.md)
            trail.check_bodies()
        except TrailTampered as exc:
            print(f"scrapy robots: audit trail {path}: {exc}", file=sys.stderr)
            return EXIT_TAMPERED
        except TrailKeyNeeded as exc:
            print(f"scrapy robots: audit trail {path}: {exc}", file=sys.stderr)
            return EXIT_USAGE
        except TrailError as exc:
            raise UsageError(str(exc), print_help=False) from None
        if summary:
            _print(_summary_lines(trail))
            return _unfinished(trail, path, 0)
        purposes = _purposes(usage) if usage else trail.usage
        lines: list[str] = [f"audit trail {path}: {_chain_text(trail)}"]
        decisions: list[_Decided] = []
        try:
            for origin, targets in by_origin.items():
                # URLs governed by the same file share one block
                blocks: dict[tuple[Any, ...], tuple[dict[str, Any], list[str], list[Any]]] = {}
                for url in targets:
                    state, decided = trail.state_for(origin, url)
                    key = (state.get("fetched_at"), state.get("governing_sha256"), state.get("governing_access"))
                    blocks.setdefault(key, (state, [], []))[1].append(url)
                    blocks[key][2].append(decided)
                for state, block_urls, recorded in blocks.values():
                    robots = trail.robots_of(state)
                    tokens = forced or tuple(state.get("tokens") or ()) or _trail_tokens(trail)
                    lines.append(origin)
                    lines.append(row("robots.txt", _describe_state(state, path)))
                    lines.extend(_file_lines(robots, tokens))
                    block = [_decide(robots, url, tokens, purposes) for url in block_urls]
                    lines.extend(verdict_lines(block_urls, block))
                    lines.extend(usage_lines(block_urls, [d.usage for d in block], purposes))
                    for url, decided in zip(block_urls, recorded):
                        if decided is not None:
                            lines.append(row("", f"{url}: the crawl {decided['type']} it at {decided['at']}"))
                        used = trail.usage_decision(url)
                        if used is not None:
                            by = "; ".join(_source_text(s) for s in used.get("sources") or ()) or "no statement"
                            lines.append(
                                row("", f"{url}: the crawl {used['action']} it at {used['at']}: "
                                f"{used['category']} disallowed by {by}")
                            )  # fmt: skip
                    decisions.extend(block)
        except TrailTampered as exc:  # (a body altered since check_bodies)
            print(f"scrapy robots: audit trail {path}: {exc}", file=sys.stderr)
            return EXIT_TAMPERED
        except TrailError as exc:
            _fail(str(exc))
            return _unfinished(trail, path, EXIT_USAGE)
        _print(lines)
        return _unfinished(trail, path, exit_status(decisions))

    # -- helpers -----------------------------------------------------------------
    def _config(self, agents: list[str] | None, usage: list[str] | None = None) -> Rfc9309Settings:
        """The project's RFC9309_* settings, with ``--agent`` (once or more) as
        the token(s) and ``--usage`` as the declared purposes."""
        from ..lifecycle import scrapy_switches
        from ..settings import Rfc9309Settings, usage_with_purposes

        settings = self._settings()
        if usage:  # the purposes only: the rest of a dict form (unknown, header...) stays the project's
            purposes = list(_purposes(usage))
            settings.set("RFC9309_USAGE", usage_with_purposes(settings.get("RFC9309_USAGE"), purposes), "cmdline")
        if agents:
            tokens = _agent_tokens(agents)
            settings.set("ROBOTSTXT_USER_AGENT", list(tokens) if len(tokens) > 1 else tokens[0], priority="cmdline")
        try:  # ROBOTSTXT_OBEY = False with a purpose declared: as in a crawl, no origin is obeyed
            return scrapy_switches(settings, Rfc9309Settings.from_settings(settings))[0]
        except ValueError as exc:  # InvalidSetting: one line naming it, its value masked
            raise UsageError(f"invalid setting {exc}", print_help=False) from None

    def _spider_class(self, name: str | None) -> type[Spider] | None:
        """The project's spider ``name`` (``--spider``), or None."""
        if name is None:
            return None
        assert self.crawler_process is not None
        try:
            return self.crawler_process.spider_loader.load(name)
        except KeyError:
            raise UsageError(
                f"--spider {shown(name)}: no such spider here (`scrapy list` names the project's spiders)",
                print_help=False,
            ) from None

    def _settings(self) -> Any:
        """A copy of the settings with the ``--spider`` spider's applied over the project's."""
        assert self.settings is not None
        settings = self.settings.copy()
        if self._spider is not None:
            self._spider.update_settings(settings)
        return settings

    def _fetch(self, origins: list[str], config: Rfc9309Settings, extras: Extras | None = None) -> dict[str, Inspected]:
        """Fetch every origin's robots.txt in one small crawl, through the
        crawl's robots service (the one fetcher a crawl has); and what
        ``extras`` asks for (tdmrep.json files, pages) through the same lane."""
        assert self.crawler_process is not None
        results: dict[str, Inspected] = {}
        spider: type[Spider] = RobotsFetchSpider
        if self._spider is not None:  # its crawl gets the spider's settings too (its store)
            named = self._spider
            spider = type("RobotsFetchSpider", (RobotsFetchSpider,), {"update_settings": named.update_settings})
        self.crawler_process.crawl(spider, origins=origins, config=config, results=results, extras=extras or Extras({}))
        self.crawler_process.start()
        return results


class Extras:
    """What is fetched beside robots.txt: per origin, its tdmrep.json and the
    pages to read (``--page``); filled in by :class:`RobotsFetchSpider`."""

    def __init__(self, wanted: dict[str, list[str]], fetch_denied: bool = False) -> None:
        #: origin -> the URLs whose pages are fetched (empty: its tdmrep.json only)
        self.wanted = wanted
        #: --fetch-denied: pages robots.txt's usage preferences deny are fetched too
        self.fetch_denied = fetch_denied
        #: origin -> its tdmrep.json fetch, or None when robots.txt disallows it
        self.tdmrep: dict[str, FetchResult | None] = {}
        #: URL -> its page fetch (only URLs robots.txt allows)
        self.pages: dict[str, FetchResult] = {}
        #: origin -> its RSL license (robots.txt's first License line), fetched as a crawl fetches it
        self.licenses: dict[str, Any] = {}


class RobotsFetchSpider(Spider):
    """Fetches robots.txt files through the crawl's robots service and nothing
    else: it schedules no request, so the crawl ends once the fetches are done.
    Beside them, the origins' tdmrep.json files and pages ``extras`` asks for,
    through the same lane (the service's fetcher)."""

    name = "scrapy_rfc9309_robots"

    def __init__(
        self,
        origins: list[str],
        config: Rfc9309Settings,
        results: dict[str, Inspected],
        extras: Extras | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.origins = origins
        self.config = config
        self.results = results
        self.extras = extras or Extras({})

    async def start(self) -> AsyncIterator[Any]:
        from scrapy.utils.defer import deferred_from_coro, maybe_deferred_to_future
        from twisted.internet.defer import DeferredList

        from ..lifecycle import robots_service

        service = robots_service(self.crawler)

        async def fetch(origin: str) -> None:
            try:
                self.results[origin] = await service.inspect(origin, self.config.for_origin(origin).unreachable)
            except Exception:  # a bug, not a network problem (those are results)
                self.logger.exception("could not fetch the robots.txt of %s", origin)

        async def page(origin: str, url: str) -> None:
            from urllib.parse import urlsplit

            parts = urlsplit(url)
            path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
            self.extras.pages[url] = await service.fetcher.fetch(origin, path=path)

        async def extra(origin: str, urls: list[str]) -> None:
            from ..origins import resource_url
            from ..robots.tdmrep import MAX_FILE_BYTES, PATH
            from ..robots.usage import usage_for
            from ..service import LICENSE

            if origin not in self.origins:  # not obeyed: a crawl fetches nothing of it but its pages
                await maybe_deferred_to_future(DeferredList([deferred_from_coro(page(origin, url)) for url in urls]))
                return
            await fetch(origin)
            inspected = self.results.get(origin)
            policy = self.config.for_origin(origin)
            tokens, purposes = policy.user_agents, policy.usage
            robots = inspected[1] if inspected is not None else None

            def allowed(url: str, usage: bool = False) -> bool:
                """As a crawl decides before the download: access, then (``usage``) robots.txt's preferences."""
                if robots is None:
                    return True
                if not all(robots.check(url, token).allowed for token in tokens):
                    return False
                return (
                    not usage or not purposes or usage_for(robots, url, tokens, allowed=True).denies(purposes) is None
                )

            jobs = [deferred_from_coro(page(origin, url)) for url in urls if allowed(url, not self.extras.fetch_denied)]
            if allowed(resource_url(origin, PATH)):
                hop = (lambda url: service.allows(url, origin, robots)) if robots is not None else None
                self.extras.tdmrep[origin] = await service.fetcher.fetch(
                    origin, path=PATH, allow=hop, max_bytes=MAX_FILE_BYTES
                )
            else:
                self.extras.tdmrep[origin] = None
            if robots is not None and robots.licenses:
                self.extras.licenses[origin] = await service.origin_file(
                    LICENSE, origin, None, robots, 0.0, 0.0, lasting=False
                )
            await maybe_deferred_to_future(DeferredList(jobs))

        extras = self.extras.wanted
        jobs = [deferred_from_coro(fetch(o)) for o in self.origins if o not in extras]
        jobs += [deferred_from_coro(extra(o, urls)) for o, urls in extras.items()]
        await maybe_deferred_to_future(DeferredList(jobs))
        return
        yield  # an async generator that yields nothing


def _origin_block(
    origin: str,
    targets: list[str],
    config: Rfc9309Settings,
    inspected: Inspected | None,
    agent_given: bool,
    extras: Extras | None = None,
) -> tuple[list[str], list[_Decided]]:
    """The lines and decisions of one origin (with its tdmrep.json and pages, ``extras``)."""
    from ..origins import resource_url, robots_url
    from ..robots import RobotsTxt, Verdict
    from ..robots.tdmrep import EMPTY, PATH, TdmRep
    from .report import row, usage_lines, verdict_lines

    policy = config.for_origin(origin)
    tokens = config.user_agents if agent_given else policy.user_agents
    lines = [origin]
    robots: RobotsTxt
    if inspected is None:  # obey: False for this origin
        robots = RobotsTxt.allow_all(Verdict.ALLOWED_NOT_OBEYED)
        switch = "RFC9309_ORIGINS: obey: False" if config.obey else "ROBOTSTXT_OBEY = False"
        lines.append(row("robots.txt", f"not fetched ({switch})"))
    else:
        result, robots = inspected
        lines.append(
            row(
                "robots.txt",
                describe_fetch(robots_url(origin), result, config, policy.unreachable, policy.unreachable_wait),
            )
        )
    lines.extend(_file_lines(robots, tokens))
    purposes = policy.usage
    tdmrep: TdmRep | None = None
    if extras is not None and inspected is None:
        lines.append(row("tdmrep.json", "not fetched (robots.txt not obeyed: a crawl fetches nothing of this origin)"))
    elif extras is not None:
        fetched = extras.tdmrep.get(origin)
        tdmrep = _tdmrep_of(fetched)
        lines.append(row("tdmrep.json", _describe_tdmrep(resource_url(origin, PATH), fetched, tdmrep, config)))
    licensed = extras.licenses.get(origin) if extras is not None else None
    if licensed is not None:
        lic = licensed.parsed
        what = f"status {licensed.status} ({licensed.access})" if licensed.access != "disallowed" else "not fetched"
        text = f"{lic.url} sha256={lic.sha256 or '-'}: {what}: {len(lic)} content(s)"
        lines.append(row("license", "; ".join([text, *map(str, lic.diagnostics[:3])])))
    decisions = [
        _decide(
            robots,
            target,
            tokens,
            purposes,
            tdmrep if tdmrep is not None else EMPTY,
            _page_of(extras, target),
            licensed.parsed if licensed is not None else None,
        )  # fmt: skip
        for target in targets
    ]
    lines.extend(verdict_lines(targets, decisions))
    lines.extend(usage_lines(targets, [d.usage for d in decisions], purposes, page=bool(extras and extras.pages)))
    if extras is not None:
        for target, decided in zip(targets, decisions):
            if target in extras.wanted.get(origin, ()):
                lines.extend(_page_lines(target, extras.pages.get(target), decided))
    return lines, decisions


def describe_fetch(
    url: str, result: FetchResult, config: Rfc9309Settings, unreachable: str, wait: float | None = None
) -> str:
    """``GET URL -> 2 redirects -> FINAL: status 200 (success)`` and what it means
    (``wait``: the origin's seconds of ``"wait"``, the crawl's by default)."""
    from ..robots.access import Access

    text = f"GET {mask_url(url)}"
    if result.redirects:
        text += f" -> {result.redirects} redirect{'s' if result.redirects > 1 else ''} -> {mask_url(result.url)}"
    if result.error is not None:
        text += f": {type(result.error).__name__}: {mask_text(str(result.error))}"
    else:
        text += f": status {result.status}"
    text += f" ({result.access.value})"
    if result.note:
        text += f"; {result.note}, so every URL is allowed"
    if result.truncated_bytes:
        text += f"; at least {result.truncated_bytes:,} bytes past the {config.max_bytes:,}-byte limit were ignored"
    if result.access is Access.UNREACHABLE and unreachable == "wait":
        seconds = config.unreachable_wait if wait is None else wait
        text += f"; a crawl would retry it for up to {seconds:g} s before denying"
    return text


def _trail_tokens(trail: Any) -> tuple[str, ...]:
    if trail.last_crawl and trail.last_crawl.get("tokens"):
        return tuple(trail.last_crawl["tokens"])
    raise UsageError("the audit trail names no product token: give --agent", print_help=False)


def _describe_state(state: dict[str, Any], path: str) -> str:
    """Which robots.txt governed, from where, and when it was fetched."""
    access = state["governing_access"]
    status = state.get("governing_status")
    text = f"{state.get('governing_url') or '?'}: status {status if status is not None else 'none'} ({access})"
    text += f", fetched {state['fetched_at']}"
    if state.get("governing_sha256"):
        text += f", sha256 {state['governing_sha256']}"
    if state.get("type") == "stored":
        text += ", taken from the store"
    text += f"; in force during the crawl (audit trail {path}), not today's file"
    return text


def _chain_text(trail: Any) -> str:
    """``chain intact: 57 records, 1 crawl (SHA-256, no key)`` (and how many crawls are unfinished)."""
    text = trail.chain
    if trail.unfinished:
        text += f"; {trail.unfinished_count} crawl(s) truncated or unfinished (no closing record)"
    return text


def _unfinished(trail: Any, path: str, status: int) -> int:
    """After a replay: one line naming the first crawl without its closing
    record, and :data:`EXIT_UNFINISHED`; else ``status``."""
    if not trail.unfinished:
        return status
    print(f"scrapy robots: audit trail {path}: {trail.unfinished[0]}", file=sys.stderr)
    return EXIT_UNFINISHED


def _summary_lines(trail: Any) -> list[str]:
    """``--summary``: what was verified, how many requests were decided (the
    sums of the table's columns) and how many have a record of their own (a
    different number: an allowed request has one only with
    RFC9309_AUDIT's allowed, a request a declared purpose stopped has a usage
    record), then one row per origin."""
    rows = trail.summary()
    header = ("origin", "fetches", "result", "changes", "allowed", "denied")
    table = [header] + [tuple(str(r[key]) for key in header) for r in rows]
    widths = [max(len(line[i]) for line in table) for i in range(len(header))]
    allowed, denied = sum(r["allowed"] for r in rows), sum(r["denied"] for r in rows)
    records = trail.request_records
    usage = records.get("usage denied", 0) + records.get("usage dropped", 0)
    out = [
        f"audit trail {trail.path}: {trail.crawl_count} crawl(s), {len(rows)} origin(s), "
        f"{allowed + denied} request(s) decided by robots.txt ({allowed} allowed, {denied} denied, as below); "
        f"{_chain_text(trail)}",
        f"records of single requests: {records.get('allowed', 0)} allowed (written only with "
        f"RFC9309_AUDIT's allowed), {records.get('denied', 0)} denied by robots.txt, {usage} stopped by usage "
        f"preferences ({records.get('usage denied', 0)} before the download, counted denied above; "
        f"{records.get('usage dropped', 0)} after it, counted allowed)",
    ]
    for line in table:
        out.append(
            "  ".join(cell.ljust(widths[i]) if i in (0, 2) else cell.rjust(widths[i]) for i, cell in enumerate(line))
        )
    return out


class _Decided:
    """A decision over several tokens, as the report prints it (the reason
    names the token that denied, when there are several), with the URL's
    robots.txt usage preferences."""

    __slots__ = ("allowed", "reason", "usage", "nofollow")

    def __init__(self, allowed: bool, reason: str, usage: Usage | None = None, nofollow: tuple[Any, ...] = ()) -> None:
        self.allowed = allowed
        self.reason = reason
        self.usage = usage
        self.nofollow = nofollow


def _decide(
    robots: RobotsTxt,
    target: str,
    tokens: tuple[str, ...],
    purposes: tuple[str, ...] = (),
    tdmrep: Any = None,
    page: FetchResult | None = None,
    license: Any = None,
) -> _Decided:
    """The access decision, then, for an allowed URL, its usage preferences:
    DENIED when they disallow one of ``purposes`` (as the middleware does);
    with the origin's tdmrep.json rule (``tdmrep``) and what the fetched
    ``page`` states, combined as a crawl combines them on the response."""
    from ..audit import decide_all, denial_reason
    from ..robots.usage import usage_for

    decision, token = decide_all(robots, target, tokens)
    if not decision.allowed:
        return _Decided(False, denial_reason(decision, token, tokens))
    usage = usage_for(robots, target, tokens)
    if license:  # an RSL license (robots.txt's License line): as the middleware applies it, before the download
        usage = usage.combine(license.usage(target))
    nofollow: tuple[Any, ...] = ()
    if page is not None and page.headers is not None:
        from scrapy.http import Response

        from ..page_usage import read_response

        response = Response(page.url, status=page.status or 200, headers=page.headers, body=page.body)
        reading = read_response(response, target, tokens, tdmrep)
        usage, nofollow = usage.combine(reading.usage), reading.nofollow
    elif tdmrep is not None:
        usage = usage.combine(tdmrep.usage(target))
    denied = usage.denies(purposes) if purposes else None
    if denied is not None:
        label, sources = denied
        return _Decided(False, f"usage: {label} disallowed by {'; '.join(map(str, sources))}", usage, nofollow)
    return _Decided(True, decision.reason, usage, nofollow)


def _tdmrep_of(fetched: FetchResult | None) -> Any:
    """The parsed file of a tdmrep.json fetch (EMPTY when it states nothing), None when not fetched."""
    from ..robots.access import Access
    from ..robots.tdmrep import EMPTY, TdmRep

    if fetched is None:
        return None
    if fetched.access is Access.SUCCESS and not fetched.truncated_bytes:
        return TdmRep.parse(fetched.body)
    return EMPTY


def _describe_tdmrep(url: str, fetched: FetchResult | None, tdmrep: Any, config: Rfc9309Settings) -> str:
    """``GET URL: status 200 (success): 2 rules`` or ``no tdmrep.json (...)``."""
    if fetched is None:
        return "no tdmrep.json (not fetched: robots.txt disallows it)"
    text = describe_fetch(url, fetched, config, "allow")
    if tdmrep:
        count = len(tdmrep)
        text += f": {count} rule{'s' if count > 1 else ''}"
    else:
        text = f"no tdmrep.json ({text})"
    for diagnostic in tdmrep.diagnostics[:3] if tdmrep is not None else ():
        text += f"; {diagnostic}"
    return text


def _page_of(extras: Extras | None, url: str) -> FetchResult | None:
    return extras.pages.get(url) if extras is not None else None


def _page_lines(target: str, fetched: FetchResult | None, decided: _Decided) -> list[str]:
    """``page:  URL: GET status 200, text/html`` and its nofollow directives."""
    from .report import row

    if fetched is None:
        why = "robots.txt disallows it"
        if decided.usage is not None:  # allowed, but robots.txt's usage preferences deny it: no crawl downloads it
            why = "denied before the download, as in a crawl; --fetch-denied fetches it"
        return [row("page", f"{mask_url(target)}: not fetched ({why})")]
    if fetched.error is not None:
        what = f"{type(fetched.error).__name__}: {mask_text(str(fetched.error))}"
    else:
        what = f"status {fetched.status}" + (f", {fetched.content_type}" if fetched.content_type else "")
    lines = [row("page", f"{mask_url(target)}: GET {what}")]
    for source in decided.nofollow:
        lines.append(row("", f"nofollow: {source}"))
    return lines


def _purposes(values: list[str]) -> tuple[str, ...]:
    from ..settings import usage_purposes

    try:
        return usage_purposes([p for value in values for p in value.split(",") if p.strip()], "--usage")
    except ValueError as exc:
        raise UsageError(str(exc), print_help=False) from None


def _source_text(source: Any) -> str:
    from ..robots.usage import Source

    if not isinstance(source, dict):
        return str(source)
    return str(Source.from_dict(source))


def _file_lines(robots: RobotsTxt, tokens: tuple[str, ...]) -> list[str]:
    """The file's lines for the first token, then the group, Crawl-delay and
    Request-rate of each other token."""
    from .report import file_lines

    lines = file_lines(robots, tokens[0])
    for token in tokens[1:]:
        extra = file_lines(robots, token, max_diagnostics=0)
        cut = next(i for i, line in enumerate(extra) if line.lstrip().startswith("sitemaps:"))
        at = next(i for i, line in enumerate(lines) if line.lstrip().startswith("sitemaps:"))
        lines[at:at] = extra[:cut]
    return lines


def _agent_tokens(agents: list[str]) -> tuple[str, ...]:
    from ..useragent import derive_tokens

    try:
        # the plugin's one rule: "ExampleBot/1.0 (...)" gives ExampleBot
        return derive_tokens(agents if len(agents) > 1 else agents[0])
    except ValueError as exc:
        raise UsageError(f"--agent: {exc}", print_help=False) from None


def _read(path: str) -> bytes:
    try:
        if path == "-":
            return sys.stdin.buffer.read()
        with open(path, "rb") as handle:
            return handle.read()
    except OSError as exc:
        raise UsageError(
            f"cannot read {_path_shown(path)}: {exc.strerror or exc}; give a robots.txt file, or '-' for standard input",
            print_help=False,
        ) from None


def _label(path: str) -> str:
    return "<stdin>" if path == "-" else path


def _path_shown(path: str) -> str:
    """A file name in a one-line message: as typed, or quoted and escaped when it holds a line break."""
    return path if path.isprintable() else repr(path)


def _check_options(args: list[str], opts: argparse.Namespace) -> None:
    """``UsageError`` for options that do not go together (one that would be
    ignored is refused: the answer would not be the one asked for)."""
    if opts.fetch_denied and not opts.page:
        raise UsageError("--fetch-denied goes with --page (it fetches pages a crawl would not)", print_help=False)
    if opts.lint is not None:
        given = [
            name
            for name, value in (
                ("a URL", args),
                ("--file", opts.file),
                ("--audit", opts.audit),
                ("--summary", opts.summary),
                ("--agent", opts.agent),
                ("--usage", opts.usage),
                ("--audit-key-file", opts.audit_key_file),
                ("--page", opts.page),
            )
            if value
        ]
        if given:
            raise UsageError(
                "--lint PATH takes no URL, --file, --audit, --summary, --agent, --usage, --page or --audit-key-file "
                f"(given: {', '.join(given)})",
                print_help=False,
            )
    elif opts.page and (opts.audit is not None or opts.file is not None):
        raise UsageError(
            f"--page fetches the pages online: it goes with URLs, not with {'--audit' if opts.audit else '--file'}",
            print_help=False,
        )
    elif opts.audit is not None:
        if opts.file is not None:
            raise UsageError("--audit FILE takes no --file", print_help=False)
        if opts.summary == bool(args):
            raise UsageError("--audit FILE takes URLs or --summary (one of them)", print_help=False)
        if opts.summary and (opts.agent or opts.usage):
            raise UsageError("--summary takes no --agent or --usage: it replays no decision", print_help=False)
    elif opts.summary or opts.audit_key_file is not None:
        raise UsageError(
            f"{'--summary' if opts.summary else '--audit-key-file'} goes with --audit FILE", print_help=False
        )
    elif not args:
        raise UsageError("give at least one URL (or --lint PATH; see scrapy robots -h)", print_help=False)


def _check_urls(targets: list[str], paths: bool, online: bool) -> None:
    """``UsageError`` for the first target that is no URL to check (``paths``:
    or a path, ``--file``); ``online``: a path gets the hint to give ``--file``."""
    from .inputs import url_problem

    for target in targets:
        problem = url_problem(target, paths=paths)
        if problem is not None:
            if online and target.startswith("/"):
                problem += " (to check a path, give --file PATH)"
            raise UsageError(problem, print_help=False)


def _fail(message: str) -> None:
    """The command's one line on stderr (secrets masked, line breaks removed)."""
    from ..settings import one_line

    sys.stderr.write(f"scrapy robots: {one_line(message)}\n")
    sys.stderr.flush()


def _print(lines: list[str]) -> None:
    sys.stdout.write("\n".join(lines) + "\n")
    sys.stdout.flush()
