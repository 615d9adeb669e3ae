"""The example project, run as a user runs it: ``scrapy crawl demo`` in
``example_project/``, in a subprocess, against its embedded loopback site.

The expected verdicts and line numbers follow from the robots.txt bodies in
``example_project/demo_project/demo_site.py`` and RFC 9309, not from a
previous run.
"""

from __future__ import annotations

import difflib
import hashlib
import json
import os
import random
import re
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from . import demo_doc
from .accounting import SCRAPY_ARGS, check_output, subprocess_env
from .harness import MODE_ARGS

pytestmark = pytest.mark.main_run_only  # not again on the oldest Scrapy, nor without a reactor (setup.cfg)

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "example_project"))
from demo_project.demo_site import NAMES  # noqa: E402 - the demo's own list of origins

PROJECT = Path(__file__).resolve().parents[2] / "example_project"
TIMEOUT = 90


def _free_port() -> int:
    """A port free on every demo host (127.0.0.1 and one per origin), not only on 127.0.0.1.

    Picked below the kernel's ephemeral range (32768 and up on Linux), where
    neither the other tests' servers (port 0) nor client connections land,
    and probed with SO_REUSEADDR as the demo's server binds: a client port in
    TIME_WAIT from a parallel run does not make a port look taken."""
    hosts = [f"127.0.0.{i}" for i in range(1, len(NAMES) + 2)] if _multi_host() else ["127.0.0.1"]
    rng = random.Random()
    for _ in range(200):
        port = rng.randrange(20_000, 32_000)
        try:
            for host in hosts:
                for offset in range(len(NAMES)) if host == "127.0.0.1" else (0,):
                    with socket.socket() as sock:
                        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
                        sock.bind((host, port + offset))
        except OSError:
            continue
        return port
    raise RuntimeError("no free port for the demo site")


def _scrapy(*args: str, port: int, **extra_env: str) -> subprocess.CompletedProcess:
    env = subprocess_env({k: v for k, v in os.environ.items() if not k.startswith(("SCRAPY_", "RFC9309_DEMO_"))})
    env["RFC9309_DEMO_PORT"] = str(port)
    env.update(extra_env)
    process = subprocess.run(
        [sys.executable, "-m", "scrapy", *args, *SCRAPY_ARGS, *MODE_ARGS],
        cwd=PROJECT,
        env=env,
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
    )
    check_output(process.stdout, process.stderr)  # the crawl's stats add up (tests/crawl/accounting.py)
    return process


def _multi_host() -> bool:
    try:
        with socket.socket() as sock:
            sock.bind(("127.0.0.2", 0))
    except OSError:
        return False
    return True


class Block:
    """One origin of the table: its cells, by column, wrapped lines joined (demo_doc.read)."""

    def __init__(self, cells: dict) -> None:
        self.address, self.case = cells["ORIGIN"]
        self.robots = cells["ROBOTS.TXT"]
        self.delay = cells["DELAY"]
        self.gap = cells["MIN GAP"]
        self.pages = dict(cells["PAGES"])


def parse_table(stdout: str) -> tuple[str, dict[str, Block], list[str]]:
    """Title, blocks by case, footer paragraphs: read by the header's column positions."""
    title, cells, footer = demo_doc.read(stdout)
    blocks = [Block(block) for block in cells]
    return " ".join(title), {block.case.strip("()"): block for block in blocks}, footer


@pytest.fixture(scope="module")
def demo() -> tuple[subprocess.CompletedProcess, int]:
    port = _free_port()
    return _scrapy("crawl", "demo", port=port), port


@pytest.fixture(scope="module")
def table(demo):
    process, _ = demo
    assert process.returncode == 0, process.stderr[-3000:]
    return parse_table(process.stdout)


