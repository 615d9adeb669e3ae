"""Deciding for several product tokens, the provenance of an allowed request,
and the rules that changed between two versions of a file."""

from __future__ import annotations

import logging
from datetime import datetime, timezone
from functools import lru_cache
from typing import TYPE_CHECKING, Any

from ..masking import mask_url
from ..robots import Decision, RobotsTxt, Verdict
from ..robots.text import shorten

if TYPE_CHECKING:
    from ..robots import Rule
    from ..robots.usage import Usage
    from ..service import Known

logger = logging.getLogger(__name__)

#: the request / response meta key holding the provenance of an allowed request
META_KEY = "rfc9309"
#: rules listed per side in the change log line
MAX_CHANGED_RULES = 10
#: each verdict's value (an enum's ``.value`` is two Python calls: this is asked per allowed request)
_VALUES = {verdict: verdict.value for verdict in Verdict}


# -- time ---------------------------------------------------------------------------------
@lru_cache(maxsize=4096)
def iso(seconds: float) -> str:
    """``2026-11-24T22:30:08.123Z`` (UTC) of a ``time.time()`` value."""
    return datetime.fromtimestamp(seconds, timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")


# -- several tokens -------------------------------------------------------------------------
def decide_all(robots: RobotsTxt, url: str, tokens: tuple[str, ...]) -> tuple[Decision, str]:
    """``(decision, token)``: the first token whose group denies ``url`` and its
    decision; or, when every token allows it, the first token's decision."""
    first = robots.check(url, tokens[0])
    if not first.allowed:
        return first, tokens[0]
    for token in tokens[1:]:
        decision = robots.check(url, token)
        if not decision.allowed:
            return decision, token
    return first, tokens[0]


def denial_reason(decision: Decision, token: str, tokens: tuple[str, ...]) -> str:
    """The decision's reason, naming the token when the crawl has several."""
    if len(tokens) == 1:
        return decision.reason
    return f"{decision.reason} for {token}"


# -- provenance --------------------------------------------------------------------------
def provenance(
    known: Known | None, decision: Decision, tokens: tuple[str, ...], usage: Usage | None = None
) -> dict[str, Any]:
    """The ``response.meta["rfc9309"]`` dict of an allowed request (JSON-ready).

    ``known`` is None when robots.txt was not consulted (``dont_obey_robotstxt``
    or ``obey: False``): then only the verdict and tokens are filled in.
    ``usage``: the AI usage preferences robots.txt states for the URL
    (category -> value and the lines behind it); the middleware adds the
    response's ``Content-Usage`` header to them."""
    rule = decision.rule
    if known is None:
        return {
            "verdict": decision.verdict.value,
            "rule": None,
            "line": None,
            "tokens": list(tokens),
            "robots_url": None,
            "status": None,
            "access": None,
            "fetched_at": None,
            "sha256": None,
            "usage": usage.to_dict() if usage is not None else None,
        }
    if (fields := _by_known.get(id(known))) is None or fields[0] is not known:
        fields = _known_fields(known)
    return {
        "verdict": _VALUES[decision.verdict],
        "rule": str(rule) if rule is not None else None,
        "line": rule.line if rule is not None else None,
        "tokens": list(tokens),
        **fields[1],
        "usage": usage.to_dict() if usage is not None else None,
        **({"license": dict(fields[2])} if fields[2] else {}),  # (a dict of each request's own)
    }


#: the fields of a provenance that only its origin's ``Known`` decides, by ``id(known)`` (the
#: ``Known`` kept beside them, so an id is not reused while cached): worked out once per file, not per request
_by_known: dict[int, tuple[Known, dict[str, Any], dict[str, Any]]] = {}


def _known_fields(known: Known) -> tuple[Known, dict[str, Any], dict[str, Any]]:
    if len(_by_known) >= 1024:  # (the service keeps the origins it knows; these are the last asked)
        _by_known.clear()
    entry, licensed = known.entry, known.license.parsed if known.license is not None else None
    head = {
        "robots_url": mask_url(entry.url) if entry.url else None,
        "status": entry.status,
        "access": entry.access,
        "fetched_at": iso(entry.fetched_at),
        "sha256": known.sha256,
    }
    tail = {"url": mask_url(licensed.url), "sha256": licensed.sha256} if licensed is not None else {}
    _by_known[id(known)] = fields = (known, head, tail)
    return fields


# -- changes ------------------------------------------------------------------------------
def rule_changes(old: RobotsTxt, new: RobotsTxt, tokens: tuple[str, ...]) -> tuple[list[str], list[str]]:
    """``(added, removed)``: the rules of the tokens' groups in ``new`` and not in
    ``old`` and the other way round, compared as written (kind and pattern),
    each as ``line N: Disallow: /x`` with its line in its own file."""

    def rules(robots: RobotsTxt) -> list[Rule]:
        seen: dict[tuple[bool, str], Rule] = {}
        for token in tokens:
            for rule in robots.rules_for(token):
                seen.setdefault((rule.allow, rule.pattern), rule)
        return sorted(seen.values(), key=lambda r: r.line)

    before, after = rules(old), rules(new)
    old_keys = {(r.allow, r.pattern) for r in before}
    new_keys = {(r.allow, r.pattern) for r in after}
    added = [f"line {r.line}: {shorten(r)}" for r in after if (r.allow, r.pattern) not in old_keys]
    removed = [f"line {r.line}: {shorten(r)}" for r in before if (r.allow, r.pattern) not in new_keys]
    return added, removed


def listed(items: list[str]) -> str:
    if not items:
        return "none"
    shown = "; ".join(items[:MAX_CHANGED_RULES])
    return shown + (f"; and {len(items) - MAX_CHANGED_RULES} more" if len(items) > MAX_CHANGED_RULES else "")
