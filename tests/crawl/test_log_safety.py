"""What the plugin writes to logs and stats is bounded and keeps secrets.

* A robots.txt fetch goes through the crawl's proxy, with its credentials;
  neither the password nor its ``Proxy-Authorization`` form appears in any
  log record (the plugin's or Scrapy's) or stat.  The proxy is a
  :class:`~tests.crawl.faults.FaultServer` port answering absolute-form
  requests; the pages' own origin has nothing listening, so an answer proves
  the request went through the proxy.
* File content and URLs are server-controlled: a 16 KB rule, a 50 KB URL,
  a 10 KB redirect target (Twisted refuses header lines over 16 KB).  Every record the plugin logs stays under
  :data:`LOG_BOUND` characters.  (Scrapy's own DEBUG lines, such as
  "Crawled (200) <GET url>", print whole URLs; they are Scrapy's.)
"""

from __future__ import annotations

import base64
import logging

import pytest
import pytest_twisted

from scrapy_rfc9309 import Verdict

from .faults import SHORT_TIMEOUT, FaultServer, assert_verdict, crawl_within
from .harness import Req, check_accounting
from .servers import Reply, closed_port, redirect, robots

USER = "crawler-account"
PASSWORD = "s3cr3t-Pa55w0rd-9309"
BASIC = base64.b64encode(f"{USER}:{PASSWORD}".encode()).decode()
#: the longest log message the plugin may write (characters)
LOG_BOUND = 2_000
BOUND = 20.0


def _everything_logged(caplog) -> str:
    """Every captured record, as a handler would write it (message and traceback)."""
    parts = []
    for record in caplog.records:
        parts.append(record.getMessage())
        if record.exc_info:
            parts.append(logging.Formatter().formatException(record.exc_info))
    return "\n".join(parts)


def _assert_no_secret(text: str) -> None:
    for secret in (PASSWORD, BASIC):
        assert secret not in text, (
            f"{secret!r} leaked: ...{text[max(0, text.find(secret) - 200) : text.find(secret) + 50]}..."
        )


@pytest.mark.parametrize("how", ["meta", "env"])
@pytest_twisted.ensureDeferred
async def test_proxy_credentials_never_reach_logs_or_stats(caplog, monkeypatch, how):
    with FaultServer(["ok"]) as proxy:
        proxy_url = f"http://{USER}:{PASSWORD}@127.0.0.1:{proxy.ports[0]}"
        site = f"http://127.0.0.3:{closed_port('127.0.0.3')}"
        meta = {}
        if how == "meta":
            meta = {"proxy": proxy_url}
        else:
            monkeypatch.setenv("http_proxy", proxy_url)
            monkeypatch.delenv("no_proxy", raising=False)
            monkeypatch.delenv("NO_PROXY", raising=False)
        plan = [Req(site + "/public", meta=dict(meta)), Req(site + "/private", meta=dict(meta))]
        with caplog.at_level(logging.DEBUG):
            result, _ = await crawl_within(BOUND, plan, {"LOG_LEVEL": "DEBUG"})

        check_accounting(result)
        assert_verdict(result.outcome(site + "/public"), Verdict.ALLOWED_IMPLICIT)
        assert_verdict(result.outcome(site + "/private"), Verdict.DISALLOWED_EXPLICIT)
        # both robots.txt and the page went through the proxy, with the credentials
        targets = {hit.target: hit.headers.get("proxy-authorization") for hit in proxy.hits(0)}
        assert targets == {site + "/robots.txt": f"Basic {BASIC}", site + "/public": f"Basic {BASIC}"}

    _assert_no_secret(_everything_logged(caplog))
    _assert_no_secret(repr(result.stats))
    _assert_no_secret(repr(result.outcomes))


