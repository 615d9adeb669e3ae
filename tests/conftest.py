"""Under ``CI=true`` the strongest evidence may not silently go missing.

The corpus tests (``../shared/corpus``) and the differential test against
Google's parser (``jwm-robotstxt``) skip with a message on a developer's
machine that lacks them.  In CI such a skip would let a run pass without its
best evidence, so there it fails instead (as the Redis tests do, see
tests/crawl/redisd.py).
"""

from __future__ import annotations

import os

import pytest

#: skip reasons that mean "the evidence is missing", not "not applicable here"
EVIDENCE = ("corpus not found", "jwm-robotstxt")


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
