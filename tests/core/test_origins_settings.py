"""Origin keys and the settings object (no crawl)."""

from __future__ import annotations

import pytest

from scrapy_rfc9309.origins import origin_of, robots_url
from scrapy_rfc9309.settings import OriginPolicy, Rfc9309Settings


@pytest.mark.parametrize(
    ("url", "origin"),
    [
        ("http://Example.COM/a?b#c", "http://example.com:80"),
        ("HTTPS://example.com/", "https://example.com:443"),
        ("http://example.com:8080", "http://example.com:8080"),
        ("http://example.com:80/x", "http://example.com:80"),
        ("http://example.com:/x", "http://example.com:80"),
        ("http://example.com:0080/x", "http://example.com:80"),
        ("http://example.com:99999/x", None),
        ("http://:80/x", None),
        ("http://User@Example.com:8080/", "http://example.com:8080"),
        ("https://user:secret@example.com/x", "https://example.com:443"),
        ("http://bücher.example/", "http://xn--bcher-kva.example:80"),
        ("http://[::1]:8000/x", "http://[::1]:8000"),
        ("http://127.0.0.2:8001/a", "http://127.0.0.2:8001"),
        ("data:text/plain,hi", None),
        ("file:///etc/passwd", None),
        ("ftp://example.com/x", None),
        ("http://example.com:bad/", None),
        ("/relative", None),
    ],
)
def test_origin_of(url, origin):
    assert origin_of(url) == origin


def test_http_and_https_of_one_host_are_two_origins():
    assert origin_of("http://example.com/") != origin_of("https://example.com/")


def test_robots_url_leaves_out_the_default_port():
    assert robots_url("http://example.com:80") == "http://example.com/robots.txt"
    assert robots_url("https://example.com:443") == "https://example.com/robots.txt"
    assert robots_url("http://example.com:443") == "http://example.com:443/robots.txt"
    assert robots_url("http://[::1]:80") == "http://[::1]/robots.txt"


def test_defaults():
    s = Rfc9309Settings.from_settings({})
    assert (s.enabled, s.max_bytes, s.max_redirects, s.unreachable) == (True, 512_000, 5, "deny")
    assert (s.cache_seconds, s.cache_max_origins, s.fetch_timeout) == (86_400, 10_000, 30.0)
    assert (s.crawl_delay, s.max_crawl_delay, s.early_fetch) == (True, 60.0, False)


def test_fetch_concurrency_follows_concurrent_requests_by_default():
    assert Rfc9309Settings.from_settings({}).fetch_concurrency == 64
    assert Rfc9309Settings.from_settings({"CONCURRENT_REQUESTS": 100}).fetch_concurrency == 400
    assert Rfc9309Settings.from_settings({"RFC9309_FETCH_CONCURRENCY": "8"}).fetch_concurrency == 8
    assert Rfc9309Settings.from_settings({"RFC9309_FETCH_CONCURRENCY": 8.0}).fetch_concurrency == 8


def test_token_from_user_agent_settings():
    assert Rfc9309Settings.from_settings({"USER_AGENT": "ExampleBot/1.0"}).user_agent == "ExampleBot"
    s = Rfc9309Settings.from_settings({"USER_AGENT": "ExampleBot/1.0", "ROBOTSTXT_USER_AGENT": "OtherBot"})
    assert (s.user_agent, s.user_agent_source) == ("OtherBot", "ROBOTSTXT_USER_AGENT")
    with pytest.raises(ValueError):
        Rfc9309Settings.from_settings({"USER_AGENT": "Bot2000/1.0"})


def test_cache_seconds_are_capped_at_a_day():
    assert Rfc9309Settings.from_settings({"RFC9309_CACHE_SECONDS": 7 * 86_400}).cache_seconds == 86_400
    assert Rfc9309Settings.from_settings({"RFC9309_CACHE_SECONDS": "600"}).cache_seconds == 600


