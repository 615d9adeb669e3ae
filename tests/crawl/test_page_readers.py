"""What a page states reaches the usage model as a browser would see it (issue 37, item 1).

Real crawls on loopback under ``RFC9309_USAGE = ["train-ai"]``: each of the
issue's variants hides ``noai`` from a reader that is not the HTML
standard's, and each is dropped after its download, its statement named:

* a comment closed by ``--!>`` before the meta tag;
* the meta tag after ``</head>`` (the standard's "after head" mode puts it
  back in the head);
* the page in UTF-16LE, and in UTF-16BE, named by the Content-Type header;
* an ``X-Robots-Tag: noai`` line after more than 16 KiB of other
  X-Robots-Tag lines;
* and the plain meta tag, the control.

Pages whose ``noai`` a browser does not put in the head (inside a comment
closed by ``-->`` only after it, inside a template, after the body's first
content) are delivered.
"""

from __future__ import annotations

import pytest_twisted

from .harness import REACTORLESS, check_accounting, crawl
from .servers import Reply, robots

NOAI = '<meta name="robots" content="noai">'
DROPPED = "Dropped by usage preferences: train-ai disallowed by "


def page(body: str | bytes, content_type: str = "text/html", **kw: object) -> Reply:
    return Reply(200, body, {"Content-Type": content_type}, **kw)  # type: ignore[arg-type]


def other_lines() -> tuple[tuple[str, str], ...]:
    """X-Robots-Tag lines addressed to other crawlers, more than 16 KiB in all."""
    if REACTORLESS:  # aiohttp takes at most 128 field lines of 8,190 bytes: 3 long ones
        return tuple(("X-Robots-Tag", ", ".join(f"otherbot{j}: noindex" for j in range(300))) for _ in range(3))
    return tuple(("X-Robots-Tag", f"otherbot{i}: noindex, nofollow") for i in range(1_000))


@pytest_twisted.ensureDeferred
async def test_what_a_browser_puts_in_the_head_is_read(servers):
    s = servers("127.0.0.2")
    s.routes["/robots.txt"] = robots("User-agent: *\nAllow: /\n")
    utf16 = f"<html><head><title>t</title>\n{NOAI}\n</head><body>text</body></html>"
    lines = other_lines()
    assert sum(len(name) + len(value) + 4 for name, value in lines) > 16_384
    dropped = {
        "/control": page(f"<html><head>\n{NOAI}\n</head><body>x</body></html>"),
        "/bang-comment": page(f"<html><head><!-- a comment --!>\n{NOAI}\n</head><body>x</body></html>"),
        "/after-head": page(f"<html><head><title>t</title></head>\n{NOAI}\n<body>x</body></html>"),
        "/utf-16le": page(utf16.encode("utf-16-le"), "text/html; charset=utf-16le"),
        "/utf-16be": page(utf16.encode("utf-16-be"), "text/html; charset=UTF-16BE"),
        "/late-header": page("<html><body>x</body></html>", header_lines=(*lines, ("X-Robots-Tag", "noai"))),
    }
    delivered = {
        "/in-comment": page(f"<html><head><!-- --!-- {NOAI} --></head><body>x</body></html>"),
        "/in-template": page(f"<html><head><template>{NOAI}</template></head><body>x</body></html>"),
        "/in-body": page(f"<html><head></head>text\n{NOAI}<body>x</body></html>"),
        "/other-bots": page("<html><body>x</body></html>", header_lines=lines),
    }
    s.routes.update(dropped)
    s.routes.update(delivered)
    result = await crawl([s.url(path) for path in [*dropped, *delivered]], {"RFC9309_USAGE": ["train-ai"]})

    check_accounting(result)
    meta = DROPPED + 'html line 2: <meta name="robots" content="noai">'
    assert {path: result.outcome(s.url(path)).message for path in dropped} == {
        "/control": meta,
        "/bang-comment": meta,
        "/after-head": meta,
        "/utf-16le": meta,
        "/utf-16be": meta,
        "/late-header": DROPPED + "header: X-Robots-Tag: noai",
    }
    assert all(s.count(path) == 1 for path in dropped)  # downloaded once, then dropped
    assert result.stat("usage/dropped/train-ai") == len(dropped)
    for path in delivered:
        o = result.outcome(s.url(path))
        assert o.status == 200, (path, o)
        assert o.provenance["usage"]["train-ai"]["value"] is None, path