def test_demo_ends_with_one_table_on_stdout(demo, table):
    process, _ = demo
    title, blocks, footer = table
    # the spider-level override (custom_settings) beats settings.py's USER_AGENT (ExampleBot)
    assert "product token 'DemoBot' (from ROBOTSTXT_USER_AGENT)" in title
    assert len(blocks) == 23
    assert footer[0].startswith(
        "24 pages allowed, 10 denied, 13 skipped by usage preferences (4 before the download, 9 after it), "
        "2 links not followed, 0 errors"
    )
    # nothing but the table on stdout; Scrapy's log went to stderr, before the table was printed
    assert process.stdout.startswith("scrapy-rfc9309 demo:")
    assert "Spider closed (finished)" in process.stderr and "Spider closed" not in process.stdout
    # the add-on replaced the built-in middleware
    assert "scrapy_rfc9309.middleware.RobotsTxtMiddleware" in process.stderr
    assert "scrapy.downloadermiddlewares.robotstxt.RobotsTxtMiddleware" not in process.stderr


def test_the_table_fits_a_terminal_of_120_columns(demo, table):
    """Issue 38: the table was 261 columns wide and wrapped on a terminal.  At
    most 120, the demo's and the doc's, long verdicts wrapped in their cell
    (read back whole by demo_doc.read)."""
    process, _ = demo
    for name, text in (("scrapy crawl demo", process.stdout), ("docs/first_hour.md", demo_doc.documented())):
        wide = [line for line in text.splitlines() if len(line) > 120]
        assert not wide, f"{name}: {len(wide)} lines over 120 columns, e.g. {wide[0]!r}"
    # a verdict that did not fit is wrapped in its cell, and read back whole
    tdmrep = table[1]["tdmrep.json file"].pages["/reports/2026.html"]
    assert tdmrep.startswith("SKIPPED  train-ai disallowed by tdmrep.json: rule 1:")
    assert tdmrep.endswith("/licensing.json (downloaded, dropped)")
    assert not [line for line in process.stdout.splitlines() if "tdm-policy" in line and "(downloaded" in line]


def test_the_footer_says_how_the_crawls_own_counts_differ(demo, table):
    """Issue 38: the footer counted 22 allowed, 10 denied, 11 skipped while the
    log said checked 43, allowed 30, denied 13.  The footer now gives the log's
    and stats' numbers for the same requests, and they are the crawl's."""
    process, _ = demo
    stats = {key: int(value) for key, value in re.findall(r"'rfc9309/(requests/[^']+)': (\d+)", process.stderr)}
    allowed = sum(v for k, v in stats.items() if k.startswith("requests/allowed/"))
    denied = sum(v for k, v in stats.items() if k.startswith("requests/denied/"))
    assert (stats["requests/checked"], allowed, denied) == (47, 33, 14)  # the issue saw 43, 30, 13: 4 pages since
    said = [line for line in table[2] if line.startswith("The crawl's log and stats")]
    assert said, table[2]
    said = said[0]
    assert f"{stats['requests/checked']} checked, {allowed} allowed (a page skipped after its download" in said, said
    assert f"{denied} denied (a page skipped before it included)" in said, said
    # the log's own line (the middleware's summary) gives the same numbers
    assert f"requests checked: {stats['requests/checked']}, allowed: {allowed}, denied: {denied}" in process.stderr


def test_docs_show_the_table_the_demo_prints(demo):
    """docs/first_hour.md's table is what ``scrapy crawl demo`` prints today:
    every row, verdict and count, the footer; not the gaps' timings."""
    process, port = demo
    assert process.returncode == 0, process.stderr[-3000:]
    if not _multi_host():
        pytest.skip("the doc shows the layout of one host per origin (127.0.0.2 and up); this machine has one host")
    printed = demo_doc.stable(process.stdout, port)
    shown = demo_doc.stable(demo_doc.documented())
    if printed != shown:
        diff = "\n".join(difflib.unified_diff(shown, printed, "docs/first_hour.md", "scrapy crawl demo", lineterm=""))
        pytest.fail(f"the doc's table is not the demo's; rewrite it with `{demo_doc.UPDATE}`:\n{diff}", pytrace=False)


