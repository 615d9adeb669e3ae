"""How a persistent store keeps an entry, and how it checks what it reads back.

The SQLite and Redis stores keep the same two things (docs/storage.md, "What
is stored"):

* per origin, a small **entry**: what the decision needs - the access result,
  the status, the fetch time and the expiry, the SHA-256 of the body - and
  the content type and final URL only when they are not the usual ones
  (``text/plain``, ``<origin>/robots.txt``);
* per distinct body, the **body**, zlib-compressed, once for every origin that
  serves the same file (many sites serve the same CMS default).

Everything read back from a store is hostile until checked (another program,
an older version, a bug or an attacker may have written it): :func:`decode`
raises :class:`BadEntry` for an entry that is malformed or out of range, and
caps the expiry at 24 hours after the last fetch (RFC 9309 section 2.4);
:func:`read` (:func:`check` in a store's thread, then :func:`report` on the
crawl's) makes a bad entry a miss for that origin, with a warning and a stat
through the store's ``count`` hook.

The entry, big-endian::

    B version (ENTRY_VERSION)   B access (1 success, 2 unavailable, 3 unreachable)
    H status (0: no response)   d fetched_at   d expires_at   B flags
    [32s digest]      flags & 1: the body's SHA-256 (a success with a body)
    [d checked_at]    flags & 2: a stored copy standing in for an unreachable file, last tried then
    [H len, content type]  flags & 4 (flags & 8: no content type at all)
    [url]             flags & 16: the rest of the entry
"""

from __future__ import annotations

import hashlib
import logging
import math
import struct
import zlib
from dataclasses import dataclass, replace

from .base import RobotsEntry, RobotsStorage

logger = logging.getLogger(__name__)

#: the layout version; an entry of another version is a miss (fetched again)
ENTRY_VERSION = 2
#: RFC 9309 section 2.4: a robots.txt is not used longer than 24 hours after it was fetched
MAX_FRESH_SECONDS = 86_400.0
#: how far ahead of this machine's clock a fetch time may be (another worker's clock)
CLOCK_SKEW = 600.0
#: the content type an entry does not spell out
DEFAULT_CONTENT_TYPE = "text/plain"
#: a body decompressing to more than this is not one this plugin stored
MAX_BODY = 64 * 1024 * 1024
MAX_CONTENT_TYPE = 1024
MAX_URL = 16 * 1024
#: zlib level: 6 (zlib's default) keeps the corpus 1% larger than 9 at 3/4 of its CPU
ZLIB_LEVEL = 6

_ACCESS = {"success": 1, "unavailable": 2, "unreachable": 3}
_ACCESS_OF = {code: name for name, code in _ACCESS.items()}
_HEAD = struct.Struct(">BBHddB")
_DOUBLE = struct.Struct(">d")
_LENGTH = struct.Struct(">H")
_DIGEST, _CHECKED, _TYPE, _NO_TYPE, _URL = 1, 2, 4, 8, 16
DIGEST_SIZE = 32


class BadEntry(ValueError):
    """A stored entry (or body) that is malformed or out of range; the
    message says what is wrong with it."""


class OtherVersion(BadEntry):
    """An entry of another layout version: a plain miss, not worth a warning."""


def digest_of(body: bytes) -> bytes:
    return hashlib.sha256(body).digest()


def compress(body: bytes) -> bytes:
    """``body`` zlib-compressed, with a window and a hash table no larger than it needs.

    ``zlib.compress`` sets up a 32 KiB window and a 64 KiB hash table (about 256 KiB of
    state, cleared for every call) whatever the size of the input; a robots.txt is mostly
    a few KiB, for which that set-up costs several times the compression itself.  A
    window fitted to the body (``wbits``, 9 to 15) and a hash table to match
    (``memLevel``, ``wbits`` - 7) make the same stream format, read back by any zlib
    decompressor (its default window is the largest); on the corpus the output is 0.02%
    larger.  A body of 16 KiB or more gets zlib's defaults."""
    bits = max(9, min(15, len(body).bit_length()))
    packer = zlib.compressobj(ZLIB_LEVEL, zlib.DEFLATED, bits, max(1, bits - 7))
    return packer.compress(body) + packer.flush()


def robots_url_of(origin: str) -> str:
    return origin + "/robots.txt"


