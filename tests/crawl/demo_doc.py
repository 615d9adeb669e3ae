"""The demo's table in docs/first_hour.md, and what of it a test compares.

The block in the doc is pasted from a run of ``scrapy crawl demo`` on its
default port.  ``tests/crawl/test_demo.py`` compares it with the table its
own run printed; when the demo changes (a new origin, a new column), rewrite
the block from a run, from the repository root::

    python -m tests.crawl.demo_doc

Compared: the title, every cell of every row and the footer, with the port
read as the default one.  Not compared: the MIN GAP numbers (server-side
timings, different on every run; whether there is a gap, ``-`` or a number,
is compared), the column widths and where a long cell wraps (cells are read
by the header's rule and their wrapped lines joined, :func:`read`: a port of
another length moves both).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "first_hour.md"
PROJECT = ROOT / "example_project"
#: the demo's port when RFC9309_DEMO_PORT is not set
PORT = 9309
TITLE = "scrapy-rfc9309 demo:"
GAP = re.compile(r"\d+\.\d+ s")
UPDATE = "python -m tests.crawl.demo_doc"


def documented(text: str | None = None) -> str:
    """The table as docs/first_hour.md shows it: the fenced block that
    starts with the demo's title line."""
    text = DOC.read_text(encoding="utf-8") if text is None else text
    start, end = _span(text)
    return text[start:end]


def _span(text: str) -> tuple[int, int]:
    """Where the table's block starts and ends in the doc (the fences excluded)."""
    start = text.find("```\n" + TITLE)
    if start < 0:
        raise ValueError(f"docs/first_hour.md has no fenced block starting with {TITLE!r}")
    start += len("```\n")
    end = text.index("```\n", start)
    return start, end


COLUMNS = ("ORIGIN", "ROBOTS.TXT", "DELAY", "MIN GAP", "PAGE", "VERDICT")
#: how a wrapped line of a ROBOTS.TXT cell or of a footer paragraph starts
#: (example_project/demo_project/table.py)
INDENT = "  "


def read(table: str) -> tuple[list[str], list[dict[str, Any]], list[str]]:
    """A printed table read back: its title lines, its blocks and its footer
    paragraphs, each wrapped line joined to the line it continues.

    A block is ``{"ORIGIN": [address, case], "ROBOTS.TXT": [line, ...],
    "DELAY": text, "MIN GAP": text, "PAGES": [(path, verdict), ...]}``, its
    cells cut at the header's rule.  In ORIGIN the lines after the address
    are the case; a VERDICT line without a PAGE continues the verdict above; a
    ROBOTS.TXT line or a footer line starting with :data:`INDENT` continues
    the one above."""
    lines = table.rstrip("\n").splitlines()
    header = next(i for i, line in enumerate(lines) if line.startswith("ORIGIN "))
    rule = lines[header + 1]
    last_rule = max(i for i, line in enumerate(lines) if line == rule)
    starts = [match.start() for match in re.finditer(r"-+", rule)]
    bounds = list(zip(starts, [*starts[1:], None]))
    blocks: list[dict[str, Any]] = []
    rows: list[dict[str, str]] = []
    for line in lines[header + 2 : last_rule + 1]:
        if line != rule:
            rows.append({name: line[start:end].rstrip() for name, (start, end) in zip(COLUMNS, bounds)})
            continue
        origin = [row["ORIGIN"].strip() for row in rows if row["ORIGIN"].strip()]
        robots: list[str] = []
        for row in rows:
            cell = row["ROBOTS.TXT"]
            if cell.startswith(INDENT) and cell.strip() and robots:
                robots[-1] += " " + cell.strip()
            elif cell.strip():
                robots.append(cell.strip())
        pages: list[list[str]] = []
        for row in rows:
            if row["PAGE"].strip():
                pages.append([row["PAGE"].strip(), row["VERDICT"].strip()])
            elif row["VERDICT"].strip():
                pages[-1][1] += " " + row["VERDICT"].strip()
        blocks.append(
            {
                "ORIGIN": [origin[0], " ".join(origin[1:])],
                "ROBOTS.TXT": robots,
                "DELAY": rows[0]["DELAY"].strip(),
                "MIN GAP": rows[0]["MIN GAP"].strip(),
                "PAGES": [tuple(page) for page in pages],
            }
        )
        rows = []
    footer: list[str] = []
    for line in lines[last_rule + 1 :]:
        if line.startswith(INDENT) and footer:
            footer[-1] += " " + line.strip()
        else:
            footer.append(line)
    return lines[: header - 1], blocks, footer


def stable(table: str, port: int = PORT) -> list[str]:
    """What of a table printed by a run on ``port`` does not change from run
    to run, one string per title line, cell (by column; a MIN GAP number
    masked as ``<gap>``), page and footer paragraph (see :func:`read`), the
    port read as the default one."""
    title, blocks, footer = read(table)
    out = [*title]
    for block in blocks:
        out.append("ORIGIN: " + " | ".join(block["ORIGIN"]))
        out.extend(f"ROBOTS.TXT: {line}" for line in block["ROBOTS.TXT"])
        out.append(f"DELAY: {block['DELAY']} | MIN GAP: {GAP.sub('<gap>', block['MIN GAP'])}")
        out.extend(f"PAGE: {path} | {verdict}" for path, verdict in block["PAGES"])
        out.append("-----")
    same_port = re.compile(rf"(\b127\.0\.0\.\d+):{port}\b")
    return [same_port.sub(rf"\g<1>:{PORT}", line) for line in out + footer]


def replace_in_doc(table: str) -> bool:
    """Put ``table`` in docs/first_hour.md in place of the block there,
    unless they differ only in what changes from run to run (the gaps);
    whether the doc changed."""
    text = DOC.read_text(encoding="utf-8")
    start, end = _span(text)
    if stable(text[start:end]) == stable(table):
        return False
    DOC.write_text(text[:start] + table.rstrip("\n") + "\n" + text[end:], encoding="utf-8")
    return True


def run_demo() -> str:
    """``scrapy crawl demo`` as a user runs it (default port, no extra
    setting): its stdout; ``RuntimeError`` with its log's end when it fails."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SCRAPY_", "RFC9309_DEMO_"))}
    process = subprocess.run(
        [sys.executable, "-m", "scrapy", "crawl", "demo"],
        cwd=PROJECT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    if process.returncode != 0 or not process.stdout.startswith(TITLE):
        raise RuntimeError(f"scrapy crawl demo failed (exit {process.returncode}):\n{process.stderr[-3000:]}")
    return process.stdout


def main() -> int:
    table = run_demo()
    changed = replace_in_doc(table)
    done = "the table rewritten from the run" if changed else "no change: it shows the run's table"
    print(f"{DOC.relative_to(ROOT)}: {done}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
