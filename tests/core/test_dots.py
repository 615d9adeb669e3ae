"""Dot segments (docs/deviations.md, class l): a path is allowed only if it
is allowed as sent and with its dot segments removed (RFC 3986 5.2.4)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from scrapy_rfc9309 import Verdict, parse
from scrapy_rfc9309.robots.dots import remove_dot_segments

FILE = b"User-agent: *\nDisallow: /private\nDisallow: /$\nAllow: /private/ok\n"


@pytest.mark.parametrize(
    ("path", "resolved"),
    [  # RFC 3986 5.2.4 and 5.4's examples, as absolute paths
        ("/a/b/c/./../../g", "/a/g"),
        ("/mid/content=5/../6", "/mid/6"),
        ("/a/b/..", "/a/"),
        ("/a/.", "/a/"),
        ("/../x", "/x"),
        ("/..", "/"),
        ("/a//../b", "/a/b"),
        ("/a/./b/./", "/a/b/"),
        ("/.well-known/x", "/.well-known/x"),
        ("/a?q=/../b", "/a?q=/../b"),  # the query is not a path
        ("/a/../b?q=/../c", "/b?q=/../c"),
    ],
)
def test_remove_dot_segments(path, resolved):
    assert remove_dot_segments(path) == resolved


@pytest.mark.parametrize(
    ("url", "allowed", "line"),
    [
        ("https://example.com/x/../private", False, 2),
        ("https://example.com/./private/a", False, 2),
        ("https://example.com/x/%2E%2E/private", False, 2),  # an unreserved escape: the same path
        ("https://example.com/x/%2e./private", False, 2),
        ("https://example.com/x/..", False, 3),  # served as "/", which "Disallow: /$" denies
        ("https://example.com/private/../public", False, 2),  # denied as sent already
        ("https://example.com/x/../private/ok", True, None),  # both allow: the decision as sent
        ("https://example.com/x/../public", True, None),
        ("https://example.com/x/../robots.txt", True, None),
        ("https://example.com/.well-known/security.txt", True, None),
        ("https://example.com/x/%2F../private", True, None),  # %2F is no segment separator
    ],
)
def test_a_path_is_allowed_only_if_allowed_as_sent_and_resolved(url, allowed, line):
    robots = parse(FILE)
    for _ in range(2):  # the first check learns the origin; the second takes the fast path
        decision = robots.check(url, "ExampleBot")
        assert decision.allowed is allowed, (url, decision)
        assert (decision.rule.line if decision.rule else None) == line
    if not allowed:
        assert decision.verdict is Verdict.DISALLOWED_EXPLICIT


def _rfc3986_5_2_4(path: str) -> str:
    """The section's own algorithm, step by step, on an input buffer."""
    given, out = path, ""
    while given:
        if given.startswith("../"):
            given = given[3:]
        elif given.startswith("./"):
            given = given[2:]
        elif given.startswith("/./"):
            given = given[2:]
        elif given == "/.":
            given = "/"
        elif given.startswith("/../") or given == "/..":
            given = "/" + given[4:] if given.startswith("/../") else "/"
            out = out[: max(out.rfind("/"), 0)]
        elif given in (".", ".."):
            given = ""
        else:
            cut = given.find("/", 1)
            cut = len(given) if cut < 0 else cut
            out, given = out + given[:cut], given[cut:]
    return out


@settings(max_examples=1000, deadline=None)
@given(st.lists(st.sampled_from(["a", "b", ".", "..", "", "c.d", "..x", ".y"]), max_size=8), st.booleans())
def test_remove_dot_segments_is_rfc_3986_5_2_4(segments, query):
    path = "/" + "/".join(segments)
    tail = "?q=/../x" if query else ""
    assert remove_dot_segments(path + tail) == _rfc3986_5_2_4(path) + tail
