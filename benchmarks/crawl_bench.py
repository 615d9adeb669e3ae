"""Middleware benchmark: real Scrapy crawls of many loopback origins.

``run(rounds)`` (called by ``benchmarks/run.py --only crawl``) starts one
server process (``crawl_server.py``: 50 origins = 50 ports of 127.0.0.1, each
answering small pages and a real robots.txt), then runs every configuration
``rounds`` times, each crawl in a fresh worker process
(``python benchmarks/crawl_bench.py --worker CONFIG``, see ``crawl_worker``),
the configurations interleaved round by round so that a busier moment of a
shared machine hits them all alike.  It returns markdown lines of medians.

Configurations differ only in their robots.txt handling:

* ``none``: ROBOTSTXT_OBEY=False, no plugin;
* ``builtin``: Scrapy's RobotsTxtMiddleware (ROBOTSTXT_OBEY=True, Protego);
* ``plugin``: this plugin, enabled through its add-on.

Each crawls twice in one crawl.  Pass 1 (cold cache): every page of every
origin, one page in ten disallowed.  Pass 2 (warm cache): the allowed pages
only, so every configuration downloads exactly the same pages and the
difference is the cost of checking them (a dropped request costs less than a
downloaded one, which would flatter the middlewares).  Latency hiding:
``builtin`` and ``plugin`` run pass 1 once more against ports whose robots.txt
answers after ``slow_delay`` seconds.

``python benchmarks/crawl_bench.py --profile`` shows where the plugin's
warm-cache time goes (ablation, per-hook timers, cProfile).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import pstats
import select
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

from counting import calls_rows, count_rows, load_rows, signal_rows  # noqa: E402 - after the path is set
from counting import spread as spread_cell  # noqa: E402

#: the robots.txt every origin serves: a real, medium-size file from the shared
#: corpus (77 rules with wildcards, 6 groups, a Sitemap, no Crawl-delay)
CORPUS_FILE = "stackoverflow.com"
#: a worker taking longer than this is stuck: the benchmark fails rather than hangs
WORKER_TIMEOUT = 300.0
#: the latency runs are repeated at most this often by default: their result is
#: dominated by fixed waits (50 x 200 ms), not by noise, and the built-in
#: middleware's run alone takes 15-20 s
SLOW_ROUNDS = 3
#: page i of an origin is disallowed when i % 10 == DENIED_SLOT
DENIED_SLOT = 1
DENIED_PATHS = ("/posts/{i}/revisions", "/search?q=term{i}", "/users/activity/{i}", "/api/v2/items/{i}")
ALLOWED_PATHS = ("/questions/{i}/how-to-read-robots-txt", "/tags/python{i}/info", "/users/{i}/someone", "/q/{i}")
USER_AGENT = "BenchBot/1.0 (+https://example.com/bot)"
MODES = ("none", "builtin", "plugin")
LABELS = {
    "none": "no robots handling",
    "builtin": "Scrapy built-in (Protego)",
    "plugin": "scrapy-rfc9309 (add-on)",
    "plugin@base": "scrapy-rfc9309 (add-on), baseline",
}


# -- the web that is crawled ------------------------------------------------------
def generated_robots() -> bytes:
    """The stand-in when the corpus is absent: ~50 rules in the same spirit
    (prefixes, ``*``, ``$``, a group for another bot), no Crawl-delay."""
    rules = ["/posts/", "/search?", "/users/activity/", "/api/*", "/admin/", "/cart", "/checkout/", "/*?sessionid="]
    rules += [f"/private-{k}/" for k in range(30)] + [f"/*.{ext}$" for ext in ("pdf", "zip", "doc", "xls")]
    rules += [f"/*/print/{k}" for k in range(8)]
    lines = ["User-agent: *"] + [f"Disallow: {r}" for r in rules] + ["Allow: /", ""]
    lines += ["User-agent: OtherBot", "Disallow: /", "", "Sitemap: https://example.com/sitemap.xml", ""]
    return "\n".join(lines).encode()


def default_corpus() -> Path:
    """``$RFC9309_CORPUS``, else ``../shared/corpus`` beside the repository."""
    return Path(os.environ.get("RFC9309_CORPUS", ROOT.parent / "shared" / "corpus"))


def robots_body(corpus: Path | None) -> tuple[bytes, str]:
    """(body, description) of the robots.txt every origin serves."""
    if corpus is not None and (corpus / "robots" / CORPUS_FILE).is_file():
        body, where = (corpus / "robots" / CORPUS_FILE).read_bytes(), f"corpus/robots/{CORPUS_FILE}"
    else:
        body, where = generated_robots(), "generated, the corpus being absent"
    text = body.decode("utf-8", "replace").lower()
    rules = sum(1 for line in text.splitlines() if line.startswith(("allow", "disallow")))
    return body, f"{where}: {len(body):,} bytes, {rules} rules"


def page_paths(pages: int) -> list[tuple[str, bool]]:
    """(path, disallowed by construction) of each page of one origin."""
    out = []
    for i in range(pages):
        denied = i % 10 == DENIED_SLOT
        shapes = DENIED_PATHS if denied else ALLOWED_PATHS
        out.append((shapes[(i // 10 if denied else i) % len(shapes)].format(i=i), denied))
    return out


def crawl_urls(ports: list[int], pages: int, allowed_only: bool = False) -> list[str]:
    """Origin after origin (all pages of one site, then the next): the order
    of a crawl that works site by site, and the one where a robots.txt fetch
    that is not started early costs the most."""
    paths = [path for path, denied in page_paths(pages) if not (allowed_only and denied)]
    return [f"http://127.0.0.1:{port}{path}" for port in ports for path in paths]


def check_expectations(body: bytes, pages: int) -> int:
    """Pages per origin the robots file disallows.  The construction is checked
    against this project's parser *and* Protego, so the tables can be read
    against a number that neither middleware produced."""
    from protego import Protego

    from scrapy_rfc9309 import parse
    from scrapy_rfc9309.useragent import derive_token

    token = derive_token(USER_AGENT)
    ours, theirs = parse(body), Protego.parse(body.decode("utf-8", "replace"))
    for path, denied in page_paths(pages):
        url = "http://127.0.0.1:8000" + path
        if ours.can_fetch(url, token) == denied or theirs.can_fetch(url, token) == denied:
            raise RuntimeError(f"crawl benchmark: {path} should be {'dis' if denied else ''}allowed by the robots file")
    return sum(denied for _, denied in page_paths(pages))


# -- processes ----------------------------------------------------------------------
def cpus() -> tuple[int | None, int | None]:
    """(crawler's CPU, server's CPU): two different CPUs when there are two,
    so that neither the scheduler's placement (same core or not, which moves
    a crawl's speed by 10-30% between runs) nor each other's caches vary from
    run to run; (None, None) when the machine has one CPU or cannot pin."""
    if not hasattr(os, "sched_getaffinity"):
        return None, None
    allowed = sorted(os.sched_getaffinity(0))
    return (allowed[0], allowed[-1]) if len(allowed) >= 2 else (None, None)


def pin(cpu: int | None) -> None:
    if cpu is not None:
        os.sched_setaffinity(0, {cpu})


@contextlib.contextmanager
def web(
    origins: int,
    body: bytes,
    slow_delay: float,
    hosts: int = 0,
    latency: float = 0.0,
    not_found_every: int = 0,
    optouts: bool = False,
) -> Iterator[dict[str, Any]]:
    """The server process and its ports; stopped (stdin closed) at the end.
    ``hosts`` origins on loopback addresses of their own answer every request
    after ``latency`` seconds (the broad benchmark), every ``not_found_every``-th
    of them robots.txt with a 404."""
    with tempfile.TemporaryDirectory(prefix="crawl-bench-") as tmp:
        robots = Path(tmp) / "robots.txt"
        robots.write_bytes(body)
        command = [sys.executable, str(HERE / "crawl_server.py"), "--origins", str(origins)]
        command += ["--robots", str(robots), "--slow-delay", str(slow_delay)]
        if hosts:
            command += ["--hosts", str(hosts), "--latency", str(latency), "--not-found-every", str(not_found_every)]
        if optouts:
            command += ["--optouts"]
        cpu = cpus()[1]
        if cpu is not None:
            command += ["--cpu", str(cpu)]
        server = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        try:
            assert server.stdout is not None
            ready, _, _ = select.select([server.stdout], [], [], 60)
            if not ready:
                raise RuntimeError("crawl benchmark: the server did not start within 60 s")
            yield json.loads(server.stdout.readline())
        finally:
            assert server.stdin is not None
            server.stdin.close()
            try:
                server.wait(10)
            except subprocess.TimeoutExpired:
                server.kill()
                server.wait()


def run_worker(
    config: dict[str, Any], root: Path = ROOT, prefix: list[str] | None = None, timeout: float = WORKER_TIMEOUT
) -> dict[str, Any]:
    """One crawl in a fresh interpreter; its JSON result.  ``root``: another
    checkout (with these benchmark files in its ``benchmarks/``) whose
    scrapy_rfc9309 the crawl runs, to set an older version beside this one.
    ``prefix``: a command the interpreter runs under (valgrind)."""
    env = dict(os.environ)
    here = root / "benchmarks"
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(root), str(here), env.get("PYTHONPATH")]))
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as handle:
        json.dump({"user_agent": USER_AGENT, **config}, handle)
    try:
        done = subprocess.run(
            [*(prefix or []), sys.executable, str(here / "crawl_bench.py"), "--worker", handle.name],
            capture_output=True, text=True, timeout=timeout, env=env, cwd=root,
        )  # fmt: skip
    finally:
        os.unlink(handle.name)
    if done.returncode != 0 or not done.stdout.strip():
        raise RuntimeError(f"crawl worker {config['mode']} failed ({done.returncode}):\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


# -- measuring --------------------------------------------------------------------------
@dataclass
class Series:
    """Every round's numbers for one (configuration, pass)."""

    runs: list[dict[str, Any]] = field(default_factory=list)

    def median(self, key: str) -> float:
        return statistics.median(r[key] for r in self.runs)

    @property
    def wall(self) -> float:
        return self.median("wall")

    def rates(self) -> list[float]:
        """Requests per second of each round."""
        return [r["requests"] / r["wall"] for r in self.runs]

    @property
    def rate(self) -> float:
        return statistics.median(self.rates())

    @property
    def cpu_per_request(self) -> float:
        return statistics.median(r["cpu"] / r["requests"] for r in self.runs)


