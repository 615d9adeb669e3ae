"""TDMRep, the W3C TDM Reservation Protocol (robots/tdmrep.py).

The CG final report of 10 May 2024 is the reference (sections cited by their
anchors): its examples (#sec-tdm-file-regexp, #sec-tdm-file-example,
#sec-tdm-header, #sec-tdm-html-meta) give its answers, its processing priority
(#sec-processing-priority) decides between the file, the header and the HTML
meta tags, and its error rules (#sec-tdm-reservation: any other value is unset) hold for every malformed input.  The
file's rules are matched first-in-file-order, checked against a reference
written here; nothing raises on any input and a check costs little even
against the largest hostile file.
"""

from __future__ import annotations

import gc
import json
import re
import time

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from scrapy_rfc9309 import parse
from scrapy_rfc9309.robots import tdmrep
from scrapy_rfc9309.robots.html_head import MetaTag, read_head
from scrapy_rfc9309.robots.tdmrep import (
    EMPTY,
    MAX_DIAGNOSTICS,
    MAX_FILE_BYTES,
    MAX_RULES,
    MAX_WILDCARD_RULES,
    STEP_RULES,
    UNSET,
    Declaration,
    TdmRep,
    declare,
    from_headers,
    from_metas,
    resolve,
)
from scrapy_rfc9309.robots.usage import UNKNOWN, Source, combine

SETTINGS = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
SITE = "https://provider.com"
POLICY = "https://provider.com/policies/policy.json"

# #sec-tdm-file-example, first example: "opt-out" for every file of the server
EXAMPLE_ALL = b"""
          [
            {
            "location": "/",
            "tdm-reservation": 1
            }
          ]
"""
# #sec-tdm-file-example, second example: three groups of files
EXAMPLE_GROUPS = b"""
          [
            {
            "location": "/directory-a/",
            "tdm-reservation": 1
            },
            {
            "location": "/directory-b/html/",
            "tdm-reservation": 1,
            "tdm-policy":"https://provider.com/policies/policy.json"
            },
            {
            "location": "/directory-b/images/*.jpg",
            "tdm-reservation": 0
            }
          ]
"""


def codes(rep: TdmRep) -> list[tuple[int, str]]:
    return [(d.line, d.code) for d in rep.diagnostics]


def test_example_opt_out_everything() -> None:
    rep = TdmRep.parse(EXAMPLE_ALL)
    assert codes(rep) == []
    for path in ("/", "/a.html", "/deep/er/x.pdf?q=1", SITE + "/img.jpg"):
        d = rep.declaration(path)
        assert d.reservation is True and d.policy is None, path
        assert rep.usage(path) == {"train-ai": False, "search": None, "ai-input": None}
    assert rep.usage("/x").sources["train-ai"] == (Source("tdmrep.json", 1, "rule 1: location /, tdm-reservation 1"),)


def test_example_three_groups() -> None:
    rep = TdmRep.parse(EXAMPLE_GROUPS)
    assert codes(rep) == []
    a = rep.declaration(SITE + "/directory-a/report.pdf")
    assert (a.reservation, a.policy) == (True, None)
    b = rep.declaration(SITE + "/directory-b/html/page.html")
    assert (b.reservation, b.policy, b.policy_in_effect) == (True, POLICY, POLICY)
    c = rep.declaration(SITE + "/directory-b/images/photo.jpg")
    assert (c.reservation, c.policy) == (False, None)
    assert rep.usage(SITE + "/directory-b/images/photo.jpg")["train-ai"] is True
    # #sec-tdm-file: "If no match is found, a TDM Agent MUST consider that tdm-reservation is unset"
    assert rep.declaration(SITE + "/directory-b/images/photo.png") == UNSET
    assert rep.declaration(SITE + "/directory-c/") == UNSET
    assert rep.usage(SITE + "/") == UNKNOWN
    # the policy is kept with the statement
    (source,) = rep.usage(SITE + "/directory-b/html/page.html").sources["train-ai"]
    assert source == Source(
        "tdmrep.json", 2, f"rule 2: location /directory-b/html/, tdm-reservation 1, tdm-policy {POLICY}"
    )


