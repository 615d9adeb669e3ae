"""Bounding text that comes from servers before it reaches a log line or a
message: a robots.txt rule may be 16 KB long and a URL longer still."""

from __future__ import annotations

#: the longest piece of server-controlled text put into one log line or message
LOG_TEXT_CHARS = 200


def shorten(text: object, limit: int = LOG_TEXT_CHARS) -> str:
    """``text`` unchanged when short, else its head and tail around a count of
    what was left out."""
    text = str(text)
    if len(text) <= limit:
        return text
    keep = max(limit - 30, 20)
    head, tail = text[: keep * 3 // 4], text[-(keep // 4) :]
    return f"{head}...[{len(text) - len(head) - len(tail):,} chars]...{tail}"