@dataclass
class Measured:
    #: (mode, "cold" | "warm" | "slow") -> its rounds
    series: dict[tuple[str, str], Series]
    robots: str
    denied_per_origin: int
    origins: int
    pages: int
    rounds: int
    slow_rounds: int
    slow_delay: float
    concurrency: int
    #: the configurations, in their first round's order ("plugin@base": the baseline checkout's plugin)
    configs: tuple[str, ...] = MODES
    #: each round's order of the configurations
    order: list[list[str]] = field(default_factory=list)
    #: configuration -> its function calls (one counted run), when counted
    calls: dict[str, Any] = field(default_factory=dict)

    @property
    def expected_dropped(self) -> int:
        """Pages disallowed by construction over all origins."""
        return self.origins * self.denied_per_origin


def measure(
    rounds: int,
    origins: int,
    pages: int,
    slow_delay: float,
    concurrency: int,
    corpus: Path | None,
    slow_rounds: int | None = None,
    early_fetch: bool = False,
    baseline: Path | None = None,
    order: str = "rotate",
    count_calls: bool = False,
    save: Path | None = None,
) -> Measured:
    """Every configuration ``rounds`` times, taking turns (``order`` "rotate": round n
    starts n configurations further on); with ``baseline`` (another checkout holding
    these benchmark files) its plugin too, as ``plugin@base``; ``count_calls``: one more,
    untimed crawl of each configuration counting its function calls."""
    body, described = robots_body(corpus)
    denied = check_expectations(body, pages)
    slow_rounds = min(rounds, SLOW_ROUNDS) if slow_rounds is None else slow_rounds
    configs = MODES + (("plugin@base",) if baseline is not None else ())
    series: dict[tuple[str, str], Series] = {}
    orders: list[list[str]] = []
    calls: dict[str, Any] = {}
    with web(origins, body, slow_delay) as ports:
        fast = [crawl_urls(ports["fast"], pages), crawl_urls(ports["fast"], pages, allowed_only=True)]
        slow = [crawl_urls(ports["slow"], pages)]
        for number in range(max(rounds, slow_rounds) + (1 if count_calls else 0)):
            counting = number == max(rounds, slow_rounds)
            shift = 0 if order == "fixed" or counting else number % len(configs)
            ordered = list(configs[shift:] + configs[:shift])
            plan = []
            for config in ordered:  # a middleware's slow run right after its fast one: paired
                if counting:
                    plan.append((config, ("cold", "warm"), fast))
                    continue
                if number < rounds:
                    plan.append((config, ("cold", "warm"), fast))
                if number < slow_rounds and config != "none":
                    plan.append((config, ("slow",), slow))
            if number < rounds:
                orders.append(ordered)
            for position, (config, names, passes) in enumerate(plan):
                what = "counting calls" if counting else f"round {number + 1}"
                print(f"crawl {what}: {config}, {'/'.join(names)} ...", file=sys.stderr)
                mode = config.split("@")[0]
                worker = {"mode": mode, "passes": passes, "control": ports["control"], "concurrency": concurrency}
                worker["count_calls"] = counting
                if mode == "plugin" and early_fetch:
                    worker["settings"] = {"RFC9309_EARLY_FETCH": True}
                root = baseline if config.endswith("@base") and baseline else ROOT
                # (a counted crawl runs under cProfile, 2 to 4 times slower)
                result = run_worker(worker, root, timeout=WORKER_TIMEOUT * (4 if counting else 1))
                if counting:
                    calls[config] = result["calls"]
                    continue
                for name, numbers in zip(names, result["passes"]):
                    numbers["position"] = position
                    series.setdefault((config, name), Series()).runs.append(numbers)
            if save is not None and not counting:  # every round as it ends: a long run stopped keeps its rounds
                done = Measured(
                    series, described, denied, origins, pages, number + 1, min(slow_rounds, number + 1), slow_delay,
                    concurrency, configs, orders, calls,
                )  # fmt: skip
                dump(done, save)
    return Measured(
        series, described, denied, origins, pages, rounds, slow_rounds, slow_delay, concurrency, configs, orders, calls
    )


