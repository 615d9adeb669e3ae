"""Differential test against Google's reference parser (``jwm-robotstxt``).

Every real file of ``../shared/corpus/robots/`` and every site of
``../shared/corpus/bench/`` is asked the same questions by both parsers.
Google's parser departs from RFC 9309 in a few known places; where the two
disagree, the classifier below re-asks Google with one RFC-specific difference
neutralised at a time (cumulatively, in a fixed order) and names the first
class that makes Google agree.  A disagreement no neutralisation explains is a
bug in one of the two parsers and fails the test.

The default run samples the URLs asked about each file so the test stays
well under a minute; ``RFC9309_FULL_DIFF=1`` asks many more (see below).
``RFC9309_CORPUS`` points at another corpus directory.
"""

from __future__ import annotations

import os
import random
import re
from collections import Counter
from pathlib import Path
from urllib.parse import quote

import pytest

from scrapy_rfc9309 import Verdict, parse
from scrapy_rfc9309.robots.decode import DEFAULT_PARSE_BYTES, decode_body
from scrapy_rfc9309.robots.diagnostics import DiagnosticLog
from scrapy_rfc9309.robots.dots import remove_dot_segments

googlebot = pytest.importorskip(
    "jwm.robotstxt.googlebot",
    reason="jwm-robotstxt (Google's parser) is not installed: the test extra installs it on Python 3.10 to 3.12 (it has no build for 3.13)",
)


REPO_ROOT = Path(__file__).resolve().parents[2]
CORPUS = Path(os.environ.get("RFC9309_CORPUS") or REPO_ROOT.parent / "shared" / "corpus")
FULL = os.environ.get("RFC9309_FULL_DIFF", "") not in ("", "0")

TOKENS = ("googlebot", "bingbot", "ExampleBot")
ORIGIN = "https://example.com"

# How much is asked.  Google's matcher re-parses the file for every question
# (about 0.2 ms a call), so the default run samples: SAMPLE_FILES files with
# SAMPLE_PATTERNS rules each (two suffixes per rule), and SAMPLE_LINKS links of
# every bench site.  The full run (about ten minutes) takes every file with up
# to FULL_PATTERNS rules and every suffix, and every link of every site.
SAMPLE_FILES = 2_000  # of the 4,231 files of robots/
SAMPLE_PATTERNS = 6
SAMPLE_SITES = 10_000  # of the 1,225 bench sites that have links
SAMPLE_LINKS = 8
FULL_PATTERNS = 40

# Deviation classes (see docs/deviations.md), in the order the classifier tries them.
ROBOTS_TXT = "a_robots_txt_implicit_allow"
TRUNCATED = "f_parse_limit_512000_bytes"
NON_UTF8 = "e_non_utf8_file_octets"
UTF16 = "k_utf16_byte_order_mark"
WHITESPACE = "h_only_space_and_tab_are_whitespace"
KEYS = "j_key_prefix_not_a_key"
PERCENT = "b_percent_encoding"
OUTSIDE_URI = "i_characters_outside_uri_encoded"
OTHER_LINES = "c_other_records_end_group"
DOT_SEGMENTS = "l_dot_segments_removed"
NUL = "m_nul_is_a_character"
CLASSES = (
    ROBOTS_TXT,
    DOT_SEGMENTS,
    TRUNCATED,
    NON_UTF8,
    UTF16,
    WHITESPACE,
    NUL,
    KEYS,
    PERCENT,
    OUTSIDE_URI,
    OTHER_LINES,
)


def _need_corpus(*parts: str) -> Path:
    path = CORPUS.joinpath(*parts)
    if not path.is_dir():
        pytest.skip(f"corpus not found at {path} (expected ../shared/corpus next to the repo)")
    return path


def _ascii_url(path: str) -> str:
    """An absolute URL with every non-ASCII character percent-encoded, as
    Google's matcher expects."""
    return ORIGIN + quote(path, safe="".join(map(chr, range(33, 128))))


