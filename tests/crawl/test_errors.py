"""Errors a user meets (issue 30, item 9), as a user meets them: real ``scrapy
robots`` and ``scrapy crawl`` processes.

Every bad input is one line that names it and says what to do: ``scrapy
robots`` exits with 2 (never 1, which means "denied"), a crawl refused for a
bad setting exits non-zero; no traceback, no "Task exception was never
retrieved", and for a crawl the line comes before Scrapy lists its components.
"""

from __future__ import annotations

import pytest

from .command_runner import scrapy_crawl, scrapy_robots
from .harness import MODE_ARGS

SECRET = "hunter2"


def one_line(stderr: str) -> str:
    """The command's only stderr line (asserting it is the only one)."""
    lines = stderr.splitlines()
    assert len(lines) == 1, stderr
    assert lines[0].startswith("scrapy robots: "), lines
    return lines[0]


# -- scrapy robots: URLs ------------------------------------------------------------------------
LONG_HOST = ".".join(["a" * 50] * 6)  # labels of 50: only the whole is too long
LONG_LABEL = "b" * 64 + ".example"


# (more shapes, without a process: tests/core/test_command_inputs.py)
@pytest.mark.parametrize(
    ("url", "says"),
    [
        ("http://[::1", "'http://[::1': the IPv6 address has no closing ']'"),
        ("http://exa mple.com/", "'http://exa mple.com/': a space at character 11"),
        ("http://%zz/x", "the host '%zz' holds '%'"),
        ("ftp://x/", "robots.txt governs http and https URLs only"),
        ("", "an empty URL"),
        ("http://example.com:65536/", "the port 65536 is out of range: a port is 1 to 65535"),
        ("http://example.com:http/", "the port 'http' is not a number"),
        ("http://example.com/a b", "a space at character 21: a URL has no spaces or control characters"),
        ("http://example.com/\x01", r"the character '\x01' at character 20"),
        ("http://example.com/\nx", r"'http://example.com/\nx': the character '\n'"),
        (f"http://{LONG_HOST}/", "is 305 characters long: a host name has at most 253"),
        (f"http://{LONG_LABEL}/", "has a label of 64 characters"),
        ("http://[nonsense]/", "[nonsense] is not an IPv6 address"),
        ("http:///x", "the URL has no host"),
        ("/page", "(to check a path, give --file PATH)"),
    ],
    ids=[
        "open-bracket", "space-in-host", "percent-host", "ftp", "empty", "port-past-65535", "port-not-a-number",
        "space-in-path", "control", "newline", "long-host", "long-label", "not-ipv6", "no-host", "path-online",
    ],
)  # fmt: skip
def test_a_malformed_url_is_one_line_and_exit_2(url, says, tmp_path):
    process = scrapy_robots(url, cwd=tmp_path)
    assert process.returncode == 2, process.stderr[-3000:]
    assert says in one_line(process.stderr)
    assert process.stdout == ""


def test_a_bad_url_is_refused_before_anything_is_fetched_whatever_its_place(tmp_path):
    # the good URL first: nothing is fetched (a fetch would take the refused port's error)
    process = scrapy_robots("http://127.0.0.1:9/ok", "http://[::1", cwd=tmp_path)
    assert process.returncode == 2 and "no closing ']'" in one_line(process.stderr)
    assert process.stdout == ""


def test_a_malformed_url_is_shown_masked_and_shortened(tmp_path):
    url = f"http://user:{SECRET}@exa mple.com/{'x' * 5000}?token={SECRET}"
    process = scrapy_robots(url, cwd=tmp_path)
    assert process.returncode == 2
    line = one_line(process.stderr)
    assert SECRET not in line and "user:***@" in line and "a space at character" in line
    assert len(line) < 1_100


@pytest.mark.parametrize(
    ("target", "says"),
    [
        ("page", "'page' is neither a path (starting with '/') nor an absolute http(s) URL"),
        ("/a b", "'/a b': a space at character 3"),
        ("ftp://x/", "robots.txt governs http and https URLs only"),
        ("http://[::1", "no closing ']'"),
    ],
    ids=["neither", "space", "ftp", "open-bracket"],
)
def test_a_bad_target_with_file_is_one_line_and_exit_2(target, says, tmp_path):
    robots = tmp_path / "robots.txt"
    robots.write_text("User-agent: *\nDisallow: /private\n")
    process = scrapy_robots(target, "--file", str(robots), cwd=tmp_path)
    assert process.returncode == 2, process.stderr
    assert says in one_line(process.stderr)