def table(m: Measured) -> list[str]:
    s = m.series
    allowed = m.pages - m.denied_per_origin
    loads = [r["load"] for series in s.values() for r in series.runs]
    out = [
        f"### Crawl: {m.origins} loopback origins x {m.pages} pages (median of {m.rounds} rounds)\n",
        f"Every origin serves the same robots.txt ({m.robots}), which disallows {m.denied_per_origin} of its "
        f"{m.pages} pages for the crawl's product token. CONCURRENT_REQUESTS = CONCURRENT_REQUESTS_PER_DOMAIN = "
        f"{m.concurrency}, no delays, no AutoThrottle, LOG_LEVEL=WARNING. Each crawl makes two passes: "
        f"pass 1, cold robots cache, all {m.origins * m.pages:,} pages; pass 2, every file cached, the "
        f"{m.origins * allowed:,} allowed pages only (so every configuration downloads the same pages and only "
        "the checking differs). requests/s counts every request that ended, downloaded or dropped; CPU is the "
        "crawling process's user + system time (the server is another process). 1-minute load average "
        f"during the runs: {min(loads):.1f} to {max(loads):.1f} on {os.cpu_count()} cores.\n",
        "| robots.txt handling | pass | wall s | requests/s | CPU us/request | robots.txt fetches "
        "| downloaded / dropped | requests/s vs no robots |",
        "|---|---|---:|---:|---:|---:|---:|---:|",
    ]
    for name, label in (("cold", "1, cold"), ("warm", "2, warm")):
        base = s[("none", name)]
        for mode in m.configs:
            r = s[(mode, name)]
            out.append(
                f"| {LABELS[mode]} | {label} | {r.wall:.2f} | {r.rate:,.0f} | {r.cpu_per_request * 1e6:,.0f} | "
                f"{r.median('robots_fetches'):.0f} | {r.median('downloaded'):,.0f} / {r.median('dropped'):,.0f} | "
                f"{r.rate / base.rate * 100:.1f}% |"
            )
    errors = sum(r["errors"] for series in s.values() for r in series.runs)
    if errors:
        out.append(f"\n**{errors} requests failed with errors other than IgnoreRequest: these numbers are suspect.**")
    expected = m.expected_dropped
    leaks = [mode for mode in m.configs if mode != "none" and s[(mode, "cold")].median("dropped") != expected]
    if leaks:
        out.append(
            f"\nExpected {expected:,} pages dropped in pass 1 (checked with both parsers beforehand); "
            + "; ".join(f"{LABELS[mode]} dropped {s[(mode, 'cold')].median('dropped'):,.0f}" for mode in leaks)
            + "."
        )
    out.append("\n" + goal(s))
    out += cpu_table(m)
    if m.slow_rounds:
        out += latency(m)
    if max(loads) > (os.cpu_count() or 1):
        out.append(
            f"\nThe machine was busy (load average up to {max(loads):.1f} on {os.cpu_count()} cores): wall times "
            "and ratios of a few percent are within the noise; rerun on a quiet machine."
        )
    return out


