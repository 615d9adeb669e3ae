"""Provable compliance: provenance on responses, the audit trail, changes.

Three things, all fed by the crawl's robots service and the middleware:

* **provenance** (:func:`provenance`): what the middleware puts in
  ``response.meta["rfc9309"]`` of every request it lets through: the verdict,
  the deciding rule and its line, the robots.txt URL after redirects, its
  status, when it was fetched and the SHA-256 of its body;
* **changes** (:class:`Recorder`, always on): when a re-fetch brings a body
  different from the one before, one INFO line names the origin and the rules
  added and removed for the crawl's group(s), and ``rfc9309/changes`` counts it;
* **the audit trail** (``RFC9309_AUDIT``, off by default): JSON Lines, one
  record per robots.txt fetch and per denied request (per allowed request too
  with ``RFC9309_AUDIT``'s ``allowed``), bodies kept once per SHA-256 in
  ``robots-bodies/`` beside the file.  Every record is sealed in a chain
  (``chain``: SHA-256, or an HMAC with ``RFC9309_AUDIT``'s ``key``) so that an
  edit, a deletion, a reordering or a cut shows on replay.  Records are
  queued in memory and written by a thread of their own, which writes and
  flushes at least every second and drains the queue when the spider closes;
  with ``RFC9309_AUDIT``'s ``sync`` each is written before its request goes on.

The record formats, the replay (``scrapy robots --audit``) and what the trail
does and does not prove: docs/audit.md.  The parts: ``decisions`` (several
tokens, provenance, rule changes), ``chain`` (sealing and verifying),
``writer`` (the file and its thread),
``recorder`` (the crawl's records), ``trail`` (reading a trail back).
Nothing here imports Scrapy at module level except through the functions
that need the crawl.
"""

from typing import Any

from .decisions import META_KEY, decide_all, denial_reason, iso, provenance, rule_changes
from .recorder import Recorder

#: names of the trail's file, its writer and its reader, imported on first use: a crawl
#: without an audit trail (the default) loads neither the thread nor the chain's hashing
_LAZY = {
    "BODIES_DIR": ".writer",
    "Writer": ".writer",
    "audit_path": ".writer",
    "bodies_dir": ".writer",
    "Trail": ".trail",
    "TrailError": ".trail",
    "TrailKeyNeeded": ".trail",
    "TrailTampered": ".trail",
}

__all__ = [
    "BODIES_DIR",
    "META_KEY",
    "Recorder",
    "Trail",
    "TrailError",
    "TrailKeyNeeded",
    "TrailTampered",
    "Writer",
    "audit_path",
    "bodies_dir",
    "decide_all",
    "denial_reason",
    "iso",
    "provenance",
    "rule_changes",
]


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(module, __name__), name)
    globals()[name] = value
    return value