def test_example_special_characters() -> None:
    # #sec-tdm-file-regexp: "$" ends the pattern, "*" is any run of characters, and a literal
    # "$" in a URI is matched with "%24" ("/path/foo-%24" matches ".../path/foo-$")
    rep = TdmRep.parse(
        json.dumps(
            [
                {"location": "/path/foo-%24", "tdm-reservation": 1},
                {"location": "/this/path/exactly$", "tdm-reservation": 1},
                {"location": "/this/*/then", "tdm-reservation": 0},
            ]
        )
    )
    assert rep.declaration(SITE + "/path/foo-$").reservation is True
    assert rep.declaration(SITE + "/path/foo-").reservation is None
    assert rep.declaration(SITE + "/this/path/exactly").reservation is True
    assert rep.declaration(SITE + "/this/path/exactly/then").reservation is False  # not "$": the "*" rule
    assert rep.declaration(SITE + "/this/path/exactly/not").reservation is None
    assert rep.declaration(SITE + "/this/a/b/then/c").reservation is False
    assert rep.declaration(SITE + "/this/then").reservation is None


def test_first_match_in_file_order_wins() -> None:
    # #sec-tdm-file: "The most specific match is the first in sequence" (not the longest, as in robots.txt)
    rep = TdmRep.parse(b'[{"location": "/a/", "tdm-reservation": 0}, {"location": "/a/b/", "tdm-reservation": 1}]')
    assert rep.declaration("/a/b/c").reservation is False
    rep = TdmRep.parse(b'[{"location": "/a/b/", "tdm-reservation": 1}, {"location": "/a/", "tdm-reservation": 0}]')
    assert rep.declaration("/a/b/c").reservation is True
    assert rep.declaration("/a/c").reservation is False
    # a rule for every path hides the rules after it, whatever their bucket
    rep = TdmRep.parse(b'[{"location": "*", "tdm-reservation": 0}, {"location": "/x", "tdm-reservation": 1}]')
    assert rep.declaration("/x").reservation is False
    # a generic wildcard before a bucket's own rule still comes first
    rep = TdmRep.parse(b'[{"location": "/*.pdf", "tdm-reservation": 1}, {"location": "/docs/", "tdm-reservation": 0}]')
    assert rep.declaration("/docs/a.pdf").reservation is True
    assert rep.declaration("/docs/a.html").reservation is False


def test_matching_is_rfc9309s() -> None:
    rep = TdmRep.parse(
        json.dumps(
            [
                {"location": "/caf\u00e9/", "tdm-reservation": 1},
                {"location": "/%7Euser/", "tdm-reservation": 1},
                {"location": "/search?q=", "tdm-reservation": 1},
                {"location": "/Case/", "tdm-reservation": 1},
            ]
        ).encode()
    )
    assert rep.declaration("/caf%C3%A9/menu").reservation is True
    assert rep.declaration("/caf%c3%a9/menu").reservation is True
    assert rep.declaration("https://provider.com/caf\u00e9/menu").reservation is True
    assert rep.declaration("/~user/page").reservation is True
    assert rep.declaration("/search?q=tdm").reservation is True
    assert rep.declaration("/search").reservation is None
    assert rep.declaration("/case/").reservation is None  # "SHOULD be case sensitive"
    assert rep.declaration("/Case/x#fragment").reservation is True


def test_malformed_files_state_nothing() -> None:
    for body, code in [
        (b"", "tdmrep_not_json"),
        (b"<html>not found</html>", "tdmrep_not_json"),
        (
            b'{"location": "/", "tdm-reservation": 1}',
            "tdmrep_not_array",
        ),  # the brackets are mandatory (#sec-tdm-file-example)
        (b'[{"location": "/", "tdm-reservation": 1},]', "tdmrep_not_json"),
        (b"[" * 15_000 + b"]" * 15_000, "tdmrep_not_json"),  # deeper than the recursion limit
        (b"[" + b"9" * 5_000 + b"]", "tdmrep_not_json"),
        (b"null", "tdmrep_not_array"),
        (b" " * (MAX_FILE_BYTES + 1), "tdmrep_too_large"),
    ]:
        rep = TdmRep.parse(body)
        assert not rep and rep.declaration("/") == UNSET, body[:40]
        assert [c for _, c in codes(rep)] == [code], body[:40]
    assert TdmRep.parse(None).rules == () and TdmRep.parse(None).diagnostics == ()
    assert EMPTY.usage("/anything") == UNKNOWN


