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