@pytest_twisted.ensureDeferred
async def test_an_unreachable_proxy_with_credentials_leaks_nothing(caplog):
    dead_proxy = f"http://{USER}:{PASSWORD}@127.0.0.2:{closed_port('127.0.0.2')}"
    site = f"http://127.0.0.3:{closed_port('127.0.0.3')}"
    with caplog.at_level(logging.DEBUG):
        result, _ = await crawl_within(BOUND, [Req(site + "/a", meta={"proxy": dead_proxy})], {"LOG_LEVEL": "DEBUG"})
    assert_verdict(result.outcome(site + "/a"), Verdict.UNKNOWN_UNREACHABLE)
    assert any("unreachable" in r.getMessage() for r in caplog.records if r.name.startswith("scrapy_rfc9309"))
    _assert_no_secret(_everything_logged(caplog))
    _assert_no_secret(repr(result.stats))


@pytest_twisted.ensureDeferred
async def test_file_content_and_urls_are_logged_with_a_length_bound(servers, caplog):
    long_rule = "/" + "x" * 16_000
    denied = servers("127.0.0.1")  # a 16 KB rule that denies a 50 KB URL
    denied.routes["/robots.txt"] = robots(f"User-agent: *\nDisallow: {long_rule}\n")
    # 7 KB URLs: the aiohttp download handler (no reactor) refuses header lines over 8 KB
    looping = servers("127.0.0.2")  # a loop through a 7 KB URL: "more than 5 redirects (last <url>)"
    long_path = "/" + "y" * 7_000
    looping.routes["/robots.txt"] = redirect(long_path)
    looping.routes[long_path] = redirect(long_path)
    stuck = servers("127.0.0.3")  # a 7 KB URL that never answers: the timeout error names it
    stuck.routes["/robots.txt"] = redirect("/" + "z" * 7_000)
    stuck.routes["/" + "z" * 7_000] = Reply(hang=True)
    page = denied.url("/" + "x" * 50_000)
    plan = [page, looping.url("/a"), stuck.url("/b")]
    with caplog.at_level(logging.DEBUG):
        # URLLENGTH_LIMIT=0: Scrapy's UrlLengthMiddleware would drop the 50 KB URL first
        settings = {**SHORT_TIMEOUT, "LOG_LEVEL": "DEBUG", "URLLENGTH_LIMIT": 0}
        result, _ = await crawl_within(BOUND, plan, settings)

    check_accounting(result)
    assert_verdict(result.outcome(page), Verdict.DISALLOWED_EXPLICIT)
    assert_verdict(result.outcome(looping.url("/a")), Verdict.ALLOWED_UNAVAILABLE)
    assert_verdict(result.outcome(stuck.url("/b")), Verdict.UNKNOWN_UNREACHABLE)
    ours = [r for r in caplog.records if r.name.startswith("scrapy_rfc9309")]
    # the three origins were logged about: a drop, a warning, an unreachable file
    assert any(r.getMessage().startswith("Forbidden by robots.txt") for r in ours)
    assert any("more than 5 redirects" in r.getMessage() for r in ours)
    assert any("unreachable" in r.getMessage() for r in ours)
    too_long = sorted(
        ((len(r.getMessage()), r.getMessage()[:120]) for r in ours if len(r.getMessage()) > LOG_BOUND), reverse=True
    )
    assert too_long == [], too_long


# -- secrets in page URLs, robots.txt URLs and store URLs (issue 23) -------------------------------
TOKEN = "tok-9309-XYZZY-secret"


def _ours(caplog) -> str:
    """Every record the plugin logged (Scrapy's own lines print whole URLs: they are Scrapy's)."""
    return "\n".join(r.getMessage() for r in caplog.records if r.name.startswith("scrapy_rfc9309"))


def _assert_no_token(text: str) -> None:
    for secret in (PASSWORD, TOKEN):
        assert secret not in text, (
            f"{secret!r} leaked: ...{text[max(0, text.find(secret) - 200) : text.find(secret) + 50]}..."
        )