def test_encodings() -> None:
    rule = '[{"location": "/caf\u00e9/", "tdm-reservation": 1}]'
    assert TdmRep.parse(b"\xef\xbb\xbf" + rule.encode()).declaration("/caf%C3%A9/").reservation is True
    assert TdmRep.parse(rule).declaration("/caf%C3%A9/").reservation is True
    assert TdmRep.parse("\ufeff" + rule).declaration("/caf%C3%A9/").reservation is True
    latin = TdmRep.parse(rule.encode("latin-1") + b'[{"location": "/x", "tdm-reservation": 1}]'[0:0])
    assert [c for _, c in codes(latin)] == ["tdmrep_not_utf8"]
    assert latin.declaration("/caf\ufffd/").reservation is True  # read, with the byte replaced
    assert latin.declaration("/caf%C3%A9/").reservation is None


def test_malformed_rules() -> None:
    rep = TdmRep.parse(
        json.dumps(
            [
                "not an object",
                {"tdm-reservation": 1},
                {"location": "", "tdm-reservation": 1},
                {"location": "https://provider.com/a/", "tdm-reservation": 1},
                {"location": 7, "tdm-reservation": 1},
                {"location": "/s/", "tdm-reservation": "1"},
                {"location": "/t/", "tdm-reservation": True},
                {"location": "/u/", "tdm-reservation": 2},
                {"location": "/v/", "tdm-reservation": 1, "tdm-policy": ["x"]},
                {"location": "/w/", "tdm_reservation": 1},
                {"location": "/", "tdm-reservation": 1.0},
            ]
        )
    )
    assert codes(rep) == [
        (1, "tdmrep_rule_invalid"),
        (2, "tdmrep_location_invalid"),
        (3, "tdmrep_location_invalid"),
        (4, "tdmrep_location_invalid"),
        (5, "tdmrep_location_invalid"),
        (6, "tdmrep_reservation_invalid"),
        (7, "tdmrep_reservation_invalid"),
        (8, "tdmrep_reservation_invalid"),
        (9, "tdmrep_policy_invalid"),
        (10, "tdmrep_unknown_key"),
        (10, "tdmrep_reservation_invalid"),
    ]
    # #sec-tdm-reservation: another value is a protocol error: the reservation is unset; the
    # rule is still the first match for its paths (#sec-tdm-file), so it hides "/"
    for path in ("/s/x", "/t/x", "/u/x", "/w/x"):
        assert rep.declaration(path) == Declaration(None, None, None, None), path
        assert rep.usage(path) == UNKNOWN
    assert rep.declaration("/v/x").reservation is True and rep.declaration("/v/x").policy is None
    assert rep.declaration("/a/").reservation is True  # the absolute-URL rule was dropped: "/" matches
    assert [r.number for r in rep.rules] == [6, 7, 8, 9, 10, 11]


def test_rule_bound() -> None:
    rules = [{"location": f"/r{i}/", "tdm-reservation": 1} for i in range(MAX_RULES + 5)]
    rep = TdmRep.parse(json.dumps(rules))
    assert len(rep.rules) == MAX_RULES
    assert [c for _, c in codes(rep)] == ["tdmrep_too_many_rules"]
    assert rep.declaration(f"/r{MAX_RULES - 1}/").reservation is True
    assert rep.declaration(f"/r{MAX_RULES}/").reservation is None


# -- headers and meta tags ----------------------------------------------------------------------


def test_header_examples() -> None:
    # #sec-tdm-header, first example: "tdm-reservation: 1"
    d, problems = from_headers([b"1"])
    assert d == Declaration(True, None, Source("header", 0, "tdm-reservation: 1"), None) and problems == ()
    assert d.usage() == {"train-ai": False, "search": None, "ai-input": None}
    # #sec-tdm-header, second example: with a policy
    d, problems = from_headers([b"1"], [POLICY.encode()])
    assert (d.reservation, d.policy) == (True, POLICY) and problems == ()
    assert d.usage().sources["train-ai"] == (
        Source("header", 0, "tdm-reservation: 1"),
        Source("header", 0, f"tdm-policy: {POLICY}"),
    )
    assert str(d.usage().sources["train-ai"][1]) == f"header: tdm-policy: {POLICY}"


