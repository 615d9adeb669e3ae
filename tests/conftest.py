"""Under ``CI=true`` the strongest evidence may not silently go missing.

The corpus tests (``../shared/corpus``) and the differential test against
Google's parser (``jwm-robotstxt``) skip with a message on a developer's
machine that lacks them (Google's parser is left out on Python 3.13+, where it
does not build: there its tests skip under ``CI=true`` too).  In CI such a skip would let a run pass without its
best evidence, so there it fails instead (as the Redis tests do, see
tests/crawl/redisd.py).
"""

from __future__ import annotations

import asyncio
import inspect
import os
import sys

import pytest

#: skip reasons that mean "the evidence is missing", not "not applicable here"; Google's
#: parser only where the test extra installs it (setup.cfg: it has no build for Python 3.13+)
EVIDENCE = ("corpus not found", *(("jwm-robotstxt",) if sys.version_info < (3, 13) else ()))


def _in_ci() -> bool:
    return os.environ.get("CI", "").strip().lower() in ("true", "1", "yes")


def _fail_if_evidence_missing(report: pytest.TestReport | pytest.CollectReport) -> None:
    if not (_in_ci() and report.skipped):
        return
    reason = str(report.longrepr[-1] if isinstance(report.longrepr, tuple) else report.longrepr)
    if any(marker in reason for marker in EVIDENCE):
        report.outcome = "failed"
        report.longrepr = f"CI=true: {reason} (the CI machine must have it; .ci/run sets it up)"


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    _fail_if_evidence_missing(outcome.get_result())


@pytest.hookimpl(hookwrapper=True)
def pytest_make_collect_report(collector):
    outcome = yield
    _fail_if_evidence_missing(outcome.get_result())


# -- the reactorless mode (Scrapy 2.15+, TWISTED_REACTOR_ENABLED = False) ------------------
# ``python -m pytest -p no:twisted --reactor=none tests/crawl``: no Twisted reactor is
# installed, importing twisted.internet.reactor raises ImportError (Scrapy's own import
# hook, as in a reactorless crawl), the crawls of tests/crawl/harness.py run with
# TWISTED_REACTOR_ENABLED = False, and each ``async def`` test runs on an asyncio loop of
# its own.  Tests that need a reactor are marked ``needs_reactor`` and skipped.
REACTORLESS_ENV = "RFC9309_TEST_REACTORLESS"
# -- Scrapy on a Twisted reactor that is not asyncio's ----------------------------------
# ``python -m pytest --reactor=default tests/crawl/test_scrapy_parity.py``: pytest-twisted
# installs the platform's default reactor (epoll on Linux) and the crawls of
# tests/crawl/harness.py run on it (``TWISTED_REACTOR`` naming it, Scrapy's CrawlerRunner).
DEFAULT_REACTOR_ENV = "RFC9309_TEST_DEFAULT_REACTOR"


def pytest_addoption(parser, pluginmanager):
    if pluginmanager.is_blocked("twisted"):  # pytest-twisted's own --reactor is not there
        parser.addoption(
            "--reactor",
            default="none",
            choices=("none", "asyncio"),  # setup.cfg's addopts say asyncio: the command line says none
            help="with -p no:twisted: none, to run without a Twisted reactor (Scrapy 2.15+)",
        )


def reactorless(config: pytest.Config) -> bool:
    return config.pluginmanager.is_blocked("twisted") and config.getoption("--reactor") == "none"


def pytest_configure(config):
    config.addinivalue_line("markers", "needs_reactor: skipped without a Twisted reactor (--reactor=none)")
    if not reactorless(config):
        if config.pluginmanager.is_blocked("twisted"):
            raise pytest.UsageError("-p no:twisted runs the tests without a reactor: add --reactor=none")
        if config.getoption("--reactor") == "default":
            os.environ[DEFAULT_REACTOR_ENV] = "1"  # for the harness and the crawls in subprocesses
        return
    try:
        from scrapy.utils.reactorless import install_reactor_import_hook
    except ImportError:
        raise pytest.UsageError("--reactor=none needs Scrapy 2.15 or later") from None
    install_reactor_import_hook()
    os.environ[REACTORLESS_ENV] = "1"  # for the crawls the tests start in subprocesses


def pytest_collection_modifyitems(config, items):
    if not reactorless(config):
        return
    skip = pytest.mark.skip(reason="needs a Twisted reactor (this run has none: --reactor=none)")
    for item in items:
        if item.get_closest_marker("needs_reactor"):
            item.add_marker(skip)


@pytest.hookimpl(tryfirst=True)
def pytest_pyfunc_call(pyfuncitem):
    """Without pytest-twisted: run an ``async def`` test on an asyncio loop of its own,
    driven as pytest-twisted drives it (``Deferred.fromCoroutine``: it may await
    Deferreds), the loop being the one the crawl runs on."""
    if not reactorless(pyfuncitem.config) or not inspect.iscoroutinefunction(pyfuncitem.obj):
        return None
    from twisted.internet.defer import Deferred

    kwargs = {name: pyfuncitem.funcargs[name] for name in inspect.signature(pyfuncitem.obj).parameters}

    async def main() -> None:
        await Deferred.fromCoroutine(pyfuncitem.obj(**kwargs)).asFuture(asyncio.get_running_loop())

    asyncio.run(main())
    return True