def google_allows(body: bytes, token: str, url: str) -> bool:
    return googlebot.RobotsMatcher().OneAgentAllowedByRobots(body, token, url)


# -- neutralising the RFC-specific differences ------------------------------

_LINE_SPLIT = re.compile(r"\r\n|\r|\n")
# Keys Google's parser acts on (by prefix, with its typo list); every other
# line is an "other record" for the purpose of class (c).
_RULE_KEYS = r"allow|disallow|dissallow|dissalow|disalow|diasllow|disallaw"
_GOOGLE_KEY = re.compile(rf"[ \t]*(?:user-agent|useragent|user agent|{_RULE_KEYS})", re.IGNORECASE)
# A rule line, found independently of the parser under test: the key (by
# prefix), a colon, and the value up to a comment.
_RULE_LINE = re.compile(rf"([ \t]*(?:{_RULE_KEYS})[^:#]*:[ \t]*)([^#]*)", re.IGNORECASE)


def rule_values(text: str) -> list[str]:
    """The non-empty Allow/Disallow values of ``text``, in file order."""
    out = []
    for line in _LINE_SPLIT.split(text):
        m = _RULE_LINE.match(line)
        if m:
            value = m.group(2).rstrip(" \t")
            if value:
                out.append(value)
    return out


# How Google is shown a literal "*" or "$" (a "%2A"/"%24" in a rule, a "*" or
# "$" in a URL): a three-octet placeholder, so that the rule's length (its
# priority) is unchanged and no partial escape such as "%2" can match into it.
LIT_STAR = "\x01\x02\x01"
LIT_DOLLAR = "\x01\x03\x01"


_ESCAPE = re.compile(r"%([0-9A-Fa-f]{2})")
_UNRESERVED = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")
_RESERVED = frozenset(":/?#[]@!$&'()*+,;=")
# RFC 3986: ASCII characters in neither set (nor "%"), allowed in a URI only
# percent-encoded, and "[" "]", allowed raw only in a host (3.2.2: a path or a
# query holds them encoded); and a "%" that starts no escape (RFC 3986 2.4).
_OUTSIDE_URI = re.compile(
    "["
    + re.escape("".join(c for c in map(chr, range(128)) if c not in _UNRESERVED | _RESERVED | {"%"} or c in "[]"))
    + "]"
)
_LONE_PERCENT = re.compile(r"%(?![0-9A-Fa-f]{2})")


def rfc_encode(text: str, outside: bool = False) -> str:
    """RFC 9309 section 2.2.2, written here independently of the core:
    non-ASCII to ``%XX``, hex in upper case, unreserved escapes decoded, and
    ``%2A``/``%24`` (literal ``*``/``$``) and a raw ``$`` as placeholders;
    with ``outside``, also the characters RFC 3986 allows only encoded
    (class i)."""
    text = "".join(c if c < "\x80" else "".join(f"%{b:02X}" for b in c.encode("utf-8", "surrogatepass")) for c in text)
    if outside:
        text = _OUTSIDE_URI.sub(lambda m: f"%{ord(m.group()):02X}", text)
        text = _LONE_PERCENT.sub("%25", text)

    def fix(m: re.Match[str]) -> str:
        char = chr(int(m.group(1), 16))
        if char in _UNRESERVED:
            return char
        return {"*": LIT_STAR, "$": LIT_DOLLAR}.get(char) or "%" + m.group(1).upper()

    return _ESCAPE.sub(fix, text.replace("$", LIT_DOLLAR))


def neutral_pattern(raw: str, outside: bool = False) -> str:
    """The rule as Google must see it to match the way RFC 9309 does."""
    anchored = raw.endswith("$")
    body = raw[:-1] if anchored else raw
    return "*".join(rfc_encode(p, outside) for p in body.split("*")) + ("$" if anchored else "")


def neutral_path(url: str, outside: bool = False) -> str:
    """The path of ``url`` as Google must see it."""
    return rfc_encode(_raw_path(url).replace("*", LIT_STAR), outside)