def test_docs_explain_every_case_of_the_table(table):
    """Each origin's case (the table's second ORIGIN line) has its bullet in
    docs/first_hour.md's list of cases."""
    if not _multi_host():
        pytest.skip("the doc names the cases of the layout of one host per origin; this machine has one host")
    text = demo_doc.DOC.read_text(encoding="utf-8")
    missing = [case for case in table[1] if f"\n- **{case}**: " not in text]
    assert not missing, f"docs/first_hour.md explains no case {missing}"


def test_no_denied_page_reached_a_server_and_each_robots_txt_was_fetched_once(table):
    _, _, footer = table
    assert "denied pages that reached a server: 0" in footer[0]
    assert footer[0].endswith("robots.txt requests per origin: 1")


def test_ordinary_rules_use_the_group_naming_the_agent(table):
    block = table[1]["ordinary rules"]
    assert block.robots[0] == "200 -> 2 rules"
    # the '*' group says "Disallow: /"; DemoBot's own group does not forbid /about.html
    assert block.pages["/about.html"] == "allowed  allowed_implicit"
    assert block.pages["/private/salaries.html"] == "DENIED   disallowed_explicit (line 6: Disallow: /private/)"
    assert block.pages["/drafts/post.html"] == "DENIED   disallowed_explicit (line 7: Disallow: /drafts/)"


def test_allow_inside_disallow_and_wildcards(table):
    allow = table[1]["Allow inside Disallow"]
    assert allow.pages["/shop/cart.html"] == "DENIED   disallowed_explicit (line 2: Disallow: /shop/)"
    assert allow.pages["/shop/catalog/shoes.html"] == "allowed  allowed_explicit (line 3: Allow: /shop/catalog/)"
    wild = table[1]["wildcards * and $"]
    assert wild.pages["/docs/manual.pdf"] == "DENIED   disallowed_explicit (line 2: Disallow: /*.pdf$)"
    assert wild.pages["/docs/manual.pdf.html"] == "allowed  allowed_implicit"  # "$" anchors the end
    assert wild.pages["/search?q=shoes"] == "allowed  allowed_implicit"
    assert wild.pages["/search?sessionid=42"] == "DENIED   disallowed_explicit (line 3: Disallow: /*sessionid=)"


def test_404_allows_all_and_503_denies_all(table):
    missing = table[1]["404: allow all"]
    assert missing.robots == ["404 -> allow all"]
    # the 404 body says "Disallow: /": it is never read
    assert set(missing.pages.values()) == {"allowed  allowed_unavailable"}
    assert len(missing.pages) == 2
    down = table[1]["503: deny all"]
    assert down.robots == ["503 -> deny all"]
    assert set(down.pages.values()) == {"DENIED   unknown_unreachable"}
    assert down.gap == "-"  # no page request reached the server


def test_redirect_chain_to_another_host(demo, table):
    _, port = demo
    moved = table[1]["redirect to other host" if _multi_host() else "redirect to other port"]
    assert moved.robots[0] == "301 -> 302 -> 200 -> 1 rule"
    target = f"127.0.0.8:{port}" if _multi_host() else f"127.0.0.1:{port + 6}"
    assert moved.robots[1] == f"(file at {target})"
    # the rules of the file at the end of the chain apply to the origin first asked
    assert moved.pages["/archive/2019.html"] == "DENIED   disallowed_explicit (line 2: Disallow: /archive/)"
    assert moved.pages["/index.html"] == "allowed  allowed_implicit"


def test_crawl_delay_is_a_floor_measured_by_the_server(table):
    delay = table[1]["Crawl-delay: 1"]
    assert delay.delay == "1 s"
    gap = float(re.fullmatch(r"(\d+\.\d+) s", delay.gap).group(1))
    assert gap >= 0.9  # AutoThrottle (on, start delay 0) and 8 per domain did not shorten it
    assert sum(verdict.startswith("allowed") for verdict in delay.pages.values()) == 4
    assert delay.pages["/cart/checkout.html"] == "DENIED   disallowed_explicit (line 3: Disallow: /cart/)"
    # no other origin asked for a delay: none was applied there
    others = [block for case, block in table[1].items() if case != "Crawl-delay: 1"]
    assert {block.delay for block in others} == {"-"}


