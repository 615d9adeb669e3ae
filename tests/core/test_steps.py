"""Parsing and compiling in steps answers exactly as doing it at once.

A large robots.txt is parsed and compiled in bounded steps (``RobotsTxt.parsing``,
``RobotsTxt.preparing``, ``parser.reading``) so that a crawler's event loop
turns between them; a plain ``parse`` then ``check`` drains the same
generators at once (lazily, one bucket per first check).  The step sizes
only decide where the work pauses: the files read, the buckets built and
every answer must be the same whatever they are.  So each file here is read
and compiled with the default steps one at a time, with absurdly small ones
(a step every few lines and rules: every boundary the code has is crossed
many times) and lazily, and the answers are compared; checks are also made
between the steps of a preparation, where part of the buckets are built.
"""

from __future__ import annotations

import os
import re
import string
from collections.abc import Iterator
from pathlib import Path

import pytest

from scrapy_rfc9309 import Decision, RobotsTxt, parse
from scrapy_rfc9309.robots import index, parser, robotstxt, usage_match
from scrapy_rfc9309.robots.steps import PAUSED, finish, run
from scrapy_rfc9309.robots.usage import Usage

TOKEN = "ExampleBot"
LETTERS = string.ascii_letters + string.digits
REPO_ROOT = Path(__file__).resolve().parents[2]
CORPUS = Path(os.environ.get("RFC9309_CORPUS") or REPO_ROOT.parent / "shared" / "corpus") / "robots"
_RULE = re.compile(rb"^[ \t]*(?:(?:dis)?allow|content-usage)[ \t]*:[ \t]*(\S+)", re.IGNORECASE | re.MULTILINE)