@pytest.mark.parametrize(
    "bad",
    [
        {"RFC9309_MAX_BYTES": 1000},
        {"RFC9309_UNREACHABLE": "sometimes"},
        {"RFC9309_FETCH_TIMEOUT": 0},
        {"RFC9309_FETCH_CONCURRENCY": 0},
        {"RFC9309_FETCH_CONCURRENCY": 2.5},
        {"RFC9309_FETCH_CONCURRENCY": "many"},
        {"RFC9309_FETCH_CONCURRENCY": True},
        {"RFC9309_CACHE_MAX_ORIGINS": 0},
        {"RFC9309_CRAWL_DELAY": 0},
        {"RFC9309_CRAWL_DELAY": "soon"},
        {"RFC9309_UNREACHABLE": "wait:0"},
        {"RFC9309_UNREACHABLE": "deny:5"},
        {"RFC9309_INTERNAL_NETWORKS": ["10.0.0.0/33"]},
        {"RFC9309_ENABLED": "perhaps"},
        {"RFC9309_ORIGINS": {"example.com": {"obey": False}}},
        {"RFC9309_ORIGINS": {"https://example.com": {"obey": False, "delay": 3}}},
        {"RFC9309_ORIGINS": {"https://example.com": {"unreachable": "never"}}},
        {"RFC9309_ORIGINS": {"https://example.com": {"user_agent": "B0t/1"}}},
        {"RFC9309_ORIGINS": ["https://example.com"]},
    ],
)
def test_bad_settings_stop_the_crawl(bad):
    with pytest.raises(ValueError):
        Rfc9309Settings.from_settings({"USER_AGENT": "ExampleBot", **bad})


def test_origin_overrides_resolve_to_canonical_keys():
    s = Rfc9309Settings.from_settings(
        {
            "USER_AGENT": "ExampleBot",
            "RFC9309_UNREACHABLE": "wait",
            "RFC9309_ORIGINS": {
                "https://Intranet.Example/": {"obey": False},
                "http://partner.example:8080": {"user_agent": "PartnerBot/2", "unreachable": "allow"},
            },
        }
    )
    # from USER_AGENT: a request's own User-Agent header comes first (Scrapy's order), not
    # where a per-origin user_agent names the token
    assert s.for_origin("https://intranet.example:443") == OriginPolicy(
        False, "ExampleBot", "wait", ("ExampleBot",), from_user_agent=True
    )
    assert s.for_origin("http://partner.example:8080") == OriginPolicy(True, "PartnerBot", "allow", ("PartnerBot",))
    assert s.for_origin("http://other.example:80") == OriginPolicy(
        True, "ExampleBot", "wait", ("ExampleBot",), from_user_agent=True
    )


def test_origins_from_the_command_line_as_json():
    s = Rfc9309Settings.from_settings({"RFC9309_ORIGINS": '{"http://a.example": {"obey": false}}'})
    assert s.for_origin("http://a.example:80").obey is False


@pytest.mark.parametrize(
    "url",
    ["http://Example.COM/a", "https://user:pw@example.com:8443/x", "http://[::1]:8000/", "http://bücher.example/"],
)
def test_request_origin_matches_url_origin(url):
    """A request's origin is its URL's (the plugin asks ``origin_of(request.url)``): Scrapy's URL cleaning keeps it."""
    from scrapy import Request

    assert origin_of(Request(url).url) == origin_of(url)


@pytest.mark.parametrize(
    ("bad", "says"),
    [
        ({"RFC9309_FETCH_TIMEOUT": float("nan")}, "RFC9309_FETCH_TIMEOUT=nan is not a finite number"),
        ({"RFC9309_FETCH_TIMEOUT": "inf"}, "RFC9309_FETCH_TIMEOUT='inf' is not a finite number"),
        ({"RFC9309_CACHE_SECONDS": "nan"}, "RFC9309_CACHE_SECONDS='nan' is not a finite number"),
        ({"RFC9309_CRAWL_DELAY": float("nan")}, "RFC9309_CRAWL_DELAY=nan: use True (floors, capped at 60 s)"),
        ({"RFC9309_CRAWL_DELAY": "inf"}, "RFC9309_CRAWL_DELAY='inf': use True (floors, capped at 60 s)"),
        ({"RFC9309_UNREACHABLE": "wait:-inf"}, "RFC9309_UNREACHABLE='wait:-inf': the seconds of 'wait:<seconds>'"),
        ({"RFC9309_UNREACHABLE": "wait:nan"}, "RFC9309_UNREACHABLE='wait:nan': the seconds of 'wait:<seconds>'"),
        ({"RFC9309_MAX_BYTES": float("inf")}, "RFC9309_MAX_BYTES=inf is not a finite number"),
        ({"RFC9309_MAX_HELD": 2.7}, "RFC9309_MAX_HELD=2.7 is not a whole number"),
        ({"RFC9309_MAX_HELD": "2.7"}, "RFC9309_MAX_HELD='2.7' is not a whole number"),
        ({"RFC9309_CACHE_MAX_ORIGINS": 100.5}, "RFC9309_CACHE_MAX_ORIGINS=100.5 is not a whole number"),
        ({"RFC9309_ORIGINS": "not json"}, "RFC9309_ORIGINS is not valid JSON"),
    ],
)
def test_non_finite_and_fractional_numbers_and_bad_json_name_the_setting(bad, says):
    with pytest.raises(ValueError) as raised:
        Rfc9309Settings.from_settings({"USER_AGENT": "ExampleBot", **bad})
    assert str(raised.value).startswith(says), raised.value
    assert "\n" not in str(raised.value)


