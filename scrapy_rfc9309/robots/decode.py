"""Bytes to text: the parse limit, the byte order mark, and the charset.

RFC 9309 files are UTF-8.  Real ones are sometimes Latin-1 or Windows-1252;
those are decoded with the charset the server declared (or ISO-8859-1) and
reported, never rejected.  A few are UTF-16, saved so by an editor: their
byte order mark says so unambiguously, and they are decoded as UTF-16 and
reported (read as UTF-8, every line would hold NUL octets and no rule would
apply, though the site meant them).
"""

from __future__ import annotations

import codecs
import re
from collections.abc import Generator
from functools import cache
from typing import Any, overload

from .diagnostics import DiagnosticLog
from .steps import finish

#: RFC 9309 section 2.5: crawlers must parse at least 500 KiB.
MIN_PARSE_BYTES = 512_000
DEFAULT_PARSE_BYTES = 512_000

_BOM = b"\xef\xbb\xbf"
_UTF16_BOMS = {b"\xff\xfe": "utf-16-le", b"\xfe\xff": "utf-16-be"}
#: a body that is not UTF-8 (and names no charset) is read in windows of this many bytes
#: of whole lines, and at most STEP_LINES lines of a window that is not UTF-8 a step
#: (see _fallback): about a millisecond each
STEP_BYTES = 16_384
STEP_LINES = 512


@cache
def _charset() -> re.Pattern[str]:
    """(Compiled when a Content-Type first names a charset.)"""
    return re.compile(r"charset\s*=\s*[\"']?([A-Za-z0-9._:-]+)", re.IGNORECASE)


def charset_of(content_type: str | bytes | None) -> str | None:
    """The codec named by a Content-Type header, if Python knows it."""
    if not content_type:
        return None
    if isinstance(content_type, bytes):
        content_type = content_type.decode("latin-1")
    m = _charset().search(content_type)
    if not m:
        return None
    try:
        return codecs.lookup(m.group(1)).name
    except LookupError:
        return None


def decode_body(
    body: bytes | str,
    content_type: str | bytes | None,
    max_bytes: int,
    diagnostics: DiagnosticLog,
) -> str:
    """The text to parse: at most ``max_bytes`` octets, BOM skipped."""
    return finish(decoding(body, content_type, max_bytes, diagnostics))


def decoding(
    body: bytes | str,
    content_type: str | bytes | None,
    max_bytes: int,
    diagnostics: DiagnosticLog,
) -> Generator[None, None, str]:
    """:func:`decode_body` in steps (see :mod:`.steps`): none for a body that
    is UTF-8 or names its charset; a body that is neither is read a line
    at a time, :data:`STEP_LINES` lines a step."""
    # (the usual int and bytes skip the int(), max() and bytes() calls: every file pays them)
    if type(max_bytes) is not int or max_bytes < MIN_PARSE_BYTES:
        max_bytes = max(int(max_bytes), MIN_PARSE_BYTES)
    if isinstance(body, str):
        if body[:1] == "\ufeff":
            body = body[1:]
            diagnostics.add(1, "bom")
        if len(body) > max_bytes // 4 and not body.isascii() or len(body) > max_bytes:
            raw = body.encode("utf-8", "surrogatepass")
            if len(raw) > max_bytes:
                body = raw[:max_bytes].decode("utf-8", "ignore")
                _truncated(body, max_bytes, diagnostics)
        return body

    if type(body) is not bytes:  # bytearray, memoryview
        body = bytes(body)
    if body[:1] == b"\xef":
        n = 3 if body.startswith(_BOM) else 2 if body.startswith(_BOM[:2]) else 1
        # not a partial BOM but a character (U+F000-U+FFFF) when a continuation octet follows
        if n == 3 or not b"\x80" <= body[n : n + 1] <= b"\xbf":
            body = body[n:]
            diagnostics.add(1, "bom", None if n == 3 else f"only {n} of its 3 bytes")
    elif body[:2] in _UTF16_BOMS:
        return _utf16(body, max_bytes, diagnostics)
    cut = len(body) > max_bytes
    if cut:
        body = body[:max_bytes]
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError as exc:
        if cut and exc.start >= len(body) - 3 and exc.reason == "unexpected end of data":
            # the limit fell inside a multi-byte character
            text = body[: exc.start].decode("utf-8", "replace")
        else:
            text = yield from _fallback(body, content_type, exc, diagnostics)
    if cut:
        _truncated(text, max_bytes, diagnostics)
    return text