def rewrite_rules(text: str, outside: bool = False) -> str:
    """``text`` with the value of every rule line replaced by its neutral
    pattern; keys and all other lines are left as written, so Google still
    decides for itself which lines are rules and how they group."""
    lines = _LINE_SPLIT.split(text)
    for i, line in enumerate(lines):
        m = _RULE_LINE.match(line)
        if m:
            value = m.group(2).rstrip(" \t")
            if value:
                lines[i] = m.group(1) + neutral_pattern(value, outside) + line[m.start(2) + len(value) :]
    return "\n".join(lines)


# Class (j): the keys read as keys (exact, typo, or ending "s"/"ed"), written
# here from docs/deviations.md; Google reads every key by its prefix alone.
_TYPOS = r"user-agent|useragent|user agent|allow|disallow|dissallow|dissalow|disalow|diasllow|disallaw"
_TYPOS += r"|sitemap|site-map|crawl-delay|crawldelay|request-rate"
_KEY_FORM = re.compile(rf"(?:{_TYPOS})(?:s|ed)?", re.IGNORECASE)
_ANY_GOOGLE_KEY = re.compile(rf"(?:{_TYPOS})", re.IGNORECASE)


def rewrite_keys(text: str) -> str:
    """Lines whose key Google reads by prefix alone, as we read them: a key
    followed by one token ("Sitemap https://e.com/s.xml", "Disallow /a:b")
    with the colon put back after the key; any other (prose such as
    "User-agent must match exactly: see below") made a comment."""
    lines = _LINE_SPLIT.split(text)
    for i, line in enumerate(lines):
        content = line.split("#", 1)[0].strip(" \t")
        tokens = content.replace("\t", " ").split(" ")
        tokens = [t for t in tokens if t]
        if ":" in content:
            key = content.split(":", 1)[0].rstrip(" \t")
        else:  # Google takes blanks for the colon when they part exactly two tokens
            key = tokens[0] if len(tokens) == 2 else ""
        if not _ANY_GOOGLE_KEY.match(key) or _KEY_FORM.fullmatch(key):
            continue
        if ":" in content and len(tokens) == 2 and _KEY_FORM.fullmatch(tokens[0]):
            lines[i] = f"{tokens[0]}: {tokens[1]}"
        else:
            lines[i] = "# " + line
    return "\n".join(lines)


def drop_other_lines(text: str) -> str:
    """Only the lines Google reads as User-agent, Allow or Disallow (and
    blank lines): Sitemap, Crawl-delay and unknown keys removed."""
    kept = []
    for line in _LINE_SPLIT.split(text):
        content = line.split("#", 1)[0].strip(" \t")
        if not content or _GOOGLE_KEY.match(content):
            kept.append(line)
    return "\n".join(kept)


