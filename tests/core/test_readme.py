"""The README's snippets: the parser example runs as pasted (its comments state what it
gives); the Quick start is the two commands CI and docs/first_hour.md use."""

from __future__ import annotations

from pathlib import Path

README = Path(__file__).resolve().parents[2] / "README.md"


def test_parser_snippet_runs_and_says_what_it_gives():
    text = README.read_text(encoding="utf-8")
    snippet = text.split("## The parser on its own", 1)[1].split("```python", 1)[1].split("```", 1)[0]
    namespace: dict = {}
    exec(compile(snippet, "README.md", "exec"), namespace)  # a NameError here is what a user would hit
    decision = namespace["d"]
    assert decision.allowed is False
    assert f"line {decision.rule.line}: Disallow: /private" in snippet  # the comment names the right line
    assert decision.reason == f"disallowed_explicit (line {decision.rule.line}: Disallow: /private)"
    delay = namespace["robots"].crawl_delay("ExampleBot")
    assert f"# {delay}:" in snippet  # the Crawl-delay comment says what the call gives


def _shell_blocks(text: str) -> list[str]:
    return [part.split("```", 1)[0] for part in text.split("```sh")[1:]]


def _quick_start(text: str) -> list[str]:
    """The commands of the first shell block after a "## Quick start" heading."""
    block = _shell_blocks(text.split("## Quick start", 1)[1])[0]
    return [line for line in block.splitlines() if line.strip() and not line.lstrip().startswith("#")]


VENV = "python -m venv .venv && . .venv/bin/activate && "


def test_quick_start_is_two_commands_each_in_a_virtual_environment():
    """One runs the demo, one the whole test suite; each makes and activates
    the same virtual environment first (pip never writes into the system's
    Python), so either one works on a fresh clone, in either order."""
    demo, tests = _quick_start(README.read_text(encoding="utf-8"))
    assert demo.startswith(VENV) and demo.endswith("&& (cd example_project && scrapy crawl demo)")
    assert tests.startswith(VENV) and tests.endswith("&& python -m pytest")
    assert 'pip install -e ".[test,redis]"' in tests  # the test dependencies, and Redis's client


def test_ci_runs_the_readme_test_command_word_for_word():
    _, tests = _quick_start(README.read_text(encoding="utf-8"))
    ci = (README.parent / ".ci" / "run").read_text(encoding="utf-8")
    runs = [line for line in ci.splitlines() if line.startswith(tests)]
    assert runs, f".ci/run has no line that runs {tests!r}"
    assert all(line[len(tests) :] in ("", " || status=$?") for line in runs), runs


def test_first_hour_shows_the_readme_commands():
    text = README.read_text(encoding="utf-8")
    first_hour = (README.parent / "docs" / "first_hour.md").read_text(encoding="utf-8")
    assert _quick_start(first_hour) == _quick_start(text)


def test_quick_start_commands_run_one_after_the_other_from_the_root():
    """Each command of the Quick start starts at the repository root: none
    leaves the shell elsewhere (a ``cd`` only inside a subshell)."""
    commands = _quick_start(README.read_text(encoding="utf-8"))
    assert len(commands) == 2
    for command in commands:
        depth, outside = 0, ""
        for char in command:
            depth += {"(": 1, ")": -1}.get(char, 0)
            if depth == 0 and char not in "()":
                outside += char
        segments = [s.strip() for s in outside.replace("&&", ";").replace("||", ";").split(";")]
        assert not [s for s in segments if s == "cd" or s.startswith(("cd ", "pushd "))], command


def test_files_the_recipes_write_are_ignored_by_git():
    """What a documented recipe redirects into a file (``> worker1.txt``) is
    ignored by the repository's .gitignore."""
    import fnmatch
    import re

    root = README.parent
    ignored = [p.strip() for p in (root / ".gitignore").read_text().splitlines() if p.strip() and p[0] != "#"]
    written: set[str] = set()
    for doc in [README, *sorted((root / "docs").glob("*.md"))]:
        for block in _shell_blocks(doc.read_text(encoding="utf-8")):
            for name in re.findall(r"\d?>>?\s*([\w.$/-]+)", block):
                if name != "/dev/null" and not name.startswith("&"):
                    written |= {name.replace("$i", str(i)) for i in (1, 2, 3)}
    assert {"worker1.txt", "worker3.log"} <= written  # the cluster recipe of docs/storage.md
    for name in written:
        assert any(fnmatch.fnmatch(Path(name).name, pattern) for pattern in ignored), name