def test_header_values() -> None:
    assert from_headers(" 0 ")[0].reservation is False
    assert from_headers("0")[0].usage()["train-ai"] is True
    assert from_headers(None) == (UNSET, ())
    assert from_headers([]) == (UNSET, ())
    for bad in ("2", "yes", "true", "01", "1;x", "", "1, 0"):
        d, problems = from_headers(bad)
        assert d.reservation is None, bad
        assert [p.code for p in problems] == ([] if bad == "" else ["tdmrep_reservation_invalid"]), bad
    # several lines: the same value counts once; values that disagree are unset
    assert from_headers([b"1", b" 1"])[0].reservation is True
    d, problems = from_headers([b"1", b"0"])
    assert d.reservation is None and [p.code for p in problems] == ["tdmrep_conflict"]
    # a policy alone states no reservation; with "0" it is not in effect
    d, _ = from_headers(None, POLICY)
    assert (d.reservation, d.policy) == (None, POLICY) and d.usage() == UNKNOWN
    d, _ = from_headers("0", POLICY)
    assert d.policy_in_effect is None
    assert d.usage().sources["train-ai"] == (Source("header", 0, "tdm-reservation: 0"),)


def test_meta_example() -> None:
    # #sec-tdm-html-meta: the report's HTML example, read by the head reader
    head = read_head(
        b'<!DOCTYPE html>\n<html lang="en">\n  <head>\n    <meta charset="utf-8">\n'
        b'    <meta name="tdm-reservation" content="1">\n'
        b'    <meta name="tdm-policy" content="https://provider.com/policies/policy.json">\n'
        b"    <title>Document title</title>\n  </head>\n  <body>\n  </body>\n</html>\n"
    )
    d, problems = from_metas(head.metas)
    assert problems == ()
    assert d == Declaration(
        True,
        POLICY,
        Source("html", 5, '<meta name="tdm-reservation" content="1">'),
        Source("html", 6, f'<meta name="tdm-policy" content="{POLICY}">'),
    )


def test_meta_values() -> None:
    def tag(name: str, content: str, line: int = 1) -> MetaTag:
        return MetaTag(name, content, line, f'<meta name="{name}" content="{content}">')

    assert from_metas([tag("tdm-reservation", "\n0 ")])[0].reservation is False
    d, problems = from_metas([tag("tdm-reservation", "1", 3), tag("tdm-reservation", "0", 4)])
    assert d == UNSET and [(p.line, p.code) for p in problems] == [(3, "tdmrep_conflict")]
    d, problems = from_metas([tag("tdm-reservation", "reserved", 7)])
    assert d == UNSET and [(p.line, p.code) for p in problems] == [(7, "tdmrep_reservation_invalid")]
    assert from_metas([tag("robots", "1"), tag("tdm:reservation", "1")]) == (UNSET, ())


# -- processing priority (#sec-processing-priority) ------------------------------------------


def test_priority_header_supersedes_file_and_meta_supersedes_both() -> None:
    rep = TdmRep.parse(EXAMPLE_GROUPS)
    url = SITE + "/directory-b/html/page.html"
    # the file reserves, the header lifts it: the header wins
    d, _ = declare(rep, url, reservation=b"0")
    assert d.reservation is False and d.usage()["train-ai"] is True
    assert d.reservation_source == Source("header", 0, "tdm-reservation: 0")
    # the meta tag reserves again: it wins over both
    meta = [MetaTag("tdm-reservation", "1", 9, '<meta name="tdm-reservation" content="1">')]
    d, _ = declare(rep, url, reservation=b"0", metas=meta)
    assert d.reservation is True and d.reservation_source == Source("html", 9, meta[0].text)
    # "the absence of tdm-reservation and tdm-policy MUST not reset current values":
    # the file's policy stays with the meta tag's reservation
    assert d.policy == POLICY and d.policy_source is not None and d.policy_source.origin == "tdmrep.json"
    assert d.usage().sources["train-ai"] == (d.reservation_source, d.policy_source)


