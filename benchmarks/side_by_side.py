"""Two versions of the core and Protego, side by side in one process, on the corpus.

``python benchmarks/side_by_side.py --base main --rounds 7`` imports the pure
core (``scrapy_rfc9309/robots/``) of a git revision as a package of its own
beside the working tree's, and times parse, parse + first check and match
for both and for Protego, the three taking turns in every round (as
``parser_bench``).  The machine is shared: a ratio is the median of the
ratios measured in the same round, which drift cannot move much.

Prints, per measurement, each one's median time, each one's ratio to
Protego, and new / base.
"""

from __future__ import annotations

import argparse
import importlib
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path[:0] = [str(HERE), str(ROOT)]

import parser_bench  # noqa: E402
from peers import Peer, available  # noqa: E402


def core_of(rev: str, into: Path) -> Peer:
    """The core of ``rev`` (``git archive``), imported as the package ``core_<n>``."""
    name = f"core_{len(list(into.iterdir()))}"
    archive = subprocess.run(
        ["git", "-C", str(ROOT), "archive", rev, "scrapy_rfc9309/robots"], check=True, capture_output=True
    ).stdout
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive, check=True)
    (into / "scrapy_rfc9309" / "robots").rename(into / name)
    if str(into) not in sys.path:
        sys.path.insert(0, str(into))
    module = importlib.import_module(name)
    return Peer(f"{rev}", lambda b, t: module.parse(b), lambda r, url, tok: r.can_fetch(url, tok))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--base", default="main", help="the git revision to compare with")
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--only", choices=["parse", "first", "match"], action="append")
    args = ap.parse_args()
    corpus = ROOT.parent / "shared" / "corpus"
    peers = {p.name: p for p in available()[0] if p.name in ("scrapy-rfc9309", "Protego")}
    with tempfile.TemporaryDirectory() as tmp:
        base = core_of(args.base, Path(tmp))
        runs = {"new": peers["scrapy-rfc9309"], "base": base, "Protego": peers["Protego"]}
        files = parser_bench.load_robots(corpus)
        sites = parser_bench.load_match_set(corpus)
        for what, make, data in (
            ("parse", parser_bench.parse_runner, files),
            ("first", parser_bench.first_check_runner, sites),
            ("match", parser_bench.match_runner, sites),
        ):
            if args.only and what not in args.only:
                continue
            runners = {name: make(peer, data) for name, peer in runs.items()}
            times = parser_bench.interleaved({name: run for name, (run, _) in runners.items()}, args.rounds)
            per = {name: [t / runners[name][1] * 1e6 for t in ts] for name, ts in times.items()}
            line = [what]
            for name in ("new", "base"):
                line.append(
                    f"{name} {statistics.median(per[name]):.3f} us "
                    f"({parser_bench.median_ratio(per['Protego'], per[name]):.2f}x Protego)"
                )
            line.append(f"Protego {statistics.median(per['Protego']):.3f} us")
            line.append(f"new/base {parser_bench.median_ratio(per['new'], per['base']):.3f}")
            print(line[0] + ": " + "; ".join(line[1:]), flush=True)


if __name__ == "__main__":
    main()
