"""A robots.txt body as received: its ``Content-Encoding`` undone and the cut at
the parse limit, never producing more than the limit (a huge or "bomb" body is
truncated, not failed; docs/middleware.md, "robots.txt downloads")."""

from __future__ import annotations

import zlib
from typing import Any

#: how far past the limit a compressed body is decoded just to count what was cut (the
#: count is a lower bound: decoding runs on the crawl's loop, about 2 ms per MiB)
COUNT_LIMIT = 256 * 1024
#: compressed bytes handed to zlib at a time: a member that ends hands back the rest of
#: its input as a copy, so a body of many small gzip members must not copy all of it each time
INFLATE_WINDOW = 16_384
#: gzip members decoded at most (``cat a.gz b.gz`` makes two; a body of tens of thousands
#: of empty members costs tens of milliseconds to decode): more is a corrupt body
MAX_MEMBERS = 256


class ContentDecodingError(Exception):
    """A 2xx body that cannot be decoded (unknown or corrupt Content-Encoding)."""


def read_body(raw: bytes, encodings: list[bytes], limit: int, size: int | None = None) -> tuple[bytes, int]:
    """``(body, cut)``: ``raw`` decoded (:func:`decode_content`) and cut to
    ``limit`` bytes (:func:`cut_body`), and how many bytes were cut (0 if none;
    a lower bound past what was counted).  ``size``: the ``Content-Length`` of
    a plain transfer stopped early, the size of the whole file.  Raises
    ContentDecodingError."""
    if encodings:
        body, total = decode_content(raw, encodings, limit)
    else:
        body, total = raw, max(len(raw), size or 0)
    if len(body) > limit or total > limit:
        return cut_body(body, limit), max(total, len(body)) - limit
    return body, 0


def decode_content(body: bytes, encodings: list[bytes], limit: int) -> tuple[bytes, int]:
    """Undo ``Content-Encoding`` (gzip, x-gzip, deflate, identity), producing at
    most ``limit + 1`` bytes.  Returns ``(decoded, total)`` where ``total`` is
    how many bytes the whole body decodes to (counted, not kept, up to
    ``COUNT_LIMIT`` past the limit: a lower bound past it).  Raises
    ContentDecodingError."""
    codings = [c.strip().lower() for value in encodings for c in value.split(b",")]
    total = len(body)
    # Codings are listed in the order they were applied: undo the last first.
    for coding in reversed(codings):
        if coding in (b"", b"identity"):
            continue
        if coding in (b"gzip", b"x-gzip"):
            body, total = _inflate(body, limit, wbits=47)  # 32 + 15: gzip or zlib header
        elif coding == b"deflate":
            try:
                body, total = _inflate(body, limit, wbits=15)
            except ContentDecodingError:
                body, total = _inflate(body, limit, wbits=-15)  # raw deflate, as some servers send
        else:
            raise ContentDecodingError(f"unsupported Content-Encoding {coding.decode('latin-1')!r}")
    return body, total


def _inflate(data: bytes, limit: int, wbits: int) -> tuple[bytes, int]:
    out: list[bytes] = []
    size = 0
    total = 0
    view = memoryview(data)
    pos, end = 0, len(data)
    members = 0
    try:
        while pos < end:  # more than one gzip member is allowed
            members += 1
            if members > MAX_MEMBERS:
                raise ContentDecodingError(f"more than {MAX_MEMBERS} compressed members")
            decoder = zlib.decompressobj(wbits)
            while pos < end and not decoder.eof:
                window = view[pos : pos + INFLATE_WINDOW]
                pos += len(window)
                chunk = decoder.decompress(window, max(1, limit + 1 - size))
                out.append(chunk)
                size += len(chunk)
                total += len(chunk)
                if size > limit:
                    return b"".join(out), total + _count_rest(decoder, view[pos:], COUNT_LIMIT)
            pos -= len(decoder.unused_data)  # (the next member's start, handed back)
    except zlib.error as exc:
        # Corrupt, not merely cut short (a stopped transfer decodes without error):
        # what follows the damage is unknown, so the file is not read at all.
        raise ContentDecodingError(f"corrupt compressed body after {size} bytes: {exc}") from None
    return b"".join(out), total


def _count_rest(decoder: Any, rest: memoryview, budget: int) -> int:
    """Decode what is left of the member only to count it, at most ``budget``
    bytes (a lower bound then), never holding more than 64 KiB."""
    counted = 0
    tail: bytes | memoryview = decoder.unconsumed_tail
    pos = 0
    while counted < budget and not decoder.eof:
        if not tail:
            if pos >= len(rest):
                break
            tail = rest[pos : pos + INFLATE_WINDOW]
            pos += len(tail)
        counted += len(decoder.decompress(tail, min(65_536, budget - counted)))
        tail = decoder.unconsumed_tail
    return counted


def cut_body(body: bytes, limit: int) -> bytes:
    """The first ``limit`` bytes, minus a UTF-8 character the cut split (so
    the parser does not mistake a UTF-8 file for Latin-1)."""
    if len(body) <= limit:
        return body
    cut = body[:limit]
    i = len(cut) - 1
    continuation = 0
    while i >= 0 and continuation < 3 and (cut[i] & 0xC0) == 0x80:
        i -= 1
        continuation += 1
    if i >= 0 and cut[i] >= 0xC0:
        needed = 2 if cut[i] < 0xE0 else 3 if cut[i] < 0xF0 else 4
        if continuation + 1 < needed:
            cut = cut[:i]
    return cut
