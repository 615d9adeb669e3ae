"""Worst-case inputs: each must answer in milliseconds, never hang, and no
single robots.txt operation may hold the crawl's reactor for 10 ms or more.

Two kinds of rows, each a list of samples (one per round; the report gives
the worst, the median and the best):

* calls of the pure core, timed alone (``parse``, ``check``): what the work
  costs, wherever it runs;
* the same work *as the crawl runs it* (``RobotsService._policy``, which
  parses a large body and compiles it for the crawler in short steps with
  the reactor getting a turn between them; the SQLite and Redis stores; then
  the checks on the reactor thread), in a fresh process running Scrapy's
  asyncio reactor; beside each shape, what Scrapy's built-in middleware does
  with the same body on the reactor (decode, ``Protego.parse``, the first
  ``can_fetch``), for comparison.  There a ``LoopingCall`` ticks every millisecond and
  records the longest time between two ticks in which the process ran (the
  gap, or the process's CPU time in it when that is shorter,
  ``time.process_time``): the longest time anything held the reactor while
  the operation ran (a garbage collection or, in the comparison row, a
  worker thread holding the GIL included).  A longer wall-clock gap in which
  the process did not run (another process had the core) is named beside
  the row.  A synchronous
  call on the reactor (a check) is timed directly.

``python benchmarks/hostile_bench.py --rounds 5`` prints the rows; ``run.py
--only hostile`` makes the table.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import string
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from scrapy_rfc9309 import parse  # noqa: E402

TOKEN = "ExampleBot"
LETTERS = string.ascii_letters + string.digits
#: the reactor is "held" when two 1 ms ticks are further apart than this
BUDGET = 0.010


def section_file() -> bytes:
    """500 KiB, 20,000 wildcard rules, all in one path bucket ("/s...")."""
    body = "User-agent: *\n" + "".join(f"Disallow: /section-{i:05d}/*/page$\n" for i in range(20_000))
    return body.encode()[:512_000]


def spread_file() -> bytes:
    """500 KiB, 20,000 rules: 10,000 wildcard rules that belong to every bucket
    (``/*x1*y1$``), then 10,000 spread over 62 buckets: each bucket's first
    compile merges 10,000 rules."""
    generic = "".join(f"Disallow: /*x{i}*y{i}$\n" for i in range(10_000))
    spread = "".join(f"Disallow: /{LETTERS[i % 62]}s-{i:05d}/*/page$\n" for i in range(10_000))
    return ("User-agent: *\n" + generic + spread).encode()[:512_000]


def long_line() -> bytes:
    return b"User-agent: *\nDisallow: /" + b"x" * 1_000_000


def issue_file() -> bytes:
    """500 KiB, 20,000 rules like ``Disallow: /123456/*`` and ``Allow: /654321/*.php``
    in one ``User-agent: *`` group (the shape of issue 26)."""
    rules = "".join(
        f"Disallow: /{(i * 7919) % 1_000_000:06d}/*\nAllow: /{(i * 104_729) % 1_000_000:06d}/*.php\n"
        for i in range(10_000)
    )
    return ("User-agent: *\n" + rules).encode()[:512_000]


def groups_file() -> bytes:
    """60 groups of 300 wildcard rules each (and a ``*`` group like them)."""
    groups = [f"User-agent: bot{_letters(g)}\n" for g in range(60)] + ["User-agent: *\n"]
    return "".join(
        head + "".join(f"Disallow: /{LETTERS[i % 62]}*x{g}-{i}*.php\n" for i in range(300))
        for g, head in enumerate(groups)
    ).encode()[:512_000]


def prefix_file() -> bytes:
    """500 KiB of plain prefix rules (``Disallow: /p123/x``), most in one bucket."""
    return ("User-agent: *\n" + "".join(f"Disallow: /p{i}/x\n" for i in range(40_000))).encode()[:512_000]


def agents_file() -> bytes:
    """500 KiB of 30,000 User-agent lines, then one rule."""
    return ("".join(f"User-agent: bot{i}\n" for i in range(30_000)) + "Disallow: /x\n").encode()[:512_000]


def long_literals_file() -> bytes:
    """1,000 wildcard rules whose literals are 480 random characters each: filing
    them in the literal index is the costliest step of a preparation."""
    import random

    def literal(seed: int) -> str:
        rnd = random.Random(seed)
        return "".join(rnd.choice(string.ascii_lowercase + string.digits) for _ in range(480))

    return ("User-agent: *\n" + "".join(f"Disallow: /a*{literal(i)}\n" for i in range(1_000))).encode()[:512_000]


def distinct_wildcard_file() -> bytes:
    """Issue 30: 500 KiB of distinct wildcard rules in one group,
    ``Allow|Disallow: /<random number>/*`` then nothing, ``$`` or ``.php``."""
    import random

    rnd = random.Random(9309)
    rules = "".join(
        f"{rnd.choice(('Allow', 'Disallow'))}: /{rnd.randrange(10**9)}/*{rnd.choice(('', '$', '.php'))}\n"
        for _ in range(25_000)
    )
    return ("User-agent: *\n" + rules).encode()[:512_000]


def exact_file() -> bytes:
    """500 KiB of distinct ``$``-anchored rules (``Disallow: /123456789$``)."""
    import random

    rnd = random.Random(1)
    return ("User-agent: *\n" + "".join(f"Disallow: /{rnd.randrange(10**9)}$\n" for _ in range(30_000))).encode()[
        :512_000
    ]


def shared_start_file() -> bytes:
    """500 KiB of wildcard rules with one start and one literal (``/*/page*123$``)."""
    return ("User-agent: *\n" + "".join(f"Disallow: /*/page*{i}$\n" for i in range(30_000))).encode()[:512_000]


def usage_file() -> bytes:
    """500 KiB of distinct Content-Usage rules (a usage look-up per request)."""
    import random

    rnd = random.Random(5)
    lines = "".join(f"Content-Usage: /{rnd.randrange(10**9)}/ train-ai=n, search=y\n" for _ in range(20_000))
    return ("User-agent: *\nDisallow: /private\n" + lines).encode()[:512_000]


def repeated_usage_file() -> bytes:
    """2,000 identical Content-Signal lines, then Content-Usage lines for three
    spellings of one path to the end of 500 KiB."""
    lines = "Content-Signal: search=yes, ai-train=no\n" * 2_000
    lines += "".join(f"Content-Usage: /x{'*' * (i % 3)} train-ai=n\n" for i in range(20_000))
    return ("User-agent: *\nDisallow: /private\n" + lines).encode()[:512_000]


def many_groups_file() -> bytes:
    """500 KiB of ``*`` groups of one wildcard rule each (``/g123/*x``)."""
    return "".join(f"User-agent: *\nDisallow: /g{i}/*x\n" for i in range(30_000)).encode()[:512_000]


def spread_wildcard_file() -> bytes:
    """Issue 36 item 10: 500 KiB of 20,000 distinct wildcard rules spread over
    62 first characters (``Allow|Disallow: /<c><n>/*`` then ``$`` or ``.php``)."""
    import random

    rnd = random.Random(36)
    rules = "".join(
        f"{rnd.choice(('Allow', 'Disallow'))}: /{LETTERS[n % 62]}{n}/*{rnd.choice(('$', '.php'))}\n"
        for n in (rnd.randrange(10**9) for _ in range(25_000))
    )
    return ("User-agent: *\n" + rules).encode()[:512_000]


def escapes_file() -> bytes:
    """500 KiB of 7 rules in each of 62 buckets (fewer than a bucket prepared for
    its number of rules), each 1 KB of lower-case escapes: costly to normalise."""
    rules = "".join(f"Disallow: /{c}{i}/{'%c3%a9' * 170}*.php\n" for c in LETTERS for i in range(7))
    return ("User-agent: *\n" + rules).encode()[:512_000]


def non_ascii_file() -> bytes:
    """63 rules of 8 KB of non-ASCII text, all in one bucket."""
    return ("User-agent: *\n" + "".join(f"Disallow: /a{i}/{chr(0xE9) * 4_000}$\n" for i in range(63))).encode()[
        :512_000
    ]


def latin1_file() -> bytes:
    """500 KiB that is not UTF-8 and names no charset (each line read on its own):
    30,000 rules with an ISO-8859-1 octet."""
    return (b"User-agent: *\n" + b"".join(b"Disallow: /caf\xe9%d\n" % i for i in range(30_000)))[:512_000]


def _letters(n: int) -> str:
    """``n`` written with the letters a-j (product tokens have no digits)."""
    return "".join(chr(ord("a") + int(d)) for d in str(n))


#: the shapes measured as the crawl runs them: file, then the paths of the first checks
#: (a short one and one of 2 KB in each bucket the file uses)
LONG = "x" * 2048


def crawl_shapes() -> dict[str, tuple[bytes, list[str]]]:
    return {
        "500 KiB file of 20,000 rules": (section_file(), ["/section-19999/x/page", "/section-" + LONG]),
        "500 KiB file of 20,000 rules over 62 buckets": (
            spread_file(),
            [f"/{c}s-00001/x/page" for c in LETTERS] + [f"/{c}s-{LONG}" for c in LETTERS],
        ),
        "500 KiB of Disallow: /123456/* and Allow: /654321/*.php": (
            issue_file(),
            [f"/{d}23456/x.php" for d in "0123456789"] + [f"/{d}23456/{LONG}.php" for d in "0123456789"],
        ),
        "60 groups of 300 wildcard rules": (
            groups_file(),
            [f"/{c}/x1-1/a.php" for c in LETTERS] + [f"/{c}/{LONG}.php" for c in LETTERS],
        ),
        "500 KiB of plain prefix rules": (prefix_file(), ["/p1/x", "/p39999/x", "/p1/" + LONG, "/q"]),
        "1,000 wildcard rules of 480-character literals": (long_literals_file(), ["/a", "/a" + LONG, "/b" + LONG]),
        "a line of 1 MB": (long_line(), ["/" + "x" * 100, "/" + LONG]),
        "500 KiB of 30,000 User-agent lines": (agents_file(), ["/x", "/" + LONG]),
        "500 KiB of distinct wildcard rules (issue 30)": (
            distinct_wildcard_file(),
            [f"/{d}23/x.php" for d in "123456789"] + [f"/{d}23/{LONG}.php" for d in "123456789"],
        ),
        "500 KiB of distinct exact rules": (exact_file(), [f"/{d}23" for d in "123456789"] + ["/1" + LONG]),
        "500 KiB of wildcard rules with one start and one literal": (
            shared_start_file(),
            ["/a/page/1", "/x", "/a/page/" + LONG],
        ),
        "500 KiB of distinct Content-Usage rules": (usage_file(), ["/123/x", "/private/x", "/1/" + LONG]),
        "500 KiB of 30,000 groups of one wildcard rule": (many_groups_file(), ["/g1/ax", "/g2", "/g1/" + LONG + "x"]),
        "500 KiB of repeated Content-Signal and Content-Usage lines": (
            repeated_usage_file(),
            ["/x/y", "/private/x", "/x/" + LONG],
        ),
        "500 KiB of distinct wildcard rules over 62 first characters (issue 36)": (
            spread_wildcard_file(),
            [f"/{c}123/x.php" for c in LETTERS] + [f"/{c}/{LONG}.php" for c in LETTERS[::7]],
        ),
        "7 rules of 1 KB of escapes in each of 62 buckets": (
            escapes_file(),
            [f"/{c}0/{'%C3%A9' * 170}/x.php" for c in LETTERS] + [f"/{c}/{LONG}" for c in LETTERS[::7]],
        ),
        "63 rules of 8 KB of non-ASCII text in one bucket": (
            non_ascii_file(),
            [f"/a{i}/{'%C3%A9' * 4_000}" for i in (0, 31, 62)] + ["/a/" + LONG, "/b"],
        ),
        "500 KiB not UTF-8, no charset (ISO-8859-1 lines)": (latin1_file(), ["/caf%E91", "/caf%E9" + LONG, "/x"]),
    }


#: a small file with a line of each kind the shapes use: what a request costs with it is the
#: baseline of "a request's check and usage look-up beyond a small file's"
SMALL = (
    b"User-agent: *\nDisallow: /private\nAllow: /2/*.php\nContent-Signal: search=yes\nContent-Usage: /x train-ai=n\n"
)


def _samples(fn: Callable[[], object], rounds: int) -> list[float]:
    out = []
    for _ in range(rounds):
        start = time.perf_counter()
        fn()
        out.append(time.perf_counter() - start)
    return out


def core_rows(rounds: int) -> list[tuple[str, list[float]]]:
    """The pure core's calls, timed alone (the rows kept from before)."""
    results = []
    wild = "/" + "*a" * 100 + "*b"
    robots = parse(f"User-agent: *\nDisallow: {wild}\n")
    url = "http://example.com/" + "a" * 2048
    robots.check(url, TOKEN)  # compile outside the timing
    results.append(
        ("2 KB URL vs a pattern of 100 wildcards (check)", _samples(lambda: robots.check(url, TOKEN), rounds))
    )

    many = parse("User-agent: *\n" + "".join(f"Disallow: /*x{i}*y{i}$\n" for i in range(200)))
    many.check("/", TOKEN)
    results.append(("2 KB URL vs 200 wildcard rules (check)", _samples(lambda: many.check(url, TOKEN), rounds)))

    body = section_file()
    results.append((f"{len(body) // 1024} KiB file of 20,000 rules (parse)", _samples(lambda: parse(body), rounds)))
    results.append(
        (
            "same file, first check, lazy (compiles the bucket of 20,000)",
            _samples(lambda: parse(body).check("/section-19999/x/page", TOKEN), rounds),
        )
    )
    big = parse(body)
    big.check("/section-00000/x/page", TOKEN)  # compiles the bucket of "/s..." paths
    results.append(("same file, check", _samples(lambda: big.check("/section-09999/x/page", TOKEN), rounds)))
    results.append(
        ("same file, check of a 2 KB path", _samples(lambda: big.check("/section-" + "x" * 2048, TOKEN), rounds))
    )
    spread = parse(spread_file())
    spread.prepare(TOKEN)
    long_path = "/section-" + "x" * 2048
    spread.check(long_path, TOKEN)
    results.append(
        (
            "2 KB path vs 10,000 distinct-literal rules in every bucket (later check)",
            _samples(lambda: spread.check(long_path, TOKEN), rounds),
        )
    )
    line = long_line()
    results.append(("a line of 1 MB (parse)", _samples(lambda: parse(line), rounds)))
    small = parse(SMALL)
    for name, (body, paths) in crawl_shapes().items():
        robots = parse(body).prepare(TOKEN)
        urls = ["http://example.com" + path for path in paths if len(path) < 200]
        results.append(
            (
                f"{name}: a request's check and usage look-up beyond a small file's (mean)",
                [_per_request(robots, urls) - _per_request(small, urls) for _ in range(rounds)],
            )
        )
    bomb = _bomb_body()
    from scrapy_rfc9309.robots.bodies import decode_content

    results.append(
        (
            f"a gzip bomb's {len(bomb) // 1024} KiB kept past the limit, decoded (robots.bodies.decode_content)",
            _samples(lambda: decode_content(bomb, [b"gzip"], 512_000), rounds),
        )
    )
    return results


def step_rows(rounds: int, base: str | None = None) -> list[str]:
    """Markdown rows, per shape of :func:`crawl_shapes`: the longest step of
    ``RobotsTxt.parsing(body, ..., token)`` (as the crawl runs it: parse and
    preparation for the crawler), then the longest first and later check
    and usage look-up of its paths, in process time with the garbage
    collector off, the best of ``rounds``; beside, the same for the core of
    the git revision ``base`` (imported as a package of its own)."""
    import gc
    import importlib
    import statistics  # noqa: F401

    cores = {"new": importlib.import_module("scrapy_rfc9309.robots")}
    tmp = None
    if base is not None:
        tmp = tempfile.mkdtemp(prefix="hostile-base-")
        archive = subprocess.run(
            ["git", "-C", str(ROOT), "archive", base, "scrapy_rfc9309/robots"], check=True, capture_output=True
        ).stdout
        subprocess.run(["tar", "-x", "-C", tmp], input=archive, check=True)
        os.rename(os.path.join(tmp, "scrapy_rfc9309", "robots"), os.path.join(tmp, "base_core"))
        sys.path.insert(0, tmp)
        cores = {"base": importlib.import_module("base_core"), **cores}

    def measure(core: Any, body: bytes, paths: list[str]) -> tuple[float, float, float]:
        steps = core.RobotsTxt.parsing(body, None, 512_000, TOKEN)
        longest = 0.0
        while True:
            started = time.process_time()
            try:
                next(steps)
            except StopIteration as done:
                robots = done.value
                longest = max(longest, time.process_time() - started)
                break
            longest = max(longest, time.process_time() - started)
        checks = []
        for _ in range(2):  # first, then later
            worst = 0.0
            for path in paths:
                started = time.process_time()
                robots.check("http://example.com" + path, TOKEN)
                robots.usage("http://example.com" + path, TOKEN)
                worst = max(worst, time.process_time() - started)
            checks.append(worst)
        return longest, checks[0], checks[1]

    rows = [
        "| shape | " + " | ".join(f"{name}: longest step / first check / later check" for name in cores) + " |",
        "|---|" + "---:|" * len(cores),
    ]
    gc.disable()
    try:
        for shape, (body, paths) in crawl_shapes().items():
            cells = []
            for core in cores.values():
                best = [min(values) for values in zip(*(measure(core, body, paths) for _ in range(rounds)))]
                cells.append(" / ".join(f"{value * 1e3:.2f}" for value in best) + " ms")
            rows.append(f"| {shape} | " + " | ".join(cells) + " |")
    finally:
        gc.enable()
        if tmp is not None:
            shutil.rmtree(tmp, ignore_errors=True)
    return rows


def _per_request(robots: object, urls: list[str], calls: int = int(os.environ.get("HOSTILE_CALLS", "200"))) -> float:
    """The mean time of a check and a usage look-up of ``urls`` (process time, the
    best of 3), the first answers (lazy buckets) made before."""
    for url in urls:
        robots.check(url, TOKEN), robots.usage(url, TOKEN)  # type: ignore[attr-defined]
    best = float("inf")
    for _ in range(3):
        started = time.process_time()
        for _ in range(calls):
            for url in urls:
                robots.check(url, TOKEN)  # type: ignore[attr-defined]
                robots.usage(url, TOKEN)  # type: ignore[attr-defined]
        best = min(best, time.process_time() - started)
    return best / (calls * len(urls))


def _bomb_body() -> bytes:
    """What the client keeps of a gzip bomb: the parse limit and 64 KiB more
    on the wire (fetch.SLACK_BYTES), 1 MiB of zeros per kilobyte."""
    import zlib

    compressor = zlib.compressobj(9, zlib.DEFLATED, 31)
    head = compressor.compress(b"User-agent: *\nDisallow: /early\n") + compressor.flush(zlib.Z_FULL_FLUSH)
    block = compressor.compress(bytes(1 << 20)) + compressor.flush(zlib.Z_FULL_FLUSH)
    return head + block * ((80 * 1024) // len(block))


# -- as the crawl runs it: in a fresh process with Scrapy's asyncio reactor -------------------
def reactor_rows(rounds: int) -> list[tuple[str, list[float]]]:
    """Run :func:`_reactor_main` in a fresh process; its rows."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])))
    done = subprocess.run(
        [sys.executable, __file__, "--in-reactor", "--rounds", str(rounds)],
        capture_output=True, text=True, env=env, check=False, timeout=600,
    )  # fmt: skip
    if done.returncode != 0:
        raise RuntimeError(f"hostile_bench --in-reactor failed:\n{done.stderr[-3000:]}")
    return [(name, samples) for name, samples in json.loads(done.stdout.splitlines()[-1])]


class _Ticks:
    """A 1 ms LoopingCall that records the longest gap between two ticks, and
    the longest full garbage collection meanwhile (``gc.callbacks``).

    A gap is measured twice: in wall time, and in the CPU time of the whole
    process (``time.process_time``: the reactor thread, or a worker thread
    holding the GIL meanwhile).  Code holding the reactor runs, so its hold
    is at most that CPU time; a wall gap much longer than it is time the
    process did not run at all (on a shared machine another process had the
    core), which no code of the crawl can shorten."""

    def __init__(self) -> None:
        import gc

        from twisted.internet.task import LoopingCall

        self.last = time.perf_counter()
        self.last_cpu = time.process_time()
        self.worst = 0.0
        self.worst_cpu = 0.0
        #: the longest wall gap and the thread's CPU time in it
        self.worst_gap: tuple[float, float] = (0.0, 0.0)
        self.gc_worst = 0.0
        self._gc_began = 0.0
        gc.callbacks.append(self._gc)
        self.loop = LoopingCall(self.tick)
        self.loop.start(0.001)

    def _gc(self, phase: str, info: dict) -> None:
        if phase == "start":
            self._gc_began = time.perf_counter()
        elif info["generation"] == 2:  # a full collection: of the whole heap, not robots.txt work
            self.gc_worst = max(self.gc_worst, time.perf_counter() - self._gc_began)

    def tick(self) -> None:
        now, cpu = time.perf_counter(), time.process_time()
        gap, used = now - self.last, cpu - self.last_cpu
        if gap > self.worst:
            self.worst, self.worst_gap = gap, (gap, used)
        self.worst_cpu = max(self.worst_cpu, min(gap, used))
        self.last, self.last_cpu = now, cpu

    def reset(self) -> None:
        self.last, self.last_cpu = time.perf_counter(), time.process_time()
        self.worst = self.worst_cpu = self.gc_worst = 0.0
        self.worst_gap = (0.0, 0.0)


async def _in_reactor(rounds: int) -> list[tuple[str, list[float]]]:
    import gc

    from scrapy.settings import Settings

    from scrapy_rfc9309 import compat
    from scrapy_rfc9309.service import RobotsService
    from scrapy_rfc9309.settings import Rfc9309Settings
    from scrapy_rfc9309.storage import FallbackStorage, RobotsEntry
    from scrapy_rfc9309.storage.memory import MemoryStorage
    from scrapy_rfc9309.storage.sqlite import SqliteStorage

    class Stats:  # what the service asks of Scrapy's stats collector
        def inc_value(self, key: str, count: int = 1) -> None: ...

        def max_value(self, key: str, value: float) -> None: ...

    settings = Rfc9309Settings.from_settings(Settings({"USER_AGENT": f"{TOKEN}/1.0"}))
    service = RobotsService(settings, None, FallbackStorage(MemoryStorage()), Stats())  # type: ignore[arg-type]
    origin = "http://example.com"
    policy = settings.for_origin(origin)
    ticks = _Ticks()
    gc_pauses: list[float] = []
    #: row -> (gap, full collection) of the rounds in which a full collection ran
    left_out: dict[str, list[tuple[float, float]]] = {}

    #: row -> (wall gap, the process's CPU in it) of the rounds whose longest wall gap passed
    #: the budget while the process ran less than half of it (not running: see _Ticks)
    descheduled: dict[str, list[tuple[float, float]]] = {}

    async def held(work: Callable[[], object], ours: bool = True) -> float:
        """The longest hold of the reactor while ``await work()`` runs: the
        time between two ticks in which the process ran (after a full
        collection: each window starts from the same heap)."""
        gc.collect()
        await compat.sleep(0.005)
        ticks.reset()
        await work()  # type: ignore[misc]
        await compat.sleep(0.003)  # the tick that ends the last gap
        if ours:
            gc_pauses.append(ticks.gc_worst)
        return ticks.worst_cpu

    def entry(body: bytes) -> RobotsEntry:
        now = time.time()
        return RobotsEntry("success", 200, body, "text/plain", now, now + 3600, origin + "/robots.txt")

    rows: dict[str, list[float]] = {}
    FILE = "500 KiB file of 20,000 rules"  # noqa: N806

    def add(name: str, value: float) -> None:
        rows.setdefault(name, []).append(value)

    async def hold(name: str, work: Callable[[], object], ours: bool = True) -> None:
        """A row of :func:`held`; a round of ours in which a full collection
        ran is reported apart (a collection of the whole heap, which any
        allocation of the process may start, is not robots.txt work).  The
        built-in's rows keep theirs: its own allocations start them."""
        gap = await held(work, ours)
        wall, used = ticks.worst_gap
        if wall > BUDGET and used < wall / 2:
            descheduled.setdefault(name, []).append((wall, used))
        if ticks.gc_worst and ours:
            left_out.setdefault(name, []).append((gap, ticks.gc_worst))
            rows.setdefault(name, [])
        else:
            add(name, gap)

    section = entry(section_file())
    shapes = {name: (entry(body), urls) for name, (body, urls) in crawl_shapes().items()}
    tmp = tempfile.mkdtemp(prefix="hostile-bench-")
    sqlite = SqliteStorage(os.path.join(tmp, "robots.sqlite"))
    await sqlite.open()
    await sqlite.put(origin, section)
    redis_store, redis_server = await _redis_store(origin, section, tmp)
    result: list = []

    async def policy_of(e: RobotsEntry) -> None:
        result.append(await service._policy(origin, e, policy))

    async def in_thread(e: RobotsEntry) -> None:  # the other way, for comparison
        from twisted.internet.threads import deferToThread

        work = deferToThread(lambda: service.policy_of(e, policy.unreachable).prepare(TOKEN))
        result.append(await compat.wait_for(work))

    try:
        from protego import Protego
    except ImportError:  # pragma: no cover - Scrapy requires it
        Protego = None  # noqa: N806

    async def _builtin(e: RobotsEntry, url: str) -> None:
        """What Scrapy's RobotsTxtMiddleware does on the reactor with a body:
        decode, Protego.parse, then the first can_fetch."""
        Protego.parse(e.body.decode("utf-8", "ignore")).can_fetch(origin + url, TOKEN)

    builtin = _builtin if Protego is not None else None

    async def from_store(store: object) -> None:
        stored = await store.get(origin)  # type: ignore[attr-defined]
        await policy_of(stored)

    def longest_check(robots: object, urls: list[str]) -> float:
        """The longest check and usage look-up among ``urls`` (the middleware asks
        both of a request), in process time (as the holds)."""
        worst = 0.0
        for url in urls:
            start = time.process_time()
            robots.check(origin + url, TOKEN)  # type: ignore[attr-defined]
            robots.usage(origin + url, TOKEN)  # type: ignore[attr-defined]
            worst = max(worst, time.process_time() - start)
        return worst

    try:
        for _ in range(rounds):
            await hold("idle reactor (the 1 ms timer's own jitter, over 100 ms)", lambda: compat.sleep(0.1))
            for name, (e, urls) in shapes.items():
                await hold(f"{name}: parse + compile, in steps", lambda e=e: policy_of(e))
                robots = result.pop()
                add(f"{name}: first checks (the longest)", longest_check(robots, urls))
                add(f"{name}: later checks (the longest)", longest_check(robots, urls))
                if builtin is not None:
                    await hold(
                        f"{name}: Scrapy's built-in, for comparison (full collections included)",
                        lambda e=e, u=urls[0]: builtin(e, u),
                        ours=False,
                    )
            await hold(f"{FILE}, read from SQLite: decode + parse + compile", lambda: from_store(sqlite))
            result.pop()
            if redis_store is not None:
                await hold(f"{FILE}, read from Redis: decode + parse + compile", lambda: from_store(redis_store))
                result.pop()
            await hold(f"{FILE}: parse + compile in a worker thread instead (not used)", lambda: in_thread(section))
            result.pop()
    finally:
        ticks.loop.stop()
        await sqlite.close()
        if redis_store is not None:
            await redis_store.close()
            redis_server.stop()
        shutil.rmtree(tmp, ignore_errors=True)
    named: dict[str, list[float]] = {}
    for name, samples in rows.items():
        notes = []
        if name in left_out:
            gaps = ", ".join(f"{gap * 1e3:.0f} ms with a {gc * 1e3:.0f} ms full GC" for gap, gc in left_out[name])
            notes.append(f"left out: {gaps}")
        if name in descheduled:
            gaps = ", ".join(
                f"{wall * 1e3:.0f} ms wall of which {used * 1e3:.1f} ms ran" for wall, used in descheduled[name]
            )
            notes.append(f"process not running: {gaps}")
        if notes:
            name = f"{name} ({'; '.join(notes)})"
        named[name] = samples or [float("nan")]
    rows = named
    rows["longest full garbage collection during the rows above"] = [max(gc_pauses)]
    started = time.perf_counter()
    gc.collect()
    rows["a full garbage collection of this process (Scrapy imported), for scale"] = [time.perf_counter() - started]
    return list(rows.items())


async def _redis_store(origin: str, entry: object, tmp: str) -> tuple[object | None, object | None]:
    """A real redis-server holding ``entry``, when one can be run here."""
    if shutil.which("redis-server") is None:
        return None, None
    try:
        import redis  # noqa: F401

        sys.path.insert(0, str(ROOT))
        from tests.crawl.redisd import RedisServer
    except ImportError:
        return None, None
    from scrapy_rfc9309.storage.redis import RedisStorage

    server = RedisServer(Path(tmp) / "redis")
    store = RedisStorage(server.url)
    await store.open()
    await store.put(origin, entry)  # type: ignore[arg-type]
    return store, server


def _reactor_main(rounds: int) -> None:
    from scrapy.utils.reactor import install_reactor

    install_reactor("twisted.internet.asyncioreactor.AsyncioSelectorReactor")
    from twisted.internet import reactor

    from scrapy_rfc9309 import compat

    out: list = []

    async def main() -> None:
        try:
            out.extend(await _in_reactor(rounds))
        finally:
            reactor.callLater(0, reactor.stop)  # type: ignore[attr-defined]

    def start() -> None:
        compat.spawn(main()).addErrback(lambda f: (f.printTraceback(file=sys.stderr), out.append(None)))

    reactor.callWhenRunning(start)  # type: ignore[attr-defined]
    reactor.run()  # type: ignore[attr-defined]
    if None in out or not out:
        sys.exit(1)
    print(json.dumps(out))


def run(rounds: int) -> list[tuple[str, list[float]]]:
    """Every row: ``(case, one sample per round in seconds)``."""
    return core_rows(rounds) + reactor_rows(rounds)


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--in-reactor", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument(
        "--steps", action="store_true", help="only the core's longest step and checks per shape (see step_rows)"
    )
    ap.add_argument("--base", help="with --steps: also the core of this git revision, side by side")
    args = ap.parse_args()
    if args.steps:
        print("\n".join(step_rows(args.rounds, args.base)))
    elif args.in_reactor:
        _reactor_main(args.rounds)
    else:
        for name, samples in run(args.rounds):
            print(f"{name}: worst {max(samples) * 1e3:.2f} ms, best {min(samples) * 1e3:.2f} ms")
