"""Instructions per added origin and a crawl's fixed cost, under valgrind (issue 36, item 7).

The broad crawl of ``broad_bench.py`` (loopback origins of their own, 3 pages
each, one of them disallowed, ``CONCURRENT_REQUESTS = 256``, 2 per domain), in
the setup of issue 23's outside measurement by default (the first 30 lines of
the corpus file, 29 rules; every 10th origin answers robots.txt with a 404),
each configuration crawled at two sizes (100 and 300 origins by default), each
crawl in a fresh process under ``valgrind --tool=cachegrind --cache-sim=no``.
An instruction count does not move with the machine's load, so it can judge a
difference of a few percent where CPU time cannot.  From the two counts of a
configuration:

* **per added origin**: (count at the larger size - count at the smaller) /
  (the sizes' difference): what one more origin costs, start-up and close
  cancelled out;
* **own handling**: that less the no-robots crawl's, the cost of the robots.txt
  handling itself, set against Scrapy's built-in middleware's;
* **fixed cost**: what a crawl pays once (interpreter, imports, start-up
  checks, close), shown over the built-in's: the count of a crawl of
  ``--fixed-at`` origins (1 by default, one crawl more per configuration)
  less its origins x the per-origin cost.  Taken at the smaller size instead
  (``--fixed-at 0``), a per-origin count's noise (about +-0.3 M, one garbage
  collection more or less) moves it 100 times over: +-30 M at 100 origins.

``python benchmarks/instructions_bench.py``  (5 configurations x 3 crawls: about 25 minutes on 2 cores)

``--only builtin --only memory`` for fewer; ``--rounds 3``: each count the median of 3 crawls
(the configurations take turns in each round; the built-in's per-origin count moves by up to
0.35 M between crawls, the plugin's by under 0.05 M); ``--save counts.json`` keeps every
count, ``--load a.json b.json`` prints their table (runs side by side on two cores: their
rounds merged, medians taken); ``--keep DIR`` keeps
cachegrind's output files (``cg_annotate`` reads them: where the instructions
go in the interpreter and its C libraries).
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

from broad_bench import (  # noqa: E402 - after the path is set
    CONCURRENCY,
    CONFIGS,
    LABELS,
    PER_DOMAIN,
    Redis,
    broad_urls,
    not_found_every,
    redis_available,
    shortened,
)
from crawl_bench import ROOT, cpus, default_corpus, robots_body, run_worker, web  # noqa: E402

#: seconds a crawl may take under valgrind (15 to 30 times slower than without)
VALGRIND_TIMEOUT = 3600.0
SIZES = (100, 300)
#: issue 36's goals: own handling at most the built-in's; SQLite and Redis at most the memory
#: store + 0.03 (of the built-in's whole crawl, per origin); a fixed cost at most 100 M over the built-in's
GOAL_OWN = 1.0
GOAL_STORE = 0.03
GOAL_FIXED = 100e6


def count(
    config: str,
    urls: list[str],
    control: int,
    tmp: Path,
    store: Redis | None,
    keep: Path | None,
    root: Path = ROOT,
) -> int:
    """The crawling process's instructions (cachegrind's Ir, its whole life) for one crawl of ``urls``."""
    store_kind = config.split("@")[0]
    extra: dict[str, Any] = {"DOWNLOAD_TIMEOUT": 600}
    if store_kind not in ("none", "builtin"):
        extra["RFC9309_FETCH_TIMEOUT"] = 600
    origins = len({url.split("/")[2] for url in urls})
    if store_kind == "sqlite":
        extra["RFC9309_STORAGE"] = f"sqlite://{tmp / f'i-{origins}-{config}.sqlite'}"
    elif store_kind == "redis":
        assert store is not None
        store.client.flushall()
        extra["RFC9309_STORAGE"] = store.url
    worker = {
        "mode": store_kind if store_kind in ("none", "builtin") else "plugin",
        "store": store_kind,
        "passes": [urls],
        "control": control,
        "concurrency": CONCURRENCY,
        "per_domain": PER_DOMAIN,
        "first_page": True,
        "settings": extra,
        "bare": True,
    }
    out = (keep or tmp) / f"cachegrind.out.{config.replace('@', '-')}.{origins}"
    prefix = ["valgrind", "--tool=cachegrind", "--cache-sim=no", f"--cachegrind-out-file={out}"]
    run_worker(worker, root, prefix, VALGRIND_TIMEOUT)
    summary = next(line for line in out.read_text().splitlines() if line.startswith("summary:"))
    return int(summary.split()[1])


def compiled(root: Path) -> None:
    """Compile the bytecode of ``root``'s plugin and benchmark files in place, as pip does when it
    installs a package (Scrapy's and every other installed package's is compiled already): with
    ``PYTHONDONTWRITEBYTECODE`` set, or a checkout never imported, each crawl would otherwise
    compile the plugin from source, about 0.5 G instructions of its start-up that no installed
    copy pays."""
    for part in ("scrapy_rfc9309", "benchmarks"):
        subprocess.run([sys.executable, "-m", "compileall", "-q", str(root / part)], check=True)


def measure(
    configs: tuple[str, ...],
    sizes: tuple[int, int] = SIZES,
    pages: int = 3,
    latency: float = 0.05,
    robots_lines: int | None = None,
    not_found_share: float = 0.0,
    keep: Path | None = None,
    baseline: Path | None = None,
    save: Path | None = None,
    fixed_at: int = 0,
    rounds: int = 1,
) -> dict[str, Any]:
    """Every configuration's instruction count at each size (and at ``fixed_at`` origins, if not 0):
    ``{"counts": {config: {size: Ir}}, "samples": {config: {size: [Ir of each round]}}, ...}``, the count the
    median of ``rounds`` crawls (the configurations take turns within a round).
    With ``baseline`` (another checkout with these benchmark files in its benchmarks/), its
    plugin configurations too, as ``<config>@base``."""
    if shutil.which("valgrind") is None:
        raise SystemExit("instructions benchmark: valgrind is not installed")
    if baseline is not None:
        configs = configs + tuple(f"{c}@base" for c in configs if c not in ("none", "builtin"))
    if any(c.startswith("redis") for c in configs) and not redis_available():
        print("instructions benchmark: no redis-server or redis package: the Redis store is left out", file=sys.stderr)
        configs = tuple(c for c in configs if not c.startswith("redis"))
    body, described = robots_body(default_corpus())
    body, cut = shortened(body, robots_lines)
    if cut:
        described = f"{described.split(':')[0]}, {cut}"
    every = not_found_every(not_found_share)
    counts: dict[str, dict[str, int]] = {c: {} for c in configs}
    samples: dict[str, dict[str, list[int]]] = {c: {} for c in configs}
    result = {"counts": counts, "samples": samples, "sizes": list(sizes), "pages": pages, "robots": described}
    result["latency"] = latency
    if fixed_at:
        result["fixed_at"] = fixed_at
    if keep is not None:
        keep.mkdir(parents=True, exist_ok=True)
    compiled(ROOT)
    if baseline is not None:
        compiled(baseline)
    with (
        tempfile.TemporaryDirectory(prefix="instr-bench-") as tmp,
        web(0, body, 0.0, max(sizes), latency, every) as ports,
    ):
        store = Redis(Path(tmp), cpus()[1]) if any(c.startswith("redis") for c in configs) else None
        try:
            for number, config in itertools.product(range(rounds), configs):
                for size in (fixed_at, *sizes) if fixed_at else sizes:
                    print(f"instructions: {config}, {size} origins (round {number + 1}) ...", file=sys.stderr)
                    urls = broad_urls(ports["hosts"][:size], pages)
                    root = baseline if config.endswith("@base") and baseline is not None else ROOT
                    got = samples[config].setdefault(str(size), [])
                    got.append(count(config, urls, ports["control"], Path(tmp), store, keep, root))
                    counts[config][str(size)] = int(statistics.median(got))
                    if save is not None:  # as each count ends: a long run stopped keeps what it counted
                        save.write_text(json.dumps(result, indent=1))
        finally:
            if store is not None:
                store.stop()
    return result


def table(m: dict[str, Any]) -> list[str]:
    small, large = m["sizes"]
    at = m.get("fixed_at") or small  # the fixed cost from this size's count
    counts = {c: v for c, v in m["counts"].items() if {str(small), str(large), str(at)} <= v.keys()}
    per = {c: (v[str(large)] - v[str(small)]) / (large - small) for c, v in counts.items()}
    fixed = {c: v[str(at)] - at * per[c] for c, v in counts.items()}
    none, builtin, memory = per.get("none"), per.get("builtin"), per.get("memory")
    rounds = max((len(v) for sizes in m.get("samples", {}).values() for v in sizes.values()), default=1)
    crawls = "one crawl" if rounds == 1 else f"the median of up to {rounds} crawls"
    out = [
        f"### Instructions: {small} and {large} origins x {m['pages']} pages, under valgrind\n",
        f"robots.txt: {m['robots']}. The crawling process's instructions (cachegrind's Ir, its whole life), "
        f"{crawls} per configuration and size. Per added origin: (Ir at {large} - Ir at {small}) / "
        f"{large - small}. Own handling: that less the no-robots crawl's. Fixed: Ir at {at} less "
        f"{at} x the per-origin cost. - memory: (per origin - the memory store's) / the built-in's per origin.\n",
        "| robots.txt handling | Ir, " + f"{small} origins | Ir, {large} origins | per added origin | vs built-in "
        "| own handling | own vs built-in's | - memory | fixed | fixed over built-in |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for config, values in counts.items():
        own = per[config] - none if none is not None and config != "none" else None
        builtin_own = builtin - none if builtin is not None and none is not None else None
        cells = [
            LABELS[config.split("@")[0]] + (", baseline" if config.endswith("@base") else ""),
            f"{values[str(small)] / 1e9:,.3f} G",
            f"{values[str(large)] / 1e9:,.3f} G",
            f"{per[config] / 1e6:,.2f} M",
            f"{per[config] / builtin:.3f}" if builtin else "-",
            f"{own / 1e6:,.2f} M" if own is not None else "-",
            f"{own / builtin_own:.2f}" if own is not None and builtin_own else "-",
            f"{(per[config] - memory) / builtin:+.3f}"
            if builtin and memory is not None and config.split("@")[0] in ("sqlite", "redis")
            else "-",
            f"{fixed[config] / 1e6:,.0f} M",
            f"{(fixed[config] - fixed['builtin']) / 1e6:+,.0f} M" if "builtin" in fixed else "-",
        ]
        out.append("| " + " | ".join(cells) + " |")
    out += goals(per, fixed, rounds)
    return out


def goals(per: dict[str, float], fixed: dict[str, float], rounds: int = 1) -> list[str]:
    """Issue 36's goals, each met or missed as its line shows it (of one crawl per count: said to be a guess)."""
    if not {"none", "builtin", "memory"} <= per.keys():
        return []
    own = (per["memory"] - per["none"]) / (per["builtin"] - per["none"])
    lines = [
        "",
        f"Own handling, memory store: {own:.2f}x the built-in's (goal <= {GOAL_OWN:.2f}): "
        f"{'met' if round(own, 2) <= GOAL_OWN else 'missed'}.",
    ]
    for config in ("sqlite", "redis"):
        if config in per:
            over = (per[config] - per["memory"]) / per["builtin"]
            met = "met" if round(over, 3) <= GOAL_STORE else "missed"
            lines.append(f"{LABELS[config]}: {over:+.3f} over the memory store (goal +{GOAL_STORE:.2f}): {met}.")
    extra = fixed["memory"] - fixed["builtin"]
    lines.append(
        f"Fixed cost, memory store: {extra / 1e6:+,.0f} M instructions over the built-in's "
        f"(goal <= {GOAL_FIXED / 1e6:,.0f} M): {'met' if extra <= GOAL_FIXED else 'missed'}."
    )
    if rounds == 1:  # (both the built-in's and the plugin's counts have two values: docs/benchmarks_crawl.md)
        lines.append(
            "One crawl per count: a full garbage collection more or less in a crawl moves its per-origin count "
            "by about 0.25 M, an eighth of the own handling; take --rounds 3 or more (or --load several runs)."
        )
    return lines