# -- the files --------------------------------------------------------------------------------
def hostile_files(many: int = 20_000) -> dict[str, bytes]:
    """Hostile shapes; ``many`` rules in the largest (20,000: 500 KiB)."""
    return {
        "20,000 rules in one bucket": (
            "User-agent: *\n" + "".join(f"Disallow: /section-{i:05d}/*/page$\n" for i in range(many))
        ).encode()[:512_000],
        "20,000 rules over 62 buckets, half in every bucket": (
            "User-agent: *\nAllow: /open/\n"
            + "".join(f"Disallow: /*x{i}*y{i}$\n" for i in range(many // 2))
            + "".join(f"Allow: /{LETTERS[i % 62]}s-{i:05d}/*/page$\n" for i in range(many // 2))
        ).encode()[:512_000],
        "plain rules of every length, Allow and Disallow": (
            "User-agent: ExampleBot\nUser-agent: other\n"
            + "".join(
                f"{'Allow' if i % 3 == 0 else 'Disallow'}: /{LETTERS[i % 7]}{'q' * (i % 13)}{i}\n"
                for i in range(many // 3)
            )
            + "Allow: /index.html\nAllow: /d/index.htm\nDisallow: /\n"
        ).encode(),
        "groups and agents by the thousand": "".join(
            f"User-agent: bot{i}\nUser-agent: {'*' if i % 2 else 'ExampleBot'}\nDisallow: /{LETTERS[i % 62]}{i}*q\n"
            f"Crawl-delay: {i % 9}\n"
            for i in range(many // 4)
        ).encode(),
        "runs of plain Disallow lines with comments between": (
            "User-agent: *\n"
            + "".join(
                f"Disallow: /r{i}  # note\n"
                if i % 50 == 0
                else f"Disallow: /r{i}\n"
                if i % 7
                else f"# {i}\nAllow: /r{i}/\n"
                for i in range(many // 2)
            )
        ).encode(),
        "an HTML page full of record-like lines": (
            b"<html><body>\n"
            + b"".join(b"Disallow: /h%d <br>\nuser-agent: *\nallow: /h%d/x\n" % (i, i) for i in range(many // 6))
        ),
        "percent-encoded and non-ASCII patterns": (
            "User-agent: *\n"
            + "".join(f"Disallow: /%{ord(LETTERS[i % 26]):02X}{i}\nAllow: /caf\u00e9{i}$\n" for i in range(many // 10))
        ).encode(),
        # issue 30: distinct wildcard rules; starts shared by many wildcard rules; exact rules
        "distinct wildcard rules": (
            "User-agent: *\n"
            + "".join(
                f"{('Allow', 'Disallow')[i % 2]}: /{(i * 7919) % 1_000_003}/*{('', '$', '.php')[i % 3]}\n"
                for i in range(many)
            )
        ).encode()[:512_000],
        "wildcard rules sharing their start, exact rules": (
            "User-agent: *\n"
            + "".join(f"Disallow: /*/page*{i}$\nAllow: /s*{i % 97}*{i}\nDisallow: /e{i}$\n" for i in range(many // 3))
        ).encode()[:512_000],
        "Content-Usage rules and Content-Signal lines": (
            "User-agent: *\nDisallow: /private\n"
            + "Content-Signal: search=yes, ai-train=no\n" * (many // 20)
            + "".join(
                f"Content-Usage: /{LETTERS[i % 62]}{i % 50}{'*' * (i % 3)}{'$' if i % 7 == 0 else ''} "
                f"train-ai={'yn'[i % 2]}, search={'yn'[i % 3 == 0]}\n"
                for i in range(many // 2)
            )
        ).encode()[:512_000],
    }


#: the corpus passes take one file in this many, and every file the crawl parses in steps
SAMPLE_EVERY = 4
#: bodies over this many bytes are parsed in steps by the crawl (service.STEPPED_PARSE_BYTES)
LARGE = 8 * 1024


def corpus_files(every: int = SAMPLE_EVERY) -> Iterator[tuple[str, bytes]]:
    """One file in ``every`` of the corpus (in name order), and every large one.

    The stepped and plain paths share their helpers, so a sample of the small
    files finds what the whole corpus would; the large files are the ones
    the crawl parses in steps, all of them."""
    if not CORPUS.is_dir():
        pytest.skip(f"corpus not found at {CORPUS} (expected ../shared/corpus/robots next to the repo)")
    for number, path in enumerate(sorted(p for p in CORPUS.iterdir() if p.is_file())):
        if number % every == 0 or path.stat().st_size > LARGE:
            yield path.name, path.read_bytes()


def paths_for(body: bytes, limit: int = 40) -> list[str]:
    """Paths near the file's own patterns (each bucket it uses), and a few others."""
    out = ["/", "/robots.txt", "/index.html", "/d/", "/zzz", "/search?q=1", "/q/x7/y7", "/open/x"]
    for raw in _RULE.findall(body)[:limit]:
        text = raw.decode("utf-8", "replace")
        plain = text.replace("*", "x").rstrip("$")
        out += [plain, plain + "/page", text.replace("*", "").rstrip("$") + "y", plain[:3]]
    return [p if p.startswith("/") else "/" + p for p in out]


def decided(decision: Decision) -> tuple[object, ...]:
    return decision.allowed, decision.verdict, decision.rule  # (Rule compares by value)


def stated(usage: Usage) -> tuple[object, ...]:
    """The values, and the sources in line order (see test_usage.py: an index
    combines the rules of one pattern first)."""
    return dict(usage), {c: sorted(usage.sources[c], key=lambda s: s.line) for c in usage.sources}


def answers(robots: RobotsTxt, paths: list[str]) -> list[object]:
    out: list[object] = []
    for token in (TOKEN, "other", "Googlebot"):
        out += [decided(robots.check(path, token)) for path in paths]
        out += [stated(robots.usage("https://example.com" + path, token)) for path in paths]
        out += [robots.crawl_delay(token), robots.request_rate(token), robots.applies_specifically(token)]
    return out


def parsed_state(robots: RobotsTxt) -> tuple[object, ...]:
    groups = [(g.agents, g.start, g.end, g.crawl_delay, g.request_rate, g.line) for g in robots._groups]
    return robots._patterns, list(robots._marks), groups, robots.sitemaps, robots.diagnostics


@pytest.fixture
def tiny_steps(monkeypatch: pytest.MonkeyPatch):
    """Steps of a few lines and rules: every boundary crossed many times."""

    def apply() -> None:
        monkeypatch.setattr(parser, "STEP_LINES", 3)
        monkeypatch.setattr(parser, "STEP_WORK", 5)
        monkeypatch.setattr(parser, "STEP_CHARS", 40)
        monkeypatch.setattr(parser, "STEP_PATTERNS", 3)
        monkeypatch.setattr(index, "STEP_WORK", 7)
        monkeypatch.setattr(index, "STEP_ITEMS", 9)
        monkeypatch.setattr(robotstxt, "_STEP_NUMBERS", 5)
        monkeypatch.setattr(robotstxt, "_STEP_SPLIT", 11)
        monkeypatch.setattr(robotstxt, "_INDEX_LEAST", 2)  # indexes everywhere, crowded starts too
        monkeypatch.setattr(index, "LEAD_RULES", 1)
        monkeypatch.setattr(usage_match, "_MANY_WILD", 2)  # usage rules filed by literal too
        monkeypatch.setattr(usage_match, "_STEP_RULES", 3)

    return apply


def stepped(body: bytes, token: str | None = TOKEN) -> tuple[RobotsTxt, int]:
    """The file parsed (and prepared for ``token``) one step at a time; and the steps."""
    steps = RobotsTxt.parsing(body, None, 512_000, token)
    count = 0
    while True:
        try:
            next(steps)
        except StopIteration as done:
            return done.value, count
        count += 1


# -- hostile files ------------------------------------------------------------------------------
@pytest.mark.parametrize("name", list(hostile_files()))
def test_stepped_parse_and_prepare_answer_as_the_plain_path(name: str) -> None:
    body = hostile_files()[name]
    paths = paths_for(body, limit=120)
    plain = parse(body)
    robots, count = stepped(body)
    assert count > 1, "a large file is read in more than one step"
    assert parsed_state(robots) == parsed_state(plain)
    assert answers(robots, paths) == answers(plain, paths)


@pytest.mark.parametrize("name", list(hostile_files()))
def test_tiny_steps_change_nothing(name: str, tiny_steps) -> None:
    body = hostile_files(2000)[name]  # the same shapes, smaller: tiny steps are slow
    paths = paths_for(body, limit=400)
    plain = parse(body)
    expected_state, expected = parsed_state(plain), answers(plain, paths)
    tiny_steps()
    robots, _ = stepped(body)
    assert parsed_state(robots) == expected_state
    assert answers(robots, paths) == expected
    assert answers(parse(body), paths) == expected  # the lazy path with tiny steps too


@pytest.mark.parametrize("name", list(hostile_files()))
def test_checks_between_the_steps_of_a_preparation(name: str) -> None:
    """A check made while part of the buckets are built answers as after."""
    body = hostile_files()[name]
    paths = paths_for(body, limit=120)
    plain = parse(body)
    expected = [decided(plain.check(path, TOKEN)) for path in paths]
    robots = parse(body)
    seen = []
    for step, _ in enumerate(robots.preparing(TOKEN)):
        path = paths[step % len(paths)]
        seen.append((path, decided(robots.check(path, TOKEN))))
    assert seen, "the preparation has steps"
    assert all(decision == expected[paths.index(path)] for path, decision in seen)
    assert [decided(robots.check(path, TOKEN)) for path in paths] == expected


def test_preparing_validates_the_token_at_once() -> None:
    with pytest.raises(ValueError, match="product token"):
        parse(b"User-agent: *\nDisallow: /x\n").preparing("ExampleBot/1.0")
    assert list(RobotsTxt.allow_all().preparing(TOKEN)) == []


def test_finish_returns_the_value() -> None:
    robots = finish(RobotsTxt.parsing(b"User-agent: *\nDisallow: /x\n", prepare_for=TOKEN))
    assert not robots.check("/x", TOKEN).allowed
    assert robots.check("/y", TOKEN).allowed


def test_run_pauses_after_its_budget_and_goes_on_where_it_stopped() -> None:
    body = hostile_files()["20,000 rules over 62 buckets, half in every bucket"]
    steps = RobotsTxt.parsing(body, None, 512_000, TOKEN)
    pauses = 0
    while (robots := run(steps, 0.0)) is PAUSED:  # a budget of nothing: a pause after every step
        pauses += 1
    _, count = stepped(body)
    assert pauses == count  # every step ran once, none was skipped or repeated
    assert parsed_state(robots) == parsed_state(parse(body))


# -- the real corpus ---------------------------------------------------------------------------
@pytest.mark.corpus
def test_corpus_stepped_answers_as_plain() -> None:
    files = 0
    for name, body in corpus_files():
        paths = paths_for(body)
        plain = parse(body)
        robots, _ = stepped(body)
        assert parsed_state(robots) == parsed_state(plain), name
        assert answers(robots, paths) == answers(plain, paths), name
        files += 1
    assert files > 0


@pytest.mark.corpus
def test_corpus_tiny_steps_answer_as_plain(tiny_steps) -> None:
    expected = {}
    for name, body in corpus_files(every=2 * SAMPLE_EVERY):
        plain = parse(body)
        expected[name] = parsed_state(plain), answers(plain, paths_for(body))
    tiny_steps()
    for name, body in corpus_files(every=2 * SAMPLE_EVERY):
        robots, _ = stepped(body)
        assert (parsed_state(robots), answers(robots, paths_for(body))) == expected[name], name
