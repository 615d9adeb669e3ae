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


def _repository_files() -> set[str]:
    """The repository's files: git's list in a checkout; else (an unpacked sdist,
    which is the repository) every file but caches and what the recipes write."""
    if (ROOT / ".git").exists() and shutil.which("git"):
        listed = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True).stdout
        return {name for name in listed.decode().split("\0") if name and (ROOT / name).is_file()}
    skip = {"__pycache__", ".venv", ".tox", ".pytest_cache", ".hypothesis", "build", "dist", "results"}
    return {
        str(path.relative_to(ROOT))
        for path in ROOT.rglob("*")
        if path.is_file()
        and not skip.intersection(path.relative_to(ROOT).parts)
        and not any(part.endswith(".egg-info") for part in path.relative_to(ROOT).parts)
        and path.suffix not in (".pyc", ".sqlite", ".log")
        and path.name != "PKG-INFO"
        and not path.name.startswith("worker")
    }


@pytest.fixture(scope="module")
def sdist(tmp_path_factory) -> dict[str, object]:
    """A real sdist, built by setuptools (the build backend) from a copy of the
    repository's files, unpacked: its directory, its file names, its PKG-INFO."""
    pytest.importorskip("setuptools.build_meta", reason="setuptools (the build backend) not installed")
    tmp_path = tmp_path_factory.mktemp("sdist")
    copy = tmp_path / "src"
    for name in _repository_files():
        (copy / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / name, copy / name)
    dist = tmp_path / "dist"
    dist.mkdir()
    code = f"from setuptools import build_meta; print(build_meta.build_sdist({str(dist)!r}))"
    built = subprocess.run(
        [sys.executable, "-c", code], cwd=copy, capture_output=True, text=True, timeout=120, check=False
    )
    assert built.returncode == 0, built.stderr[-3000:]
    name = built.stdout.strip().splitlines()[-1]
    with tarfile.open(dist / name) as archive:
        names = {member.name.split("/", 1)[1] for member in archive.getmembers() if "/" in member.name}
        top = next(member.name.split("/", 1)[0] for member in archive.getmembers())
        safe = {"filter": "data"} if hasattr(tarfile, "data_filter") else {}  # (3.10.12+)
        archive.extractall(tmp_path / "unpacked", **safe)  # type: ignore[arg-type]
    pkg_info = (tmp_path / "unpacked" / top / "PKG-INFO").read_text(encoding="utf-8")
    return {"root": tmp_path / "unpacked" / top, "names": names, "pkg_info": pkg_info}


def test_sdist_carries_the_docs_and_project_urls(sdist):
    """A real sdist lists every docs/*.md and its PKG-INFO every Project-URL."""
    names = sdist["names"]
    docs = {f"docs/{path.name}" for path in (ROOT / "docs").glob("*.md")}
    assert docs and docs <= names, sorted(docs - names)
    assert {"README.md", "LICENSE"} <= names
    for label, url in _project_urls().items():
        assert f"Project-URL: {label}, {url}" in sdist["pkg_info"]


def test_the_readme_quick_start_works_in_an_unpacked_sdist(sdist):
    """Issue 38: the package page's text is the README, whose Quick start runs
    from the source root: the demo in example_project/, the whole suite in
    tests/.  The sdist lacked both; it now holds every file of the repository,
    and the demo's project loads from it (``scrapy list`` there names its spiders)."""
    missing = _repository_files() - set(sdist["names"])  # type: ignore[arg-type]
    assert not missing, f"the sdist lacks {sorted(missing)[:20]} (MANIFEST.in)"
    for needed in ("example_project/scrapy.cfg", "tests/conftest.py", ".ci/run", "setup.cfg"):
        assert needed in sdist["names"], needed  # type: ignore[operator]
    project = sdist["root"] / "example_project"  # type: ignore[operator]
    listed = subprocess.run(
        [sys.executable, "-m", "scrapy", "list"], cwd=project, capture_output=True, text=True, timeout=60, check=False
    )
    assert listed.returncode == 0, listed.stderr[-3000:]
    assert {"demo", "sitemap_demo"} <= set(listed.stdout.split()), listed.stdout


def test_the_package_summary_names_what_it_does():
    """The summary line on the package page names both halves of the plugin
    (issue 38: usage preferences were missing)."""
    summary = _metadata()["description"].lower()
    assert "rfc 9309" in summary and "usage preferences" in summary, summary
