"""Running ``scrapy robots`` as a user does: a subprocess, through the
``scrapy.commands`` entry point, with no Scrapy project settings leaking in."""

from __future__ import annotations

import os
import subprocess
import sys

from .accounting import SCRAPY_ARGS, check_output, subprocess_env

TIMEOUT = 60


def scrapy_robots(
    *args: str, cwd, stdin: str | None = None, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess:
    """``scrapy robots ARGS`` (``env``: more environment variables)."""
    env = crawl_env(**(env or {}))
    if os.environ.get("RFC9309_TEST_REACTORLESS") == "1":  # tests/conftest.py: --reactor=none
        args = ("-s", "TWISTED_REACTOR_ENABLED=False", *args)
    elif os.environ.get("RFC9309_TEST_DEFAULT_REACTOR") == "1":  # --reactor=default
        args = ("-s", "TWISTED_REACTOR=twisted.internet.epollreactor.EPollReactor", *args)
    return subprocess.run(
        [sys.executable, "-m", "scrapy", "robots", *args],
        cwd=cwd,
        env=env,
        input=stdin,
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
    )


#: a spider of its own project, run with ``scrapy crawl``: it requests ``URLS``
CRAWL_SPIDER = """
import scrapy

class Probe(scrapy.Spider):
    name = {name!r}
    custom_settings = {custom!r}

    async def start(self):
        for url in {urls!r}:
            yield scrapy.Request(url, dont_filter=True)

    def parse(self, response):
        yield {{"status": response.status}}
"""


def scrapy_crawl(
    tmp_path,
    urls: list[str],
    *args: str,
    name: str = "probe",
    custom: dict | None = None,
    timeout: float = TIMEOUT,
    env: dict[str, str] | None = None,
    preexec_fn=None,
    head: str = "",
) -> subprocess.CompletedProcess:
    """``scrapy crawl <name> [args]`` in a one-spider project made under
    ``tmp_path`` (the plugin through its add-on); what a cron job would see:
    the exit status, stdout and stderr (the log).  ``env``: more environment
    variables; ``preexec_fn``: run in the child before Scrapy starts (a
    resource limit); ``head``: code run when the spider module is imported.
    Its stats must add up (tests/crawl/accounting.py)."""
    make_project(tmp_path, urls, name=name, custom=custom, head=head)
    return scrapy_crawl_again(tmp_path, *args, name=name, timeout=timeout, env=env, preexec_fn=preexec_fn)


def make_project(tmp_path, urls: list[str], name: str = "probe", custom: dict | None = None, head: str = "") -> None:
    """A one-spider project under ``tmp_path`` (the plugin through its add-on)
    whose spider ``name`` requests ``urls``; ``head`` is code run when the
    spider module is imported (before the crawl starts)."""
    (tmp_path / "scrapy.cfg").write_text("[settings]\ndefault = probe_project.settings\n")
    package = tmp_path / "probe_project"
    (package / "spiders").mkdir(parents=True, exist_ok=True)
    (package / "__init__.py").write_text("")
    (package / "spiders" / "__init__.py").write_text("")
    spider = head + CRAWL_SPIDER.format(name=name, urls=urls, custom=custom or {})
    (package / "spiders" / "probe.py").write_text(spider)
    (package / "settings.py").write_text(
        'BOT_NAME = "probe_project"\nSPIDER_MODULES = ["probe_project.spiders"]\n'
        'ADDONS = {"scrapy_rfc9309.Addon": 0}\nROBOTSTXT_OBEY = True\nTELNETCONSOLE_ENABLED = False\n'
        'LOG_LEVEL = "INFO"\n'
    )


def crawl_env(**extra: str) -> dict[str, str]:
    """The environment of a ``scrapy`` subprocess: ours without ``SCRAPY_*`` (and
    without an audit key: a key is given by the test that wants one), plus ``extra``."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("SCRAPY_") and k != "RFC9309_AUDIT_KEY"}
    env.update(extra)
    return subprocess_env(env)


def scrapy_crawl_again(
    tmp_path,
    *args: str,
    name: str = "probe",
    timeout: float = TIMEOUT,
    check: bool = True,
    env: dict[str, str] | None = None,
    preexec_fn=None,
) -> subprocess.CompletedProcess:
    """``scrapy crawl <name> [args]`` in the project :func:`make_project` made;
    ``check``: its stats must add up."""
    process = subprocess.run(
        [sys.executable, "-m", "scrapy", "crawl", name, *SCRAPY_ARGS, *args],
        cwd=tmp_path,
        env=crawl_env(**(env or {})),
        capture_output=True,
        text=True,
        timeout=timeout,
        preexec_fn=preexec_fn,
    )
    if check:
        check_output(process.stdout, process.stderr)
    return process