def test_priority_absent_and_invalid_reset_nothing() -> None:
    rep = TdmRep.parse(EXAMPLE_ALL)
    file_only = rep.declaration("/x")
    assert declare(rep, "/x")[0] == file_only
    d, problems = declare(rep, "/x", reservation=b"2", policy=POLICY)
    assert d.reservation is True and d.reservation_source == file_only.reservation_source
    assert d.policy == POLICY and [p.code for p in problems] == ["tdmrep_reservation_invalid"]
    assert resolve() == UNSET
    assert resolve(UNSET, file_only, UNSET) == file_only
    assert declare(None, "/x", reservation="1")[0].reservation is True
    assert declare(EMPTY, "/x")[0] == UNSET


def test_combines_with_other_sources_most_restrictive() -> None:
    # TDMRep's own places supersede each other; its result and another
    # vocabulary's statement combine as every statement does: disallowed wins
    robots = parse("User-agent: *\nAllow: /\nContent-Usage: train-ai=n\n")
    from_robots = robots.usage(SITE + "/page", "ExampleBot")
    tdm = from_headers("0")[0].usage()
    both = combine([from_robots, tdm])
    assert both["train-ai"] is False
    assert both.sources["train-ai"] == (Source("robots.txt", 3, "Content-Usage: train-ai=n"),)


# -- against a reference, and hostile files -------------------------------------------------------

PIECES = ["/", "a", "b", "ab", "/a", "/b", "x", ".", "-", "?", "=", ".pdf", "/a/", "/b/"]


def _reference(rules: list[tuple[str, int]], path: str) -> int | None:
    """The 1-based number of the first rule whose pattern matches ``path``
    (plain ASCII: nothing to normalise), with a regex built here from the
    pattern (test inputs only)."""
    for number, (location, _) in enumerate(rules, 1):
        anchored = location.endswith("$")
        body = location[:-1] if anchored else location
        regex = ".*".join(re.escape(p) for p in body.split("*")) + ("$" if anchored else "")
        if re.match(regex, path, re.DOTALL):
            return number
    return None


location = st.lists(st.one_of(st.sampled_from(PIECES), st.just("*"), st.just("$")), min_size=1, max_size=5).map(
    lambda parts: ("/" if parts[0] not in ("/", "*", "/a", "/b", "/a/", "/b/") else "") + "".join(parts)
)
path = st.lists(st.sampled_from(PIECES), max_size=6).map(lambda parts: "/" + "".join(parts))


@SETTINGS
@given(st.lists(st.tuples(location, st.sampled_from([0, 1])), max_size=12), st.lists(path, min_size=1, max_size=8))
def test_first_match_agrees_with_reference(rules, paths) -> None:
    rep = TdmRep.parse(json.dumps([{"location": loc, "tdm-reservation": r} for loc, r in rules]))
    assert codes(rep) == []
    for p in paths:
        expected = _reference(rules, p)
        got = rep.declaration(SITE + p)  # (a path alone that starts "//" would be read as a host)
        if expected is None:
            assert got == UNSET, p
        else:
            assert got.reservation is (rules[expected - 1][1] == 1), p
            assert got.reservation_source is not None and got.reservation_source.line == expected, p


json_value = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(-2, 3), st.floats(allow_nan=True), st.text(max_size=12),
              st.sampled_from(["/", "*", "/a*b$", "https://x/"])),
    lambda children: st.one_of(
        st.lists(children, max_size=4),
        st.dictionaries(st.sampled_from(["location", "tdm-reservation", "tdm-policy", "x"]), children, max_size=4),
    ),
    max_leaves=20,
)  # fmt: skip


@SETTINGS
@given(
    st.one_of(st.binary(max_size=300), json_value.map(lambda v: json.dumps(v).encode())),
    st.lists(st.one_of(path, st.text(max_size=30)), max_size=4),
)
def test_never_raises(body: bytes, paths) -> None:
    rep = TdmRep.parse(body)
    for p in paths + ["https://provider.com" + p for p in paths]:
        assert rep.usage(p) == rep.declaration(p).usage()
        d = rep.declaration(p)
        assert d.reservation in (True, False, None)
        u = d.usage()
        assert u["search"] is None and u["ai-input"] is None