def test_whole_numbers_written_as_floats_or_strings_are_accepted():
    s = Rfc9309Settings.from_settings({"RFC9309_CACHE_MAX_ORIGINS": 3.0, "RFC9309_MAX_BYTES": "600000"})
    assert (s.cache_max_origins, s.max_bytes) == (3, 600_000)
    assert isinstance(s.cache_max_origins, int)


def test_usage_settings_are_read_once_and_validated():
    s = Rfc9309Settings.from_settings({})
    assert (s.usage, s.usage_header, s.usage_unknown_denies) == ((), "drop", False)
    assert (s.usage_report, s.nofollow) == (False, True)
    s = Rfc9309Settings.from_settings(
        {
            "RFC9309_USAGE": {
                "purposes": ["ai-train", "search", "train-ai"],
                "header": "Mark",
                "unknown": "deny",
                "report": True,
                "nofollow": False,
            },
            "RFC9309_ORIGINS": {"https://a.example": {"usage": []}, "https://b.example": {"obey": True}},
        }
    )
    assert (s.usage, s.usage_header, s.usage_unknown_denies) == (("train-ai", "search"), "mark", True)
    assert (s.usage_report, s.nofollow) == (True, False)
    assert s.for_origin("https://a.example:443").usage == ()
    assert s.for_origin("https://b.example:443").usage == ("train-ai", "search")
    assert s.for_origin("https://c.example:443").usage == ("train-ai", "search")
    # a list is the purposes alone, the rest at its defaults
    s = Rfc9309Settings.from_settings({"RFC9309_USAGE": ["train-ai"]})
    assert (s.usage, s.usage_header, s.usage_unknown_denies, s.usage_report, s.nofollow) == (
        ("train-ai",),
        "drop",
        False,
        False,
        True,
    )
    # a dict without purposes: report only
    s = Rfc9309Settings.from_settings({"RFC9309_USAGE": {"report": True}})
    assert (s.usage, s.usage_report, s.reads_pages) == ((), True, True)
    # from the command line: a JSON list, commas, or a JSON object
    assert Rfc9309Settings.from_settings({"RFC9309_USAGE": '["train-ai"]'}).usage == ("train-ai",)
    assert Rfc9309Settings.from_settings({"RFC9309_USAGE": "train-ai, ai-input"}).usage == ("train-ai", "ai-input")
    s = Rfc9309Settings.from_settings({"RFC9309_USAGE": '{"purposes": "train-ai", "unknown": "deny"}'})
    assert (s.usage, s.usage_unknown_denies) == (("train-ai",), True)
    for bad, says in (
        ({"RFC9309_USAGE": ["training"]}, "RFC9309_USAGE: 'training' is not a usage category"),
        ({"RFC9309_USAGE": 3}, "RFC9309_USAGE=3 must be a list of usage categories"),
        ({"RFC9309_USAGE": {"header": "keep"}}, "RFC9309_USAGE['header']='keep': choose one of drop, mark"),
        ({"RFC9309_USAGE": {"unknown": True}}, "RFC9309_USAGE['unknown']=True: choose one of allow, deny"),
        ({"RFC9309_USAGE": {"report": "often"}}, "RFC9309_USAGE['report']='often' is not a boolean"),
        ({"RFC9309_USAGE": {"nofollow": 2}}, "RFC9309_USAGE['nofollow']=2 is not a boolean"),
        ({"RFC9309_USAGE": {"purposes": ["x"]}}, "RFC9309_USAGE['purposes']: 'x' is not a usage category"),
        ({"RFC9309_USAGE": {"purpose": ["train-ai"]}}, "RFC9309_USAGE: unknown key(s) ['purpose']; known: purposes,"),
        ({"RFC9309_USAGE": '{"purposes": '}, "RFC9309_USAGE is not valid JSON"),
        ({"RFC9309_ORIGINS": {"https://a.example": {"usage": ["x"]}}}, "RFC9309_ORIGINS['https://a.example']['usage']"),
    ):
        with pytest.raises(ValueError) as raised:
            Rfc9309Settings.from_settings(bad)
        assert str(raised.value).startswith(says), raised.value
        assert "\n" not in str(raised.value)


