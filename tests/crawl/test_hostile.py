"""Promises that hold under attack (issue 23), shown by real crawls: bad
settings, a failing audit trail, an audit path that tries to escape,
redirects into the internal network, secrets in URLs, dot segments."""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
import pytest_twisted
from twisted.internet.address import IPv4Address as TCPAddress
from twisted.internet.interfaces import IHostnameResolver, IHostResolution
from zope.interface import implementer

from .command_runner import scrapy_crawl
from .harness import Req, check_accounting, crawl
from .servers import Reply, closed_port, redirect, robots


def records(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


# -- settings ---------------------------------------------------------------------------------
def test_a_non_finite_setting_refuses_the_crawl_naming_the_setting(servers, tmp_path):
    site = servers("127.0.0.2")
    process = scrapy_crawl(tmp_path, [site.url("/page")], "-s", "RFC9309_FETCH_TIMEOUT=nan")
    assert process.returncode == 1, process.stderr[-2000:]
    assert "ERROR: RFC9309_FETCH_TIMEOUT='nan' is not a finite number" in process.stderr
    assert site.hits == []  # not even robots.txt


# -- the audit path ----------------------------------------------------------------------------
def test_a_spider_name_cannot_move_the_audit_trail_out_of_its_directory(servers, tmp_path):
    site = servers("127.0.0.2")
    site.routes["/robots.txt"] = robots("User-agent: *\nDisallow: /private\n")
    project = tmp_path / "a" / "b" / "c"
    project.mkdir(parents=True)
    process = scrapy_crawl(
        project, [site.url("/page"), site.url("/private")], "-s", "RFC9309_AUDIT=audit/%(name)s.jsonl",
        name="../../../escaped",
    )  # fmt: skip
    assert process.returncode == 0, process.stderr[-2000:]
    assert not (tmp_path / "escaped.jsonl").exists()
    (trail,) = (project / "audit").glob("*.jsonl")
    assert trail.name == ".._.._.._escaped.jsonl"
    assert [r["type"] for r in records(trail)][0] == "crawl"
    assert sorted(p.name for p in tmp_path.rglob("*.jsonl")) == [trail.name]


# -- a failing audit trail ---------------------------------------------------------------------
def _stat(stderr: str, name: str) -> str | None:
    """A stat's value as Scrapy's closing dump prints it (``'name': value,``)."""
    found = re.search(rf"'{re.escape(name)}': ([^,\n}}]+)", stderr)
    return found.group(1) if found else None


def test_a_trail_on_a_full_disk_stops_the_crawl_with_a_failing_exit_status(servers, tmp_path):
    site = servers("127.0.0.2")
    site.routes["/robots.txt"] = robots("User-agent: *\nDisallow: /private\n")
    pages = [f"/p{i}" for i in range(300)]
    for path in pages:
        site.routes[path] = Reply(200, "<html>page</html>", {"Content-Type": "text/html"}, delay=0.05)
    (tmp_path / "audit").mkdir()
    (tmp_path / "audit" / "trail.jsonl").symlink_to("/dev/full")  # every write: ENOSPC
    process = scrapy_crawl(
        tmp_path, [site.url(p) for p in pages], "-s", 'RFC9309_AUDIT={"path": "audit/trail.jsonl", "allowed": true}',
        "-s", "CONCURRENT_REQUESTS=4",
    )  # fmt: skip
    log = process.stderr
    assert process.returncode == 1, log[-3000:]
    assert _stat(log, "finish_reason") == "'rfc9309_audit_failed'", log[-3000:]
    assert "Spider closed (rfc9309_audit_failed)" in log
    unwritten = int(_stat(log, "rfc9309/audit/records_unwritten") or 0)
    assert unwritten > 0
    assert re.search(r"ERROR: RFC9309_AUDIT: cannot write the audit trail .*No space left on device", log)
    assert f"0 records written to audit/trail.jsonl, {unwritten} records NOT written" in log
    # stopped at once: the first write fails about a second in, long before the 300 pages are done
    assert site.count("/robots.txt") == 1
    assert sum(site.count(p) for p in pages) < 200


@pytest.mark.parametrize("refusal", ["storage", "trail"])
def test_a_crawl_refused_at_start_exits_with_a_failing_status(servers, tmp_path, refusal):
    site = servers("127.0.0.2")
    if refusal == "storage":
        setting, reason = f"RFC9309_STORAGE=redis://127.0.0.1:{closed_port('127.0.0.1')}/0", "storage_unavailable"
    else:
        (tmp_path / "a-file").write_text("")
        setting, reason = "RFC9309_AUDIT=a-file/trail.jsonl", "audit_unavailable"
    process = scrapy_crawl(tmp_path, [site.url("/page")], "-s", setting)
    assert process.returncode == 1, process.stderr[-3000:]
    assert _stat(process.stderr, "finish_reason") == f"'rfc9309_{reason}'"
    assert site.hits == []


# -- dot segments --------------------------------------------------------------------------------
@pytest_twisted.ensureDeferred
async def test_a_dot_segment_path_is_denied_when_the_served_path_is_disallowed(servers):
    site = servers("127.0.0.2")
    site.routes["/robots.txt"] = robots("User-agent: *\nDisallow: /private\n")
    sneaky = [site.url("/x/../private"), site.url("/x/%2E%2E/private/a"), site.url("/./private")]
    fine = site.url("/x/../public")
    result = await crawl([*sneaky, fine])
    check_accounting(result)
    for url in sneaky:
        assert result.outcome(url).message.startswith("Forbidden by robots.txt: disallowed_explicit (line 2"), url
    assert result.outcome(fine).status == 200
    assert [hit.path for hit in site.hits if "private" in hit.path] == []


# -- redirects into the internal network ------------------------------------------------------------
SECRET = "INTERNAL-ONLY-9309"
INTERNAL_FILE = f"User-agent: *\nDisallow: /\n# {SECRET}\n"
#: in these tests only 127.0.0.2 is internal, so an origin on 127.0.0.1 is public (by default
#: every loopback, private, link-local ... address is internal: docs/reliability.md)
ONLY_127_0_0_2 = {"RFC9309_INTERNAL_NETWORKS": ["127.0.0.2/32"]}


@implementer(IHostResolution)
class _Resolution:
    def __init__(self, name: str) -> None:
        self.name = name

    def cancel(self) -> None:
        pass


@implementer(IHostnameResolver)
class _Names:
    """Resolves the names it is given to fixed addresses, others as before:
    a name that resolves inward, as a hostile DNS zone would make it."""

    def __init__(self, names: dict[str, str], fallback) -> None:
        self.names = names
        self.fallback = fallback

    def resolveHostName(self, receiver, hostName, portNumber=0, addressTypes=None, transportSemantics="TCP"):  # noqa: N802, N803
        if hostName not in self.names:
            return self.fallback.resolveHostName(receiver, hostName, portNumber, addressTypes, transportSemantics)
        resolution = _Resolution(hostName)
        receiver.resolutionBegan(resolution)
        receiver.addressResolved(TCPAddress("TCP", self.names[hostName], portNumber))
        receiver.resolutionComplete()
        return resolution


def _nothing_kept(tmp_path: Path) -> None:
    for path in tmp_path.rglob("*"):
        if path.is_file():
            assert SECRET.encode() not in path.read_bytes(), path


@pytest.mark.parametrize("allowed_domains", [False, True])
@pytest_twisted.ensureDeferred
async def test_a_public_origins_robots_redirect_to_an_internal_address_is_not_asked(servers, tmp_path, allowed_domains):
    origin, internal = servers("127.0.0.1"), servers("127.0.0.2")
    origin.routes["/robots.txt"] = redirect(internal.url("/admin/secret"))
    internal.routes["/admin/secret"] = robots(INTERNAL_FILE)
    settings = {
        **ONLY_127_0_0_2, "RFC9309_STORAGE": f"sqlite://{tmp_path / 'store.sqlite'}",
        "RFC9309_AUDIT": {"path": str(tmp_path / "trail.jsonl"), "allowed": True},
    }  # fmt: skip
    attrs = {"allowed_domains": ["127.0.0.1"]} if allowed_domains else None
    result = await crawl([origin.url("/page")], settings, spider_attrs=attrs)
    check_accounting(result)
    assert internal.hits == []  # refused before connecting: no oracle of what answers inside
    assert result.outcome(origin.url("/page")).status == 200  # unavailable: allow all, as any unfollowable redirect
    assert result.stat("fetch/3xx_unfollowable") == 1 and result.stat("access/unavailable") == 1
    (fetch,) = [r for r in records(tmp_path / "trail.jsonl") if r["type"] == "fetch"]
    assert (fetch["access"], fetch["status"], fetch["bytes"]) == ("unavailable", 301, 0)
    assert fetch["note"].startswith("a redirect to an internal address")
    _nothing_kept(tmp_path)


@pytest_twisted.ensureDeferred
async def test_a_public_origins_tdmrep_json_redirect_to_an_internal_address_is_not_asked(servers):
    """A public origin's tdmrep.json (a purpose declared) redirects to an internal address:
    nothing there is asked, not the file, and not that host's robots.txt, which the hop's
    robots.txt check would otherwise fetch first (the address is refused before the check)."""
    origin, internal = servers("127.0.0.1"), servers("127.0.0.2")
    origin.routes["/robots.txt"] = robots("User-agent: *\nAllow: /\n")
    origin.routes["/.well-known/tdmrep.json"] = redirect(internal.url("/admin/tdm.json"))
    internal.routes["/robots.txt"] = robots(INTERNAL_FILE)
    internal.routes["/admin/tdm.json"] = Reply(200, "[]", {"Content-Type": "application/json"})
    settings = {**ONLY_127_0_0_2, "RFC9309_USAGE": ["train-ai"]}
    result = await crawl([origin.url("/page")], settings)
    check_accounting(result)
    assert internal.hits == []
    assert result.outcome(origin.url("/page")).status == 200


@pytest.mark.parametrize("named_by", ["robots_txt", "page"])
@pytest_twisted.ensureDeferred
async def test_a_license_a_public_origin_names_at_an_internal_address_is_not_asked(servers, named_by):
    """A public origin names an RSL license at an internal address (robots.txt's ``License``
    line, or a page's ``Link: rel="license"``; a purpose declared): nothing there is asked,
    not the license and not that host's robots.txt (an outsider's check, before: both were
    fetched, the license parsed: a public site could make the crawler ask inside)."""
    origin, internal = servers("127.0.0.1"), servers("127.0.0.2")
    license_url = internal.url("/license.xml")
    if named_by == "robots_txt":
        origin.routes["/robots.txt"] = robots(f"User-agent: *\nAllow: /\nLicense: {license_url}\n")
    else:
        origin.routes["/robots.txt"] = robots("User-agent: *\nAllow: /\n")
        link = f'<{license_url}>; rel="license"; type="application/rsl+xml"'
        origin.routes["/page"] = Reply(
            200, "<html><body>page</body></html>", {"Content-Type": "text/html", "Link": link}
        )
    internal.routes["/robots.txt"] = robots(INTERNAL_FILE)
    internal.routes["/license.xml"] = Reply(200, "<rsl></rsl>", {"Content-Type": "application/rsl+xml"})
    plan = [Req(origin.url("/page"), then=[Req(origin.url("/next"))])]
    origin.routes["/next"] = Reply(200, "<html><body>next</body></html>", {"Content-Type": "text/html"})
    result = await crawl(plan, {**ONLY_127_0_0_2, "RFC9309_USAGE": ["train-ai"]})
    check_accounting(result)
    assert internal.hits == []
    assert result.outcome(origin.url("/page")).status == 200


@contextmanager
def _resolving(names: dict[str, str]) -> Iterator[None]:
    """The crawl's resolver (the reactor's) answers ``names`` with fixed addresses."""
    from twisted.internet import reactor

    before = reactor.nameResolver
    reactor.installNameResolver(_Names(names, before))
    try:
        yield
    finally:
        reactor.installNameResolver(before)


@pytest.mark.needs_reactor  # the test's resolver is installed on the reactor
@pytest_twisted.ensureDeferred
async def test_a_redirect_to_a_name_that_resolves_inward_is_not_asked(servers, tmp_path, caplog):
    origin, internal = servers("127.0.0.1"), servers("127.0.0.2")
    internal.routes["/admin/secret"] = robots(INTERNAL_FILE)
    # a redirect to a name (not an IP literal) that resolves to 127.0.0.2
    origin.routes["/robots.txt"] = redirect(f"http://inward.example:{internal.port}/admin/secret")
    with _resolving({"inward.example": "127.0.0.2"}), caplog.at_level(logging.DEBUG):
        result = await crawl([origin.url("/page")], {**ONLY_127_0_0_2, "RFC9309_AUDIT": str(tmp_path / "trail.jsonl")})
    check_accounting(result)
    # the redirect target's name was resolved before connecting (the crawl's resolver): not asked
    assert internal.hits == []
    assert result.outcome(origin.url("/page")).status == 200  # unavailable: allow all
    assert result.stat("fetch/3xx_unfollowable") == 1 and result.stat("access/unavailable") == 1
    _nothing_kept(tmp_path)
    assert SECRET not in "\n".join(r.getMessage() for r in caplog.records)


#: issue 30, item 2: an intranet name (split-horizon DNS) resolving to a loopback address,
#: which the default RFC9309_INTERNAL_NETWORKS counts as internal
SITE_ADDRESS = "127.0.27.1"


@pytest.mark.needs_reactor  # the test's resolver is installed on the reactor
@pytest_twisted.ensureDeferred
async def test_an_origin_whose_name_resolves_inward_obeys_its_own_robots_txt(servers):
    site = servers(SITE_ADDRESS)
    site.routes["/robots.txt"] = robots("User-agent: *\nDisallow: /private\n")
    base = f"http://site.test:{site.port}"
    with _resolving({"site.test": SITE_ADDRESS}):
        result = await crawl([base + "/private", base + "/public"])  # default settings
    check_accounting(result)
    assert result.outcome(base + "/private").message == (
        "Forbidden by robots.txt: disallowed_explicit (line 2: Disallow: /private)"
    )
    assert result.outcome(base + "/public").status == 200
    assert [hit.path for hit in site.hits] == ["/robots.txt", "/public"]
    assert result.stat("access/success") == 1 and result.stat("fetch/2xx") == 1


@pytest.mark.needs_reactor  # the test's resolver is installed on the reactor
@pytest_twisted.ensureDeferred
async def test_an_inward_origins_robots_redirect_is_followed(servers):
    # the origin's own server is inside: a redirect it sends is an inside server's, not
    # an outsider's, and is followed as for a private origin (here to its own host)
    site = servers(SITE_ADDRESS)
    base = f"http://site.test:{site.port}"
    site.routes["/robots.txt"] = redirect(base + "/rules/robots.txt")
    site.routes["/rules/robots.txt"] = robots("User-agent: *\nDisallow: /private\n")
    with _resolving({"site.test": SITE_ADDRESS}):
        result = await crawl([base + "/private", base + "/public"])
    check_accounting(result)
    assert result.outcome(base + "/private").message == (
        "Forbidden by robots.txt: disallowed_explicit (line 2: Disallow: /private)"
    )
    assert result.outcome(base + "/public").status == 200
    assert result.stat("fetch/3xx") == 1 and result.stat("access/success") == 1


@pytest.mark.parametrize("how", ["setting", "private_origin"])
@pytest_twisted.ensureDeferred
async def test_intranet_crawls_may_redirect_inward(servers, how):
    origin, internal = servers("127.0.0.1"), servers("127.0.0.2")
    origin.routes["/robots.txt"] = redirect(internal.url("/admin/robots.txt"))
    internal.routes["/admin/robots.txt"] = robots(INTERNAL_FILE)
    # by default every loopback address is internal, so the origin on 127.0.0.1 is private itself;
    # [] makes no network internal (what ONLY_127_0_0_2 refuses above is followed)
    settings = {"RFC9309_INTERNAL_NETWORKS": []} if how == "setting" else {}
    result = await crawl([origin.url("/page")], settings)
    assert (
        result.outcome(origin.url("/page")).message
        == "Forbidden by robots.txt: disallowed_explicit (line 2: Disallow: /)"
    )
    assert internal.count("/admin/robots.txt") == 1