# -- scrapy robots: options -----------------------------------------------------------------------
@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["/x", "--file", "missing.txt"], "cannot read missing.txt: No such file or directory; give a robots.txt"),
        (["/x", "--file", "DIR"], "Is a directory"),
        (["--lint", "missing.txt"], "cannot read missing.txt"),
        (["/x", "--file", "ROBOTS", "--usage", "bogus"], "--usage: 'bogus' is not a usage category; known:"),
        (["http://127.0.0.1:9/", "--spider", "nobody"], "--spider 'nobody': no such spider"),
        (["/x", "--file", "ROBOTS", "--agent", "Bot 2/1.0"], "--agent: 'Bot 2/1.0' is ambiguous"),
        (["--audit", "missing.jsonl", "--summary"], "cannot read missing.jsonl"),
        (["--audit", "NOT_JSON", "http://[::1"], "no closing ']'"),
        (["--lint", "ROBOTS", "--agent", "ExampleBot"], "--lint PATH takes no URL, --file, --audit"),
        (["--lint", "ROBOTS", "/x"], "--lint PATH takes no URL"),
        (["--audit", "NOT_JSON", "--summary", "--usage", "search"], "--summary takes no --agent or --usage"),
        (["--audit", "NOT_JSON", "--file", "ROBOTS", "/x"], "--audit FILE takes no --file"),
        (["--audit", "NOT_JSON"], "--audit FILE takes URLs or --summary"),
        (["--summary"], "--summary goes with --audit FILE"),
        ([], "give at least one URL"),
        (["http://a.example/", "--bogus"], "unknown option '--bogus'"),
    ],
    ids=[
        "file-missing", "file-is-a-directory", "lint-missing", "usage-unknown", "spider-unknown", "agent-ambiguous",
        "audit-missing", "audit-bad-url",
        "lint-with-agent", "lint-with-url", "summary-with-usage", "audit-with-file", "audit-alone", "summary-alone",
        "nothing", "unknown-option",
    ],
)  # fmt: skip
def test_a_bad_option_is_one_line_and_exit_2(args, says, tmp_path):
    robots = tmp_path / "robots.txt"
    robots.write_text("User-agent: *\nDisallow: /private\n")
    (tmp_path / "a-dir").mkdir()
    (tmp_path / "not-json.jsonl").write_text("this is no audit trail\n")
    (tmp_path / "not-utf8.jsonl").write_bytes(b"\xff\xfe\x00garbage\n")
    (tmp_path / "no-url.jsonl").write_text('{"type": "denied", "origin": "http://a.example:80"}\n')
    files = {
        "ROBOTS": str(robots),
        "DIR": str(tmp_path / "a-dir"),
        "NOT_JSON": "not-json.jsonl",
        "NOT_UTF8": "not-utf8.jsonl",
        "NO_URL": "no-url.jsonl",
    }
    process = scrapy_robots(*[files.get(arg, arg) for arg in args], cwd=tmp_path)
    assert process.returncode == 2, process.stderr[-3000:]
    assert says in one_line(process.stderr)
    assert process.stdout == ""


@pytest.mark.parametrize(
    ("content", "args"),
    [
        (b"this is no audit trail\n", ["--summary"]),
        (b"\xff\xfe\x00garbage\n", ["--summary"]),
        (b'{"type": "denied", "origin": "http://a.example:80"}\n', ["http://a.example/"]),
    ],
    ids=["not-json", "not-utf8", "unsealed-record"],
)
def test_a_file_that_is_no_sealed_trail_is_one_line_and_exit_3(content, args, tmp_path):
    """Not an audit trail the plugin wrote (or one edited past recognition): the
    chain does not verify, one line names the line, nothing is replayed."""
    (tmp_path / "trail.jsonl").write_bytes(content)
    process = scrapy_robots("--audit", "trail.jsonl", *args, cwd=tmp_path)
    assert process.returncode == 3, process.stderr[-3000:]
    assert "line 1: not a sealed record" in one_line(process.stderr)
    assert process.stdout == ""


# -- bad settings ---------------------------------------------------------------------------------
#: (setting as given with -s, what the one line says); the password never shows
BAD_SETTINGS = [
    ("RFC9309_STORAGE=foo://x", "RFC9309_STORAGE='foo://x': use 'memory', 'sqlite:///path/robots.sqlite'"),
    (
        f"RFC9309_STORAGE=redis+cluster://:{SECRET}@127.0.0.1:1/3",
        "RFC9309_STORAGE='redis+cluster://:***@127.0.0.1:1/3': a Redis Cluster has database 0 only",
    ),
    ("RFC9309_STORAGE=sqlite://", "RFC9309_STORAGE='sqlite://': give a file"),
    ("RFC9309_UNREACHABLE=maybe", "RFC9309_UNREACHABLE='maybe': choose one of deny, wait, allow"),
    ("RFC9309_CACHE_SECONDS=-1", "RFC9309_CACHE_SECONDS='-1' is out of range: give a number of zero or more"),
    ("RFC9309_USAGE=bogus", "RFC9309_USAGE: 'bogus' is not a usage category; known:"),
    ("RFC9309_ORIGINS={bad", "RFC9309_ORIGINS is not valid JSON"),
    ("RFC9309_ENABLED=maybe", "RFC9309_ENABLED='maybe' is not a boolean: use True or False"),
    ("ROBOTSTXT_USER_AGENT=my bot/1.0", "ROBOTSTXT_USER_AGENT: 'my bot/1.0' is ambiguous"),
    # Scrapy's own settings that the plugin reads (issue 38: a traceback ending in lifecycle.py)
    ("CONCURRENT_REQUESTS=abc", "CONCURRENT_REQUESTS='abc' is not a whole number: give one (Scrapy's default is 16)"),
    ("ROBOTSTXT_OBEY=maybe", "ROBOTSTXT_OBEY='maybe' is not a boolean: use True or False"),
    ("RFC9309_UNREACHABLE=wait:soon", "RFC9309_UNREACHABLE='wait:soon': the seconds of 'wait:<seconds>' must be"),
    ("RFC9309_CRAWL_DELAY=0", "RFC9309_CRAWL_DELAY='0': use True (floors, capped at 60 s), False (no floors)"),
    ('RFC9309_USAGE={"unknown": "never"}', "RFC9309_USAGE['unknown']='never': choose one of allow, deny"),
    (
        f"RFC9309_STORAGE=redis://:{SECRET}@127.0.0.1:1/0?prefix=",
        "RFC9309_STORAGE='redis://:***@127.0.0.1:1/0?prefix=': give one non-empty prefix",
    ),
    ("RFC9309_CACHE_SECOND=60", "RFC9309_CACHE_SECOND is not a setting of scrapy-rfc9309"),
]
BAD_SETTING_IDS = [
    "storage-scheme", "storage-redis-password", "storage-sqlite-no-file", "unreachable", "cache-seconds", "usage",
    "origins-json", "enabled", "user-agent", "concurrent-requests", "robotstxt-obey", "unreachable-wait",
    "crawl-delay", "usage-dict", "storage-prefix", "unknown-setting",
]  # fmt: skip