@SETTINGS
@given(
    st.one_of(st.none(), st.binary(max_size=40), st.text(max_size=40), st.lists(st.binary(max_size=20), max_size=4)),
    st.one_of(st.none(), st.binary(max_size=40), st.lists(st.text(max_size=20), max_size=3)),
    st.lists(
        st.builds(
            MetaTag,
            st.sampled_from(["tdm-reservation", "tdm-policy"]),
            st.text(max_size=20),
            st.integers(0, 5),
            st.text(max_size=10),
        ),
        max_size=4,
    ),  # fmt: skip
)
def test_headers_and_metas_never_raise(reservation, policy, metas) -> None:
    d, problems = declare(EMPTY, "/", reservation, policy, metas)
    assert d.reservation in (True, False, None)
    assert all(p.code in tdmrep.CODES for p in problems)


def timed(fn, *args):
    enabled = gc.isenabled()
    gc.disable()
    try:
        start = time.process_time()
        value = fn(*args)
        return value, time.process_time() - start
    finally:
        if enabled:
            gc.enable()


def test_hostile_file_bounded() -> None:
    # the worst file read: as many wildcard rules as are kept, all in one bucket,
    # long paths that each must search (measured: about 0.2 ms a check on a loaded
    # machine), then plain rules until the rules' byte budget is spent (one step);
    # bound generously in process time
    rules = [{"location": f"/a*{i:04d}*z", "tdm-reservation": 1} for i in range(MAX_WILDCARD_RULES)]
    rules += [{"location": f"/a{i}/" + ("$" if i % 2 else ""), "tdm-reservation": 1} for i in range(MAX_RULES)]
    rep, took = timed(TdmRep.parse, json.dumps(rules).encode())
    assert len(rep) > MAX_WILDCARD_RULES + 1 and took < 1.0
    assert [c for _, c in codes(rep)] == ["tdmrep_too_many_rules"]
    path = "/a" + "b" * 2_000
    assert rep.declaration(path) == UNSET
    _, took = timed(lambda: [rep.declaration(path) for _ in range(100)])
    assert took / 100 < 0.02
    assert rep.declaration("/a0/x").reservation is True and rep.declaration("/a1/").reservation is True


def test_wildcard_rule_bound() -> None:
    # past MAX_WILDCARD_RULES rules with "*", reading stops: no later rule answers for a path
    rules = [{"location": f"/w{i}/*.pdf", "tdm-reservation": 1} for i in range(MAX_WILDCARD_RULES + 1)]
    rules += [{"location": "/", "tdm-reservation": 0}]
    rep = TdmRep.parse(json.dumps(rules))
    assert len(rep.rules) == MAX_WILDCARD_RULES
    assert codes(rep) == [(MAX_WILDCARD_RULES + 1, "tdmrep_too_many_rules")]
    assert rep.declaration(f"/w{MAX_WILDCARD_RULES}/a.pdf") == UNSET
    assert rep.declaration("/other") == UNSET


def test_exact_and_prefix_runs_keep_file_order() -> None:
    rep = TdmRep.parse(
        json.dumps(
            [
                {"location": "/a/b$", "tdm-reservation": 0},
                {"location": "/a/", "tdm-reservation": 1},
                {"location": "/a/c$", "tdm-reservation": 0},
                {"location": "/a/b$", "tdm-reservation": 1},
            ]
        )
    )
    assert rep.declaration("/a/b").reservation is False  # the exact rule comes first
    assert rep.declaration("/a/c").reservation is True  # the prefix rule comes first
    assert rep.declaration("/a/bx").reservation is True
    assert rep.declaration("/b").reservation is None


# -- a later policy supersedes (issue 36, item 13) ------------------------------------------------


