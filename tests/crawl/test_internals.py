"""The contract with Scrapy's internals (scrapy_rfc9309/internals.py), in real crawls.

A Scrapy release that renames or removes an internal the plugin uses is
simulated by hiding the attribute from the plugin's code only: Scrapy's own
code still finds it (as it would under its new name), the plugin's does not.
The crawl must then be refused before its first request with one line naming
the internal and the tested Scrapy versions, never run with requests failing
or dropped one by one.
"""

from __future__ import annotations

import ast
import inspect
import logging
import sys
from pathlib import Path

import pytest
import pytest_twisted
from scrapy.core.downloader import Downloader, Slot
from scrapy.core.engine import ExecutionEngine

import scrapy_rfc9309
from scrapy_rfc9309 import compat, internals
from scrapy_rfc9309.compat import version_tuple

from .command_runner import scrapy_crawl
from .harness import MODE_ARGS, check_accounting, crawl
from .servers import robots

PLUGIN = "scrapy_rfc9309"


class _HiddenFromPlugin:
    """A class attribute (method or instance attribute) that the plugin's modules
    no longer find, as after a rename in Scrapy; every other caller does."""

    def __init__(self, name: str, original: object) -> None:
        self.name = name
        self.original = original
        self.key = f"_hidden_{name}"

    def __get__(self, obj: object, owner: type | None = None) -> object:
        caller = sys._getframe(1).f_globals.get("__name__", "")
        if caller.startswith(PLUGIN):
            raise AttributeError(self.name)
        if obj is None:
            return self
        if self.key in vars(obj):  # an instance attribute
            return vars(obj)[self.key]
        if self.original is None:
            raise AttributeError(self.name)
        return self.original.__get__(obj, owner)  # type: ignore[attr-defined]

    def __set__(self, obj: object, value: object) -> None:
        vars(obj)[self.key] = value


def hide(monkeypatch: pytest.MonkeyPatch, cls: type, name: str) -> None:
    monkeypatch.setattr(cls, name, _HiddenFromPlugin(name, vars(cls).get(name)), raising=False)


def _site(servers):
    site = servers("127.0.0.2")
    site.routes["/robots.txt"] = robots("User-agent: *\nDisallow: /private\n")
    return site


def _refusals(caplog) -> list[str]:
    return [r.getMessage() for r in caplog.records if "cannot run on Scrapy" in r.getMessage()]


async def _refused(servers, caplog, internal: str) -> None:
    site = _site(servers)
    caplog.set_level(logging.INFO)
    result = await crawl([site.url("/a"), site.url("/b"), site.url("/private")])

    refusals = _refusals(caplog)
    assert len(refusals) == 1, refusals
    line = refusals[0]
    assert internal in line and f"tested with Scrapy {internals.tested_range()}" in line, line
    assert result.stats.get("finish_reason") == internals.REFUSED
    # refused before the first request: nothing fetched, nothing decided, nothing dropped
    assert site.paths() == []
    assert result.stat("requests/checked") == 0
    assert result.stat("requests/dropped/spider_closing") == 0
    assert not [o for o in result.outcomes if "Dropped" in o.message], result.outcomes
    assert not [r for r in caplog.records if "ImportError" in r.getMessage() or r.exc_info], [
        r.getMessage() for r in caplog.records if r.exc_info
    ]


@pytest_twisted.ensureDeferred
async def test_a_renamed_engine_slot_refuses_the_crawl_instead_of_dropping_requests(servers, caplog, monkeypatch):
    # before the contract: every request "dropped: the spider closed before robots.txt allowed it"
    hide(monkeypatch, ExecutionEngine, "_slot")
    await _refused(servers, caplog, "ExecutionEngine._slot")


@pytest_twisted.ensureDeferred
async def test_a_renamed_downloader_get_slot_refuses_the_crawl(servers, caplog, monkeypatch):
    # before the contract: every request of a new origin failed with AttributeError
    hide(monkeypatch, Downloader, "_get_slot")
    await _refused(servers, caplog, "Downloader._get_slot")


def test_scrapy_crawl_refused_for_a_renamed_internal_exits_non_zero_with_one_error_line(servers, tmp_path):
    """As a cron job sees it: ``scrapy crawl`` on a Scrapy whose ``Downloader._get_slot``
    the plugin no longer finds (hidden when the project's spider module is imported)."""
    site = _site(servers)
    prelude = "\n".join(
        [
            "import sys",
            "from scrapy.core.downloader import Downloader",
            f"PLUGIN = {PLUGIN!r}",
            inspect.getsource(_HiddenFromPlugin),
            "Downloader._get_slot = _HiddenFromPlugin('_get_slot', vars(Downloader)['_get_slot'])",
        ]
    )
    process = scrapy_crawl(tmp_path, [site.url("/a"), site.url("/private")], *MODE_ARGS, prelude=prelude)

    log = process.stderr
    assert process.returncode != 0, log[-3000:]  # was 0: a cron job saw a refused crawl as a success
    errors = [line for line in log.splitlines() if " ERROR: " in line]
    assert len(errors) == 1, errors
    assert "Downloader._get_slot" in errors[0] and internals.tested_range() in errors[0], errors[0]
    assert "Traceback" not in log
    assert f"Spider closed ({internals.REFUSED})" in log
    assert site.paths() == []


