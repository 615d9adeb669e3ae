"""Running ``scrapy robots`` as a user does: a subprocess, through the
``scrapy.commands`` entry point, with no Scrapy project settings leaking in."""

from __future__ import annotations

import os
import subprocess
import sys

TIMEOUT = 60


def scrapy_robots(*args: str, cwd, stdin: str | None = None) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith("SCRAPY_")}
    if os.environ.get("RFC9309_TEST_REACTORLESS") == "1":  # tests/conftest.py: --reactor=none
        args = ("-s", "TWISTED_REACTOR_ENABLED=False", *args)
    return subprocess.run(
        [sys.executable, "-m", "scrapy", "robots", *args],
        cwd=cwd,
        env=env,
        input=stdin,
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
    )