def test_bom_and_html_page(table):
    bom = table[1]["UTF-8 byte order mark"]
    assert "line 1: bom" in bom.robots
    # the group after the BOM was read: its Disallow holds
    assert bom.pages["/private/x.html"] == "DENIED   disallowed_explicit (line 2: Disallow: /private/)"
    html = table[1]["HTML page as robots.txt"]
    assert html.robots[0] == "200 -> 0 rules"
    assert "line 1: html_body" in html.robots
    assert set(html.pages.values()) == {"allowed  allowed_implicit"}


def test_per_origin_override_is_never_fetched(table):
    intranet = table[1]["per-origin override"]
    assert intranet.robots == ["not requested", "(obey: False)"]
    # its robots.txt says "Disallow: /"; RFC9309_ORIGINS says obey: False
    assert set(intranet.pages.values()) == {"allowed  allowed_not_obeyed"}


def test_usage_preferences_skip_what_the_spider_may_not_train_on(demo, table):
    """The demo spider declares train-ai (RFC9309_USAGE): robots.txt Content-Usage
    and Content-Signal lines skip pages before the download, naming the line; a
    page's own Content-Usage header drops it after."""
    usage = table[1]["Content-Usage rules"]
    assert usage.pages["/news.html"] == "SKIPPED  train-ai disallowed by robots.txt line 3: Content-Usage: train-ai=n"
    assert usage.pages["/blog/post.html"] == "allowed  allowed_implicit; train-ai=y (line 4)"
    assert usage.pages["/blog/no-ai.html"] == (
        "SKIPPED  train-ai disallowed by header: Content-Usage: train-ai=n (downloaded, dropped)"
    )
    signal = table[1]["Content-Signal line"]
    assert signal.pages["/index.html"] == (
        "SKIPPED  train-ai disallowed by robots.txt line 2: Content-Signal: search=yes, ai-train=no"
    )
    _, _, footer = table
    # skipped by robots.txt: never downloaded (the header page was, by design)
    assert "denied pages that reached a server: 0" in footer[0]
    assert any(line.startswith("SKIPPED: robots.txt allows the page") for line in footer)


