"""The demo's table in docs/first_hour.md, and what of it a test compares.

The block in the doc is pasted from a run of ``scrapy crawl demo`` on its
default port.  ``tests/crawl/test_demo.py`` compares it with the table its
own run printed; when the demo changes (a new origin, a new column), rewrite
the block from a run, from the repository root::

    python -m tests.crawl.demo_doc

Compared: the title, every cell of every row and the footer, with the port
read as the default one.  Not compared: the MIN GAP numbers (server-side
timings, different on every run; whether there is a gap, ``-`` or a number,
is compared) and the column widths (cells are read by the header's rule).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

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


def stable(table: str, port: int = PORT) -> list[str]:
    """What of a table printed by a run on ``port`` does not change from run
    to run, one string per line: the title, each line of the table as its
    cells (`` | ``-joined; a MIN GAP number masked as ``<gap>``), the footer;
    the port read as the default one (after the cells are cut: a port's
    length may shift the columns)."""
    lines = table.rstrip("\n").splitlines()
    header = next(i for i, line in enumerate(lines) if line.startswith("ORIGIN "))
    rule = lines[header + 1]
    last_rule = max(i for i, line in enumerate(lines) if line == rule)
    starts = [match.start() for match in re.finditer(r"-+", rule)]
    bounds = list(zip(starts, [*starts[1:], None]))
    gap = next(i for i, (start, _) in enumerate(bounds) if lines[header].startswith("MIN GAP", start))
    out = lines[:header]
    for line in lines[header : last_rule + 1]:
        if line == rule:
            out.append("-----")
            continue
        cells = [line[start:end].strip() for start, end in bounds]
        cells[gap] = GAP.sub("<gap>", cells[gap])
        out.append(" | ".join(cells))
    same_port = re.compile(rf"(\b127\.0\.0\.\d+):{port}\b")
    return [same_port.sub(rf"\g<1>:{PORT}", line) for line in out + lines[last_rule + 1 :]]


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
