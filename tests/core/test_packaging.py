"""The package as published: its metadata's links, the sdist's docs, and
links that work where the README is shown without the repository (the
package page renders README.md alone)."""

from __future__ import annotations

import configparser
import re
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
#: a Markdown inline link's target: [text](target) (an image's too)
LINK = re.compile(r"\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
FENCE = re.compile(r"^```.*?^```", re.S | re.M)


def _metadata() -> configparser.SectionProxy:
    parser = configparser.ConfigParser()
    parser.read(ROOT / "setup.cfg", encoding="utf-8")
    return parser["metadata"]


def _project_urls() -> dict[str, str]:
    lines = [line.strip() for line in _metadata().get("project_urls", "").splitlines() if line.strip()]
    return dict(tuple(part.strip() for part in line.split("=", 1)) for line in lines)  # type: ignore[misc]


def _source() -> str:
    return _project_urls()["Source"].rstrip("/")


def _links(path: Path) -> list[str]:
    """The link targets of a Markdown file, outside fenced code blocks."""
    return LINK.findall(FENCE.sub("", path.read_text(encoding="utf-8")))


def _slug(heading: str) -> str:
    """The anchor a heading gets on the repository's pages: lower case,
    punctuation dropped (``-`` and ``_`` kept), spaces as ``-``."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return text.replace(" ", "-")


def _anchors(path: Path) -> set[str]:
    """Every heading's anchor in a Markdown file (a repeated one also with
    its ``-1``, ``-2`` ... suffix)."""
    seen: dict[str, int] = {}
    for heading in re.findall(r"^#{1,6}\s+(.+?)\s*#*$", FENCE.sub("", path.read_text(encoding="utf-8")), re.M):
        slug = _slug(heading)
        seen[slug if slug not in seen else f"{slug}-{seen[slug]}"] = 0
        seen[slug] = seen.get(slug, 0) + 1
    return set(seen)


def _check_target(path: Path, anchor: str, where: str) -> list[str]:
    if not path.exists():
        return [f"{where}: no file {path.relative_to(ROOT)}"]
    if anchor and path.suffix == ".md" and anchor not in _anchors(path):
        return [f"{where}: {path.relative_to(ROOT)} has no heading #{anchor}"]
    return []


def test_project_urls_name_the_repository_its_docs_and_its_issues():
    urls = _project_urls()
    assert {"Source", "Documentation", "Issues"} <= set(urls), urls
    source = _source()
    assert re.fullmatch(r"https://github\.com/[\w.-]+/[\w.-]+", source), source
    assert _metadata()["url"] == source  # the Home-page field
    assert urls["Issues"] == f"{source}/issues"
    page, _, anchor = urls["Documentation"].removeprefix(f"{source}/blob/main/").partition("#")
    assert urls["Documentation"].startswith(f"{source}/blob/main/")
    assert not _check_target(ROOT / page, anchor, "Documentation")


def test_readme_links_work_without_the_repository():
    """The package page shows README.md with no files beside it: a relative
    link there leads nowhere.  Links into the repository are absolute, under
    Source's ``blob/main/``, and name a file (and heading) that exists."""
    source = _source()
    links = _links(ROOT / "README.md")
    into_repo = [link for link in links if link.startswith(f"{source}/")]
    assert len(into_repo) >= 10  # the README's links to docs/*.md
    problems = [f"relative link {link!r}" for link in links if not re.match(r"https?://", link)]
    for link in into_repo:
        target, _, anchor = link.removeprefix(f"{source}/").partition("#")
        kind, _, path = target.partition("/main/")
        if kind not in ("blob", "tree"):
            problems.append(f"{link}: not a link to the main branch's files (blob/main/ or tree/main/)")
            continue
        problems += _check_target(ROOT / path, anchor, link)
    assert not problems, "\n".join(problems)


def test_docs_relative_links_resolve():
    """The docs link to each other relatively (they travel together: the
    repository, the sdist); each link names a file and a heading that exist."""
    problems = []
    for doc in sorted((ROOT / "docs").glob("*.md")):
        for link in _links(doc):
            if re.match(r"[a-z]+:", link):
                continue
            target, _, anchor = link.partition("#")
            path = (doc.parent / target).resolve() if target else doc
            problems += _check_target(path, anchor, f"docs/{doc.name}: {link}")
    assert not problems, "\n".join(problems)


def test_manifest_puts_the_docs_in_the_sdist():
    lines = [line.split() for line in (ROOT / "MANIFEST.in").read_text().splitlines() if line.strip()]
    assert ["recursive-include", "docs", "*.md"] in lines or ["graft", "docs"] in lines
    assert any(line[0] == "include" and "README.md" in line and "LICENSE" in line for line in lines)


def test_sdist_carries_the_docs_and_project_urls(tmp_path):
    """A real sdist, built by setuptools (the build backend) from a copy of
    the checkout: it lists every docs/*.md and its PKG-INFO every Project-URL."""
    build_meta = pytest.importorskip("setuptools.build_meta", reason="setuptools (the build backend) not installed")
    del build_meta  # imported in the subprocess, which runs on the copy
    copy = tmp_path / "src"
    skip = shutil.ignore_patterns(".*", "*.egg-info", "__pycache__", "build", "dist", "results", "*.sqlite")
    shutil.copytree(ROOT, copy, ignore=skip)
    dist = tmp_path / "dist"
    dist.mkdir()
    code = f"from setuptools import build_meta; print(build_meta.build_sdist({str(dist)!r}))"
    built = subprocess.run(
        [sys.executable, "-c", code], cwd=copy, capture_output=True, text=True, timeout=120, check=False
    )
    assert built.returncode == 0, built.stderr[-3000:]
    name = built.stdout.strip().splitlines()[-1]
    with tarfile.open(dist / name) as sdist:
        names = {member.name.split("/", 1)[1] for member in sdist.getmembers() if "/" in member.name}
        top = next(member.name.split("/", 1)[0] for member in sdist.getmembers())
        pkg_info = sdist.extractfile(f"{top}/PKG-INFO").read().decode()  # type: ignore[union-attr]
    docs = {f"docs/{path.name}" for path in (ROOT / "docs").glob("*.md")}
    assert docs and docs <= names, sorted(docs - names)
    assert {"README.md", "LICENSE"} <= names
    for label, url in _project_urls().items():
        assert f"Project-URL: {label}, {url}" in pkg_info