def test_unreachable_takes_its_wait_as_a_form():
    s = Rfc9309Settings.from_settings({"USER_AGENT": "ExampleBot"})
    assert (s.unreachable, s.unreachable_wait) == ("deny", 300.0)
    s = Rfc9309Settings.from_settings({"RFC9309_UNREACHABLE": "wait"})
    assert (s.unreachable, s.unreachable_wait) == ("wait", 300.0)
    s = Rfc9309Settings.from_settings({"RFC9309_UNREACHABLE": " Wait:45.5 "})
    assert (s.unreachable, s.unreachable_wait) == ("wait", 45.5)
    assert s.for_origin("https://any.example:443").unreachable_wait == 45.5
    # per origin: its own mode and seconds, or the crawl's
    s = Rfc9309Settings.from_settings(
        {
            "RFC9309_UNREACHABLE": "wait:20",
            "RFC9309_ORIGINS": {
                "https://slow.example": {"unreachable": "wait:5"},
                "https://open.example": {"unreachable": "allow"},
                "https://plain.example": {"obey": True},
            },
        }
    )
    assert (
        s.for_origin("https://slow.example:443").unreachable,
        s.for_origin("https://slow.example:443").unreachable_wait,
    ) == ("wait", 5.0)
    assert s.for_origin("https://open.example:443").unreachable == "allow"
    plain = s.for_origin("https://plain.example:443")
    assert (plain.unreachable, plain.unreachable_wait) == ("wait", 20.0)
    for bad, says in (
        (
            {"RFC9309_UNREACHABLE": "sometimes"},
            "RFC9309_UNREACHABLE='sometimes': choose one of deny, wait, allow, or 'wait:<seconds>'",
        ),
        (
            {"RFC9309_UNREACHABLE": "wait:soon"},
            "RFC9309_UNREACHABLE='wait:soon': the seconds of 'wait:<seconds>' must be",
        ),
        ({"RFC9309_UNREACHABLE": "allow:3"}, "RFC9309_UNREACHABLE='allow:3': choose one of deny, wait, allow"),
        ({"RFC9309_UNREACHABLE": 300}, "RFC9309_UNREACHABLE=300: choose one of deny, wait, allow"),
        (
            {"RFC9309_ORIGINS": {"https://a.example": {"unreachable": "wait:0"}}},
            "RFC9309_ORIGINS['https://a.example']['unreachable']='wait:0': the seconds",
        ),
    ):
        with pytest.raises(ValueError) as raised:
            Rfc9309Settings.from_settings(bad)
        assert str(raised.value).startswith(says), raised.value


def test_crawl_delay_is_on_off_or_its_cap():
    assert _delay(True) == _delay(None) == _delay("true") == (True, 60.0)
    assert _delay(False)[0] is False and _delay("False")[0] is False
    assert _delay(30) == _delay("30") == (True, 30.0)
    assert _delay(0.5) == (True, 0.5)
    for bad in (0, -1, "0", "soon", [], float("inf")):
        with pytest.raises(ValueError) as raised:
            _delay(bad)
        assert str(raised.value).startswith(f"RFC9309_CRAWL_DELAY={bad!r}: use True (floors, capped at 60 s), False"), (
            raised.value
        )


def _delay(value):
    s = Rfc9309Settings.from_settings({"RFC9309_CRAWL_DELAY": value})
    return s.crawl_delay, s.max_crawl_delay