@pytest.mark.skipif(
    compat.SCRAPY_VERSION < (2, 18),
    reason="before 2.18 the engine starts before the refused spider closes, and calls the removed method itself",
)
@pytest_twisted.ensureDeferred
async def test_a_removed_downloader_method_refuses_the_crawl(servers, caplog, monkeypatch):
    monkeypatch.delattr(Downloader, "needs_backout")
    await _refused(servers, caplog, "Downloader.needs_backout")


@pytest_twisted.ensureDeferred
async def test_a_changed_slot_queue_refuses_the_crawl(servers, caplog, monkeypatch):
    """A slot queue of another type: the per-domain burst workaround would not hold."""
    made = Slot.__init__

    def init(self, *args, **kwargs):
        made(self, *args, **kwargs)
        self.queue = list(self.queue)

    monkeypatch.setattr(Slot, "__init__", init)
    await _refused(servers, caplog, "Slot.queue is not a collections.deque")


@pytest_twisted.ensureDeferred
async def test_a_newer_scrapy_with_the_internals_in_place_warns_once_and_crawls(servers, caplog, monkeypatch):
    # this Scrapy, one minor release past the newest tested
    monkeypatch.setattr(internals, "NEWEST_TESTED", (compat.SCRAPY_VERSION[0], compat.SCRAPY_VERSION[1] - 1))
    monkeypatch.setattr(internals, "_warned_newer", False)
    site = _site(servers)
    caplog.set_level(logging.INFO)
    result = await crawl([site.url("/a"), site.url("/private")])
    result_again = await crawl([site.url("/b")])

    warnings = [r for r in caplog.records if "is tested with Scrapy" in r.getMessage()]
    assert len(warnings) == 1 and warnings[0].levelno == logging.WARNING
    assert internals.tested_range() in warnings[0].getMessage()
    assert not _refusals(caplog)
    assert result.outcome(site.url("/a")).status == 200
    assert result.outcome(site.url("/private")).error == "IgnoreRequest"
    assert result_again.outcome(site.url("/b")).status == 200
    check_accounting(result)


@pytest_twisted.ensureDeferred
async def test_the_probe_slot_of_the_check_is_gone_once_the_crawl_runs(servers):
    site = _site(servers)
    seen: list[list[str]] = []
    result = await crawl([site.url("/a")])
    downloader = result.crawler.engine.downloader if result.crawler.engine else None
    if downloader is not None:
        seen.append(list(downloader.slots))
    assert all(internals.PROBE_SLOT not in keys for keys in seen)
    assert result.outcome(site.url("/a")).status == 200


@pytest.mark.parametrize(
    ("version", "expected"),
    [
        ("2.19.0", (2, 19)),
        ("2.13.4", (2, 13)),
        ("2.20.0a1", (2, 20)),
        ("2.20.0.dev0", (2, 20)),
        ("2.20.0rc2", (2, 20)),
        ("2.20", (2, 20)),
        ("3.0.0b1", (3, 0)),
        ("3", (3, 0)),
    ],
)
def test_the_version_parse_accepts_pre_releases_and_dev_builds(version, expected):
    assert version_tuple(version) == expected


def test_the_version_of_this_scrapy_parses():
    assert compat.SCRAPY_VERSION >= compat.OLDEST_SCRAPY
    with pytest.raises(ValueError, match="not a version"):
        version_tuple("dev")


PACKAGE = Path(scrapy_rfc9309.__file__).parent
#: the plugin's own objects reached from a helper class of the same module
#: the plugin's own private attributes, reached from a helper of the same module
OWN = {
    ("storage/redis.py", "self.store._held"),
    ("storage/redis.py", "self.store._run_script"),
    ("slots.py", "self._held._wait_for_room"),
    ("robots/usage.py", "other._values"),
    ("robots/usage.py", "usage._values"),
}


def _sources() -> list[tuple[str, ast.AST]]:
    return [(str(p.relative_to(PACKAGE)), ast.parse(p.read_text(encoding="utf-8"))) for p in PACKAGE.rglob("*.py")]


def test_only_internals_py_names_a_private_attribute_of_another_object():
    found = []
    for name, tree in _sources():
        if name == "internals.py":
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.Attribute) and node.attr.startswith("_") and not node.attr.startswith("__"):
                if isinstance(node.value, ast.Name) and node.value.id in ("self", "cls"):
                    continue
                if (name, ast.unparse(node)) not in OWN:
                    found.append((name, node.lineno, ast.unparse(node)))
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Name)
                and node.func.id in ("getattr", "hasattr")
            ):
                literal = node.args[1] if len(node.args) > 1 else None
                value = str(literal.value) if isinstance(literal, ast.Constant) else ""
                if value.startswith("_") and not value.startswith("__"):
                    found.append((name, node.lineno, ast.unparse(node)))
            parts = node.module.split(".") if isinstance(node, ast.ImportFrom) and node.module else []
            if any(part.startswith("_") and not part.startswith("__") for part in parts):
                found.append((name, node.lineno, ast.unparse(node)))
    assert found == []


def test_only_compat_py_imports_the_reactor():
    found = []
    for name, tree in _sources():
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module == "twisted.internet":
                if any(alias.name == "reactor" for alias in node.names) and name != "compat.py":
                    found.append((name, node.lineno))
            if isinstance(node, ast.Import) and any(a.name.startswith("twisted.internet.reactor") for a in node.names):
                found.append((name, node.lineno))
    assert found == []
