"""The pure RFC 9309 core: no Scrapy, no Twisted, no I/O.

* :mod:`.bodies` - a body as received: ``Content-Encoding`` undone, the cut at the limit
* :mod:`.decode` - bytes to text (limit, BOM, charset)
* :mod:`.parser` - text to groups of rules, with diagnostics
* :mod:`.patterns` - percent-encoding, URL paths, ``*``/``$`` matching
* :mod:`.robotstxt` - the parsed file: ``check``, ``crawl_delay``, ``sitemaps``
* :mod:`.verdicts` - ``Decision``, ``Verdict``, ``Rule``
* :mod:`.access` - HTTP access results to policies and cache lifetimes
* :mod:`.usage` - AI usage preferences (``Content-Usage``, ``Content-Signal``): ``RobotsTxt.usage``
* :mod:`.tdmrep` - TDMRep: ``/.well-known/tdmrep.json``, ``tdm-reservation`` headers and meta tags
* :mod:`.directives` - page-level robots directives (``X-Robots-Tag``, robots meta tags)
* :mod:`.html_head` - the bounded reader of an HTML head's meta tags
"""

from .diagnostics import Diagnostic
from .robotstxt import RobotsTxt, check_token, parse
from .verdicts import Decision, Rule, Verdict

__all__ = ["Decision", "Diagnostic", "Rule", "RobotsTxt", "Verdict", "check_token", "parse"]
