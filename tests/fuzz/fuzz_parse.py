"""Coverage-guided fuzzing of the robots.txt core with atheris.

    pip install atheris
    python tests/fuzz/fuzz_parse.py --minutes 5            # a time-boxed run
    python tests/fuzz/fuzz_parse.py --minutes 5 corpus_dir # grow a corpus dir
    python tests/fuzz/fuzz_parse.py -runs=100000           # plain libFuzzer flags work too

Not part of the test suite (atheris is not a test dependency).  Each input
is split into a body, a Content-Type, a product token and a URL; the body is
parsed and the URL checked, and the properties that must hold whatever the
input are asserted:

* ``parse`` and ``check`` never raise (except ``ValueError`` for a token
  that is not ``[A-Za-z_-]+``, which is checked first);
* the verdict agrees with ``allowed`` and with the deciding rule;
* asking twice gives the same answer, bytes and text parse alike;
* crawl-rate answers are finite and non-negative;
* usage preferences never raise, and a disallowed URL has none;
* one input never takes longer than ``--slow`` seconds (default 2).

Seeds: a sample of the files of ``../shared/corpus/robots/``, when present,
copied to a ``rfc9309-fuzz-seeds-*`` directory under the temporary directory
(left there: without a corpus directory of your own, it is where libFuzzer
keeps the inputs it finds).
A crash leaves ``crash-<sha1>`` in the working directory; reproduce it with
``python tests/fuzz/fuzz_parse.py crash-<sha1>``.
"""

from __future__ import annotations

import argparse
import math
import os
import random
import sys
import tempfile
import time
from pathlib import Path

try:
    import atheris
except ImportError:  # pragma: no cover - the suite never imports this file
    sys.exit("atheris is not installed: pip install atheris")

with atheris.instrument_imports():
    from scrapy_rfc9309 import Verdict, parse
    from scrapy_rfc9309.robots import check_token  # noqa: F401 - instrumented too

REPO = Path(__file__).resolve().parents[2]
CORPUS = REPO.parent / "shared" / "corpus" / "robots"
TOKENS = ["ExampleBot", "googlebot", "a", "b-c_d", "*", "Bad Token", "", "ExampleBot/1.0"]
CONTENT_TYPES = [None, "text/plain", "text/plain; charset=utf-8", "text/plain; charset=iso-8859-1",
                 "text/html; charset=utf-16", "charset=cp500", "charset=undefined", "charset=x-bogus"]  # fmt: skip
ALLOWED = {Verdict.ALLOWED_EXPLICIT, Verdict.ALLOWED_IMPLICIT, Verdict.ALLOWED_ROBOTS_TXT}
SLOW_SECONDS = 2.0


def one_input(data: bytes) -> None:
    fdp = atheris.FuzzedDataProvider(data)
    token = TOKENS[fdp.ConsumeIntInRange(0, len(TOKENS) - 1)]
    content_type = CONTENT_TYPES[fdp.ConsumeIntInRange(0, len(CONTENT_TYPES) - 1)]
    url = fdp.ConsumeUnicodeNoSurrogates(fdp.ConsumeIntInRange(0, 300))
    as_text = fdp.ConsumeBool()
    body = fdp.ConsumeBytes(fdp.remaining_bytes())

    start = time.perf_counter()
    robots = parse(body.decode("utf-8", "replace") if as_text else body, content_type)
    try:
        decision = robots.check(url, token)
    except ValueError:
        valid = token and all(c.isascii() and (c.isalpha() or c in "_-") for c in token)
        assert not valid, f"ValueError for a valid token {token!r}"
        return
    assert decision.allowed == (decision.verdict in ALLOWED), decision
    if decision.verdict in (Verdict.ALLOWED_EXPLICIT, Verdict.DISALLOWED_EXPLICIT):
        assert decision.rule is not None and decision.rule.allow == decision.allowed, decision
    else:
        assert decision.rule is None, decision
    again = robots.check(url, token)
    assert (again.allowed, again.verdict, again.rule) == (decision.allowed, decision.verdict, decision.rule)
    for value in (robots.crawl_delay(token), robots.min_delay(token)):
        assert value is None or (math.isfinite(value) and value >= 0), value
    rate = robots.request_rate(token)
    assert rate is None or (rate[0] > 0 and math.isfinite(rate[1]) and rate[1] > 0), rate
    usage = robots.usage(url, token)  # AI usage preferences: never raise, none where disallowed
    assert set(usage) == {"train-ai", "search", "ai-input"}, usage
    assert decision.allowed or not usage, (decision, usage)
    for diagnostic in robots.diagnostics:
        assert diagnostic.line >= 0 and len(diagnostic.message) < 1000, diagnostic
    if not as_text and content_type is None:
        # bytes that are UTF-8 read as their text does
        try:
            text = body.decode("utf-8")
        except UnicodeDecodeError:
            pass
        else:
            other = parse(text).check(url, token)
            assert (other.allowed, other.verdict) == (decision.allowed, decision.verdict), (decision, other)
    took = time.perf_counter() - start
    assert took < SLOW_SECONDS, f"one input took {took:.2f}s"


def _seed_dir(sample: int) -> str | None:
    """A temporary directory with a sample of the real files (seeds)."""
    if not CORPUS.is_dir():
        return None
    files = sorted(p for p in CORPUS.iterdir() if p.is_file() and p.stat().st_size <= 64_000)
    random.Random(9309).shuffle(files)
    seeds = tempfile.mkdtemp(prefix="rfc9309-fuzz-seeds-")
    for i, path in enumerate(files[:sample]):
        # the provider reads token, content type, URL and flag first: a small prefix
        Path(seeds, f"seed-{i:04d}").write_bytes(b"\x00\x00\x08/a/b?c=d\x00" + path.read_bytes())
    return seeds


def main() -> None:
    global SLOW_SECONDS
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--minutes", type=float, default=None, help="stop after this many minutes")
    parser.add_argument("--seeds", type=int, default=300, help="real files used as seeds (0: none)")
    parser.add_argument("--slow", type=float, default=SLOW_SECONDS, help="seconds one input may take")
    args, rest = parser.parse_known_args()
    SLOW_SECONDS = args.slow
    libfuzzer = [sys.argv[0], *rest]
    if args.minutes is not None:
        libfuzzer.append(f"-max_total_time={max(1, int(args.minutes * 60))}")
    if not any(a.startswith("-max_len=") for a in rest):
        libfuzzer.append("-max_len=65536")
    positional = [a for a in rest if not a.startswith("-")]
    if args.seeds and not any(os.path.isfile(a) for a in positional):
        seeds = _seed_dir(args.seeds)
        if seeds is not None:
            libfuzzer.append(seeds)
    atheris.Setup(libfuzzer, one_input)
    atheris.Fuzz()


if __name__ == "__main__":
    main()
