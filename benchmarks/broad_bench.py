"""Broad-crawl benchmark: many origins, few pages each, every response late.

The regime of a crawler that visits the web at large: ``origins`` loopback
origins (127.0.1.1, 127.0.1.2 ...: one host each, so one download slot each)
x ``pages`` pages, every response (robots.txt and pages alike) sent
``latency`` seconds after its request by the benchmark's server
(``crawl_server.py --hosts``), ``CONCURRENT_REQUESTS = 256``, 2 per domain.
There the robots.txt of an origin is on the path of its first page, and the
store's cost per origin (not the check's per request) is what shows.

Configurations, each crawl in a fresh process (``crawl_worker``), taking
turns round by round:

* ``none``: ROBOTSTXT_OBEY=False, no plugin;
* ``builtin``: Scrapy's RobotsTxtMiddleware (ROBOTSTXT_OBEY=True, Protego);
* ``memory``, ``sqlite``, ``redis``: this plugin (its add-on) with
  ``RFC9309_STORAGE`` a new SQLite file per crawl, or a real ``redis-server``
  started for the run (emptied before each crawl; skipped when absent).

Per crawl: the crawling process's CPU time (user + system, from its first
request to its last), the wall time, and the median over origins of the time
from an origin's first request leaving the scheduler (a downloader
middleware ahead of every other) to its first page reaching the spider.
Redis's own CPU (``INFO cpu``) is shown beside, not added.  The crawling
process's CPU over its whole life (start-up, store open and close included) is
shown too, alone and with Redis's CPU added: the windows another measurement
may have used.

``python benchmarks/broad_bench.py --rounds 3 --origins 2000 --pages 3``

The setup of the independent measurement of issue 23 (smaller files, a 404
now and then, fewer origins):

``python benchmarks/broad_bench.py --rounds 7 --origins 600 --robots-lines 30 --not-found-share 0.1``
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

from counting import (  # noqa: E402 - after the path is set
    calls_rows,
    count_rows,
    cpu_less_gc,
    cpu_of,
    gc_total,
    load_rows,
    ratios,
    signal_rows,
    spread,
)
from crawl_bench import (  # noqa: E402 - after the path is set
    ROOT,
    WORKER_TIMEOUT,
    check_expectations,
    cpus,
    default_corpus,
    page_paths,
    robots_body,
    run_worker,
    web,
)

CONFIGS = ("none", "builtin", "memory", "sqlite", "redis")
#: run only when asked for (``--only early``): the memory store with RFC9309_EARLY_FETCH
EXTRA_CONFIGS = ("early",)
LABELS = {
    "none": "no robots handling",
    "builtin": "Scrapy built-in (Protego)",
    "memory": "scrapy-rfc9309, memory store",
    "sqlite": "scrapy-rfc9309, SQLite store",
    "redis": "scrapy-rfc9309, Redis store",
    "early": "scrapy-rfc9309, memory store, RFC9309_EARLY_FETCH",
}
PLUGIN = {"ADDONS": {"scrapy_rfc9309.Addon": 0}}
#: rounds by default (``run.py`` runs at most this many): a round of the five takes about 4 minutes
DEFAULT_ROUNDS = 3
CONCURRENCY = 256
PER_DOMAIN = 2


def broad_urls(hosts: list[str], pages: int) -> list[str]:
    """Origin after origin, ``pages`` pages each."""
    paths = [path for path, _ in page_paths(pages)]
    return [f"http://{host}{path}" for host in hosts for path in paths]


# -- a redis-server of the benchmark's own -----------------------------------------------
class Redis:
    """A throwaway ``redis-server`` on a free loopback port (on the server's CPU)."""

    def __init__(self, workdir: Path, cpu: int | None) -> None:
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            self.port = sock.getsockname()[1]
        command = ["redis-server", "--port", str(self.port), "--bind", "127.0.0.1", "--save", ""]
        command += ["--appendonly", "no", "--dir", str(workdir), "--logfile", str(workdir / "redis.log")]
        if cpu is not None and shutil.which("taskset"):
            command = ["taskset", "-c", str(cpu), *command]
        self.proc = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        import redis

        self.client = redis.Redis(host="127.0.0.1", port=self.port, socket_timeout=10)
        deadline = time.monotonic() + 10
        while True:
            try:
                self.client.ping()
                break
            except redis.RedisError:
                if time.monotonic() > deadline or self.proc.poll() is not None:
                    self.stop()
                    raise RuntimeError("broad benchmark: redis-server did not start") from None
                time.sleep(0.05)

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def cpu(self) -> float:
        info = self.client.info("cpu")
        return float(info["used_cpu_user"]) + float(info["used_cpu_sys"])

    def commands(self) -> int:
        return sum(int(v["calls"]) for v in self.client.info("commandstats").values())

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(5)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(5)


def redis_available() -> bool:
    if shutil.which("redis-server") is None:
        return False
    try:
        import redis  # noqa: F401
    except ImportError:
        return False
    return True


# -- measuring ------------------------------------------------------------------------------
def shortened(body: bytes, lines: int | None) -> tuple[bytes, str]:
    """The first ``lines`` lines of ``body`` (all of it for None), and what they are."""
    if lines is None:
        return body, ""
    kept = b"\n".join(body.splitlines()[:lines]) + b"\n"
    text = kept.decode("utf-8", "replace").lower()
    rules = sum(1 for line in text.splitlines() if line.startswith(("allow", "disallow")))
    return kept, f"its first {lines} lines: {len(kept):,} bytes, {rules} rules"


def not_found_every(share: float) -> int:
    """Every how many origins one answers robots.txt with a 404 (0: none)."""
    if share <= 0:
        return 0
    if share > 1:
        raise ValueError("--not-found-share is a share of the origins, at most 1")
    return max(1, round(1 / share))


def measure(
    rounds: int,
    origins: int,
    pages: int,
    latency: float,
    configs: tuple[str, ...],
    baseline: Path | None = None,
    robots_lines: int | None = None,
    not_found_share: float = 0.0,
    baseline_only: tuple[str, ...] = (),
    order: str = "rotate",
    count_calls: bool = False,
    save: Path | None = None,
) -> dict[str, Any]:
    """Every configuration ``rounds`` times; with ``baseline`` (another checkout
    holding these benchmark files), its plugin configurations too, as
    ``<config>@base``, in the same rounds.  ``robots_lines``: serve only the
    first lines of the file; ``not_found_share``: that share of the origins
    answers robots.txt with a 404 (every 10th for 0.1).  ``order``: "rotate"
    (round n starts n configurations further on, so no configuration always
    runs first or right after another) or "fixed".  ``count_calls``: after the
    rounds, one more crawl of each configuration, untimed, counting every
    function call."""
    if baseline is not None:
        configs = configs + tuple(
            f"{c}@base" for c in configs if c not in ("none", "builtin") and (not baseline_only or c in baseline_only)
        )
    body, described = robots_body(default_corpus())
    body, cut = shortened(body, robots_lines)
    if cut:
        described = f"{described.split(':')[0]}, {cut}"
    every = not_found_every(not_found_share)
    missing = origins // every if every else 0
    denied = check_expectations(body, pages)
    if "redis" in configs and not redis_available():
        print("broad benchmark: no redis-server or redis package: the Redis store is left out", file=sys.stderr)
        configs = tuple(c for c in configs if not c.startswith("redis"))
    runs: dict[str, list[dict[str, Any]]] = {c: [] for c in configs}
    orders: list[list[str]] = []
    calls: dict[str, dict[str, Any]] = {}
    with tempfile.TemporaryDirectory(prefix="broad-bench-") as tmp, web(0, body, 0.0, origins, latency, every) as ports:
        urls = broad_urls(ports["hosts"], pages)
        store = Redis(Path(tmp), cpus()[1]) if any(c.startswith("redis") for c in configs) else None
        try:
            plan = [(number, config_order(configs, number, order), False) for number in range(rounds)]
            if count_calls:
                plan.append((rounds, list(configs), True))
            for number, ordered, counting in plan:
                if not counting:
                    orders.append(ordered)
                for position, config in enumerate(ordered):
                    what = "counting calls" if counting else f"round {number + 1}/{rounds}"
                    print(f"broad {what}: {config} ...", file=sys.stderr)
                    store_kind = config.split("@")[0]
                    worker: dict[str, Any] = {
                        "mode": config if config in ("none", "builtin") else "plugin",
                        "store": "memory" if store_kind == "early" else store_kind,
                        "passes": [urls],
                        "control": ports["control"],
                        "concurrency": CONCURRENCY,
                        "per_domain": PER_DOMAIN,
                        "first_page": True,
                        "count_calls": counting,
                    }
                    extra: dict[str, Any] = {}
                    if store_kind == "early":
                        extra["RFC9309_EARLY_FETCH"] = True
                    elif store_kind == "sqlite":
                        path = Path(tmp) / f"robots-{number}-{config}.sqlite"
                        extra["RFC9309_STORAGE"] = f"sqlite://{path}"
                    elif store_kind == "redis":
                        assert store is not None
                        store.client.flushall()
                        extra["RFC9309_STORAGE"] = store.url
                    worker["settings"] = extra
                    before = (store.cpu(), store.commands()) if store is not None and store_kind == "redis" else None
                    root = baseline if config.endswith("@base") and baseline is not None else ROOT
                    # (a counted crawl runs under cProfile, 2 to 4 times slower)
                    result = run_worker(worker, root, timeout=WORKER_TIMEOUT * (4 if counting else 1))
                    if counting:
                        calls[config] = result["calls"]
                        continue
                    numbers = {
                        **result["passes"][0],
                        "first_page": result["first_page"]["median"],
                        "total_cpu": result["total_cpu"],
                        "position": position,
                    }
                    if before is not None:
                        assert store is not None
                        numbers["redis_cpu"] = store.cpu() - before[0]
                        numbers["redis_commands"] = store.commands() - before[1]
                    runs[config].append(numbers)
                if save is not None and not counting:  # every round as it ends: a long run stopped keeps its rounds
                    partial = {c: series[: number + 1] for c, series in runs.items()}
                    kept = {"runs": partial, "robots": described, "origins": origins, "pages": pages}
                    kept.update(denied=denied, latency=latency, rounds=number + 1, not_found=missing, order=orders)
                    save.write_text(json.dumps({**kept, "calls": calls}, indent=1))
        finally:
            if store is not None:
                store.stop()
    return {
        "runs": runs,
        "robots": described,
        "origins": origins,
        "pages": pages,
        "denied": denied,
        "latency": latency,
        "rounds": rounds,
        "not_found": missing,
        "order": orders,
        "calls": calls,
    }


def config_order(configs: tuple[str, ...], number: int, order: str) -> list[str]:
    """The configurations of round ``number``: as given ("fixed"), or rotated by the round's number."""
    if order == "fixed" or not configs:
        return list(configs)
    shift = number % len(configs)
    return list(configs[shift:] + configs[:shift])


def label_of(config: str) -> str:
    return LABELS[config.split("@")[0]] + (", baseline" if config.endswith("@base") else "")


def table(m: dict[str, Any]) -> list[str]:
    runs: dict[str, list[dict[str, Any]]] = m["runs"]
    origins, pages, latency = m["origins"], m["pages"], m["latency"]
    loads = [r["load"] for series in runs.values() for r in series]
    builtin = runs.get("builtin")
    memory = runs.get("memory")
    missing = m.get("not_found", 0)
    serves = f"serving the same robots.txt ({m['robots']}), which disallows {m['denied']} of its {pages} pages"
    if missing:
        serves += f"; {missing:,} of the origins (every {origins // missing}th) answer robots.txt with a 404 instead"
    out = [
        f"### Broad crawl: {origins:,} loopback origins x {pages} pages, {latency * 1000:.0f} ms per response "
        f"(median of {m['rounds']} rounds)\n",
        f"Every origin is a host of its own (127.0.1.1 ...) {serves}. CONCURRENT_REQUESTS = {CONCURRENCY}, "
        f"{PER_DOMAIN} per domain, each crawl in a fresh process, configurations taking turns (the order "
        "rotating from round to round). CPU: the "
        "crawling process's user + system time, first request to last; vs built-in: the median of the "
        "per-round ratios, [lowest - highest]. First page: the median over origins of the time from its first "
        "request leaving the scheduler to its first page reaching the spider; median [range] over the rounds. "
        "Process: the same for the crawling process's whole life (start-up, store open and close included); "
        "+ Redis: with the Redis server's CPU during the crawl added. - memory: the per-round difference "
        "between the configuration's ratio and the memory store's. Less GC: the CPU without the garbage "
        "collector's, against the built-in's without its own. "
        f"1-minute load average during the runs: {min(loads):.1f} to {max(loads):.1f} on {os.cpu_count()} cores.\n",
        "| robots.txt handling | CPU s | CPU vs built-in | wall s | first page, ms | robots.txt fetches "
        "| downloaded / dropped | Redis server: CPU s, commands per origin | wall vs built-in "
        "| CPU vs built-in, process | same + Redis | - memory, per round | less GC, vs built-in |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for config, series in runs.items():

        def med(key: str, series: list[dict[str, Any]] = series) -> float:
            return statistics.median(r[key] for r in series)

        def versus(key: str, extra: str = "", series: list[dict[str, Any]] = series) -> str:
            if not builtin:
                return "-"
            return spread(ratios(series, builtin, lambda run: run[key] + run.get(extra, 0.0)))

        def over_memory(series: list[dict[str, Any]] = series) -> str:
            if not builtin or not memory or series is memory:
                return "-"
            mine, theirs = ratios(series, builtin, cpu_of), ratios(memory, builtin, cpu_of)
            return spread((a - b for a, b in zip(mine, theirs)), 2)

        firsts = [r["first_page"] * 1000 for r in series]
        redis = "-"
        if "redis_cpu" in series[0]:
            redis = f"{med('redis_cpu'):.2f} s, {med('redis_commands') / origins:.1f}"
        out.append(
            f"| {label_of(config)} | {med('cpu'):.2f} | {versus('cpu')} | {med('wall'):.2f} | "
            f"{statistics.median(firsts):.0f} [{min(firsts):.0f} - {max(firsts):.0f}] | "
            f"{med('robots_fetches'):,.0f} | {med('downloaded'):,.0f} / {med('dropped'):,.0f} | {redis} | "
            f"{versus('wall')} | {versus('total_cpu')} | "
            f"{versus('total_cpu', 'redis_cpu') if 'redis_cpu' in series[0] else '-'} | {over_memory()} | "
            f"{spread(ratios(series, builtin, cpu_less_gc)) if builtin else '-'} |"
        )
    out.append("\nEach round, CPU s (vs built-in) / GC s / first page ms, position in the round:")
    for config, series in runs.items():
        shown = []
        for number, r in enumerate(series):
            ratio = f" ({r['cpu'] / builtin[number]['cpu']:.2f})" if builtin and number < len(builtin) else ""
            shown.append(
                f"{r['cpu']:.2f}{ratio} / {gc_total(r):.2f} / {r['first_page'] * 1000:.0f}, #{r.get('position', 0) + 1}"
            )
        out.append(f"- {config}: " + "; ".join(shown))
    errors = sum(r["errors"] for series in runs.values() for r in series)
    if errors:
        out.append(f"\n**{errors} requests failed with errors other than IgnoreRequest: these numbers are suspect.**")
    out += [
        "\nWhat each crawl did, counted (the machine's load does not move these; per origin or per request, "
        "median over the rounds):\n",
        *count_rows(runs, label_of, m.get("calls", {})),
        "\nSignal receiver calls per request, by signal:\n",
        *signal_rows(runs, label_of),
    ]
    if m.get("calls"):
        out += ["\nFunction calls against the built-in's (one counted run each, cProfile):", "```"]
        out += calls_rows(m["calls"], "builtin", label_of)
        out.append("```")
    if m.get("order"):
        out += ["\nThe load beside each round:\n", *load_rows(runs, m["order"])]
    out += goal(runs)
    return out


def goal(runs: dict[str, list[dict[str, Any]]]) -> list[str]:
    """Issue 31's goals: the memory store at most 1.00x the built-in's CPU; SQLite and
    Redis at most the memory store's ratio + 0.03 (median of the per-round differences)."""
    if "builtin" not in runs or "memory" not in runs:
        return []
    builtin, memory = runs["builtin"], runs["memory"]
    mine = ratios(memory, builtin, cpu_of)
    lines = [
        f"{LABELS['memory']}: CPU {statistics.median(mine):.2f}x the built-in's [{min(mine):.2f} - {max(mine):.2f}] "
        f"(goal 1.00): {'met' if round(statistics.median(mine), 2) <= 1.0 else 'missed'}."
    ]
    memory_first = statistics.median(r["first_page"] for r in memory)
    for config in ("sqlite", "redis"):
        if config not in runs:
            continue
        theirs = ratios(runs[config], builtin, cpu_of)
        over = [a - b for a, b in zip(theirs, mine)]
        first = statistics.median(r["first_page"] for r in runs[config]) / memory_first
        met = "met" if round(statistics.median(over), 2) <= 0.03 else "missed"  # as the line shows it
        lines.append(
            f"{LABELS[config]}: CPU {statistics.median(theirs):.2f}x the built-in's, "
            f"{statistics.median(over):+.2f} over the memory store's [{min(over):+.2f} - {max(over):+.2f}] "
            f"(goal +0.03): {met}; first page {first:.2f}x the memory store's."
        )
    return ["", *lines]


# -- instructions: what the machine's load cannot move ------------------------------------
#: seconds a crawl may take under valgrind (about 15 to 30 times slower)
VALGRIND_TIMEOUT = 3600.0


def instructions(
    origins: int,
    pages: int,
    latency: float,
    configs: tuple[str, ...],
    baseline: Path | None = None,
    robots_lines: int | None = None,
    not_found_share: float = 0.0,
    repeats: int = 1,
    baseline_only: tuple[str, ...] = (),
) -> list[str]:
    """Each configuration's crawl under ``valgrind --tool=cachegrind --cache-sim=no``:
    the instructions the crawling process executed, which do not depend on how busy
    the machine is.  Each configuration crawls ``origins`` origins and, to take its
    start-up and close out, one origin; the difference per origin is its cost of an
    origin.  Timeouts are raised to 600 s (everything runs 15-30x slower)."""
    if shutil.which("valgrind") is None:
        return ["(valgrind is not installed: no instruction counts)"]
    if baseline is not None:
        configs = configs + tuple(
            f"{c}@base" for c in configs if c not in ("none", "builtin") and (not baseline_only or c in baseline_only)
        )
    body, described = robots_body(default_corpus())
    body, cut = shortened(body, robots_lines)
    every = not_found_every(not_found_share)
    counted: dict[str, list[float]] = {c: [] for c in configs}
    with tempfile.TemporaryDirectory(prefix="broad-instr-") as tmp, web(0, body, 0.0, origins, latency, every) as ports:
        urls = broad_urls(ports["hosts"], pages)
        store = Redis(Path(tmp), cpus()[1]) if any(c.startswith("redis") for c in configs) else None
        try:
            for number in range(repeats):
                for config in configs:
                    store_kind = config.split("@")[0]
                    total = []
                    for size, crawl in ((origins, urls), (1, urls[:pages])):
                        print(f"instructions {number + 1}/{repeats}: {config}, {size} origins ...", file=sys.stderr)
                        extra: dict[str, Any] = {"DOWNLOAD_TIMEOUT": 600}
                        if config not in ("none", "builtin"):
                            extra["RFC9309_FETCH_TIMEOUT"] = 600
                        if store_kind == "sqlite":
                            extra["RFC9309_STORAGE"] = f"sqlite://{Path(tmp) / f'i-{number}-{size}-{config}.sqlite'}"
                        elif store_kind == "redis":
                            assert store is not None
                            store.client.flushall()
                            extra["RFC9309_STORAGE"] = store.url
                        worker = {
                            "mode": config if config in ("none", "builtin") else "plugin",
                            "store": store_kind,
                            "passes": [crawl],
                            "control": ports["control"],
                            "concurrency": CONCURRENCY,
                            "per_domain": PER_DOMAIN,
                            "first_page": True,
                            "settings": extra,
                        }
                        out = Path(tmp) / "cachegrind.out"
                        prefix = ["valgrind", "--tool=cachegrind", "--cache-sim=no", f"--cachegrind-out-file={out}"]
                        root = baseline if config.endswith("@base") and baseline is not None else ROOT
                        run_worker(worker, root, prefix, VALGRIND_TIMEOUT)
                        summary = next(line for line in out.read_text().splitlines() if line.startswith("summary:"))
                        total.append(float(summary.split()[1]))
                    counted[config].append((total[0] - total[1]) / (origins - 1))
        finally:
            if store is not None:
                store.stop()
    builtin = counted.get("builtin")
    memory = counted.get("memory")
    out_lines = [
        f"### Instructions per origin: {origins:,} origins x {pages} pages, under valgrind\n",
        f"robots.txt: {described}{', ' + cut if cut else ''}. The crawling process's instructions (cachegrind's "
        f"Ir, the whole process) for {origins:,} origins less those for 1 origin, per origin; {repeats} run(s) "
        "each, median [range]. The machine's load does not move these.\n",
        "| robots.txt handling | instructions per origin | vs built-in | - memory store |",
        "|---|---:|---:|---:|",
    ]
    for config, values in counted.items():
        per = statistics.median(values)
        versus = f"{per / statistics.median(builtin):.3f}" if builtin else "-"
        over = (
            f"{(per - statistics.median(memory)) / statistics.median(builtin):+.3f}"
            if builtin and memory and config != "memory"
            else "-"
        )
        out_lines.append(
            f"| {label_of(config)} | {per / 1e6:,.2f} M [{min(values) / 1e6:,.2f} - {max(values) / 1e6:,.2f}] "
            f"| {versus} | {over} |"
        )
    return out_lines


def run(
    rounds: int,
    origins: int = 2000,
    pages: int = 3,
    latency: float = 0.05,
    configs: tuple[str, ...] = CONFIGS,
    baseline: Path | None = None,
    robots_lines: int | None = None,
    not_found_share: float = 0.0,
    baseline_only: tuple[str, ...] = (),
    order: str = "rotate",
    count_calls: bool = False,
    save: Path | None = None,
) -> list[str]:
    measured = measure(
        rounds, origins, pages, latency, configs, baseline, robots_lines, not_found_share, baseline_only, order,
        count_calls, save,
    )  # fmt: skip
    if save is not None:
        save.write_text(json.dumps(measured, indent=1))
    return table(measured)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=DEFAULT_ROUNDS)
    ap.add_argument("--origins", type=int, default=2000)
    ap.add_argument("--pages", type=int, default=3)
    ap.add_argument("--latency", type=float, default=0.05)
    ap.add_argument(
        "--only", action="append", choices=CONFIGS + EXTRA_CONFIGS, help="configurations to run (default: all)"
    )
    ap.add_argument(
        "--baseline",
        type=Path,
        help="another checkout (e.g. from git archive, with these benchmarks/ files copied in): "
        "its plugin runs too, in the same rounds",
    )
    ap.add_argument(
        "--baseline-only", action="append", choices=CONFIGS + EXTRA_CONFIGS, help="with --baseline: only these of it"
    )
    ap.add_argument("--robots-lines", type=int, help="serve only the first N lines of the robots.txt file")
    ap.add_argument(
        "--not-found-share", type=float, default=0.0, help="this share of the origins answers robots.txt with a 404"
    )
    ap.add_argument(
        "--order", choices=("rotate", "fixed"), default="rotate", help="the configurations' order within a round"
    )
    ap.add_argument("--calls", action="store_true", help="one more, untimed crawl of each counting function calls")
    ap.add_argument("--save", type=Path, help="write every round's numbers to this JSON file")
    ap.add_argument("--load", type=Path, help="print the tables of a file --save wrote, measuring nothing")
    ap.add_argument(
        "--instructions",
        type=int,
        metavar="RUNS",
        help="count each configuration's instructions under valgrind (RUNS runs each) instead of timing rounds",
    )
    args = ap.parse_args()
    if args.instructions:
        configs = tuple(c for c in CONFIGS + EXTRA_CONFIGS if (c in args.only if args.only else c in CONFIGS))
        lines = instructions(
            args.origins, args.pages, args.latency, configs, args.baseline, args.robots_lines, args.not_found_share,
            args.instructions, tuple(args.baseline_only or ()),
        )  # fmt: skip
        print("\n".join(lines))
        return
    if args.load:
        print("\n".join(table(json.loads(args.load.read_text()))))
        return
    configs = tuple(c for c in CONFIGS + EXTRA_CONFIGS if (c in args.only if args.only else c in CONFIGS))
    lines = run(
        args.rounds, args.origins, args.pages, args.latency, configs, args.baseline, args.robots_lines,
        args.not_found_share, tuple(args.baseline_only or ()), args.order, args.calls, args.save,
    )  # fmt: skip
    print("\n".join(lines))


if __name__ == "__main__":
    sys.path[:0] = [str(HERE.parent)]
    main()
