"""What ``scrapy robots`` prints, as pure functions of a parsed file.

Kept apart from the command so the wording can be tested without Scrapy, a
reactor or a subprocess, and so ``--file`` and a fetched file are described
by the same code.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Protocol

from ..masking import mask_url
from ..robots import RobotsTxt, Verdict
from ..robots.usage import Usage

#: diagnostics listed per file next to verdicts; ``--lint`` lists them all
MAX_DIAGNOSTICS = 20
KEY_WIDTH = 14

#: what stands in for the rules when there is no file to read
POLICY_TEXT = {
    Verdict.ALLOWED_UNAVAILABLE: "none: robots.txt is unavailable, so every URL is allowed",
    Verdict.UNKNOWN_UNREACHABLE: "none: robots.txt is unreachable, so every URL is denied",
    Verdict.ALLOWED_UNREACHABLE_OPT_IN: (
        "none: robots.txt is unreachable; every URL is allowed because RFC9309_UNREACHABLE is "
        "'allow' (not RFC 9309 compliant)"
    ),
    Verdict.ALLOWED_NOT_OBEYED: "not consulted: RFC9309_ORIGINS says obey: False for this origin",
}


class Decision(Protocol):
    """What a verdict line needs: a :class:`~scrapy_rfc9309.Decision`, or a
    decision over several tokens whose reason names the token that denied."""

    @property
    def allowed(self) -> bool: ...

    @property
    def reason(self) -> str: ...


def row(key: str, value: str) -> str:
    """One ``key  value`` line of a file block."""
    label = f"{key}:" if key else ""
    return f"  {label:<{KEY_WIDTH}}{value}"


def describe_group(robots: RobotsTxt, token: str) -> str:
    """Which group of the file the crawler obeys, and why (RFC 9309 section 2.2.1)."""
    groups = robots.groups_for(token)
    if not groups:
        return "none: no group names the agent and there is no '*' group, so every URL is allowed"
    lines = ", ".join(str(group.line) for group in groups)
    plural = "s" if len(groups) > 1 else ""
    if robots.applies_specifically(token):
        return f"line{plural} {lines} (naming the agent)"
    return f"line{plural} {lines} ('*': no group names the agent)"


def format_delay(seconds: float | None) -> str:
    return "none" if seconds is None else f"{seconds:g} s"


def format_rate(rate: tuple[int, float] | None) -> str:
    if rate is None:
        return "none"
    requests, seconds = rate
    return f"{requests} per {seconds:g} s (one request every {seconds / requests:g} s)"


def file_lines(robots: RobotsTxt, token: str, max_diagnostics: int = MAX_DIAGNOSTICS) -> list[str]:
    """The agent's group, Crawl-delay, Request-rate, sitemaps and diagnostics."""
    lines = [row("agent", token)]
    fixed = robots.fixed_verdict
    if fixed is not None:
        lines.append(row("rules", POLICY_TEXT.get(fixed, fixed.value)))
    else:
        lines.append(row("group", describe_group(robots, token)))
        lines.append(row("crawl-delay", format_delay(robots.crawl_delay(token))))
        lines.append(row("request-rate", format_rate(robots.request_rate(token))))
    lines.append(row("sitemaps", mask_url(robots.sitemaps[0]) if robots.sitemaps else "none"))
    lines.extend(row("", mask_url(url)) for url in robots.sitemaps[1:])
    diagnostics = robots.diagnostics
    lines.append(row("diagnostics", str(len(diagnostics)) if diagnostics else "none"))
    for diagnostic in diagnostics[:max_diagnostics]:
        lines.append(row("", str(diagnostic)))
    if len(diagnostics) > max_diagnostics:
        lines.append(row("", f"... {len(diagnostics) - max_diagnostics} more (scrapy robots --lint FILE lists all)"))
    return lines


def verdict_line(target: str, decision: Decision, width: int = 0) -> str:
    """``DENIED   <url>  disallowed_explicit (line 7: Disallow: /private)``."""
    word = "ALLOWED" if decision.allowed else "DENIED"
    return f"  {word:<8} {mask_url(target):<{width}}  {decision.reason}"


def verdict_lines(targets: list[str], decisions: Sequence[Decision]) -> list[str]:
    """One :func:`verdict_line` per target, reasons aligned."""
    width = max((len(target) for target in targets), default=0)
    return [verdict_line(target, decision, width) for target, decision in zip(targets, decisions)]


def usage_lines(
    targets: list[str], usages: Sequence[Usage | None], purposes: Sequence[str], page: bool = False
) -> list[str]:
    """For each target whose preferences say anything (or every target, when
    ``purposes`` are declared): ``usage: train-ai=n, search=?, ai-input=?``
    and the statement behind each stated category; ``page``: the pages were
    fetched and what they state is in ``usages``."""
    lines: list[str] = []
    for target, usage in zip(targets, usages):
        if usage is None or (not usage and not purposes):
            continue
        lines.append(row("usage", f"{target}: {usage.describe()}"))
        for label in usage:
            for source in usage.sources[label]:
                lines.append(row("", f"{label}: {source}"))
            if label in usage.more:
                lines.append(row("", f"{label}: and {usage.more[label]:,} more statements"))
        for source in usage.use_sources:  # Content Signals' use= level (no category)
            lines.append(row("", f"use: {source}"))
    if purposes and lines:
        said = "with what the pages state, --page" if page else "what a page states counts only with --page"
        lines.append(row("", f"declared purposes: {', '.join(purposes)} ({said})"))
    return lines


def exit_status(decisions: Iterable[Decision]) -> int:
    """0 when every URL is allowed, 1 when any is denied."""
    return 0 if all(decision.allowed for decision in decisions) else 1


def lint_lines(label: str, robots: RobotsTxt) -> tuple[list[str], int]:
    """Every diagnostic as ``FILE:LINE: code: message``, a summary, and the
    exit status (0 clean, 1 with diagnostics)."""
    diagnostics = robots.diagnostics
    lines = [
        f"{label}:{d.line}: {d.code}: {d.message}" if d.line else f"{label}: {d.code}: {d.message}" for d in diagnostics
    ]
    if diagnostics:
        lines.append(f"{label}: {len(diagnostics)} problem{'s' if len(diagnostics) != 1 else ''}")
        return lines, 1
    lines.append(f"{label}: no problems found")
    return lines, 0
