"""What a crawl pays once: the modules a plain crawl loads.

A short crawl pays the plugin's start-up in full (issue 36: about 0.2 s of CPU
over the built-in's, most of it imports).  A crawl that declares no purpose,
keeps no audit trail, fetches robots.txt without a failure and has no receiver
of ``robots_txt_ready`` / ``robots_parsed`` needs none of the modules below, so
none is loaded: the page-usage readers (HTML head, page directives, tdmrep.json, RSL), the
structured-field parser, the audit trail's writer and reader, Scrapy's
``robots_parsed`` adapter (which brings Scrapy's parsers, Protego with them),
the stores it does not use.  Each crawl runs as ``scrapy crawl`` in a fresh
interpreter, which reports ``sys.modules`` as it exits.
"""

from __future__ import annotations

import json

import pytest
from scrapy import signals

from .command_runner import scrapy_crawl
from .servers import robots

#: printed by the spider module's exit hook: the modules loaded, as JSON, after this mark
MARK = "loaded-modules:"
#: run when the spider module is imported: report every module loaded when the interpreter exits
HEAD = f"""
import atexit, json, sys
atexit.register(lambda: print({MARK!r} + json.dumps(sorted(sys.modules))))
"""
#: loaded only by a crawl that needs them
NOT_NEEDED = (
    "http_sf",
    "protego",
    "scrapy_rfc9309.audit.chain",
    "scrapy_rfc9309.audit.trail",
    "scrapy_rfc9309.audit.writer",
    "scrapy_rfc9309.interop",
    "scrapy_rfc9309.page_usage",
    "scrapy_rfc9309.robots.directives",
    "scrapy_rfc9309.robots.html_head",
    "scrapy_rfc9309.robots.rsl",
    "scrapy_rfc9309.robots.tdmrep",
    "scrapy_rfc9309.storage.redis",
    "scrapy_rfc9309.storage.sqlite",
)


def _loaded(process) -> set[str]:
    assert process.returncode == 0, process.stderr[-3000:]
    line = next(line for line in process.stdout.splitlines() if line.startswith(MARK))
    return set(json.loads(line[len(MARK) :]))


def test_a_plain_crawl_loads_no_module_it_does_not_use(servers, tmp_path):
    site = servers("127.0.0.2")
    site.routes["/robots.txt"] = robots("User-agent: *\nDisallow: /private\n")
    done = scrapy_crawl(tmp_path, [site.url("/page"), site.url("/private")], "-s", "LOG_LEVEL=INFO", head=HEAD)
    loaded = _loaded(done)
    assert "scrapy_rfc9309.gate" in loaded and "scrapy_rfc9309.middleware" in loaded  # the plugin ran
    assert "'rfc9309/requests/denied/disallowed_explicit': 1" in done.stderr  # and decided
    assert sorted(m for m in loaded if m.split(".")[0] == "http_sf" or m in NOT_NEEDED) == []


@pytest.mark.skipif(not hasattr(signals, "robots_parsed"), reason="Scrapy sends robots_parsed from 2.18 on")
def test_a_crawl_that_needs_them_loads_them(servers, tmp_path):
    """The same crawl with a purpose declared, an audit trail and a receiver of
    ``robots_parsed``: the modules come when used (the test above is not blind)."""
    site = servers("127.0.0.2")
    site.routes["/robots.txt"] = robots("User-agent: *\nContent-Usage: train-ai=n\nDisallow: /private\n")
    head = HEAD + LISTENER
    custom = {
        "RFC9309_USAGE": ["search"],
        "RFC9309_AUDIT": str(tmp_path / "trail.jsonl"),
        "SPIDER_MIDDLEWARES": {"probe_project.spiders.probe.Listener": 0},
    }
    done = scrapy_crawl(tmp_path, [site.url("/page")], "-s", "LOG_LEVEL=INFO", head=head, custom=custom)
    loaded = _loaded(done)
    needed_ones = (
        "http_sf",
        "protego",
        "scrapy_rfc9309.interop",
        "scrapy_rfc9309.audit.writer",
        "scrapy_rfc9309.page_usage",
        "scrapy_rfc9309.robots.tdmrep",
        "scrapy_rfc9309.robots.rsl",
    )
    for needed in needed_ones:
        assert needed in loaded, needed
    assert "scrapy_rfc9309.robots.html_head" in loaded  # the page was read for its usage statements
    assert "robots_parsed received" in done.stderr


#: a spider middleware that receives robots_parsed (and says so in the log)
LISTENER = """
import logging
from scrapy import signals

class Listener:
    @classmethod
    def from_crawler(cls, crawler):
        def received(robotparser, request):
            logging.getLogger("probe").info("robots_parsed received: %s", robotparser.allowed(request.url, "x"))
        crawler.signals.connect(received, signal=signals.robots_parsed, weak=False)
        return cls()
"""

#: run when the spider module is imported: names the thread that imports http_sf (in the log)
IMPORT_WATCH = """
import sys, threading

class ImportWatch:
    def find_spec(self, name, path=None, target=None):
        if name == "http_sf":
            print("http_sf imported in " + threading.current_thread().name, file=sys.stderr, flush=True)
        return None

sys.meta_path.insert(0, ImportWatch())
"""


@pytest.mark.parametrize("purpose", [False, True])
def test_the_structured_field_parser_is_imported_off_the_loop(servers, tmp_path, purpose):
    """http_sf takes 10-30 ms to import: where a robots.txt line or a header needs it, it is
    imported in a worker thread, before the file is parsed (a Content-Signal line) or as the spider
    opens (a purpose declared: headers are read), never on the loop at the first line that needs it."""
    site = servers("127.0.0.2")
    site.routes["/robots.txt"] = robots("User-agent: *\nContent-Signal: ai-train=no\nDisallow: /private\n")
    custom = {"RFC9309_USAGE": ["search"]} if purpose else {}
    done = scrapy_crawl(tmp_path, [site.url("/page")], "-s", "LOG_LEVEL=INFO", head=HEAD + IMPORT_WATCH, custom=custom)
    assert "http_sf" in _loaded(done)
    imported = [line for line in done.stderr.splitlines() if line.startswith("http_sf imported in ")]
    assert len(imported) == 1 and imported[0] != "http_sf imported in MainThread", imported
    assert "'rfc9309/requests/allowed/" in done.stderr  # the page was checked and went
