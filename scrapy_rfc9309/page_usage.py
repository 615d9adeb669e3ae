"""What a response states about its own use, read where it arrives (the middleware's ``process_response``):
Content-Usage, Content-Signal, TDMRep (file, headers, meta tags) and the page's robots directives, combined most
restrictive first (docs/usage_preferences.md).  Never raises; none of it runs for a crawl that declares no purpose."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import lru_cache
from typing import TYPE_CHECKING, Any, NamedTuple

from .robots.tdmrep import POLICY, RESERVATION, UNSET, from_headers, from_metas, resolve
from .robots.usage import UNKNOWN, Source, Usage, combine, from_header, from_signal_header

if TYPE_CHECKING:
    from scrapy.http import Response

    from .robots.tdmrep import TdmRep

__all__ = ["PageReading", "read_response"]

_TDM_NAMES = (RESERVATION, POLICY)


class PageReading(NamedTuple):
    """What one response states: ``usage`` (its own statements; robots.txt's are not in it), the ``nofollow``
    directives that address the crawler, whether its HTML head was read, and the RSL licenses it names."""

    usage: Usage
    nofollow: tuple[Source, ...]
    head_read: bool
    licenses: tuple[tuple[str, str], ...] = ()


@lru_cache(maxsize=64)
def meta_names(tokens: tuple[str, ...]) -> frozenset[str]:
    """The meta tag names read: ``robots``, each product token, ``tdm-reservation``, ``tdm-policy``."""
    from .robots.directives import GENERIC_NAMES

    return frozenset({*GENERIC_NAMES, *(t.lower() for t in tokens), RESERVATION, POLICY})


#: the header names read, as each kind of ``Headers`` keeps them (its own ``normkey``)
_NAMES: tuple[bytes, ...] = (b"content-usage", b"content-signal", b"x-robots-tag", b"tdm-reservation", b"tdm-policy")
_NAMES += (b"content-type", b"link")
_NORMALIZED: dict[type, dict[bytes, Any]] = {}


def _header_values(headers: Any) -> Callable[[bytes], Sequence[bytes]]:
    """Field lines by lower-case name, each normalised once per Headers class (``getlist`` raises for each miss)."""
    if (keys := _NORMALIZED.get(type(headers))) is None:
        normkey = getattr(headers, "normkey", None)
        if not isinstance(headers, dict) or normkey is None:  # not Scrapy's: its own getlist
            return lambda name: headers.getlist(name)
        keys = _NORMALIZED[type(headers)] = {name: normkey(name) for name in _NAMES}
    get = dict.get
    return lambda name: get(headers, keys[name]) or ()


#: (the file's declaration for the URL, tdm-* header lines, tdm-* meta tags) -> their statement: the
#: pages of a site repeat these; bounded in entries, and header values longer than _DECLARED_CHARS not kept
_DECLARED: dict[tuple[Any, ...], Usage] = {}
_DECLARED_MAX, _DECLARED_CHARS = 1024, 512


def read_response(response: Response, url: str, tokens: Sequence[str], tdmrep: TdmRep | None) -> PageReading:
    """Every usage statement ``response`` makes about itself, for ``tokens``, with the origin's ``tdmrep`` (or None)."""
    from .robots.directives import NOTHING, page_directives
    from .robots.html_head import EMPTY_HEAD, is_html, read_head
    from .robots.rsl import page_licenses

    values = _header_values(response.headers)
    content_usage, content_signal = values(b"content-usage"), values(b"content-signal")
    robots_tag, reservation, policy = values(b"x-robots-tag"), values(b"tdm-reservation"), values(b"tdm-policy")
    content_type = (values(b"content-type") or (None,))[-1]
    tokens, head_read = tuple(tokens), is_html(content_type)
    head = read_head(response.body, content_type, meta_names(tokens), url=response.url) if head_read else EMPTY_HEAD
    metas = head.metas
    tdm_metas = tuple(m for m in metas if m.name in _TDM_NAMES)
    if reservation or policy or tdm_metas:
        lines = (tuple(reservation), tuple(policy))
        file = tdmrep.declaration(url) if tdmrep is not None else UNSET
        tdm = _DECLARED.get(key := (file, *lines, tdm_metas))
        if tdm is None:  # the file's rule, superseded by the header lines, superseded by the meta tags
            header = from_headers(*lines)[0] if reservation or policy else UNSET
            tdm = resolve(file, header, from_metas(tdm_metas)[0] if tdm_metas else UNSET).usage()
            if len(_DECLARED) < _DECLARED_MAX and sum(map(len, lines[0] + lines[1])) <= _DECLARED_CHARS:
                _DECLARED[key] = tdm
    else:  # the file alone: its rule's statement, made once per rule
        tdm = tdmrep.usage(url) if tdmrep is not None else UNKNOWN
    page = page_directives(robots_tag, metas, tokens) if robots_tag or len(metas) > len(tdm_metas) else NOTHING
    stated = from_header(content_usage) if content_usage else UNKNOWN
    signal = from_signal_header(content_signal) if content_signal else UNKNOWN
    parts = [p for p in (stated, signal, tdm, page.usage) if p is not UNKNOWN]
    usage = UNKNOWN if not parts else parts[0] if len(parts) == 1 else combine(parts)
    licenses = page_licenses(values(b"link"), head.licenses, response.url)
    return PageReading(usage, page.nofollow_sources, head_read, licenses)
