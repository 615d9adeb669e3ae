"""What the README and docs/ state that the code can check (issue 38: docs that
drifted): the settings' defaults, the command's synopses and exit statuses,
where the add-on's line goes, what is supported, the README's length."""

from __future__ import annotations

import argparse
import ast
import configparser
import re
import subprocess
import sys
from pathlib import Path

import pytest
from scrapy.commands import ScrapyCommand
from scrapy.settings import Settings

from scrapy_rfc9309.commands import robots as robots_command
from scrapy_rfc9309.settings import DEFAULTS, Rfc9309Settings

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
DOCS = [README, *sorted((ROOT / "docs").glob("*.md"))]
FIRST_HOUR = ROOT / "docs" / "first_hour.md"


def _text(path: Path) -> str:
    return path.read_text(encoding="utf-8")


def _where(path: Path) -> str:
    return str(path.relative_to(ROOT))


# -- the README's length ------------------------------------------------------------------------
def test_the_readme_is_at_most_200_lines():
    """Issue 38: 228 lines; what moved out went to docs/ with a link."""
    lines = _text(README).splitlines()
    assert len(lines) <= 200, f"README.md has {len(lines)} lines: move a section to docs/ and link it"


# -- where the add-on's line goes ---------------------------------------------------------------
def test_readme_and_first_hour_say_the_add_on_line_replaces_the_templates():
    """Issue 38: Scrapy's ``startproject`` writes ``ADDONS = {}``; the add-on's
    line written above it is silently undone.  Both documents say to replace
    that line (or add the entry to it), next to the line they give."""
    for path in (README, FIRST_HOUR):
        text = _text(path)
        at = text.index('```python\nADDONS = {"scrapy_rfc9309.Addon": 0}\n```')
        near = " ".join(text[at : at + 900].split())
        assert "`ADDONS = {}`" in near and "Replace" in near, f"{_where(path)}: {near[:300]}"
        assert "not enabled" in near, _where(path)


def _startproject(tmp_path: Path) -> Path:
    made = subprocess.run(
        [sys.executable, "-m", "scrapy", "startproject", "shop"], cwd=tmp_path, capture_output=True, text=True
    )
    assert made.returncode == 0, made.stderr[-2000:]
    return tmp_path / "shop" / "shop" / "settings.py"


