"""The README's parser snippet runs as pasted (its comments state what it gives)."""

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


def test_quick_start_commands_run_one_after_the_other_from_the_root():
    """Each command of the Quick start starts at the repository root: none
    leaves the shell elsewhere (a ``cd`` only inside a subshell)."""
    text = README.read_text(encoding="utf-8")
    block = _shell_blocks(text.split("## Quick start", 1)[1])[0]
    commands = [line for line in block.splitlines() if line.strip() and not line.lstrip().startswith("#")]
    assert len(commands) >= 2
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