class Classifier:
    """Explains why Google's answer for ``body`` differs from ours.

    Each step changes what Google is shown so that one documented difference
    disappears; the steps accumulate, and the first one after which Google
    answers as we do names the class.  Only the steps that apply to the file
    are tried.
    """

    def __init__(self, body: bytes) -> None:
        self.body = body
        diags = DiagnosticLog()
        self.text = decode_body(body, None, DEFAULT_PARSE_BYTES, diags)
        self.codes = {d.code for d in diags.to_list()}
        self._steps: list[tuple[str, bytes, int]] | None = None

    def steps(self) -> list[tuple[str, bytes, int]]:
        """``(class, body shown to Google, the URL shown: 0 as asked, 1
        percent-encoded as RFC 9309 does, 2 and its characters outside the
        URI grammar encoded too)``."""
        if self._steps is None:
            text = self.text
            steps = []
            if "truncated" in self.codes:  # (f) what we parsed, not the whole body
                steps.append((TRUNCATED, _utf8(text), 0))
            if "invalid_utf8" in self.codes:  # (e) our decoding, as UTF-8
                steps.append((NON_UTF8, _utf8(text), 0))
            if "utf16" in self.codes:  # (k) our decoding, as UTF-8
                steps.append((UTF16, _utf8(text), 0))
            if "\x0b" in text or "\x0c" in text:  # (h) not whitespace for us
                text = text.replace("\x0b", "\x01").replace("\x0c", "\x01")
                steps.append((WHITESPACE, _utf8(text), 0))
            if "\x00" in text:  # (m) a character for us; Google's parser reads a line only up to it
                text = text.replace("\x00", "\x01")
                steps.append((NUL, _utf8(text), 0))
            keyed = rewrite_keys(text)  # (j) keys by prefix alone
            if keyed != text:
                text = keyed
                steps.append((KEYS, _utf8(text), 0))
            percent = rewrite_rules(text)  # (b) percent-encoding, both sides
            steps.append((PERCENT, _utf8(percent), 1))
            text = rewrite_rules(text, outside=True)  # (i) and the characters outside the URI grammar
            steps.append((OUTSIDE_URI, _utf8(text), 2))
            steps.append((OTHER_LINES, _utf8(drop_other_lines(text)), 2))  # (c)
            self._steps = steps
        return self._steps

    def classify(self, token: str, url: str, ours: bool, verdict: Verdict) -> str | None:
        if verdict is Verdict.ALLOWED_ROBOTS_TXT:  # (a)
            return ROBOTS_TXT
        if not ours and ("/." in url or "%2" in url):  # (l) denied as the server would resolve it
            path = neutral_path(url)
            resolved = remove_dot_segments(path)
            if resolved != path and google_allows(self.body, token, ORIGIN + resolved) is False:
                return DOT_SEGMENTS
        urls = (url, ORIGIN + neutral_path(url), ORIGIN + neutral_path(url, outside=True))
        for cls, body, neutral in self.steps():
            if google_allows(body, token, urls[neutral]) == ours:
                return cls
        return None


def _utf8(text: str) -> bytes:
    return text.encode("utf-8", "surrogatepass")


# -- URLs to ask about ----------------------------------------------------

_FILLERS = ("", "x", "abc/def")
_SUFFIXES = ("", "x", "/", "?q=1", ".html", "/index.htm")


def urls_for(text: str, rng: random.Random, limit: int, all_suffixes: bool) -> list[str]:
    """Paths taken from the file's own rules (each ``*`` filled in, ``$``
    dropped, with suffixes), plus ``/`` and ``/robots.txt``."""
    patterns = list(dict.fromkeys(rule_values(text)))
    if len(patterns) > limit:
        patterns = rng.sample(patterns, limit)
    paths = {"/", "/robots.txt"}
    for raw in patterns:
        base = raw[:-1] if raw.endswith("$") else raw
        filler = rng.choice(_FILLERS)
        base = base.replace("*", filler)
        if not base.startswith("/"):
            base = "/" + base
        for suffix in _SUFFIXES if all_suffixes else rng.sample(_SUFFIXES, 2):
            paths.add(base + suffix)
        if len(base) > 2:
            paths.add(base[:-1])
    return [_ascii_url(p) for p in sorted(paths)]


# -- the runs ---------------------------------------------------------------


class Tally:
    def __init__(self) -> None:
        self.files = 0
        self.checks = 0
        self.agree = 0
        self.classes: Counter[str] = Counter()
        self.unexplained: list[tuple[str, str, str, bool]] = []

    def ask(self, name: str, body: bytes, robots, classifier: Classifier, url: str) -> None:
        for token in TOKENS:
            decision = robots.check(url, token)
            self.checks += 1
            if google_allows(body, token, url) == decision.allowed:
                self.agree += 1
                continue
            cls = classifier.classify(token, url, decision.allowed, decision.verdict)
            if cls is None:
                self.unexplained.append((name, token, url, decision.allowed))
            else:
                self.classes[cls] += 1

    def report(self, title: str) -> str:
        per_class = ", ".join(f"{c}={self.classes[c]}" for c in CLASSES)
        return (
            f"\n[differential {title}{' FULL' if FULL else ' sample'}] files={self.files} "
            f"url_checks={self.checks} agree={self.agree} disagree={self.checks - self.agree} "
            f"({per_class}) unexplained={len(self.unexplained)}"
        )

    def assert_explained(self) -> None:
        shown = "\n".join(
            f"  {name}: token={token} url={url} ours={'allow' if ours else 'deny'}"
            for name, token, url, ours in self.unexplained[:20]
        )
        assert not self.unexplained, f"{len(self.unexplained)} unexplained disagreements:\n{shown}"