def _addons(project: Path) -> object:
    code = "from scrapy.utils.project import get_project_settings; print(get_project_settings().getdict('ADDONS'))"
    out = subprocess.run([sys.executable, "-c", code], cwd=project, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr[-2000:]
    return ast.literal_eval(out.stdout.strip())


def test_the_add_on_line_above_the_templates_does_nothing_and_in_its_place_enables_it(tmp_path):
    """What the docs warn about, on Scrapy's own template: the line written
    above ``ADDONS = {}`` leaves no add-on; in its place, the add-on is there."""
    settings = _startproject(tmp_path)
    template = _text(settings)
    assert "\nADDONS = {}\n" in template  # Scrapy 2.13+
    line = 'ADDONS = {"scrapy_rfc9309.Addon": 0}'
    settings.write_text(template.replace("BOT_NAME", f"{line}\nBOT_NAME", 1), encoding="utf-8")
    assert _addons(settings.parent.parent) == {}
    settings.write_text(template.replace("ADDONS = {}", line), encoding="utf-8")
    assert _addons(settings.parent.parent) == {"scrapy_rfc9309.Addon": 0}


# -- settings' defaults -------------------------------------------------------------------------
NAME = re.compile(r"`((?:RFC9309|ROBOTSTXT)_[A-Z_]+|USER_AGENT)`")


def _split(cell: str) -> list[str]:
    """A table cell's comma-separated parts, commas inside backticks or brackets kept."""
    parts, depth, quoted, current = [], 0, False, ""
    for char in cell:
        quoted ^= char == "`"
        depth += (char in "([{") - (char in ")]}") if not quoted else 0
        if char == "," and not quoted and depth == 0:
            parts.append(current.strip())
            current = ""
        else:
            current += char
    return [*parts, current.strip()]


def _effective_defaults() -> dict[str, object]:
    """The default of every setting, as a crawl without settings reads it
    (a computed one where DEFAULTS says None)."""
    config = Rfc9309Settings.from_settings({})
    return {**DEFAULTS, "RFC9309_MAX_HELD": config.max_held, "RFC9309_STORAGE": config.storage}


def _same(shown: object, default: object) -> bool:
    if isinstance(default, (int, float)) and not isinstance(default, bool) and isinstance(shown, (int, float)):
        return float(shown) == float(default)
    if isinstance(default, (list, tuple)) and isinstance(shown, (list, tuple)):
        return list(shown) == list(default)
    return shown == default


def _table_defaults(path: Path) -> list[tuple[str, str, str]]:
    """(setting, the default as shown, where) of each settings table's rows."""
    found = []
    header = None
    for number, line in enumerate(_text(path).splitlines(), 1):
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")] if line.startswith("|") else None
        if cells is None:
            header = None
            continue
        if cells[:2] == ["setting", "default"]:
            header = cells
            continue
        if header is None or set(cells[0]) <= {"-"}:
            continue
        names = NAME.findall(cells[0])
        shown = _split(cells[1])
        if len(names) == len(shown):
            found += [(name, part, f"{_where(path)}:{number}") for name, part in zip(names, shown)]
    return found


def _prose_defaults(path: Path) -> list[tuple[str, str, str]]:
    """``RFC9309_X`` ... (default N) in running text."""
    pattern = re.compile(r"`(RFC9309_[A-Z_]+)`\**[^.|`(]{0,40}\(default ([^)]*)\)")
    return [
        (match.group(1), match.group(2), f"{_where(path)}:{_text(path).count(chr(10), 0, match.start()) + 1}")
        for match in pattern.finditer(_text(path))
    ]


def test_every_documented_default_is_the_codes():
    """Each settings table (README, docs/*.md) and each "(default N)" in the
    text gives a setting's default as the code has it (issue 38: docs/storage.md
    had an old RFC9309_MAX_HELD)."""
    defaults = _effective_defaults()
    problems, checked = [], 0
    for path in DOCS:
        for name, shown, where in _table_defaults(path):
            literal = re.match(r"`([^`]*)`", shown)
            if name not in defaults or literal is None:
                continue  # Scrapy's settings, and defaults said in words ("Scrapy's")
            try:
                value = ast.literal_eval(literal.group(1))
            except (ValueError, SyntaxError):
                continue  # a formula: `max(64, 4 x CONCURRENT_REQUESTS)`
            checked += 1
            if not _same(value, defaults[name]):
                problems.append(f"{where}: {name} default {shown!r}, the code's {defaults[name]!r}")
        for name, shown, where in _prose_defaults(path):
            default = defaults.get(name)
            number = re.match(r"[\d,]+(?:\.\d+)?", shown)
            checked += 1
            if shown.startswith("`") and default is None:
                continue  # a formula, for a default computed from other settings
            if shown.startswith("`"):
                ok = shown.strip("`") == str(default)
            else:
                ok = number is not None and _same(float(number.group().replace(",", "")), default)
            if not ok:
                problems.append(f"{where}: {name} (default {shown}), the code's {default!r}")
    assert checked >= 24, checked  # the tables were found (docs/middleware.md holds the one table of every setting)
    assert not problems, "\n".join(problems)


# -- the command: synopses and exit statuses ------------------------------------------------------
def _command_options() -> set[str]:
    """``scrapy robots``'s own long options (Scrapy's common ones left out)."""
    ours, common = argparse.ArgumentParser(), argparse.ArgumentParser()
    command = robots_command.Command()
    command.settings = Settings()
    command.add_options(ours)
    ScrapyCommand.add_options(command, common)  # what every Scrapy command has
    names = {s for a in ours._actions for s in a.option_strings if s.startswith("--")}
    return names - {s for a in common._actions for s in a.option_strings}


def _synopsis(path: Path) -> str:
    """The block of ``scrapy robots ...`` lines the document gives first."""
    text = _text(path)
    block = re.search(r"```\n(scrapy robots [^\n]*\n(?:scrapy robots [^\n]*\n)*)```", text)
    assert block, f"{_where(path)}: no ``` block of `scrapy robots ...` lines"
    return block.group(1)


@pytest.mark.parametrize("path", [README, FIRST_HOUR], ids=_where)
def test_the_synopsis_names_every_option_of_the_command(path):
    """Issue 38: README's lacked --page, --summary, --audit-key-file; first_hour's
    --usage, --page, --audit."""
    options = _command_options()
    assert {"--agent", "--file", "--lint", "--audit", "--summary", "--usage", "--page"} <= options
    given = set(re.findall(r"--[a-z][a-z-]*", _synopsis(path)))
    assert given == options, f"{_where(path)}: missing {sorted(options - given)}, unknown {sorted(given - options)}"


def _exit_statuses() -> set[int]:
    """Every status the command exits with: 0 and 1 (allowed, denied) and its EXIT_* constants."""
    return {0, 1} | {value for name, value in vars(robots_command).items() if name.startswith("EXIT_")}


def test_first_hour_lists_every_exit_status_of_the_command():
    """Issue 38: the table listed 0, 1, 2; a replay also exits with 3 and 4."""
    text = _text(FIRST_HOUR)
    table = text[text.index("| exit status | meaning |") :].split("\n\n", 1)[0]
    listed = {int(status) for status in re.findall(r"^\| (\d+) \|", table, re.M)}
    assert listed == _exit_statuses() == {0, 1, 2, 3, 4}


def test_readme_gives_every_exit_status_of_the_command():
    text = " ".join(_text(README).split("## Tools", 1)[1].split())
    said = text[text.index("exit status") : text.index("no closing record")]
    for status in sorted(_exit_statuses()):
        assert re.search(rf"\b{status} [a-z]", said), (status, said)


# -- what is supported, said once ---------------------------------------------------------------
def _metadata() -> configparser.ConfigParser:
    parser = configparser.ConfigParser()
    parser.read(ROOT / "setup.cfg", encoding="utf-8")
    return parser


def test_one_python_range_in_the_readme_the_classifiers_tox_and_python_requires():
    """Issue 38: python_requires admitted 3.13 and 3.14 while the README said 3.10
    to 3.12.  The README's "Supported" line is the one place; the classifiers,
    tox's factors and python_requires' lower bound say the same, and CI runs
    the newest (.ci/run, where the machine has it)."""
    supported = re.search(r"\*\*Supported:\*\* Python 3\.(\d+) to 3\.(\d+)", _text(README))
    assert supported, "README.md: no '**Supported:** Python 3.x to 3.y'"
    low, high = int(supported.group(1)), int(supported.group(2))
    wanted = {f"3.{minor}" for minor in range(low, high + 1)}
    metadata = _metadata()
    classifiers = set(re.findall(r"Programming Language :: Python :: (3\.\d+)", metadata["metadata"]["classifiers"]))
    assert classifiers == wanted
    assert metadata["options"]["python_requires"].strip() == f">=3.{low}"
    tox = _text(ROOT / "tox.ini")
    envlist = re.search(r"^envlist = py\{([\d,]+)\}", tox, re.M)
    assert envlist and {f"{v[0]}.{v[1:]}" for v in envlist.group(1).split(",")} == wanted
    assert f"python3.{high}" in _text(ROOT / ".ci" / "run")


def test_the_oracle_is_optional_where_it_cannot_install():
    """jwm-robotstxt (Google's parser, the tests' oracle) has no build for
    Python 3.13: the test extra leaves it out there, and CI (tests/conftest.py)
    accepts its tests' skip there only."""
    extra = _metadata()["options.extras_require"]["test"]
    oracle = [line.strip() for line in extra.splitlines() if line.strip().startswith("jwm-robotstxt")]
    assert oracle == ['jwm-robotstxt>=1.0.8; python_version < "3.13"'], oracle
    sys.path.insert(0, str(ROOT / "tests"))
    try:
        import conftest  # tests/conftest.py
    finally:
        sys.path.pop(0)
    assert ("jwm-robotstxt" in conftest.EVIDENCE) == (sys.version_info < (3, 13))


# -- the suite's time --------------------------------------------------------------------------
def test_readme_gives_the_suites_time_and_pytest_names_the_slowest_tests():
    """Issue 38: 9 minutes with long silent stretches.  The README says how long,
    and pytest ends with the slowest tests (setup.cfg's addopts)."""
    quick = " ".join(_text(README).split("## Quick start", 1)[1].split("## ", 1)[0].split())
    assert re.search(r"The second takes about \d+ minutes on a 2-core machine", quick), quick
    addopts = _metadata()["tool:pytest"]["addopts"].split()
    durations = [opt for opt in addopts if opt.startswith("--durations=")]
    assert durations and f"the {durations[0].split('=')[1]} slowest tests" in quick
