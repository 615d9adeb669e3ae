"""The demo's closing table, as plain text (pure: no Scrapy, no servers).

One block per origin: its address and case, what happened to its robots.txt
(the statuses the servers sent, then what the plugin made of them), the
Crawl-delay floor applied, the smallest gap between two page requests seen by
the server, and one row per page with its verdict.

The table fits a terminal of :data:`WIDTH` columns: the ORIGIN and ROBOTS.TXT
cells wrap at a few words, and VERDICT takes what is left, its long
verdicts wrapped in the cell.  A wrapped line goes on the next line of the
same cell, and a reader (and ``tests/crawl``) can tell it from a new one:
ORIGIN holds two things, the address and the case in parentheses; a
VERDICT line without a PAGE beside it continues the verdict above; a
continued ROBOTS.TXT line is indented by :data:`INDENT`.  A word is never
cut: one longer than its cell widens the cell.
"""

from __future__ import annotations

import textwrap
from dataclasses import dataclass, field

COLUMNS = ("ORIGIN", "ROBOTS.TXT", "DELAY", "MIN GAP", "PAGE", "VERDICT")
#: the terminal width the table fits
WIDTH = 120
#: the widest an ORIGIN or ROBOTS.TXT line gets before it wraps
WRAP_AT = {"ORIGIN": 16, "ROBOTS.TXT": 18}
#: how far a wrapped ROBOTS.TXT line is indented under the line it continues
INDENT = "  "
#: the indent of a wrapped line, by column (none where the column tells a continued line otherwise)
INDENTS = {"ORIGIN": "", "ROBOTS.TXT": INDENT, "VERDICT": ""}
GAP = "  "


@dataclass
class PageRow:
    path: str
    #: "allowed" (the callback ran), "DENIED" (IgnoreRequest from the plugin), "SKIPPED",
    #: "NOFOLLOW" or "ERROR"
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
        """One list of lines per column, unwrapped."""
        return [
            [self.address, f"({self.case})"],
            self.robots,
            [f"{self.crawl_delay:g} s" if self.crawl_delay else "-"],
            [f"{self.min_gap:.2f} s" if self.min_gap is not None else "-"],
            [page.path for page in self.pages],
            [page.verdict() for page in self.pages],
        ]


def wrap(line: str, width: int, indent: str = "") -> list[str]:
    """``line`` in lines of at most ``width`` (more for a longer word), the
    continued ones indented by ``indent``: never a word cut, never a hyphen broken."""
    if len(line) <= width:
        return [line]
    return textwrap.wrap(line, width, subsequent_indent=indent, break_long_words=False, break_on_hyphens=False) or [
        line
    ]


def _longest_word(lines: list[str], indent: str) -> int:
    """The width the longest word of ``lines`` needs on a line of its own."""
    return max([0, *(len(indent) + len(word) for line in lines for word in line.split()[1:])])


def _widths(grid: list[list[list[str]]]) -> list[int]:
    """Each column's width: its longest line, ORIGIN and ROBOTS.TXT at most
    their :data:`WRAP_AT` (or their longest word), VERDICT what is left of
    :data:`WIDTH` (or its longest word)."""
    widths = []
    for i, name in enumerate(COLUMNS):
        lines = [line for cells in grid for line in cells[i]]
        longest = max([len(name), *(len(line) for line in lines)])
        firsts = max([0, *(len(line.split()[0]) for line in lines if line.split())])
        word = max(firsts, _longest_word(lines, INDENTS.get(name, "")))
        widths.append(min(longest, max(WRAP_AT[name], word)) if name in WRAP_AT else longest)
    left = WIDTH - sum(widths[:-1]) - len(GAP) * (len(COLUMNS) - 1)
    verdicts = [line for cells in grid for line in cells[-1]]
    widths[-1] = min(widths[-1], max(left, _longest_word(verdicts, INDENTS["VERDICT"]), len(COLUMNS[-1])))
    return widths


def render(title: str, blocks: list[OriginBlock], footer: list[str]) -> str:
    """The whole table: a title, a header, one block per origin, a footer
    (each footer line a paragraph, wrapped at :data:`WIDTH`, its continued
    lines indented by :data:`INDENT`)."""
    grid = [block.cells() for block in blocks]
    widths = _widths(grid)

    def line(values: list[str]) -> str:
        return GAP.join(value.ljust(width) for value, width in zip(values, widths)).rstrip()

    rule = GAP.join("-" * width for width in widths)
    out = [*wrap(title, WIDTH), "", line(list(COLUMNS)), rule]
    for cells in grid:
        columns = [
            [part for text in lines for part in wrap(text, widths[i], INDENTS.get(COLUMNS[i], ""))]
            for i, lines in enumerate(cells)
        ]
        # a page's verdict may take several lines: the next page starts below its last one
        pages, verdicts = [], []
        for path, verdict in zip(cells[4], cells[5]):
            parts = wrap(verdict, widths[5], INDENTS["VERDICT"])
            pages += [path] + [""] * (len(parts) - 1)
            verdicts += parts
        columns[4], columns[5] = pages, verdicts
        for row in range(max(len(lines) for lines in columns)):
            out.append(line([lines[row] if row < len(lines) else "" for lines in columns]))
        out.append(rule)
    for paragraph in footer:
        out.extend(wrap(paragraph, WIDTH, INDENT))
    return "\n".join(out) + "\n"