def _sample(items: list, rng: random.Random, size: int) -> list:
    return items if len(items) <= size else sorted(rng.sample(items, size))


@pytest.mark.corpus
def test_robots_corpus_against_google(capsys: pytest.CaptureFixture[str]) -> None:
    directory = _need_corpus("robots")
    rng = random.Random(9309)
    tally = Tally()
    files = sorted(p for p in directory.iterdir() if p.is_file())
    for path in files if FULL else _sample(files, rng, SAMPLE_FILES):
        body = path.read_bytes()
        robots = parse(body)
        classifier = Classifier(body)
        tally.files += 1
        limit = FULL_PATTERNS if FULL else SAMPLE_PATTERNS
        for url in urls_for(classifier.text, rng, limit, all_suffixes=FULL):
            tally.ask(path.name, body, robots, classifier, url)
    with capsys.disabled():
        print(tally.report("robots/"))
    assert tally.files > 100 and tally.checks > 10 * tally.files
    tally.assert_explained()


@pytest.mark.corpus
def test_bench_sites_against_google(capsys: pytest.CaptureFixture[str]) -> None:
    robotfiles = _need_corpus("bench", "robotfiles")
    links_dir = _need_corpus("bench", "links")
    rng = random.Random(2309)
    tally = Tally()
    sites = sorted(p for p in robotfiles.iterdir() if (links_dir / p.name).is_file())
    for path in sites if FULL else _sample(sites, rng, SAMPLE_SITES):
        body = path.read_bytes()
        robots = parse(body)
        classifier = Classifier(body)
        links = (links_dir / path.name).read_text("utf-8", "replace").split()
        tally.files += 1
        for link in links if FULL else _sample(links, rng, SAMPLE_LINKS):
            tally.ask(path.name, body, robots, classifier, _ascii_url(_raw_path(link)))
    with capsys.disabled():
        print(tally.report("bench/"))
    assert tally.files > 100 and tally.checks > 3 * tally.files
    tally.assert_explained()


def _raw_path(link: str) -> str:
    """The path;params?query of a listed link, as written (not normalised)."""
    m = re.match(r"(?:[A-Za-z][A-Za-z0-9+.-]*:)?//[^/?#]*", link)
    rest = (link[m.end() :] if m else link).split("#", 1)[0]
    return rest if rest.startswith("/") else "/" + rest


