"""Problems found while reading a robots.txt file, each tied to its line.

A diagnostic never changes how the file is read: it tells the site owner (or
the crawler operator) where the file departs from RFC 9309 and which leniency
the parser applied instead of failing.
"""

from __future__ import annotations

from typing import NamedTuple


class Diagnostic(NamedTuple):
    """One problem: ``line`` is 1-based (0 for the file as a whole)."""

    line: int
    code: str
    message: str

    def __str__(self) -> str:
        where = f"line {self.line}" if self.line else "file"
        return f"{where}: {self.code}: {self.message}"


#: Every code the parser may report, with what it means.  Kept in one place
#: so the README and the ``scrapy robots --lint`` output stay in step.
CODES: dict[str, str] = {
    "bom": "a UTF-8 byte order mark (full or partial) was skipped",
    "invalid_utf8": "the body is not valid UTF-8; decoded with a fallback charset",
    "truncated": "the body is larger than the parse limit; the rest was ignored",
    "line_too_long": "the line is longer than 16,663 bytes; the rest was ignored",
    "missing_colon": "no colon after the key; whitespace accepted as the separator",
    "key_typo": "a misspelt or extended key was accepted",
    "unknown_key": "the key is not one this parser knows; the line was ignored",
    "unparsable_line": "the line is not a 'key: value' record; it was ignored",
    "outside_group": "the record comes before any User-agent line; it was ignored",
    "user_agent_trimmed": "the user-agent value was cut to its product token",
    "user_agent_invalid": "the user-agent value has no product token; it matches no crawler",
    "pattern_not_absolute": "the pattern starts with neither '/' nor '*'; it can match no path",
    "invalid_crawl_delay": "Crawl-delay is not a non-negative number; it was ignored",
    "invalid_request_rate": "Request-rate is not 'n/m[s|m|h]'; it was ignored",
    "sitemap_not_absolute": "the Sitemap value is not an absolute URL",
}