def test_internal_networks_empty_means_private_redirects_are_followed():
    default = Rfc9309Settings.from_settings({})
    assert (default.internal_networks, default.allow_private_redirects) == (None, False)
    assert Rfc9309Settings.from_settings({"RFC9309_INTERNAL_NETWORKS": ""}).internal_networks is None
    for none in ([], "[]"):
        s = Rfc9309Settings.from_settings({"RFC9309_INTERNAL_NETWORKS": none})
        assert (s.internal_networks, s.allow_private_redirects) == ((), True)
    s = Rfc9309Settings.from_settings({"RFC9309_INTERNAL_NETWORKS": ["10.0.0.0/8"]})
    assert (len(s.internal_networks), s.allow_private_redirects) == (1, False)


def test_constants_are_capped_by_the_cache_lifetime(monkeypatch):
    from scrapy_rfc9309 import settings as module

    s = Rfc9309Settings.from_settings({})
    assert (s.max_redirects, s.retry_unreachable_seconds, s.cache_min_seconds) == (5, 300.0, 60.0)
    assert (s.storage_retry_seconds, s.stale_if_unreachable) == (30.0, True)
    short = Rfc9309Settings.from_settings({"RFC9309_CACHE_SECONDS": 2})
    assert (short.cache_seconds, short.retry_unreachable_seconds, short.cache_min_seconds) == (2.0, 2.0, 2.0)
    middle = Rfc9309Settings.from_settings({"RFC9309_CACHE_SECONDS": 120})
    assert (middle.retry_unreachable_seconds, middle.cache_min_seconds) == (120.0, 60.0)
    # read when the settings are read: a test may change one
    monkeypatch.setattr(module, "MAX_REDIRECTS", 2)
    monkeypatch.setattr(module, "STORAGE_RETRY_SECONDS", 1.5)
    s = Rfc9309Settings.from_settings({})
    assert (s.max_redirects, s.storage_retry_seconds) == (2, 1.5)


def test_an_unknown_rfc9309_setting_is_refused():
    from scrapy.settings import Settings

    with pytest.raises(ValueError) as raised:
        Rfc9309Settings.from_settings(Settings({"RFC9309_CACHE_SECOND": 60}))
    message = str(raised.value)
    assert message.startswith("RFC9309_CACHE_SECOND is not a setting of scrapy-rfc9309"), message
    assert "RFC9309_CACHE_SECONDS" in message and "\n" not in message
    # unset (None) is no value; every known one passes
    Rfc9309Settings.from_settings(Settings({"RFC9309_CACHE_SECOND": None, "RFC9309_EARLY_FETCH": True}))


def test_every_setting_and_constant_is_in_the_docs_one_table_with_its_default():
    from pathlib import Path

    from scrapy_rfc9309 import settings as module

    text = (Path(__file__).resolve().parents[2] / "docs" / "middleware.md").read_text(encoding="utf-8")
    section = text.split("\n### Settings\n", 1)[1].split("\n**A bad setting stops the crawl", 1)[0]
    rows = {line.split(" | ")[0][3:-1]: line.split(" | ")[1] for line in section.splitlines() if line.startswith("| `")}
    assert [name for name in rows if name.startswith("RFC9309_")] == list(module.DEFAULTS)
    assert len(module.DEFAULTS) == 16
    for name, value in (
        ("RFC9309_ENABLED", True),
        ("RFC9309_UNREACHABLE", "deny"),
        ("RFC9309_CACHE_SECONDS", 86_400),
        ("RFC9309_CACHE_MAX_ORIGINS", 10_000),
        ("RFC9309_FETCH_TIMEOUT", 30),
        ("RFC9309_MAX_BYTES", 512_000),
        ("RFC9309_CRAWL_DELAY", True),
        ("RFC9309_EARLY_FETCH", False),
    ):
        assert module.DEFAULTS[name] == value and rows[name] == f"`{value!r}`".replace("'", '"'), (name, rows[name])
    for name in ("MAX_REDIRECTS", "RETRY_UNREACHABLE_SECONDS", "CACHE_MIN_SECONDS", "STORAGE_RETRY_SECONDS"):
        assert rows[name].startswith(f"`{getattr(module, name):g}`"), (name, rows[name])
    assert rows["STALE_IF_UNREACHABLE"] == f"`{module.STALE_IF_UNREACHABLE}`"