def encode(origin: str, entry: RobotsEntry) -> tuple[bytes, bytes | None]:
    """``(entry bytes, digest)``: the entry of ``origin`` as stored, and the
    SHA-256 of its body (None when it has none: the body is then not kept)."""
    digest = digest_of(entry.body) if entry.access == "success" and entry.body else None
    flags = 0
    tail = b""
    if digest is not None:
        flags |= _DIGEST
        tail += digest
    if entry.checked_at is not None:
        flags |= _CHECKED
        tail += _DOUBLE.pack(entry.checked_at)
    content_type = entry.content_type.encode("utf-8", "replace") if entry.content_type is not None else None
    if content_type is None or len(content_type) > MAX_CONTENT_TYPE:
        flags |= _NO_TYPE
    elif entry.content_type != DEFAULT_CONTENT_TYPE:
        flags |= _TYPE
        tail += _LENGTH.pack(len(content_type)) + content_type
    if entry.url != robots_url_of(origin):
        flags |= _URL
        tail += entry.url.encode("utf-8", "replace")
    head = _HEAD.pack(
        ENTRY_VERSION,
        _ACCESS[entry.access],
        entry.status if entry.status and 0 < entry.status <= 0xFFFF else 0,
        entry.fetched_at,
        entry.expires_at,
        flags,
    )
    return head + tail, digest


def entry_digest(data: object) -> bytes | None:
    """The body digest an encoded entry names (None: none, or not readable)."""
    if not isinstance(data, bytes) or len(data) < _HEAD.size + DIGEST_SIZE or data[0] != ENTRY_VERSION:
        return None
    if not data[_HEAD.size - 1] & _DIGEST:
        return None
    return data[_HEAD.size : _HEAD.size + DIGEST_SIZE]


def decode(origin: str, data: object, body: object, now: float) -> RobotsEntry:
    """The entry ``data`` (as :func:`encode` made it) with its compressed
    ``body`` (None when absent), checked at ``now``.  :class:`BadEntry` when
    it cannot be used (:class:`OtherVersion` for another layout version)."""
    if not isinstance(data, bytes):
        raise BadEntry(f"not an entry ({type(data).__name__})")
    if not data:
        raise BadEntry("empty")
    if data[0] != ENTRY_VERSION:
        raise OtherVersion(f"layout version {data[0]}")
    if len(data) < _HEAD.size:
        raise BadEntry("cut short")
    version, access, status, fetched_at, expires_at, flags = _HEAD.unpack_from(data)
    if version != ENTRY_VERSION:
        raise OtherVersion(f"layout version {version}")
    if access not in _ACCESS_OF:
        raise BadEntry(f"unknown access result {access}")
    if flags & ~(_DIGEST | _CHECKED | _TYPE | _NO_TYPE | _URL) or flags & _TYPE and flags & _NO_TYPE:
        raise BadEntry(f"unknown flags {flags:#x}")
    at = _HEAD.size
    digest = None
    if flags & _DIGEST:
        digest = _take(data, at, DIGEST_SIZE)
        at += DIGEST_SIZE
    checked_at = None
    if flags & _CHECKED:
        (checked_at,) = _DOUBLE.unpack(_take(data, at, _DOUBLE.size))
        at += _DOUBLE.size
    content_type: str | None = DEFAULT_CONTENT_TYPE
    if flags & _NO_TYPE:
        content_type = None
    elif flags & _TYPE:
        (length,) = _LENGTH.unpack(_take(data, at, _LENGTH.size))
        at += _LENGTH.size
        content_type = _text(_take(data, at, length), "content type")
        at += length
    url = robots_url_of(origin)
    if flags & _URL:
        url = _text(data[at:], "url")
        at = len(data)
    if at != len(data):
        raise BadEntry("trailing bytes")
    text = inflate(body, digest) if digest is not None else b""
    entry = RobotsEntry(
        access=_ACCESS_OF[access],
        status=status or None,
        body=text,
        content_type=content_type,
        fetched_at=fetched_at,
        expires_at=expires_at,
        url=url,
        checked_at=checked_at,
    )
    return checked(entry, now)


@dataclass(frozen=True)
class Read:
    """What :func:`check` made of a stored entry (no log, no stat: any thread)."""

    #: the entry to use, or None
    entry: RobotsEntry | None
    #: why the stored entry cannot be used (None: it can, or there was none)
    problem: str | None = None
    #: an entry of another layout version (a plain miss)
    old: bool = False
    #: its expiry was capped at 24 hours after the last fetch
    capped: bool = False