# Every example of docs/deviations.md: Google and we disagree, and the
# classifier puts the disagreement in its documented class.
DEVIATIONS = [
    (b"User-agent: *\nDisallow: /\n", "/robots.txt", ROBOTS_TXT),
    ("User-agent: *\nDisallow: /caf\u00e9\n".encode(), "/caf\u00e9", PERCENT),
    (b"User-agent: *\nDisallow: /a%2F\n", "/a%2f", PERCENT),
    (b"User-agent: *\nDisallow: /~joe\n", "/%7Ejoe", PERCENT),
    (b"User-agent: *\nDisallow: /%7Ejoe\n", "/~joe", PERCENT),
    (b"User-agent: *\nDisallow: /a-%2A.html\n", "/a-*.html", PERCENT),
    (b"User-agent: *\nDisallow: /price-%24\n", "/price-$", PERCENT),
    (b"User-agent: *\nDisallow: *url%2*x\n", "/url%2Ax", PERCENT),
    (b"User-agent: *\nDisallow: /caf\xe9\n", "/caf%C3%A9", NON_UTF8),
    (b"User-agent: *\nDisallow: /caf\xe9\n", "/caf%E9", NON_UTF8),
    (b"User-agent: *\nDisallow: /x\n" + b"#" * 512_000 + b"\nDisallow: /late\n", "/late", TRUNCATED),
    (b"User-agent: *\nDisallow:\x0c/x\n", "/x", WHITESPACE),
    (b"User-agent: *\x0bfoo\nDisallow: /x\n", "/x", WHITESPACE),
    (b"User-agent: *\x00\nDisallow: /x\n", "/x", NUL),
    (b"User-agent: *\nDisallow: /x\x00\n", "/x", NUL),
    (b"User-agent: *\nDisallow: /a<d.html\n", "/a%3Cd.html", OUTSIDE_URI),
    (b"User-agent: *\nDisallow: /sitecore modules/\n", "/sitecore%20modules/", OUTSIDE_URI),
    (b"User-agent: *\nDisallow: /a%7cb\n", "/a|b", OUTSIDE_URI),
    (b"User-agent: *\nDisallow: /b/*?*|\n", "/b/x?_trkparms=a%7Cb", OUTSIDE_URI),
    (b"User-agent: *\nDisallow: /a%2\n", "/a%2F", OUTSIDE_URI),
    (b"User-agent: *\nAllow: /a*b\nDisallow: /a<\n", "/a<b", OUTSIDE_URI),
    # a real one (a forum's file): "[" "]" are escaped in a path or query, as Scrapy sends them
    (
        b"User-agent: *\nDisallow: /search.php\nAllow: /search.php?filter[type]=thread&\n",
        "/search.php?filter%5Btype%5D=thread&q=1",
        OUTSIDE_URI,
    ),
    (b"User-agent: *\nDisallow: /a%5Bb\n", "/a[b", OUTSIDE_URI),
    (b"User-agent: *\nAllow: /\nUser-agent must match exactly: see the docs\nDisallow: /y\n", "/y", KEYS),
    (b"User-agent: *\nDisallow /a:b\n", "/a:b", KEYS),
    (b"User-agent: *\nDisallowance /x\n", "/x", KEYS),
    ("\ufeffUser-agent: *\r\nDisallow: /store/cart/\r\n".encode("utf-16-le"), "/store/cart/", UTF16),
    ("\ufeffUser-agent: *\r\nDisallow: /store/cart/\r\n".encode("utf-16-be"), "/store/cart/", UTF16),
    (b"User-agent: *\nDisallow: /private\n", "/x/../private", DOT_SEGMENTS),
    (b"User-agent: *\nDisallow: /private\n", "/x/%2E%2E/private", DOT_SEGMENTS),
]


@pytest.mark.parametrize(
    "body, path, expected", DEVIATIONS, ids=[f"{c[0]}-{i}" for i, (_, _, c) in enumerate(DEVIATIONS)]
)
def test_documented_deviations_are_classified(body: bytes, path: str, expected: str) -> None:
    decision = parse(body).check(path, "ExampleBot")
    url = ORIGIN + path
    assert google_allows(body, "ExampleBot", url) != decision.allowed
    assert Classifier(body).classify("ExampleBot", url, decision.allowed, decision.verdict) == expected


def test_no_class_for_run_ending_lines() -> None:
    # Neither Google nor we end a run of User-agent lines at Sitemap,
    # Crawl-delay or unknown lines (RFC 9309 2.2.4); class (c) stays empty.
    for between in ("Sitemap: https://example.com/s.xml", "Crawl-delay: 5", "Frobnicate: 1"):
        body = f"User-agent: a\n{between}\nUser-agent: b\nDisallow: /x\n".encode()
        assert google_allows(body, "a", ORIGIN + "/x") is False
        assert parse(body).check("/x", "a").allowed is False
