"""The demo's table from what a crawl knows and what the servers saw.

Shared by ``scrapy crawl demo`` (one process: the spider's own records) and
the cluster demo (``demo_cluster`` workers and ``python -m
demo_project.cluster report``: records kept in Redis).  Pure: the caller
hands in the site's view (:class:`~.demo_site.DemoSite`, live or replayed),
the RFC 9309 settings, the governing file of each origin and the page rows.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from urllib.parse import urlsplit

from scrapy_rfc9309 import RobotsTxt, Verdict
from scrapy_rfc9309.origins import origin_of
from scrapy_rfc9309.settings import Rfc9309Settings

from .demo_site import LICENSE_PATH, TDMREP_PATH, DemoOrigin, DemoSite
from .table import OriginBlock, PageRow, render

#: how a SKIPPED reason ends when the page was downloaded, then dropped (spiders/base.py)
DOWNLOADED = " (downloaded, dropped)"

#: how the plugin's reading of a robots.txt that is not a file is shown in the table
READING = {
    Verdict.ALLOWED_UNAVAILABLE: "allow all",
    Verdict.UNKNOWN_UNREACHABLE: "deny all",
    Verdict.ALLOWED_UNREACHABLE_OPT_IN: "allow all (opt-in)",
}


def demo_table(
    site: DemoSite,
    config: Rfc9309Settings,
    robots: Mapping[str, tuple[RobotsTxt, str]],
    floors: Mapping[str, float | None],
    rows: Mapping[str, Sequence[PageRow]],
    footer: Sequence[str] = (),
    spider: str = "demo",
) -> str:
    """The table: ``robots`` maps an origin to its governing file and product
    token, ``floors`` an origin to the Crawl-delay floor applied (or None),
    ``rows`` an origin *name* to its page rows; ``footer`` lines are added.
    Origins of another ``spider`` only are left out."""
    blocks = []
    for origin in site.origins:
        if not origin.pages or origin.spider not in (None, spider):
            continue
        order = {path: i for i, path in enumerate(origin.pages + origin.links)}
        page_rows = sorted(rows.get(origin.name, []), key=lambda row: order[row.path])
        blocks.append(
            OriginBlock(
                address=origin.origin.split("://", 1)[1],
                case=origin.case,
                robots=robots_lines(site, origin, config, robots.get(origin.origin)),
                crawl_delay=floors.get(origin.origin),
                min_gap=site.min_gap(origin.name),
                pages=page_rows,
            )
        )
    return render(title(config, blocks), blocks, [*footer_lines(site, rows, blocks), *footer])


def robots_lines(
    site: DemoSite, origin: DemoOrigin, config: Rfc9309Settings, known: tuple[RobotsTxt, str] | None
) -> list[str]:
    chain = site.robots_chain(origin.name)
    if not chain:
        why = "obey: False" if not config.for_origin(origin.origin).obey else "no answer"
        return ["not requested", f"({why})"]
    statuses = " -> ".join(str(status) for _, status in chain)
    lines = [f"{statuses} -> {reading(*known) if known else '?'}"]
    final = chain[-1][0]
    if origin_of(final) != origin.origin:
        lines.append(f"(file at {urlsplit(final).netloc})")
    tdmrep = origin.routes.get(TDMREP_PATH)
    if tdmrep is not None and any(hit.path == TDMREP_PATH for hit in site.hits(origin.name)):
        lines.append(f"tdmrep.json: {tdmrep.status}")
    license = origin.routes.get(LICENSE_PATH)
    if license is not None and any(hit.path == LICENSE_PATH for hit in site.hits(origin.name)):
        lines.append(f"license: {license.status}")
    if known:
        for diagnostic in known[0].diagnostics[:2]:
            lines.append(f"line {diagnostic.line}: {diagnostic.code}")
    return lines


def title(config: Rfc9309Settings, blocks: list[OriginBlock]) -> str:
    pages = sum(len(block.pages) for block in blocks)
    return (
        f"scrapy-rfc9309 demo: {len(blocks)} origins, {pages} pages, "
        f"product token {config.user_agent!r} (from {config.user_agent_source})"
    )


def footer_lines(site: DemoSite, rows: Mapping[str, Sequence[PageRow]], blocks: list[OriginBlock]) -> list[str]:
    """The counts of the rows, what the columns and words mean, and, when some
    pages were skipped, how the crawl's own counts (its stats and its log)
    come to other numbers for the same requests."""
    every = [row for block in blocks for row in block.pages]
    words = ("allowed", "DENIED", "SKIPPED", "NOFOLLOW", "ERROR")
    count = {word: sum(row.outcome == word for row in every) for word in words}
    #: skipped once downloaded (what the page states itself), or before (robots.txt's statements)
    after = sum(row.outcome == "SKIPPED" and row.reason.endswith(DOWNLOADED) for row in every)
    before = count["SKIPPED"] - after
    skipped = (
        f"{count['SKIPPED']} skipped by usage preferences ({before} before the download, {after} after it), "
        if count["SKIPPED"]
        else ""
    )
    skipped += f"{count['NOFOLLOW']} links not followed, " if count["NOFOLLOW"] else ""
    leaked = sum(
        row.path in site.pages_seen(origin.name)
        for origin in site.origins
        for row in rows.get(origin.name, [])
        if row.outcome in ("DENIED", "NOFOLLOW") or (row.outcome == "SKIPPED" and not row.reason.endswith(DOWNLOADED))
    )
    fetches = [
        sum(hit.path == "/robots.txt" for hit in site.hits(origin.name))
        for origin in site.origins
        if origin.pages and site.robots_chain(origin.name)
    ]
    checked = count["allowed"] + count["DENIED"] + count["SKIPPED"] + count["ERROR"]
    return [
        f"{count['allowed']} pages allowed, {count['DENIED']} denied, {skipped}{count['ERROR']} errors; "
        f"denied pages that reached a server: {leaked}; "
        f"robots.txt requests per origin: {', '.join(map(str, sorted(set(fetches))))}",
        *(
            [f"The crawl's log and stats (rfc9309/requests/*) count the same requests by what robots.txt "
             f"decided: {checked} checked, {count['allowed'] + after} allowed (a page skipped after its download "
             f"included), {count['DENIED'] + before} denied (a page skipped before it included)."
             + (" A link not followed was never a request." if count["NOFOLLOW"] else "")]
            if count["SKIPPED"] else []
        ),
        "MIN GAP: the shortest time between two page requests to the origin, measured by its server.",
        *(
            ["SKIPPED: robots.txt allows the page, but its usage preferences disallow a purpose the spider "
             "declared (RFC9309_USAGE); robots.txt's statements and its RSL license apply before the download, "
             "what the page itself states (headers, tdmrep.json, meta tags) once it is downloaded."]
            if count["SKIPPED"] else []
        ),
        *(
            ["NOFOLLOW: a link the spider yielded from a page whose robots directives say nofollow; dropped "
             "before it was scheduled."]
            if count["NOFOLLOW"] else []
        ),
    ]  # fmt: skip


def reading(robots: RobotsTxt, token: str) -> str:
    """``2 rules`` (for the agent's groups), ``allow all``, ``deny all``."""
    fixed = robots.fixed_verdict
    if fixed is not None:
        return READING.get(fixed, fixed.value)
    rules = sum(group.end - group.start for group in robots.groups_for(token))
    return f"{rules} rule{'s' if rules != 1 else ''}"