def _utf16(body: bytes, max_bytes: int, diagnostics: DiagnosticLog) -> str:
    """A body that starts with a UTF-16 byte order mark, decoded as UTF-16.

    The limit counts the body's own octets (after the mark), cut to an even
    number; an odd last octet or an unpaired surrogate becomes U+FFFD.
    """
    codec = _UTF16_BOMS[body[:2]]
    diagnostics.add(1, "utf16", codec.upper().replace("-LE", "LE").replace("-BE", "BE"))
    body = body[2:]
    cut = len(body) > max_bytes
    if cut:
        body = body[: max_bytes & ~1]
    text = body.decode(codec, "replace")
    if cut:
        if text[-1:] == "\ufffd":  # the limit fell between the two halves of a surrogate pair
            text = text[:-1]
        _truncated(text, max_bytes, diagnostics)
    return text


def _fallback(
    body: bytes, content_type: str | bytes | None, exc: UnicodeDecodeError, diagnostics: DiagnosticLog
) -> Generator[None, None, str]:
    """Decode a body that is not valid UTF-8.

    A charset declared by the server is trusted for the whole body.  With
    none, each line that is valid UTF-8 stays UTF-8 and only the lines with
    invalid bytes are read as ISO-8859-1, so one stray byte in a comment
    cannot change how the non-ASCII rules of the other lines match.  That
    reading goes a window of :data:`STEP_BYTES` at a time, each tried as a
    whole first, and at most :data:`STEP_LINES` lines a step (a Python step
    per line: 500 KiB of short lines took 30 ms at once).
    """
    line = _line_at(body, exc.start, b"\r", b"\n")
    charset = charset_of(content_type)
    if charset is not None and charset != "utf-8" and _ascii_compatible(charset):
        try:
            text = body.decode(charset)
        except (UnicodeError, LookupError):  # UnicodeError: e.g. the "undefined" codec
            pass
        else:
            diagnostics.add(line, "invalid_utf8", f"first invalid byte at offset {exc.start}; decoded as {charset}")
            return text
    lines: list[str] = []
    bad = 0
    start, size = 0, len(body)
    while start < size:
        # a window of whole lines: cut after a LF (or a CR when no LF follows)
        end = body.find(b"\n", start + STEP_BYTES)
        if end < 0:
            end = body.find(b"\r", start + STEP_BYTES)
        end = size if end < 0 else end + 1
        window = body[start:end]
        start = end
        try:
            lines.append(window.decode("utf-8"))
            continue
        except UnicodeDecodeError:
            pass
        raws = window.splitlines(True)  # CR, LF or CRLF, kept on their line
        for first in range(0, len(raws), STEP_LINES):
            some = []
            for raw in raws[first : first + STEP_LINES]:
                try:
                    some.append(raw.decode("utf-8"))
                except UnicodeDecodeError:
                    some.append(raw.decode("iso8859-1"))
                    bad += 1
            lines.append("".join(some))  # (one string a step: freeing each line's at the end took 10 ms)
            yield
    diagnostics.add(
        line,
        "invalid_utf8",
        f"first invalid byte at offset {exc.start}; {bad:,} line(s) with invalid bytes decoded as iso8859-1",
    )
    return "".join(lines)


# Robots.txt syntax is ASCII: a declared charset that reads these octets
# differently (UTF-16, EBCDIC, UTF-7) would turn every rule into garbage.
_ASCII_PROBE = bytes(range(9, 14)) + bytes(range(32, 127))


def _ascii_compatible(charset: str) -> bool:
    try:
        return _ASCII_PROBE.decode(charset) == _ASCII_PROBE.decode("ascii")
    except (UnicodeError, LookupError):
        return False


def _truncated(text: str, max_bytes: int, diagnostics: DiagnosticLog) -> None:
    line = _line_at(text, len(text), "\r", "\n")
    diagnostics.add(line, "truncated", f"parsed the first {max_bytes:,} bytes")


@overload
def _line_at(data: bytes, end: int, cr: bytes, lf: bytes) -> int: ...
@overload
def _line_at(data: str, end: int, cr: str, lf: str) -> int: ...
def _line_at(data: Any, end: int, cr: Any, lf: Any) -> int:
    """The 1-based line holding offset ``end``: CR, LF and CRLF each end a line."""
    return int(data.count(lf, 0, end) + data.count(cr, 0, end) - data.count(cr + lf, 0, end) + 1)