def cpu_table(m: Measured) -> list[str]:
    """CPU against the built-in's, per pass and for both, as the median of the per-round
    ratios [range]; then the counts the machine's load does not move, and the load."""
    s = m.series
    both: dict[str, list[dict[str, Any]]] = {}
    for config in m.configs:
        cold, warm = s[(config, "cold")].runs, s[(config, "warm")].runs
        both[config] = [_added(a, b) for a, b in zip(cold, warm)]
    out = [
        f"\n#### CPU against Scrapy's built-in middleware (median of the per-round ratios [range], {m.rounds} rounds)\n",
        "The configurations take turns within each round, the order rotating from round to round; CPU is the "
        "crawling process's user + system time of the pass (first request to last). Less GC: without the "
        "garbage collector's time, against the built-in's without its own.\n",
        "| robots.txt handling | pass 1, cold | pass 2, warm | both passes | both, less GC | CPU s, both (median) |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for config in m.configs:
        cells = []
        for runs, base in (
            (s[(config, "cold")].runs, s[("builtin", "cold")].runs),
            (s[(config, "warm")].runs, s[("builtin", "warm")].runs),
            (both[config], both["builtin"]),
        ):
            cells.append(spread_cell(r["cpu"] / b["cpu"] for r, b in zip(runs, base)))
        less = spread_cell(
            (r["cpu"] - sum(r["gc_seconds"])) / (b["cpu"] - sum(b["gc_seconds"]))
            for r, b in zip(both[config], both["builtin"])
        )
        cpu = statistics.median(r["cpu"] for r in both[config])
        out.append(f"| {LABELS[config]} | " + " | ".join(cells) + f" | {less} | {cpu:.2f} |")

    def label(config: str) -> str:
        return LABELS[config]

    out += [
        "\nWhat each crawl did, counted (both passes; the machine's load does not move these):\n",
        *count_rows(both, label, m.calls),
        "\nSignal receiver calls per request, by signal (both passes):\n",
        *signal_rows(both, label),
    ]
    if m.calls:
        out += ["\nFunction calls against the built-in's (one counted run each, both passes, cProfile):", "```"]
        out += calls_rows(m.calls, "builtin", label)
        out.append("```")
    if m.order:
        out += ["\nThe load beside each round (both passes of each crawl):\n", *load_rows(both, m.order)]
    return out


def _added(cold: dict[str, Any], warm: dict[str, Any]) -> dict[str, Any]:
    """The two passes of one crawl as one: numbers added, lists and dicts added item by item."""
    joined: dict[str, Any] = {}
    for key, value in cold.items():
        other = warm.get(key)
        if isinstance(value, bool) or other is None:
            joined[key] = value
        elif isinstance(value, (int, float)):
            joined[key] = value + other
        elif isinstance(value, list):
            joined[key] = [a + b for a, b in zip(value, other)]
        elif isinstance(value, dict):
            joined[key] = {k: value.get(k, 0) + other.get(k, 0) for k in set(value) | set(other)}
        else:
            joined[key] = value
    joined["origins"], joined["load"] = cold["origins"], max(cold["load"], warm["load"])
    joined["time_wait"], joined["position"] = cold["time_wait"], cold.get("position", 0)
    return joined


def spread(series: Series) -> float:
    """Half the range of a configuration's requests/s over the rounds, relative
    to the median: how far apart two runs of the *same* crawl land here."""
    rates = series.rates()
    return (max(rates) - min(rates)) / 2 / statistics.median(rates)


def goal(s: dict[tuple[str, str], Series]) -> str:
    """The issue's goal: the warm-cache crawl within 5% of no robots handling."""
    plugin, none = s[("plugin", "warm")], s[("none", "warm")]
    ratio = plugin.rate / none.rate
    paired = statistics.median(p / n for p, n in zip(plugin.rates(), none.rates()))
    cpu_ratio = none.cpu_per_request / plugin.cpu_per_request
    verdict = "met" if ratio >= 0.95 else f"missed by {(0.95 - ratio) * 100:.1f} points"
    extra = (plugin.cpu_per_request - none.cpu_per_request) * 1e6
    return (
        f"Goal, a warm-cache crawl within 5% of the no-robots throughput: {ratio * 100:.1f}% ({verdict}); "
        f"median of the per-round ratios {paired * 100:.1f}%; by CPU per request {cpu_ratio * 100:.1f}% "
        f"({extra:+,.0f} us per request). For scale: the no-robots crawl's own warm runs spread "
        f"+-{spread(none) * 100:.0f}% around their median, the plugin's +-{spread(plugin) * 100:.0f}%."
    )


def latency(m: Measured) -> list[str]:
    s = m.series
    ms = f"{m.slow_delay * 1000:.0f} ms"
    serial = m.origins * m.slow_delay
    none = s[("none", "cold")]
    expected = m.expected_dropped
    out = [
        f"\n#### Latency hiding: every robots.txt answers after {ms} (median of {m.slow_rounds} rounds)\n",
        f"Pass 1 again, against ports whose robots.txt takes {ms}: fetched one after another, the {m.origins} "
        f"files would add {serial:.1f} s. Added by the delay: the median, over the rounds, of the slow run's "
        "wall time minus that of the same middleware's pass 1 run just before it. The no-robots crawl never "
        "asks for robots.txt, so its pass 1 above stands for it here.\n",
        f"| robots.txt handling | wall s, robots.txt at once | wall s, robots.txt in {ms} | added by the delay "
        f"| hidden, of {m.origins} x {ms} | requests/s vs no robots | dropped (of {expected:,} disallowed) |",
        "|---|---:|---:|---:|---:|---:|---:|",
        f"| {LABELS['none']} | {none.wall:.2f} | {none.wall:.2f} | - | - | 100% | 0 |",
    ]
    for mode in m.configs:
        if mode == "none":
            continue
        fast, slow = s[(mode, "cold")], s[(mode, "slow")]
        # paired: each slow run against the fast run just before it (same round)
        added = statistics.median(b["wall"] - a["wall"] for a, b in zip(fast.runs, slow.runs))
        out.append(
            f"| {LABELS[mode]} | {fast.wall:.2f} | {slow.wall:.2f} | {added:+.2f} s | "
            f"{round((1 - added / serial) * 100)}% "
            f"| {slow.rate / none.rate * 100:.0f}% | {slow.median('dropped'):,.0f} |"
        )
    return out


def run(
    rounds: int,
    origins: int = 50,
    pages: int = 40,
    slow_delay: float = 0.2,
    concurrency: int = 32,
    corpus: Path | None = None,
    slow_rounds: int | None = None,
    early_fetch: bool = False,
    baseline: Path | None = None,
    order: str = "rotate",
    count_calls: bool = False,
    save: Path | None = None,
) -> list[str]:
    """Measure every configuration ``rounds`` times (the latency runs
    ``slow_rounds`` times, by default ``min(rounds, SLOW_ROUNDS)``; 0: none); markdown
    lines of medians.  ``early_fetch``: the plugin with RFC9309_EARLY_FETCH;
    ``baseline``, ``order``, ``count_calls``: see :func:`measure`; ``save``: every
    round's numbers to this JSON file."""
    if corpus is None:
        corpus = default_corpus()
    measured = measure(
        rounds, origins, pages, slow_delay, concurrency, corpus, slow_rounds, early_fetch, baseline, order, count_calls,
        save,
    )  # fmt: skip
    if save is not None:
        dump(measured, save)
    return table(measured)


def dump(measured: Measured, path: Path) -> None:
    """Every round's numbers as JSON (``load`` reads them back)."""
    import dataclasses

    raw = dataclasses.asdict(measured)
    raw["series"] = [[list(key), value["runs"]] for key, value in raw["series"].items()]
    path.write_text(json.dumps(raw, indent=1))


def load(path: Path) -> Measured:
    """What ``dump`` wrote."""
    raw = json.loads(path.read_text())
    raw["series"] = {tuple(key): Series(runs) for key, runs in raw["series"]}
    raw["configs"] = tuple(raw["configs"])
    return Measured(**raw)


# -- where the time goes ------------------------------------------------------------------------
def diagnose(origins: int, pages: int, rounds: int, top: int) -> None:
    """Where the plugin's warm-cache time goes, four ways (warm pass only):

    1. ablation: the same crawl with no middleware, an async middleware that
       does nothing, the plugin's middleware alone, and the add-on (middleware
       + Crawl-delay extension): CPU us per request, median of ``rounds``;
    2. the plugin's own hooks, and the main calls inside them, timed one by one
       (CPU time of the reactor thread; an instrumented run);
    3. the receivers the plugin adds to per-request signals, and what one
       pydispatch call costs here;
    4. cProfile of the add-on's warm pass: the plugin's functions by
       cumulative time (cProfile inflates every call: read them as shares).
    """
    body, _ = robots_body(default_corpus())
    modes = ("none", "noop", "middleware", "plugin")
    warm = {mode: Series() for mode in modes}
    signals_of: dict[str, dict[str, int]] = {}
    with tempfile.TemporaryDirectory(prefix="crawl-profile-") as tmp, web(origins, body, 0.0) as ports:
        passes = [crawl_urls(ports["fast"], pages), crawl_urls(ports["fast"], pages, allowed_only=True)]
        requests = len(passes[-1])
        base = {"passes": passes, "control": ports["control"]}
        for number in range(rounds):
            for mode in modes:
                print(f"diagnose round {number + 1}/{rounds}: {mode} ...", file=sys.stderr)
                result = run_worker({**base, "mode": mode})
                warm[mode].runs.append(result["passes"][-1])
                signals_of[mode] = result["receivers"]
        instrumented = run_worker({**base, "mode": "plugin", "instrument": True})
        hooks, instrumented_pass = instrumented["hooks"], instrumented["passes"][-1]
        path = str(Path(tmp) / "plugin.prof")
        run_worker({**base, "mode": "plugin", "profile": path})
        raw = pstats.Stats(path).stats  # type: ignore[attr-defined]

    def cpu(mode: str) -> float:
        return warm[mode].cpu_per_request * 1e6

    loads = [r["load"] for series in warm.values() for r in series.runs]
    print(
        f"\n1. ablation, warm pass ({requests:,} requests), median of {rounds} rounds; "
        f"load average {min(loads):.1f} to {max(loads):.1f} on {os.cpu_count()} cores"
    )
    labels = {"none": "no middleware", "noop": "no-op async mw", "middleware": "plugin mw only", "plugin": "add-on"}
    print(f"   {'':<16}{'CPU us/request':>15}{'vs none':>10}{'requests/s':>12}")
    for mode in modes:
        print(f"   {labels[mode]:<16}{cpu(mode):>15,.0f}{cpu(mode) - cpu('none'):>+10,.0f}{warm[mode].rate:>12,.0f}")

    from crawl_worker import INNER

    inner = {attribute for _, attribute in INNER}
    print("\n2. the plugin's code in the warm pass, CPU time call by call (an instrumented run)")
    print(f"   {'us/request':>10}{'calls/request':>15}{'median us/call':>16}{'p90 us/call':>13}  function")
    typical = total = 0.0
    for name, times in hooks.items():
        ordered = sorted(times)
        median = statistics.median(ordered)
        if name not in inner:
            typical += median * len(times)
            total += sum(times)
        print(
            f"   {median * len(times) / requests * 1e6:>10.2f}{len(times) / requests:>15.2f}"
            f"{median * 1e6:>16.2f}{ordered[int(len(ordered) * 0.9)] * 1e6:>13.2f}  "
            f"{'  inside: ' if name in inner else ''}{name}"
        )
    whole = instrumented_pass["cpu"]
    print(
        f"   {typical / requests * 1e6:>10.2f}  us per request in the hooks (medians x calls; "
        f"{total / requests * 1e6:.2f} "
        f"with every slow call). The pass itself took {whole / requests * 1e6:,.0f} us of CPU per request: the hooks "
        f"are {typical / whole * 100:.1f}% of it ({total / whole * 100:.1f}%), measured in the same run, so the "
        "machine's speed swings cancel out."
    )

    first, further = _dispatch_cost()
    print(
        f"\n3. receivers of per-request signals (here a signal's first receiver costs {first:.1f} us a send, "
        f"each further one {further:.1f} us)"
    )
    print(f"   {'signal':<28}{'none':>6}{'add-on':>8}")
    dispatch = 0.0
    for name, before in signals_of.get("none", {}).items():
        after = signals_of["plugin"].get(name, before)
        if after > before:
            dispatch += (first if before == 0 else further) + further * (after - before - 1)
        print(f"   {name:<28}{before:>6}{after:>8}")
    share = dispatch / (whole / requests * 1e6) * 100
    print(
        f"   about {dispatch:.0f} us per request in dispatch to the plugin's receivers (one send of each signal), "
        f"{share:.1f}% of the instrumented pass"
    )

    print(f"\n4. cProfile, warm pass of the add-on: scrapy_rfc9309 functions by cumulative time (top {top})")
    profiled = sum(v[2] for v in raw.values())
    mine = sorted(
        (
            (ct, f"{_short(f)}:{line}({name})", calls)
            for (f, line, name), (_, calls, _tt, ct, _) in raw.items()
            if "scrapy_rfc9309" in Path(f).parts
        ),
        reverse=True,
    )
    for cumulative, key, calls in mine[:top]:
        print(f"   {cumulative / profiled * 100:5.2f}% of profiled time  {calls / requests:5.2f} calls/request  {key}")


# -- the audit trail's cost ---------------------------------------------------------------------
AUDIT_MODES = ("plugin", "audit", "audit_allowed")
AUDIT_LABELS = {
    "plugin": "add-on, no audit trail",
    "audit": "add-on + RFC9309_AUDIT (fetches, denials)",
    "audit_allowed": "add-on + RFC9309_AUDIT's allowed (every request)",
}


def audit_cost(rounds: int, origins: int, pages: int, concurrency: int = 32) -> list[str]:
    """CPU of the README's crawl (both passes) with the audit trail off, on, and
    on with allowed requests recorded; the three take turns within each round,
    and each ratio is the median of the per-round ratios to the run without it
    (same round, same machine drift).  Markdown lines."""
    body, described = robots_body(default_corpus())
    runs: dict[str, list[dict[str, Any]]] = {mode: [] for mode in AUDIT_MODES}
    with tempfile.TemporaryDirectory(prefix="crawl-audit-") as tmp, web(origins, body, 0.0) as ports:
        passes = [crawl_urls(ports["fast"], pages), crawl_urls(ports["fast"], pages, allowed_only=True)]
        requests = sum(len(p) for p in passes)
        for number in range(rounds):
            for mode in AUDIT_MODES:
                print(f"audit round {number + 1}/{rounds}: {mode} ...", file=sys.stderr)
                config = {"mode": mode, "passes": passes, "control": ports["control"], "concurrency": concurrency}
                if mode != "plugin":
                    config["audit"] = str(Path(tmp) / f"{mode}-{number}.jsonl")
                result = run_worker(config)
                crawl_cpu = sum(p["cpu"] for p in result["passes"])
                runs[mode].append(
                    {
                        "crawl_cpu": crawl_cpu, "total_cpu": result["total_cpu"],
                        "records": result.get("audit_records", 0), "load": result["passes"][-1]["load"],
                        "wall": sum(p["wall"] for p in result["passes"]),
                        "own": result.get("audit_reactor_cpu", 0.0) + result.get("audit_writer_cpu", 0.0),
                    }
                )  # fmt: skip
    base = runs["plugin"]
    loads = [r["load"] for mode in AUDIT_MODES for r in runs[mode]]
    out = [
        f"### The audit trail's CPU cost: {origins} origins x {pages} pages, both passes ({requests:,} requests), "
        f"median of {rounds} rounds\n",
        f"robots.txt: {described}. The three configurations take turns within each round; CPU is the crawling "
        "process's user + system time (the writer thread included) over the two passes, and over the whole "
        "process (start-up and the last flush at close included). The ratio is the median of the per-round "
        f"ratios to the run without the trail. 1-minute load average {min(loads):.1f} to {max(loads):.1f} on "
        f"{os.cpu_count()} cores.\n",
        "| configuration | audit records | CPU s, passes | CPU us/request | vs no trail (passes) "
        "| CPU s, whole process | vs no trail (process) | the trail's own CPU, timed |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for mode in AUDIT_MODES:
        series = runs[mode]
        cpu = statistics.median(r["crawl_cpu"] for r in series)
        total = statistics.median(r["total_cpu"] for r in series)
        ratio = statistics.median(r["crawl_cpu"] / b["crawl_cpu"] for r, b in zip(series, base))
        whole = statistics.median(r["total_cpu"] / b["total_cpu"] for r, b in zip(series, base))
        records = statistics.median(r["records"] for r in series)
        own = statistics.median(r["own"] / r["total_cpu"] for r in series)
        out.append(
            f"| {AUDIT_LABELS[mode]} | {records:,.0f} | {cpu:.2f} | {cpu / requests * 1e6:,.0f} | "
            f"{(ratio - 1) * 100:+.1f}% | {total:.2f} | {(whole - 1) * 100:+.1f}% | "
            f"{own * 100:.2f}% of the process |"
        )
    out.append(
        "\nThe last column is measured inside the same runs, so the machine's drift does not enter it: the CPU "
        "time of the trail's reactor-side hooks (each call timed with `time.thread_time`, the timer included) "
        "plus the writer thread's own CPU time, over the process's CPU time."
    )
    return out


# -- the cost of enforcing usage preferences -------------------------------------------------------
#: a Content-Usage rule in every origin's file, on a path no page has: every allowed request is
#: checked against it, none is denied by it, so both configurations download the same pages
USAGE_LINES = b"\nUser-agent: *\nContent-Usage: /no-page-here/ train-ai=n\nContent-Usage: train-ai=y\n"


def usage_cost(rounds: int, origins: int, pages: int, concurrency: int = 32) -> list[str]:
    """CPU of the README's crawl (both passes) with ``RFC9309_USAGE`` unset and
    set to ``["train-ai"]``, taking turns within each round, every file stating
    Content-Usage preferences; the ratio is the median of per-round ratios.
    Markdown lines."""
    body, described = robots_body(default_corpus())
    body += USAGE_LINES
    modes = ("plugin", "usage")
    runs: dict[str, list[float]] = {mode: [] for mode in modes}
    loads: list[float] = []
    with web(origins, body, 0.0) as ports:
        passes = [crawl_urls(ports["fast"], pages), crawl_urls(ports["fast"], pages, allowed_only=True)]
        requests = sum(len(p) for p in passes)
        for number in range(rounds):
            for mode in modes:
                print(f"usage round {number + 1}/{rounds}: {mode} ...", file=sys.stderr)
                config = {"mode": mode, "passes": passes, "control": ports["control"], "concurrency": concurrency}
                result = run_worker(config)
                runs[mode].append(sum(p["cpu"] for p in result["passes"]))
                loads.append(result["passes"][-1]["load"])
    ratios = [u / b for u, b in zip(runs["usage"], runs["plugin"])]
    return [
        f"### Enforcing usage preferences: {origins} origins x {pages} pages, both passes ({requests:,} requests), "
        f"{rounds} rounds\n",
        f"robots.txt: {described}, plus two Content-Usage rules. 1-minute load average {min(loads):.1f} to "
        f"{max(loads):.1f} on {os.cpu_count()} cores.\n",
        "| configuration | CPU s, passes (median) | CPU us/request |",
        "|---|---:|---:|",
        *(
            f"| {label} | {statistics.median(runs[mode]):.2f} | {statistics.median(runs[mode]) / requests * 1e6:,.0f} |"
            for mode, label in (
                ("plugin", "add-on, RFC9309_USAGE unset"),
                ("usage", 'add-on, RFC9309_USAGE = ["train-ai"]'),
            )
        ),
        f"\nRFC9309_USAGE set vs unset, median of the per-round ratios: {(statistics.median(ratios) - 1) * 100:+.1f}% "
        f"(rounds: {', '.join(f'{(r - 1) * 100:+.1f}%' for r in ratios)})",
    ]


def optouts_cost(rounds: int, origins: int, pages: int, concurrency: int = 32) -> list[str]:
    """CPU of the README's crawl (both passes) against pages that state opt-outs in
    every place (``crawl_server.py --optouts``: X-Robots-Tag, robots and tdm meta
    tags, tdmrep.json), with no purpose declared (nothing read) and with
    ``RFC9309_USAGE = ["train-ai"]`` (every source read), taking turns within each
    round; the ratio is the median of per-round ratios.  The reading's own CPU
    (the middleware's ``_read_page``, timed in the crawl) is given too: it is
    measured inside each run, so the machine's drift does not enter it."""
    body, described = robots_body(default_corpus())
    modes = ("plugin", "optouts")
    runs: dict[str, list[float]] = {mode: [] for mode in modes}
    own: list[float] = []
    loads: list[float] = []
    downloaded: dict[str, list[list[int]]] = {mode: [] for mode in modes}
    with web(origins, body, 0.0, optouts=True) as ports:
        passes = [crawl_urls(ports["fast"], pages), crawl_urls(ports["fast"], pages, allowed_only=True)]
        requests = sum(len(p) for p in passes)
        for number in range(rounds):
            for mode in modes:
                print(f"optouts round {number + 1}/{rounds}: {mode} ...", file=sys.stderr)
                config = {"mode": mode, "passes": passes, "control": ports["control"], "concurrency": concurrency}
                result = run_worker(config)
                cpu = sum(p["cpu"] for p in result["passes"])
                runs[mode].append(cpu)
                loads.append(result["passes"][-1]["load"])
                downloaded[mode].append([p["downloaded"] for p in result["passes"]])
                if mode == "optouts":
                    own.append(result["optouts_cpu"] / cpu)
    # the opt-outs state nothing against train-ai: both configurations downloaded the same pages
    assert downloaded["plugin"] == downloaded["optouts"], downloaded
    ratios = [u / b for u, b in zip(runs["optouts"], runs["plugin"])]
    return [
        f"### Every opt-out source read: {origins} origins x {pages} pages, both passes ({requests:,} requests), "
        f"{rounds} rounds\n",
        f"robots.txt: {described}; every page states opt-outs in an X-Robots-Tag line and two meta tags, "
        f"and every origin serves a tdmrep.json. 1-minute load average {min(loads):.1f} to {max(loads):.1f} on "
        f"{os.cpu_count()} cores.\n",
        "| configuration | CPU s, passes (median) | CPU us/request |",
        "|---|---:|---:|",
        *(
            f"| {label} | {statistics.median(runs[mode]):.2f} | {statistics.median(runs[mode]) / requests * 1e6:,.0f} |"
            for mode, label in (
                ("plugin", "add-on, no purpose declared (nothing read)"),
                ("optouts", 'add-on, RFC9309_USAGE = ["train-ai"] (every source read)'),
            )
        ),
        f"\nEvery source read vs none, median of the per-round ratios: {(statistics.median(ratios) - 1) * 100:+.1f}% "
        f"(rounds: {', '.join(f'{(r - 1) * 100:+.1f}%' for r in ratios)}). The reading itself (the middleware's "
        f"`_read_page`, CPU timed inside the same runs): {statistics.median(own) * 100:.2f}% of the process's CPU "
        f"(rounds: {', '.join(f'{r * 100:.2f}%' for r in own)}).",
    ]


def _dispatch_cost(calls: int = 20_000) -> tuple[float, float]:
    """CPU us that a signal's first receiver, and each further one, add to a
    send (Scrapy's send_catch_log and pydispatch's robustApply), measured here
    and now."""
    import time

    from scrapy import Request
    from scrapy.signalmanager import SignalManager

    manager, signal, request = SignalManager(), object(), Request("http://127.0.0.1/")

    class Receiver:
        def handle(self, request: Any, spider: Any = None) -> None:
            pass

    def send_all() -> float:
        start = time.process_time()
        for _ in range(calls):
            manager.send_catch_log(signal=signal, request=request, spider=None)
        return time.process_time() - start

    kept = [Receiver() for _ in range(3)]  # pydispatch holds receivers weakly
    costs = [send_all()]
    for receiver in kept:
        manager.connect(receiver.handle, signal=signal)
        costs.append(send_all())
    first = (costs[1] - costs[0]) / calls * 1e6
    further = (costs[3] - costs[1]) / 2 / calls * 1e6
    return first, further


def _short(filename: str) -> str:
    """``scrapy_rfc9309/origins.py`` rather than the whole path."""
    parts = Path(filename).parts
    if "scrapy_rfc9309" in parts:
        return "/".join(parts[parts.index("scrapy_rfc9309") :])
    return Path(filename).name


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--worker", metavar="CONFIG", help="(internal) run the one crawl this JSON file describes")
    ap.add_argument("--profile", action="store_true", help="where the plugin's warm-cache time goes")
    ap.add_argument("--audit", action="store_true", help="the CPU cost of the audit trail (RFC9309_AUDIT)")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument(
        "--slow-rounds",
        type=int,
        default=None,
        help=f"rounds of the latency runs (default: min(--rounds, {SLOW_ROUNDS}))",
    )
    ap.add_argument("--origins", type=int, default=50)
    ap.add_argument("--pages", type=int, default=40)
    ap.add_argument("--slow-delay", type=float, default=0.2)
    ap.add_argument("--top", type=int, default=20)
    ap.add_argument("--early-fetch", action="store_true", help="the plugin with RFC9309_EARLY_FETCH = True")
    ap.add_argument("--usage", action="store_true", help="the CPU cost of RFC9309_USAGE (usage preferences enforced)")
    ap.add_argument(
        "--optouts", action="store_true", help="the CPU cost of reading every opt-out source (issue 32) vs none"
    )
    ap.add_argument(
        "--baseline",
        type=Path,
        help="another checkout (with these benchmarks/ files copied in): its plugin runs too, in the same rounds",
    )
    ap.add_argument("--order", choices=("rotate", "fixed"), default="rotate", help="the configurations' order")
    ap.add_argument("--calls", action="store_true", help="one more, untimed crawl of each counting function calls")
    ap.add_argument("--save", type=Path, help="write every round's numbers to this JSON file")
    ap.add_argument("--load", type=Path, help="print the tables of a file --save wrote, measuring nothing")
    args = ap.parse_args()
    if args.load:
        print("\n".join(table(load(args.load))))
        return
    if args.worker:
        from crawl_worker import work

        # RFC9309_BENCH_CPU: another CPU for the crawler (a valgrind count beside a timed run)
        pin(int(os.environ["RFC9309_BENCH_CPU"]) if os.environ.get("RFC9309_BENCH_CPU") else cpus()[0])
        print(json.dumps(work(json.loads(Path(args.worker).read_text()))))
    elif args.profile:
        diagnose(args.origins, args.pages, args.rounds, args.top)
    elif args.audit:
        print("\n".join(audit_cost(args.rounds, args.origins, args.pages)))
    elif args.usage:
        print("\n".join(usage_cost(args.rounds, args.origins, args.pages)))
    elif args.optouts:
        print("\n".join(optouts_cost(args.rounds, args.origins, args.pages)))
    else:
        lines = run(
            args.rounds, args.origins, args.pages, args.slow_delay, slow_rounds=args.slow_rounds,
            early_fetch=args.early_fetch, baseline=args.baseline, order=args.order, count_calls=args.calls,
            save=args.save,
        )  # fmt: skip
        print("\n".join(lines))


if __name__ == "__main__":
    sys.path[:0] = [str(HERE), str(ROOT)]
    main()
