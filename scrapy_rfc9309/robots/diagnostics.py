"""Problems found while reading a robots.txt file, each tied to its line.

A diagnostic never changes how the file is read: it tells the site owner (or
the crawler operator) where the file departs from RFC 9309 and which leniency
the parser applied instead of failing.

Real files can carry thousands of them (an HTML page served as robots.txt
gives one per line), so they are kept compactly and turned into
:class:`Diagnostic` objects only when asked for.
"""

from __future__ import annotations

from array import array
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
    "bom": "a UTF-8 byte order mark was skipped",
    "utf16": "the body is UTF-16, not the UTF-8 RFC 9309 asks for; decoded by its byte order mark",
    "invalid_utf8": "the body is not valid UTF-8; decoded with a fallback charset",
    "truncated": "the body is larger than the parse limit; the rest was ignored",
    "line_too_long": "the line is longer than 16,663 bytes; the rest was ignored",
    "html_body": "the body looks like an HTML page; only lines that look like records were read",
    "missing_colon": "no colon after the key; whitespace accepted as the separator",
    "key_typo": "a misspelt or extended key was accepted",
    "unknown_key": "the key is not part of RFC 9309; the line was ignored",
    "unparsable_line": "the line is not a 'key: value' record; it was ignored",
    "outside_group": "the record comes before any User-agent line; it was ignored",
    "user_agent_trimmed": "the user-agent value was cut to its product token",
    "user_agent_invalid": "the user-agent value has no product token; it matches no crawler",
    "pattern_not_absolute": "the pattern starts with neither '/' nor '*'; it can match no path",
    "invalid_crawl_delay": "Crawl-delay is not a non-negative number; it was ignored",
    "invalid_request_rate": "Request-rate is not 'n/m[s|m|h]'; it was ignored",
    "request_rate_window": "the time window after Request-rate is not supported; the rate applies at all hours",
    "sitemap_not_absolute": "the Sitemap value is not an absolute URL",
    "license_not_absolute": "the License value is not an absolute URL; it was ignored (RSL 1.0)",
    "usage_unparsable": "the usage preference is not a structured-field Dictionary (RFC 9651); it states nothing",
    "usage_unknown_label": "the usage preference has labels or values this crawler does not know; they are unknown",
}
_CODE_LIST = list(CODES)
_CODE_ID = {code: i for i, code in enumerate(_CODE_LIST)}
DETAIL_CHARS = 120


class DiagnosticLog:
    """Diagnostics as three parallel compact arrays: line, code, detail."""

    __slots__ = ("lines", "codes", "details")

    def __init__(self) -> None:
        self.lines = array("I")
        self.codes = bytearray()
        self.details: list[str | None] = []

    def add(self, line: int, code: str, detail: str | None = None) -> None:
        self.lines.append(line)
        self.codes.append(_CODE_ID[code])
        if detail is not None and len(detail) > DETAIL_CHARS:
            detail = detail[:DETAIL_CHARS] + "..."
        self.details.append(detail)

    def add_lines(self, first: int, count: int, code: str, detail: str | None = None) -> None:
        """The same diagnostic for ``count`` lines from ``first`` (at C speed)."""
        self.lines.extend(range(first, first + count))
        self.codes.extend(bytes([_CODE_ID[code]]) * count)
        if detail is not None and len(detail) > DETAIL_CHARS:
            detail = detail[:DETAIL_CHARS] + "..."
        self.details.extend([detail] * count)

    def __len__(self) -> int:
        return len(self.codes)

    def to_list(self) -> list[Diagnostic]:
        out = []
        for line, code_id, detail in zip(self.lines, self.codes, self.details):
            code = _CODE_LIST[code_id]
            message = CODES[code] if detail is None else f"{CODES[code]}: {detail}"
            out.append(Diagnostic(line, code, message))
        return out