def test_every_other_opt_out_a_site_states_skips_its_page(demo, table):
    """Issue 32: the demo declares train-ai, so each page's own statements are read
    once it is downloaded, and the page is skipped naming the source: the origin's
    tdmrep.json rule, a tdm-reservation header or meta tag, X-Robots-Tag (for every
    crawler, or naming DemoBot), a robots or DemoBot meta tag; a robots.txt
    Content-Signal line before the first group applies to every group."""
    _, port = demo
    blocks = table[1]
    dropped = " (downloaded, dropped)"
    assert blocks["file-wide Content-Signal"].pages["/index.html"] == (
        "SKIPPED  train-ai disallowed by robots.txt line 1: Content-Signal: search=yes, ai-train=no"
    )
    tdmrep = blocks["tdmrep.json file"]
    assert "tdmrep.json: 200" in tdmrep.robots
    assert tdmrep.pages["/reports/2026.html"] == (
        "SKIPPED  train-ai disallowed by tdmrep.json: rule 1: location /reports/, tdm-reservation 1, "
        f"tdm-policy http://{tdmrep.address}/licensing.json" + dropped
    )
    assert tdmrep.pages["/news/today.html"] == "allowed  allowed_implicit; train-ai=y (tdmrep.json rule 2)"
    header = blocks["tdm-reservation header"]
    assert header.pages["/paper.html"] == "SKIPPED  train-ai disallowed by header: tdm-reservation: 1" + dropped
    assert header.pages["/preprint.html"] == "allowed  allowed_implicit; train-ai=y (header)"
    assert blocks["tdm-reservation meta tag"].pages["/story.html"] == (
        'SKIPPED  train-ai disallowed by html line 4: <meta name="tdm-reservation" content="1">' + dropped
    )
    assert blocks["X-Robots-Tag: noai"].pages["/gallery.html"] == (
        "SKIPPED  train-ai disallowed by header: X-Robots-Tag: noai, noimageai" + dropped
    )
    token = blocks["X-Robots-Tag for DemoBot"]
    assert token.pages["/mine.html"] == "SKIPPED  train-ai disallowed by header: X-Robots-Tag: DemoBot: noai" + dropped
    assert token.pages["/theirs.html"] == "allowed  allowed_implicit"  # another crawler's
    meta = blocks["meta robots noai"]
    assert (
        meta.pages["/art.html"]
        == 'SKIPPED  train-ai disallowed by html line 4: <meta name="robots" content="noai">' + dropped
    )
    assert meta.pages["/demobot.html"] == (
        'SKIPPED  train-ai disallowed by html line 4: <meta name="DemoBot" content="noimageai">' + dropped
    )
    # noindex says no to search, which the demo does not declare: reported, not enforced
    assert blocks["meta robots noindex"].pages["/draft.html"] == "allowed  allowed_implicit; search=n (html line 4)"
    nofollow = blocks["meta robots nofollow"]
    assert nofollow.pages["/index.html"] == "allowed  allowed_implicit"
    for link in ("/linked-1.html", "/linked-2.html"):
        assert nofollow.pages[link] == 'NOFOLLOW html line 4: <meta name="robots" content="nofollow"> (never requested)'
    # the Content-Signal response header (as Cloudflare sends it), read as robots.txt's line is
    signal = blocks["Content-Signal header"]
    assert signal.pages["/article.html"] == (
        "SKIPPED  train-ai disallowed by header: Content-Signal: ai-train=no, search=yes" + dropped
    )
    assert signal.pages["/open.html"] == "allowed  allowed_implicit; train-ai=y (header)"
    _, _, footer = table
    assert "denied pages that reached a server: 0" in footer[0]  # the links never reached it either
    assert any(line.startswith("NOFOLLOW: a link the spider yielded") for line in footer)


def test_an_rsl_license_line_skips_the_pages_its_license_reserves_before_the_download(demo, table):
    """Issue 37 items 3 and 7: robots.txt's License line names an RSL license that prohibits
    ai-train under /articles/; it is fetched once, and the page is skipped before its download,
    naming the license, its line and the SHA-256 of its body."""
    import hashlib

    from demo_project.demo_site import LICENSE_PATH, plan

    block = table[1]["RSL License: line"]
    assert "license: 200" in block.robots
    (spec,) = [o for o in plan() if o.name == "license"]
    digest = hashlib.sha256(spec.routes[LICENSE_PATH].body).hexdigest()
    assert block.pages["/articles/one.html"] == (
        f"SKIPPED  train-ai disallowed by license line 4: http://{block.address}{LICENSE_PATH} sha256={digest[:16]}: "
        "content /articles/: train-ai prohibited"
    )
    assert block.pages["/about.html"] == "allowed  allowed_implicit"