@pytest.mark.parametrize(("setting", "says"), BAD_SETTINGS, ids=BAD_SETTING_IDS)
def test_scrapy_robots_with_a_bad_setting_is_one_line_and_exit_2(setting, says, tmp_path):
    process = scrapy_robots("http://127.0.0.1:9/x", "-s", setting, cwd=tmp_path)
    assert process.returncode == 2, process.stderr[-3000:]
    line = one_line(process.stderr)
    assert f"scrapy robots: invalid setting {says}" in line, line
    assert SECRET not in line
    assert process.stdout == ""


def test_every_mode_of_scrapy_robots_checks_the_settings(tmp_path):
    robots = tmp_path / "robots.txt"
    robots.write_text("User-agent: *\nDisallow: /private\n")
    lint = scrapy_robots("--lint", str(robots), "-s", "RFC9309_MAX_BYTES=lots", cwd=tmp_path)
    assert lint.returncode == 2, lint.stderr[-3000:]  # was a traceback (getint) and status 1
    assert "invalid setting RFC9309_MAX_BYTES='lots' is not a number" in one_line(lint.stderr)
    checked = scrapy_robots("/x", "--file", str(robots), "-s", "RFC9309_STORAGE=foo://x", cwd=tmp_path)
    assert checked.returncode == 2 and "RFC9309_STORAGE='foo://x'" in one_line(checked.stderr)


def _crawl_error(process, says: str) -> str:
    """The crawl's one ERROR line, checked: it says ``says``, comes before Scrapy
    lists its components, and the crawl failed without a traceback."""
    log = process.stderr
    assert process.returncode != 0, log[-3000:]
    lines = log.splitlines()
    errors = [i for i, line in enumerate(lines) if " ERROR: " in line]
    assert len(errors) == 1, [lines[i] for i in errors] or log[-3000:]
    line = lines[errors[0]]
    assert says in line, line
    assert "The crawl stops before its first request." in line
    assert "Traceback" not in log and "Task exception was never retrieved" not in log
    assert "Spider closed (rfc9309_invalid_setting)" in log
    # said where the settings are first read, before Scrapy's ~50 lines of components and stats
    listed = next(i for i, text in enumerate(lines) if "Overridden settings" in text)
    assert errors[0] < listed, lines[: errors[0] + 1]
    return line


@pytest.mark.parametrize(
    ("setting", "says"),
    [BAD_SETTINGS[i] for i in (0, 1, 3, 4, 5, 6, 8, 9, 10)],
    ids=[BAD_SETTING_IDS[i] for i in (0, 1, 3, 4, 5, 6, 8, 9, 10)],
)
def test_scrapy_crawl_with_a_bad_setting_stops_with_one_error_line_and_a_failing_status(
    setting, says, servers, tmp_path
):
    site = servers("127.0.0.2")
    process = scrapy_crawl(tmp_path, [site.url("/page")], "-s", setting, *MODE_ARGS)
    line = _crawl_error(process, says)
    assert SECRET not in process.stderr, line
    assert site.hits == []  # not even robots.txt


def test_a_bad_setting_in_a_spiders_custom_settings_is_refused_the_same_way(servers, tmp_path):
    site = servers("127.0.0.2")
    process = scrapy_crawl(
        tmp_path, [site.url("/page")], *MODE_ARGS, custom={"RFC9309_INTERNAL_NETWORKS": ["10.0.0.0/33"]}
    )
    _crawl_error(process, "RFC9309_INTERNAL_NETWORKS: '10.0.0.0/33' is not an IP network")
    assert site.hits == []