def merged(saved: list[dict[str, Any]]) -> dict[str, Any]:
    """Several ``--save`` files of one setup (runs side by side) as one: every round's count, their medians."""
    out = dict(saved[0], samples={}, counts={})
    for one in saved:  # (a file of one round each: its counts)
        kept = one.get("samples") or {c: {k: [v] for k, v in s.items()} for c, s in one["counts"].items()}
        for config, sizes in kept.items():
            for size, values in sizes.items():
                out["samples"].setdefault(config, {}).setdefault(size, []).extend(values)
    out["counts"] = {c: {k: int(statistics.median(v)) for k, v in s.items()} for c, s in out["samples"].items()}
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", type=int, nargs=2, default=SIZES, metavar=("SMALL", "LARGE"))
    ap.add_argument(
        "--fixed-at", type=int, default=1, help="origins of the crawl the fixed cost is taken from (0: SMALL)"
    )
    ap.add_argument("--pages", type=int, default=3)
    ap.add_argument("--latency", type=float, default=0.05)
    ap.add_argument("--only", action="append", choices=CONFIGS, help="configurations to count (default: all)")
    ap.add_argument(
        "--robots-lines", type=int, default=30, help="serve only the first N lines of the robots.txt file (0: all)"
    )
    ap.add_argument("--not-found-share", type=float, default=0.1, help="this share of the origins answers 404")
    ap.add_argument("--baseline", type=Path, help="another checkout: its plugin configurations too")
    ap.add_argument("--keep", type=Path, help="keep cachegrind's output files in this directory")
    ap.add_argument("--save", type=Path, help="write every count to this JSON file")
    ap.add_argument("--rounds", type=int, default=1, help="crawls per configuration and size: their median counts")
    ap.add_argument(
        "--load",
        type=Path,
        nargs="+",
        help="print the table of files --save wrote (their rounds merged), counting nothing",
    )
    args = ap.parse_args()
    if args.load:
        print("\n".join(table(merged([json.loads(path.read_text()) for path in args.load]))))
        return
    # the same hashes in every process: a set's or a dict's layout then does not move a count
    os.environ.setdefault("PYTHONHASHSEED", "0")
    small, large = args.sizes
    if not 0 < small < large:
        ap.error("--sizes: two sizes, the first smaller")
    configs = tuple(c for c in CONFIGS if c in (args.only or CONFIGS))
    measured = measure(
        configs, (small, large), args.pages, args.latency, args.robots_lines or None, args.not_found_share, args.keep,
        args.baseline, args.save, args.fixed_at, args.rounds,
    )  # fmt: skip
    print("\n".join(table(measured)))


if __name__ == "__main__":
    sys.path[:0] = [str(HERE.parent)]
    main()
