"""One command for every measurement: ``python benchmarks/run.py``.

Prints markdown tables (and writes them, with a PNG chart when matplotlib is
installed, to ``benchmarks/results/``).  Sections: ``parser`` (parse, match,
memory, agreement with Google, for every installed peer), ``hostile``
(worst-case inputs), ``crawl`` (real Scrapy crawls on loopback) and ``broad``
(a broad crawl: 2,000 loopback hosts x 3 pages, 50 ms per response, every
store; at most 3 rounds, about 12 minutes).
Use ``--only parser`` etc. to run one section, ``--rounds`` for the number of
repetitions (medians are reported).
"""

from __future__ import annotations

import argparse
import datetime
import os
import platform
import statistics
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path[:0] = [str(HERE), str(ROOT)]

import parser_bench  # noqa: E402
from peers import available  # noqa: E402


def corpus_dir() -> Path | None:
    path = Path(os.environ.get("RFC9309_CORPUS", ROOT.parent / "shared" / "corpus"))
    return path if (path / "robots").is_dir() else None


def machine() -> str:
    return f"{os.cpu_count()} cores, Python {platform.python_version()}, {platform.machine()}"


def parser_section(rounds: int, out: list[str], chart: dict) -> None:
    corpus = corpus_dir()
    if corpus is None:
        out.append("parser: skipped (../shared/corpus not found; set RFC9309_CORPUS)\n")
        return
    peers, missing = available()
    files = parser_bench.load_robots(corpus)
    sites = parser_bench.load_match_set(corpus)
    print(f"corpus: {len(files)} robots.txt files; {len(sites)} sites with URL lists", file=sys.stderr)
    google = parser_bench.google_answers(sites)
    calls = sum(len(urls) for _, _, urls in sites)
    timings = {}
    for what, make, data in (
        ("parse", parser_bench.parse_runner, files),
        ("first", parser_bench.first_check_runner, sites),
        ("match", parser_bench.match_runner, sites),
    ):
        print(f"measuring {what} ({rounds} rounds, peers taking turns) ...", file=sys.stderr)
        runners = {p.name: make(p, data) for p in peers}  # name -> (one round, operations in it)
        times = parser_bench.interleaved({name: run for name, (run, _) in runners.items()}, rounds)
        timings[what] = {name: [t / runners[name][1] for t in ts] for name, ts in times.items()}
    rows = []
    for peer in peers:
        mem = parser_bench.measure_memory(peer, files)
        agree = parser_bench.agreement(peer, sites, google) if google else float("nan")
        med = {what: statistics.median(timings[what][peer.name]) for what in timings}
        rows.append((peer.name, med["parse"], med["first"], med["match"], mem, agree))
    mem_of = {r[0]: r[4] for r in rows}
    base = "Protego" if "Protego" in mem_of else None
    out.append(
        f"### Parser and matcher ({len(files)} files parsed; {calls:,} URL checks; median of {rounds} rounds, "
        "peers taking turns; ratios are medians of same-round ratios)\n"
    )
    out.append(
        "| parser | parse us/file | parse+first check us/file | match us/call | memory MiB (all files) "
        "| agrees with Google | parse vs Protego | first check vs Protego | match vs Protego | memory vs Protego |"
    )
    out.append("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for name, parse_s, first_s, match_s, mem, agree in rows:
        if base:
            ratio = {w: parser_bench.median_ratio(timings[w][base], timings[w][name]) for w in timings}
            ratios = f"{ratio['parse']:.1f}x | {ratio['first']:.1f}x | {ratio['match']:.1f}x | {mem / mem_of[base]:.2f}"
        else:
            ratios = "- | - | - | -"
        out.append(
            f"| {name} | {parse_s * 1e6:,.0f} | {first_s * 1e6:,.0f} | {match_s * 1e6:.2f} | "
            f"{mem / 2**20:,.1f} | {agree * 100:.3f}% | {ratios} |"
        )
    if missing:
        out.append(f"\nNot installed here (skipped): {', '.join(missing)}.")
    out.append("")
    chart["parser"] = rows


def hostile_section(rounds: int, out: list[str]) -> None:
    import hostile_bench

    out.append(
        f"### Hostile input ({rounds} rounds; the rows after the idle reactor are the longest time the reactor "
        "was held while the crawl's code did the work, see benchmarks/hostile_bench.py)\n"
    )
    out.append("| case | worst | median | best |")
    out.append("|---|---:|---:|---:|")
    for name, samples in hostile_bench.run(rounds):
        worst, median, best = max(samples), statistics.median(samples), min(samples)
        out.append(f"| {name} | {worst * 1e3:.2f} ms | {median * 1e3:.2f} ms | {best * 1e3:.2f} ms |")
    out.append("")


def crawl_section(rounds: int, out: list[str]) -> None:
    try:
        import crawl_bench
    except ImportError as exc:
        out.append(f"crawl: skipped ({exc})\n")
        return
    out.extend(crawl_bench.run(rounds))
    out.append("")


def broad_section(rounds: int, out: list[str]) -> None:
    import broad_bench

    out.extend(broad_bench.run(min(rounds, broad_bench.DEFAULT_ROUNDS)))
    out.append("")


def write_chart(chart: dict, path: Path) -> str:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return "chart: skipped (pip install matplotlib)"
    rows = chart.get("parser")
    if not rows:
        return "chart: nothing to draw"
    names = [r[0] for r in rows]
    fig, axes = plt.subplots(1, 3, figsize=(15, 4.5))
    for ax, idx, title, scale in (
        (axes[0], 1, "parse, us per file", 1e6),
        (axes[1], 3, "match, us per call", 1e6),
        (axes[2], 4, "memory, MiB for all files", 1 / 2**20),
    ):
        values = [r[idx] * scale for r in rows]
        colors = ["#2a7" if n == "scrapy-rfc9309" else "#889" for n in names]
        ax.barh(names, values, color=colors)
        ax.set_title(title)
        ax.invert_yaxis()
        for y, v in enumerate(values):
            ax.text(v, y, f" {v:,.1f}", va="center", fontsize=8)
    fig.suptitle(f"robots.txt parsers, {datetime.date.today()} ({machine()}); lower is better")
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    return f"chart: {path}"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--only", choices=["parser", "hostile", "crawl", "broad"], action="append")
    args = ap.parse_args()
    sections = args.only or ["parser", "hostile", "crawl", "broad"]
    out = [f"## Benchmarks, {datetime.date.today()} ({machine()})\n"]
    chart: dict = {}
    if "parser" in sections:
        parser_section(args.rounds, out, chart)
    if "hostile" in sections:
        hostile_section(args.rounds, out)
    if "crawl" in sections:
        crawl_section(args.rounds, out)
    if "broad" in sections:
        broad_section(args.rounds, out)
    results = HERE / "results"
    results.mkdir(exist_ok=True)
    text = "\n".join(out)
    (results / "latest.md").write_text(text)
    print(text)
    if chart:
        print(write_chart(chart, results / "parsers.png"))


if __name__ == "__main__":
    main()