def check(origin: str, data: object, body: object, now: float) -> Read:
    """:func:`decode`, its failures as a :class:`Read` (``data`` None: no entry)."""
    if data is None:
        return Read(None)
    try:
        entry = decode(origin, data, body, now)
    except OtherVersion:
        return Read(None, old=True)
    except BadEntry as exc:
        return Read(None, problem=str(exc))
    assert isinstance(data, bytes)
    return Read(entry, capped=entry.expires_at != _HEAD.unpack_from(data)[4])


def report(store: RobotsStorage, origin: str, read: Read) -> RobotsEntry | None:
    """The entry of ``read``, told about for ``store`` (on the crawl's thread): an
    unusable one is None (a miss: robots.txt is fetched again), with one WARNING
    and ``rfc9309/storage/invalid_entries``; one of another layout version
    ``storage/old_entries`` (no warning); a capped expiry ``storage/expiries_capped``."""
    if read.problem is not None:
        invalid(store, origin, read.problem)
    elif read.old:
        store.count("storage/old_entries")
    elif read.capped:
        store.count("storage/expiries_capped")
    return read.entry


def read(store: RobotsStorage, origin: str, data: object, body: object, now: float) -> RobotsEntry | None:
    """:func:`check`, then :func:`report`."""
    return report(store, origin, check(origin, data, body, now))


def invalid(store: RobotsStorage, origin: str, reason: str) -> None:
    """Tell about an entry of ``origin`` that ``store`` holds and cannot be used."""
    store.count("storage/invalid_entries")
    logger.warning(
        "robots.txt store %s: the entry of %s is unusable (%s); fetching robots.txt again", store.url, origin, reason
    )


def inflate(body: object, digest: bytes) -> bytes:
    """The body stored compressed under ``digest``, checked against it."""
    if body is None:
        raise BadEntry("its body is missing")
    if not isinstance(body, bytes):
        raise BadEntry(f"its body is not bytes ({type(body).__name__})")
    inflater = zlib.decompressobj()
    try:
        text = inflater.decompress(body, MAX_BODY)
    except zlib.error as exc:
        raise BadEntry(f"its body does not decompress ({exc})") from None
    if inflater.unconsumed_tail:
        raise BadEntry(f"its body decompresses to more than {MAX_BODY} bytes")
    if not inflater.eof:
        raise BadEntry("its body is cut short")
    if digest_of(text) != digest:
        raise BadEntry("its body does not match its SHA-256")
    return text


def checked(entry: RobotsEntry, now: float) -> RobotsEntry:
    """``entry`` if its values are in range, its expiry capped at 24 hours
    after its last fetch; else :class:`BadEntry`."""
    if entry.access not in _ACCESS:
        raise BadEntry(f"unknown access result {entry.access!r}")
    status = entry.status
    if status is not None and (type(status) is not int or not 100 <= status <= 999):
        raise BadEntry(f"status {status!r}")
    fetched_at = _time(entry.fetched_at, "fetch time")
    if fetched_at > now + CLOCK_SKEW:
        raise BadEntry(f"fetch time {fetched_at!r} is in the future")
    last = fetched_at
    if entry.checked_at is not None:
        last = _time(entry.checked_at, "last try")
        if not fetched_at <= last <= now + CLOCK_SKEW:
            raise BadEntry(f"last try {last!r} out of range")
    expires_at = _time(entry.expires_at, "expiry")
    if not isinstance(entry.body, bytes) or entry.body and entry.access != "success":
        raise BadEntry("a body where none belongs")
    if entry.content_type is not None and (
        not isinstance(entry.content_type, str) or len(entry.content_type) > MAX_CONTENT_TYPE
    ):
        raise BadEntry("content type")
    if not isinstance(entry.url, str) or len(entry.url) > MAX_URL:
        raise BadEntry("url")
    if expires_at > last + MAX_FRESH_SECONDS:
        return replace(entry, expires_at=last + MAX_FRESH_SECONDS)
    return entry


def _time(value: object, what: str) -> float:
    if type(value) is not float and type(value) is not int:
        raise BadEntry(f"{what} {value!r}")
    if not math.isfinite(value) or value < 0:
        raise BadEntry(f"{what} {value!r}")
    return float(value)


def _take(data: bytes, at: int, size: int) -> bytes:
    """``size`` bytes of ``data`` from ``at``; :class:`BadEntry` when it is shorter."""
    if len(data) < at + size:
        raise BadEntry("cut short")
    return data[at : at + size]


def _text(data: bytes, what: str) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise BadEntry(f"{what} is not UTF-8") from None