@pytest_twisted.ensureDeferred
async def test_secrets_in_page_and_robots_urls_reach_no_log_stat_record_or_provenance(servers, tmp_path, caplog):
    site, moved = servers("127.0.0.2"), servers("127.0.0.3")
    # robots.txt redirects to a URL with a token (the server chooses the Location)
    site.routes["/robots.txt"] = redirect(f"http://127.0.0.3:{moved.port}/rules.txt?access_token={TOKEN}&v=1")
    moved.routes[f"/rules.txt?access_token={TOKEN}&v=1"] = robots("User-agent: *\nDisallow: /private\n")
    with_secrets = f"http://alice:{PASSWORD}@127.0.0.2:{site.port}"
    # Scrapy cannot download a URL with userinfo ("invalid hostname"): only the denied page has one
    denied, allowed = f"{with_secrets}/private?password={TOKEN}", site.url(f"/public?api_key={TOKEN}#token={TOKEN}")
    trail = tmp_path / "trail.jsonl"
    settings = {"LOG_LEVEL": "DEBUG", "RFC9309_AUDIT": {"path": str(trail), "allowed": True}}
    with caplog.at_level(logging.DEBUG):
        result, _ = await crawl_within(BOUND, [denied, allowed], settings)

    check_accounting(result)
    assert_verdict(result.outcome(denied), Verdict.DISALLOWED_EXPLICIT)
    assert_verdict(result.outcome(allowed), Verdict.ALLOWED_IMPLICIT)
    provenance = result.outcome(allowed).provenance
    assert provenance["robots_url"] == f"http://127.0.0.3:{moved.port}/rules.txt?access_token=***&v=1"
    logged = _ours(caplog)
    assert f"<GET http://alice:***@127.0.0.2:{site.port}/private?password=***>" in logged  # the DEBUG denial line
    text = trail.read_text(encoding="utf-8")
    assert f'"url":"http://127.0.0.2:{site.port}/public?api_key=***#token=***"' in text
    assert f'"url":"http://alice:***@127.0.0.2:{site.port}/private?password=***"' in text
    for where in (logged, repr(result.stats), text, repr(provenance)):
        _assert_no_token(where)


@pytest_twisted.ensureDeferred
async def test_a_store_url_with_a_password_is_masked_in_the_start_up_and_error_lines(servers, caplog):
    site = servers("127.0.0.2")
    store = f"redis://:{PASSWORD}@127.0.0.1:{closed_port('127.0.0.1')}/0?password={TOKEN}&socket_timeout=1"
    with caplog.at_level(logging.DEBUG):
        result, _ = await crawl_within(BOUND, [site.url("/a")], {"RFC9309_STORAGE": store})
    assert result.stats["finish_reason"] == "rfc9309_storage_unavailable"
    logged = _everything_logged(caplog)
    assert "robots.txt store: redis://:***@127.0.0.1:" in logged  # the INFO start-up line
    assert any(r.levelno == logging.ERROR and "RFC9309_STORAGE" in r.getMessage() for r in caplog.records)
    _assert_no_token(logged)
    _assert_no_token(repr(result.stats))


@pytest_twisted.ensureDeferred
async def test_a_robots_redirect_with_credentials_is_not_followed_and_not_logged(servers, caplog):
    site, other = servers("127.0.0.2"), servers("127.0.0.3")
    site.routes["/robots.txt"] = redirect(f"http://{USER}:{PASSWORD}@127.0.0.3:{other.port}/robots.txt")
    with caplog.at_level(logging.DEBUG):
        result, _ = await crawl_within(BOUND, [site.url("/a")], {"LOG_LEVEL": "DEBUG"})
    check_accounting(result)
    # Scrapy cannot send them ("invalid hostname"): a redirect that cannot be followed, not an internal error
    assert_verdict(result.outcome(site.url("/a")), Verdict.ALLOWED_UNAVAILABLE)
    assert result.stat("fetch/3xx_unfollowable") == 1 and other.hits == []
    _assert_no_secret(_everything_logged(caplog))