def test_a_later_policy_supersedes_the_one_before() -> None:
    # #sec-processing-priority: the header's tdm-policy replaces the file's, the meta tag's
    # replaces both; the reservation, stated only by the file, stays the file's
    rep = TdmRep.parse(EXAMPLE_GROUPS)
    url = SITE + "/directory-b/html/page.html"
    other = "https://provider.com/policies/header.json"
    d, problems = declare(rep, url, policy=other.encode())
    assert problems == () and d.policy == other
    assert d.policy_source == Source("header", 0, f"tdm-policy: {other}")
    assert d.reservation is True and d.reservation_source is not None
    assert d.reservation_source.origin == "tdmrep.json"
    assert d.usage().sources["train-ai"] == (d.reservation_source, d.policy_source)
    tagged = "https://provider.com/policies/meta.json"
    meta = [MetaTag("tdm-policy", tagged, 4, f'<meta name="tdm-policy" content="{tagged}">')]
    d, _ = declare(rep, url, policy=other.encode(), metas=meta)
    assert d.policy == tagged and d.policy_source == Source("html", 4, meta[0].text)


# -- bounded whatever the file says (issue 37, item 2) --------------------------------------------


def deep_size(root: object) -> int:
    """Bytes of every object reachable from ``root`` (``sys.getsizeof`` each, once),
    classes, modules and functions aside: what the object keeps alive."""
    import sys
    import types

    skip = (type, types.ModuleType, types.FunctionType, types.BuiltinFunctionType)
    seen: set[int] = set()
    stack = [root]
    total = 0
    while stack:
        obj = stack.pop()
        if id(obj) in seen or obj is None or isinstance(obj, (bool, *skip)):
            continue
        seen.add(id(obj))
        total += sys.getsizeof(obj)
        if isinstance(obj, TdmRep):  # (its __slots__: gc.get_referents sees them too, but say it)
            stack.extend(getattr(obj, name) for name in TdmRep.__slots__)
        else:
            stack.extend(gc.get_referents(obj))
    return total


def _filled(make) -> bytes:
    """A JSON array of ``make(i)`` rules, as many as fit in :data:`MAX_FILE_BYTES`."""
    parts: list[str] = []
    size = 2
    while True:
        part = json.dumps(make(len(parts)))
        if size + len(part) + 1 > MAX_FILE_BYTES:
            return ("[" + ",".join(parts) + "]").encode()
        parts.append(part)
        size += len(part) + 1


def _unknown_keys(count: int) -> bytes:
    return ('[{"location":"/","tdm-reservation":1,' + ",".join(f'"k{i:05d}":1' for i in range(count)) + "}]").encode()


def _nested(depth: int) -> object:
    return json.loads("[" * depth + "]" * depth)


EURO = "\u20ac"
HOSTILE = {
    # the 47,550 unknown keys in 512 KB, as many as the size limit lets in
    "one rule, unknown keys": lambda: _unknown_keys(2_900),
    "unknown keys in every rule": lambda: _filled(
        lambda i: {"location": f"/p{i}/", "tdm-reservation": 1, EURO * 70 + str(i): [[1]]}
    ),
    "many short rules": lambda: _filled(lambda i: {"location": f"/{i}", "tdm-reservation": 1}),
    "a policy each": lambda: _filled(
        lambda i: {"location": f"/p{i}/", "tdm-reservation": 1, "tdm-policy": f"https://p.example/{i}"}
    ),
    "long locations": lambda: _filled(lambda i: {"location": f"/{i}" + "a" * 1_500, "tdm-reservation": 1}),
    "long policies": lambda: _filled(
        lambda i: {"location": f"/{i}", "tdm-reservation": 1, "tdm-policy": f"https://x/{i}" + "p" * 3_000}
    ),
    "non-ASCII locations": lambda: _filled(lambda i: {"location": f"/{i}" + EURO * 600, "tdm-reservation": 1}),
    "astral locations": lambda: _filled(lambda i: {"location": f"/{i}" + "\U0001f600" * 300, "tdm-reservation": 1}),
    "percent-encoded": lambda: _filled(lambda i: {"location": f"/{i}" + "%e2%82%ac" * 100, "tdm-reservation": 1}),
    "wildcards of many pieces": lambda: _filled(
        lambda i: {"location": f"/{i}" + "*a" * 30 + "$", "tdm-reservation": 1}
    ),
    "generic wildcards": lambda: _filled(lambda i: {"location": f"*{i}*.pdf", "tdm-reservation": 0}),
    "deep nesting": lambda: _filled(lambda i: {"location": f"/{i}", "tdm-reservation": _nested(400), "x": 1}),
    "not rules": lambda: _filled(lambda i: [i, {"location": i}]),
    "exact paths, policies, unknown keys": lambda: _filled(
        lambda i: {
            "location": f"/{i}" + "a" * 40 + "$",
            "tdm-reservation": 1,
            "tdm-policy": f"https://p/{i}",
            EURO * 70: 1,
        }
    ),  # fmt: skip
    "wildcards, unknown keys": lambda: _filled(
        lambda i: {"location": f"*{i}" + "a" * 10 + "*b*c$", "tdm-reservation": 1, "\U0001f600" * 70: 1}
    ),
}