def test_sitemap_spider_reads_sitemaps_without_a_second_robots_download():
    process = _scrapy("crawl", "sitemap_demo", port=_free_port())
    assert process.returncode == 0, process.stderr[-3000:]
    out = process.stdout
    assert re.search(r"^sitemaps listed in http://\S+/robots.txt: http://\S+/sitemap\.xml$", out, re.M)
    crawled = re.findall(r"^crawled from the sitemap: \S+(/[\w/.]+)$", out, re.M)
    # the sitemap lists three pages; robots.txt still forbids /private/ to DemoBot
    assert crawled == ["/about.html", "/team.html"]
    dropped = re.findall(r"^dropped from the sitemap: http://[\d.:]+(/[\w/.]+) \((.*)\)$", out, re.M)
    assert dropped == [
        ("/private/salaries.html", "Forbidden by robots.txt: disallowed_explicit (line 6: Disallow: /private/)")
    ]
    assert "robots.txt requests seen by the server: 1" in out
    assert "sitemap.xml requests seen by the server: 1" in out
    # each item carries the provenance of its page (demo_project.provenance), whose hash is
    # that of the "rules" origin's robots.txt in demo_site.py
    items = dict(re.findall(r"^item http://[\d.:]+(/[\w/.]+) robots_txt: (.*)$", out, re.M))
    assert sorted(items) == ["/about.html", "/team.html"]
    for provenance in map(json.loads, items.values()):
        origin = provenance["robots_url"].removesuffix("/robots.txt")
        body = (
            "# Everyone else stays out; DemoBot has a group of its own.\nUser-agent: *\nDisallow: /\n\n"
            f"User-agent: DemoBot\nDisallow: /private/\nDisallow: /drafts/\n\nSitemap: {origin}/sitemap.xml\n"
        )
        assert provenance["sha256"] == hashlib.sha256(body.encode()).hexdigest()
        assert (provenance["verdict"], provenance["status"], provenance["tokens"]) == (
            "allowed_implicit",
            200,
            ["DemoBot"],
        )


def test_busy_port_fails_the_crawl_with_one_line_of_advice():
    """docs/first_hour.md: "the crawl stops at once with a message naming the
    address".  One ERROR line (issue 38: it ended a 40-line asyncio "Task
    exception was never retrieved" traceback), nothing requested, exit status 1."""
    port = _free_port()
    host = "127.0.0.1" if not _multi_host() else "127.0.0.2"
    with socket.socket() as sock:
        sock.bind((host, port))
        sock.listen()
        process = _scrapy("crawl", "demo", port=port)
    assert process.returncode == 1, process.stderr[-3000:]
    assert process.stdout == ""
    log = process.stderr
    assert "Traceback" not in log and "Task exception was never retrieved" not in log, log[-3000:]
    errors = [line for line in log.splitlines() if " ERROR: " in line]
    assert len(errors) == 1, errors or log[-3000:]
    assert errors[0].endswith(
        f"the demo site cannot listen on {host}:{port} (Address already in use); "
        "choose another port, e.g. RFC9309_DEMO_PORT=19309 scrapy crawl demo"
    ), errors
    assert "(demo_site_unavailable)" in log  # the finish reason


def test_one_host_layout_keeps_each_origin_on_its_own_slot():
    """The layout used where only 127.0.0.1 exists (macOS): one host, a port
    per origin.  Scrapy's default slot is the host, so without a slot per
    origin the Crawl-delay floor would land on every origin."""
    port = _free_port()
    process = _scrapy("crawl", "demo", port=port, RFC9309_DEMO_ONE_HOST="1")
    assert process.returncode == 0, process.stderr[-3000:]
    _, blocks, footer = parse_table(process.stdout)
    assert {block.address for block in blocks.values()} == {
        f"127.0.0.1:{port + i}" for i in range(len(NAMES)) if i != 6
    }
    delay = blocks["Crawl-delay: 1"]
    assert delay.delay == "1 s" and float(delay.gap.split()[0]) >= 0.9
    # the floor stayed on the Crawl-delay origin's own slot: another origin's
    # pages came well within the floor (on a shared slot they would be a floor apart)
    assert float(blocks["wildcards * and $"].gap.split()[0]) < float(delay.gap.split()[0]) / 2
    assert blocks["redirect to other port"].robots[1] == f"(file at 127.0.0.1:{port + 6})"
    assert footer[0].startswith(
        "24 pages allowed, 10 denied, 13 skipped by usage preferences (4 before the download, 9 after it), "
        "2 links not followed, 0 errors"
    )
