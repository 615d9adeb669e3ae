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
import logging
import sys
from pathlib import Path

import pytest
import pytest_twisted
from scrapy.core.engine import ExecutionEngine

import scrapy_rfc9309
from scrapy_rfc9309 import compat, internals
from scrapy_rfc9309.compat import version_tuple

from .command_runner import make_project, scrapy_crawl_again
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


#: every internal the plugin still uses (scrapy_rfc9309/internals.py), as a Scrapy release
#: could rename it: (what the refusal names, the statement that renames it for the plugin)
RENAMES = {
    "Downloader.get_slot_key": "hide(Downloader, 'get_slot_key')",
    "Downloader.middleware": "hide(Downloader, 'middleware')",
    "Downloader.handlers": "hide(Downloader, 'handlers')",
    "DownloaderMiddlewareManager.download_async": "hide(DownloaderMiddlewareManager, 'download_async')",
    "DownloadHandlers": "del handlers.DownloadHandlers",
    "DownloadHandlers.download_request_async": "hide(handlers.DownloadHandlers, 'download_request_async')",
}
if compat.SCRAPY_VERSION < (2, 14):  # pragma: no cover - the Deferred forms of 2.13
    RENAMES["DownloaderMiddlewareManager.download"] = "hide(DownloaderMiddlewareManager, 'download')"
    del RENAMES["DownloaderMiddlewareManager.download_async"]
    RENAMES["DownloadHandlers.download_request"] = "hide(handlers.DownloadHandlers, 'download_request')"
    del RENAMES["DownloadHandlers.download_request_async"]
if compat.SCRAPY_VERSION < (2, 15):  # pragma: no cover
    # (twisted.web.http is wrapped by Twisted's deprecation proxy: the name goes from the module inside)
    # (Twisted's client and Scrapy's HTTP/1.1 handler import the name first: gone from the module
    # after that, the plugin's use of it is what the check guards)
    RENAMES["twisted.web.http._DataLoss"] = (
        "import twisted.web.client, scrapy.core.downloader.handlers.http11; "
        "delattr(unproxied(twisted_http), '_DataLoss')"
    )

#: run in the spider module of a ``scrapy crawl`` subprocess, before the crawl starts
RENAMING = """
import dataclasses, sys
from twisted.web import http as twisted_http
from scrapy.core.downloader import Downloader, handlers
from scrapy.core.downloader.middleware import DownloaderMiddlewareManager


class Hidden:
    def __init__(self, name, original):
        self.name, self.original, self.key = name, original, "_hidden_" + name

    def __get__(self, obj, owner=None):
        if sys._getframe(1).f_globals.get("__name__", "").startswith("scrapy_rfc9309"):
            raise AttributeError(self.name)
        if obj is None:
            return self
        if self.key in vars(obj):
            return vars(obj)[self.key]
        return self.original.__get__(obj, owner)

    def __set__(self, obj, value):
        vars(obj)[self.key] = value


def unproxied(module):
    # the module inside Twisted's deprecation proxy (twisted.web.http is one), or the module
    from twisted.python.deprecate import _InternalState

    return _InternalState(module)._module if type(module).__name__ == "_ModuleProxy" else module


def hide(cls, name):
    setattr(cls, name, Hidden(name, vars(cls).get(name)))


{rename}
"""


def _crawl_with(tmp_path, site, rename: str):
    make_project(tmp_path, [site.url("/a"), site.url("/private")], head=RENAMING.format(rename=rename))
    return scrapy_crawl_again(tmp_path, *MODE_ARGS)


@pytest.mark.parametrize("internal", sorted(RENAMES))
def test_a_renamed_internal_refuses_the_crawl_with_one_line_and_a_failure_exit(servers, tmp_path, internal):
    """``scrapy crawl`` on a Scrapy whose ``internal`` has another name: one
    ERROR line naming it and the tested versions, finish reason
    rfc9309_scrapy_internals_changed, nothing fetched, exit status 1."""
    site = _site(servers)
    run = _crawl_with(tmp_path, site, RENAMES[internal])

    log = run.stderr
    refusals = [line for line in log.splitlines() if "cannot run on Scrapy" in line]
    assert len(refusals) == 1, log[-3000:]
    assert "ERROR" in refusals[0] and internal in refusals[0], refusals
    assert f"tested with Scrapy {internals.tested_range()}" in refusals[0]
    assert "Traceback" not in log, log[-3000:]
    assert f"'finish_reason': '{internals.REFUSED}'" in log, log[-3000:]
    assert site.paths() == []
    assert run.returncode == 1, (run.returncode, log[-2000:])


@pytest_twisted.ensureDeferred
async def test_the_plugin_reaches_the_engine_through_no_private_name(servers, caplog, monkeypatch):
    """The engine's own private state is not needed any more (the gate uses the
    scheduler interface and ``engine.crawl``): hiding ``ExecutionEngine._slot``
    from the plugin changes nothing."""
    hide(monkeypatch, ExecutionEngine, "_slot")
    site = _site(servers)
    caplog.set_level(logging.INFO)
    result = await crawl([site.url("/a"), site.url("/b"), site.url("/private")])
    assert not _refusals(caplog)
    assert result.outcome(site.url("/a")).status == 200
    assert result.outcome(site.url("/private")).message.startswith("Forbidden by robots.txt: disallowed")
    check_accounting(result)


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
    ("robots/usage.py", "other._values"),
    ("settings.py", "other._values"),
    ("settings.py", "p._values"),
    ("robots/usage.py", "usage._values"),
    ("robots/usage_match.py", "matcher._exact"),
    ("robots/usage_match.py", "matcher._node_of"),
    ("robots/usage_match.py", "matcher._nodes"),
    ("robots/index.py", "fresh._gramming"),
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
