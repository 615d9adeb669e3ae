"""The demo's closing table, as plain text (pure: no Scrapy, no servers).

One block per origin: its address and case, what happened to its robots.txt
(the statuses the servers sent, then what the plugin made of them), the
Crawl-delay floor applied, the smallest gap between two page requests seen by
the server, and one row per page with its verdict.
"""

from __future__ import annotations

from dataclasses import dataclass, field

COLUMNS = ("ORIGIN", "ROBOTS.TXT", "DELAY", "MIN GAP", "PAGE", "VERDICT")


@dataclass
class PageRow:
    path: str
    #: "allowed" (the callback ran), "DENIED" (IgnoreRequest from the plugin) or "ERROR"
    outcome: str
    #: "disallowed_explicit (line 2: Disallow: /shop/)", "allowed_implicit" ...
    reason: str

    def verdict(self) -> str:
        return f"{self.outcome:<8} {self.reason}"


@dataclass
class OriginBlock:
    address: str
    case: str
    #: lines describing robots.txt: statuses, the plugin's reading, diagnostics
    robots: list[str]
    #: the floor applied (seconds) or None
    crawl_delay: float | None
    #: the smallest server-side gap between two page requests, or None
    min_gap: float | None
    pages: list[PageRow] = field(default_factory=list)

    def cells(self) -> list[list[str]]:
        """One list of lines per column."""
        return [
            [self.address, f"({self.case})"],
            self.robots,
            [f"{self.crawl_delay:g} s" if self.crawl_delay else "-"],
            [f"{self.min_gap:.2f} s" if self.min_gap is not None else "-"],
            [page.path for page in self.pages],
            [page.verdict() for page in self.pages],
        ]


def render(title: str, blocks: list[OriginBlock], footer: list[str]) -> str:
    """The whole table: a title, a header, one block per origin, a footer."""
    grid = [block.cells() for block in blocks]
    widths = [len(name) for name in COLUMNS]
    for cells in grid:
        for i, lines in enumerate(cells):
            widths[i] = max([widths[i], *(len(line) for line in lines)])

    def line(values: list[str]) -> str:
        return "  ".join(value.ljust(width) for value, width in zip(values, widths)).rstrip()

    rule = "  ".join("-" * width for width in widths)
    out = [title, "", line(list(COLUMNS)), rule]
    for cells in grid:
        height = max(len(lines) for lines in cells)
        for row in range(height):
            out.append(line([lines[row] if row < len(lines) else "" for lines in cells]))
        out.append(rule)
    out.extend(footer)
    return "\n".join(out) + "\n"