@pytest.mark.parametrize("name", list(HOSTILE))
def test_what_a_file_keeps_is_small_whatever_it_says(name: str) -> None:
    body = HOSTILE[name]()
    assert len(body) <= MAX_FILE_BYTES
    rep = TdmRep.parse(body)
    for c in range(33, 127):  # paths of every bucket, matched
        rep.usage(f"/{chr(c)}x")
        rep.declaration(f"/{chr(c)}1a")
    assert deep_size(rep) <= 20_000, (name, len(rep), len(rep.diagnostics))


def test_diagnostics_are_capped_and_counted() -> None:
    rep = TdmRep.parse(_unknown_keys(2_900))
    assert codes(rep) == [(1, "tdmrep_unknown_key")] * MAX_DIAGNOSTICS + [(0, "tdmrep_more_problems")]
    assert rep.omitted == 2_900 - MAX_DIAGNOSTICS
    assert rep.diagnostics[0].message.endswith(': "k00000"')
    assert rep.diagnostics[-1].message.endswith(f": {2_900 - MAX_DIAGNOSTICS:,} more")
    assert rep.declaration("/x").reservation is True  # the rule itself is read
    # the cap is per file: problems of later rules are counted too
    many = TdmRep.parse(json.dumps(["x"] * 30 + [{"location": "/", "tdm-reservation": 1}]))
    assert len(many.diagnostics) == MAX_DIAGNOSTICS + 1 and many.omitted == 10 and len(many) == 1


class _Counting(dict):
    """A rule that counts the keys a reader looks at."""

    looked = 0

    def __iter__(self):
        for key in super().__iter__():
            self.looked += 1
            yield key


def test_a_rule_costs_the_same_whatever_its_keys() -> None:
    # unknown keys are counted, and looked at only as far as diagnostics are kept
    item = _Counting({"location": "/", "tdm-reservation": 1, **{f"k{i}": 1 for i in range(10_000)}})
    problems = tdmrep._Problems()
    assert tdmrep._rule(1, item, problems) == ("/", 1, None)
    assert item.looked <= MAX_DIAGNOSTICS + 3
    assert problems.omitted == 10_000 - MAX_DIAGNOSTICS
    again = _Counting(item)
    assert tdmrep._rule(2, again, problems) == ("/", 1, None)
    assert again.looked == 0 and problems.omitted == 20_000 - MAX_DIAGNOSTICS


def test_parsing_runs_in_steps_and_reads_what_parse_reads() -> None:
    from scrapy_rfc9309.robots import steps

    body = json.dumps([{"location": f"/r{i}/", "tdm-reservation": i % 2} for i in range(MAX_RULES + 3)]).encode()
    reading = TdmRep.parsing(body)
    taken = 0
    while (rep := steps.run(reading, 0.0)) is steps.PAUSED:  # one step a call
        taken += 1
    assert isinstance(rep, TdmRep)
    # decoding, json.loads, then STEP_RULES rules a step, then the rules compiled
    assert taken >= 2 + MAX_RULES // STEP_RULES
    whole = TdmRep.parse(body)
    assert rep.rules == whole.rules and rep.diagnostics == whole.diagnostics and len(rep) == MAX_RULES
    assert rep.declaration("/r1/x").reservation is True and rep.declaration("/r2/x").reservation is False
    assert steps.finish(TdmRep.parsing(None)).rules == ()
