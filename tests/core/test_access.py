"""The status-class table, the policies, and cache lifetimes (pure)."""

from __future__ import annotations

from email.utils import formatdate

import pytest

from scrapy_rfc9309 import RobotsTxt, Verdict, parse
from scrapy_rfc9309.robots.access import (
    Access,
    cache_seconds,
    classify_error,
    classify_status,
    freshness,
    policy_for,
)

NOW = 1_700_000_000.0


@pytest.mark.parametrize(
    ("status", "access", "name"),
    [
        (200, Access.SUCCESS, "2xx"),
        (204, Access.SUCCESS, "2xx"),
        (299, Access.SUCCESS, "2xx"),
        (301, Access.REDIRECT, "3xx"),
        (304, Access.REDIRECT, "3xx"),
        (308, Access.REDIRECT, "3xx"),
        (400, Access.UNAVAILABLE, "4xx"),
        (401, Access.UNAVAILABLE, "4xx"),
        (403, Access.UNAVAILABLE, "4xx"),
        (404, Access.UNAVAILABLE, "4xx"),
        (428, Access.UNAVAILABLE, "4xx"),
        (429, Access.UNREACHABLE, "429"),
        (430, Access.UNAVAILABLE, "4xx"),
        (499, Access.UNAVAILABLE, "4xx"),
        (500, Access.UNREACHABLE, "5xx"),
        (503, Access.UNREACHABLE, "5xx"),
        (599, Access.UNREACHABLE, "5xx"),
        (100, Access.UNREACHABLE, "other"),
        (600, Access.UNREACHABLE, "other"),
    ],
)
def test_status_table(status, access, name):
    assert classify_status(status) == (access, name)


def test_every_error_is_unreachable_and_named_by_class():
    class DNSLookupError(Exception):
        pass

    assert classify_error(DNSLookupError("no such host")) == (Access.UNREACHABLE, "error/DNSLookupError")
    assert classify_error(TimeoutError()) == (Access.UNREACHABLE, "error/TimeoutError")


def test_policies():
    parsed = parse("User-agent: *\nDisallow: /x\n")
    assert policy_for(Access.SUCCESS, parsed=parsed) is parsed
    assert policy_for(Access.UNAVAILABLE).check("/x", "Bot").verdict is Verdict.ALLOWED_UNAVAILABLE
    for mode in ("deny", "wait"):
        decision = policy_for(Access.UNREACHABLE, mode).check("/x", "Bot")
        assert (decision.allowed, decision.verdict) == (False, Verdict.UNKNOWN_UNREACHABLE)
    decision = policy_for(Access.UNREACHABLE, "allow").check("/x", "Bot")
    assert (decision.allowed, decision.verdict) == (True, Verdict.ALLOWED_UNREACHABLE_OPT_IN)
    # the 4xx policy never looks at a body: a 404 page saying "Disallow: /" allows all
    assert isinstance(policy_for(Access.UNAVAILABLE, parsed=parse("User-agent: *\nDisallow: /")), RobotsTxt)
    assert policy_for(Access.UNAVAILABLE, parsed=parse("User-agent: *\nDisallow: /")).can_fetch("/", "Bot")


def test_policy_errors():
    with pytest.raises(ValueError):
        policy_for(Access.REDIRECT)
    with pytest.raises(ValueError):
        policy_for(Access.SUCCESS)
    with pytest.raises(ValueError):
        policy_for(Access.UNREACHABLE, "maybe")


@pytest.mark.parametrize(
    ("cache_control", "expected"),
    [
        ("max-age=600", 600.0),
        ("public, max-age=600", 600.0),
        ('max-age="120"', 120.0),
        ("max-age=600, max-age=60", 60.0),
        ("MAX-AGE=30", 30.0),
        ("no-cache", 0.0),
        ("no-store, max-age=600", 0.0),
        ("max-age=oops", None),
        ("private", None),
        ("", None),
    ],
)
def test_freshness_from_cache_control(cache_control, expected):
    assert freshness(cache_control, now=NOW) == expected


def test_freshness_from_expires():
    expires = formatdate(NOW + 3600, usegmt=True)
    assert freshness(expires=expires, now=NOW) == pytest.approx(3600)
    # against the server's Date when given, not our clock
    date = formatdate(NOW - 100, usegmt=True)
    assert freshness(expires=expires, date=date, now=NOW) == pytest.approx(3700)
    # an invalid or past Expires means already stale
    assert freshness(expires="0", now=NOW) == 0.0
    assert freshness(expires=formatdate(NOW - 10, usegmt=True), now=NOW) == 0.0
    # max-age wins over Expires
    assert freshness("max-age=5", expires=expires, now=NOW) == 5.0


def test_freshness_minus_age():
    assert freshness("max-age=600", age="100", now=NOW) == 500.0
    assert freshness("max-age=60", age="100", now=NOW) == 0.0
    assert freshness("max-age=60", age="x", now=NOW) == 60.0
    assert freshness(age="100", now=NOW) is None


@pytest.mark.parametrize(
    ("access", "fresh_for", "expected"),
    [
        (Access.SUCCESS, None, 86_400),  # nothing said: the cap
        (Access.SUCCESS, 600.0, 600.0),  # shorter: the server's
        (Access.SUCCESS, 10 * 86_400.0, 86_400),  # longer: the cap (24 h at most)
        (Access.SUCCESS, 0.0, 60.0),  # no-cache: the floor
        (Access.UNAVAILABLE, 600.0, 600.0),
        (Access.UNREACHABLE, 600.0, 300.0),  # unreachable: its own retry delay
        (Access.UNREACHABLE, None, 300.0),
    ],
)
def test_cache_seconds(access, fresh_for, expected):
    assert cache_seconds(access, fresh_for, cap=86_400, floor=60.0, unreachable_retry=300.0) == expected


def test_cache_floor_never_exceeds_the_cap():
    assert cache_seconds(Access.SUCCESS, 0.0, cap=1.0, floor=60.0, unreachable_retry=5.0) == 1.0
