"""The stored entry layout shared by SQLite and Redis (no store, no crawl)."""

from __future__ import annotations

import math
import zlib

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from scrapy_rfc9309.storage import RobotsEntry, entries

NOW = 1_800_000_000.0
ORIGIN = "https://example.com:443"


def stored(entry: RobotsEntry) -> tuple[bytes, bytes | None]:
    data, digest = entries.encode(ORIGIN, entry)
    return data, entries.compress(entry.body) if digest is not None else None


@pytest.mark.parametrize(
    "entry",
    [
        RobotsEntry(
            "success", 200, b"User-agent: *\nDisallow: /x\n", "text/plain", NOW, NOW + 3600, ORIGIN + "/robots.txt"
        ),
        RobotsEntry("success", 200, b"\x00\xff binary", "text/plain; charset=latin-1", NOW, NOW + 60, "https://cdn/r"),
        RobotsEntry("success", 200, b"", None, NOW, NOW + 60, ORIGIN + "/robots.txt"),
        RobotsEntry("unavailable", 404, b"", "text/html", NOW, NOW + 86_400, ""),
        RobotsEntry("unreachable", None, b"", None, NOW, NOW + 300, ORIGIN + "/robots.txt"),
        # a stored copy standing in for an unreachable file: fresh 24 h after the last try
        RobotsEntry("success", 200, b"Disallow: /\n", "text/plain", NOW - 5 * 86_400, NOW + 300, "", checked_at=NOW),
    ],
)
def test_entries_round_trip(entry):
    data, body = stored(entry)
    assert entries.decode(ORIGIN, data, body, NOW) == entry


def test_the_usual_content_type_and_url_are_not_spelled_out():
    usual = RobotsEntry("success", 200, b"x", "text/plain", NOW, NOW + 1, ORIGIN + "/robots.txt")
    data, digest = entries.encode(ORIGIN, usual)
    assert len(data) == 21 + 32 and digest == entries.digest_of(b"x")
    assert entries.entry_digest(data) == digest


def test_an_expiry_past_24_hours_after_the_last_fetch_is_capped():
    far = RobotsEntry("success", 200, b"x", "text/plain", NOW, 1e12, "")
    data, body = stored(far)
    assert entries.decode(ORIGIN, data, body, NOW).expires_at == NOW + 86_400


@pytest.mark.parametrize(
    ("fields", "reason"),
    [
        ({"access": "maybe"}, "access"),
        ({"status": 7}, "status"),
        ({"fetched_at": math.nan}, "fetch time"),
        ({"fetched_at": NOW + 86_400}, "future"),
        ({"expires_at": math.inf}, "expiry"),
        ({"expires_at": -1.0}, "expiry"),
        ({"checked_at": NOW - 10 * 86_400}, "last try"),
    ],
)
def test_out_of_range_values_are_bad_entries(fields, reason):
    entry = RobotsEntry("success", 200, b"", "text/plain", NOW - 60, NOW + 60, "")
    with pytest.raises(entries.BadEntry, match=reason):
        entries.checked(RobotsEntry(**{**entry.__dict__, **fields}), NOW)


def test_a_body_that_is_not_the_one_named_is_a_bad_entry():
    entry = RobotsEntry("success", 200, b"Disallow: /\n", "text/plain", NOW, NOW + 60, "")
    data, _ = stored(entry)
    for body, reason in (
        (None, "missing"),
        (zlib.compress(b"Allow: /\n"), "SHA-256"),
        (b"not zlib", "decompress"),
        (zlib.compress(b"Disallow: /\n")[:-3], "cut short"),
    ):
        with pytest.raises(entries.BadEntry, match=reason):
            entries.decode(ORIGIN, data, body, NOW)


def test_another_layout_version_is_told_apart():
    with pytest.raises(entries.OtherVersion):
        entries.decode(ORIGIN, b"\x01anything", None, NOW)


@settings(max_examples=300, deadline=None)
@given(data=st.one_of(st.binary(max_size=120), st.text(max_size=20), st.integers()), body=st.binary(max_size=40))
def test_garbage_is_a_bad_entry_never_another_error(data, body):
    try:
        entries.decode(ORIGIN, data, body, NOW)
    except entries.BadEntry:
        pass


@settings(max_examples=200, deadline=None)
@given(st.binary(min_size=21, max_size=120))
def test_garbage_after_the_version_byte_is_a_bad_entry(tail):
    try:
        entry = entries.decode(ORIGIN, bytes([entries.ENTRY_VERSION]) + tail, None, NOW)
    except entries.BadEntry:
        return
    assert entry.expires_at <= (entry.checked_at or entry.fetched_at) + 86_400


@pytest.mark.parametrize("size", [0, 1, 255, 256, 511, 512, 730, 4_096, 16_383, 16_384, 100_000])
def test_a_compressed_body_reads_back_and_its_window_fits_it(size):
    """A small body is compressed with a window of its size, not zlib's 32 KiB (whose
    set-up costs more than compressing a robots.txt of a few KiB), and any zlib
    decompressor reads it back: the store's own reader, and zlib's defaults."""
    body = bytes((i * 7919) % 251 for i in range(size // 2)) + b"Disallow: /x\n" * (size // 26)
    packed = entries.compress(body)
    assert zlib.decompress(packed) == body
    assert entries.inflate(packed, entries.digest_of(body)) == body
    window = 1 << ((packed[0] >> 4) + 8)  # RFC 1950: CINFO, the window's log2 less 8
    assert window == min(32_768, max(512, 1 << len(body).bit_length()))
