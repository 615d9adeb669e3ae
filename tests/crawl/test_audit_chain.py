"""The audit trail shows tampering (issue 30, item 3), on trails real crawls
wrote: every edit, deletion, reordering or truncation is named by
``scrapy robots --audit`` with a non-zero exit status (3 altered, 4 no closing
record, 2 a keyed trail and no key); an untouched trail replays with 0.  A
crawl killed with SIGKILL, and a disk that fails mid-crawl (a real file size
limit, ``RLIMIT_FSIZE``): with ``RFC9309_AUDIT``'s ``sync`` no page is fetched
without its record in the trail."""

from __future__ import annotations

import hashlib
import json
import os
import re
import resource
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import pytest_twisted

from scrapy_rfc9309.audit import BODIES_DIR
from scrapy_rfc9309.audit.chain import Sealer

from .command_runner import crawl_env, make_project, scrapy_crawl, scrapy_robots
from .harness import check_accounting, crawl
from .servers import Reply, Server, robots

pytestmark = pytest.mark.main_run_only  # not again on the oldest Scrapy, nor without a reactor (setup.cfg)

RULES = "User-agent: *\nDisallow: /private\n"
ALLOW_ALL = "User-agent: *\nAllow: /\n"
#: an HMAC key, given to the crawl through the environment (as a deployment would)
KEY = "test-key-9309-0123456789abcdef"
TRAIL = "audit/trail.jsonl"


def audit_setting(**options: bool) -> str:
    """``RFC9309_AUDIT`` on the command line: the trail, with ``options`` (``allowed``, ``sync``)."""
    return "RFC9309_AUDIT=" + json.dumps({"path": TRAIL, **options})


def sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def lines_of(path: Path) -> list[bytes]:
    return path.read_bytes().splitlines(keepends=True)


def records(path: Path) -> list[dict]:
    return [json.loads(line) for line in lines_of(path)]


def one_error_line(process: subprocess.CompletedProcess) -> str:
    """The one line the replay prints on stderr (logs are at WARNING: none here)."""
    lines = [line for line in process.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, process.stderr
    return lines[0]


# -- trails written by real crawls (once per module) --------------------------------------------
def _crawl_a_trail(where: Path, env: dict[str, str] | None = None) -> dict[str, str]:
    """A crawl of two sites (rules, allow-all) with allowed records on: the
    trail in ``where/audit``; the URLs by name."""
    with Server("127.0.0.2") as ruled, Server("127.0.0.3") as open_site:
        ruled.routes["/robots.txt"] = robots(RULES)
        open_site.routes["/robots.txt"] = robots(ALLOW_ALL)
        urls = {
            "public": ruled.url("/public"),
            "private": ruled.url("/private/x"),
            "private2": ruled.url("/private/y"),
            "open": open_site.url("/private/z"),
        }
        process = scrapy_crawl(where, list(urls.values()), "-s", audit_setting(allowed=True), env=env)
        assert process.returncode == 0, process.stderr[-3000:]
    return {**urls, "log": process.stderr}


@pytest.fixture(scope="module")
def written(tmp_path_factory):
    """``(directory, urls)`` of an unkeyed trail."""
    where = tmp_path_factory.mktemp("trail")
    return where, _crawl_a_trail(where)


@pytest.fixture(scope="module")
def keyed(tmp_path_factory):
    """``(directory, urls)`` of a trail sealed with :data:`KEY` (from the environment)."""
    where = tmp_path_factory.mktemp("keyed")
    return where, _crawl_a_trail(where, env={"RFC9309_AUDIT_KEY": KEY})


@pytest.fixture
def trail(written, tmp_path):
    """A copy of the unkeyed trail (and its bodies) to alter: ``(path, urls)``."""
    shutil.copytree(written[0] / "audit", tmp_path / "audit")
    return tmp_path / TRAIL, written[1]


@pytest.fixture
def keyed_trail(keyed, tmp_path):
    shutil.copytree(keyed[0] / "audit", tmp_path / "audit")
    return tmp_path / TRAIL, keyed[1]


def replay(path: Path, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    return scrapy_robots("--audit", str(path), *args, cwd=path.parent.parent, env=env)


def index_of(path: Path, kind: str, url: str | None = None) -> int:
    """The 0-based line of the first record of ``kind`` (about ``url``)."""
    return next(i for i, r in enumerate(records(path)) if r["type"] == kind and (url is None or r.get("url") == url))


def rewrite(path: Path, lines: list[bytes]) -> None:
    path.write_bytes(b"".join(lines))


# -- an untouched trail ---------------------------------------------------------------------------
def test_an_untouched_trail_replays_with_its_chain_intact(trail):
    path, urls = trail
    kinds = [r["type"] for r in records(path)]
    assert kinds[0] == "crawl" and kinds[-1] == "closed"
    first, last = records(path)[0], records(path)[-1]
    assert first["chain"] == "sha256" and len(first["crawl_id"]) == 32 and "key_id" not in first
    assert [r["n"] for r in records(path)] == list(range(1, len(kinds) + 1))
    assert last["records"] == len(kinds)
    # the crawl logged the final digest: the last record's
    assert f"final digest {last['h']}" in urls["log"]

    allowed = replay(path, urls["public"], urls["open"])
    assert allowed.returncode == 0, allowed.stdout + allowed.stderr
    assert f"chain intact: {len(kinds)} records, 1 crawl (SHA-256, no key)" in allowed.stdout
    denied = replay(path, urls["private"])
    assert denied.returncode == 1, denied.stdout + denied.stderr
    assert "DENIED" in denied.stdout and "chain intact" in denied.stdout
    summary = replay(path, "--summary")
    assert summary.returncode == 0 and "chain intact" in summary.stdout.splitlines()[0], summary.stderr


# -- edits, deletions, reorderings ----------------------------------------------------------------
def test_a_denied_record_edited_to_allowed_is_named(trail):
    path, urls = trail
    lines = lines_of(path)
    at = index_of(path, "denied", urls["private"])
    edited = (
        lines[at]
        .replace(b'"type":"denied"', b'"type":"allowed"')
        .replace(b'"verdict":"disallowed_explicit"', b'"verdict":"allowed_implicit"')
    )
    assert edited != lines[at]
    rewrite(path, [*lines[:at], edited, *lines[at + 1 :]])
    process = replay(path, urls["private"])
    assert process.returncode == 3, process.stdout + process.stderr
    assert one_error_line(process).endswith(
        f"line {at + 1}: record {at + 1} of crawl 1 was edited: its digest does not match its content"
    )
    assert "ALLOWED" not in process.stdout and "DENIED" not in process.stdout  # nothing replayed


def test_a_deleted_line_is_named(trail):
    path, urls = trail
    lines = lines_of(path)
    at = index_of(path, "denied", urls["private2"])
    rewrite(path, [*lines[:at], *lines[at + 1 :]])
    process = replay(path, urls["public"])
    assert process.returncode == 3, process.stdout + process.stderr
    assert one_error_line(process).endswith(
        f"line {at + 1}: record {at + 1} of crawl 1 is missing (this line holds record {at + 2}): "
        "deleted, or records reordered"
    )


def test_two_swapped_lines_are_named(trail):
    path, urls = trail
    lines = lines_of(path)
    at = index_of(path, "denied", urls["private"])
    lines[at], lines[at + 1] = lines[at + 1], lines[at]
    rewrite(path, lines)
    process = replay(path, "--summary")
    assert process.returncode == 3, process.stdout + process.stderr
    assert one_error_line(process).endswith(
        f"line {at + 1}: record {at + 1} of crawl 1 is missing (this line holds record {at + 2}): deleted, or records reordered"
    )
    assert process.stdout == ""


def test_a_record_pointed_at_an_allow_all_body_is_named(trail):
    """The governing hash of the ruled site swapped for the allow-all body's
    (kept beside it, under its own hash): the replay would allow /private."""
    path, urls = trail
    lines = lines_of(path)
    at = next(
        i for i, r in enumerate(records(path)) if r["type"] == "fetch" and r.get("governing_sha256") == sha(RULES)
    )
    assert (path.parent / BODIES_DIR / sha(ALLOW_ALL)).exists()
    lines[at] = lines[at].replace(sha(RULES).encode(), sha(ALLOW_ALL).encode())
    rewrite(path, lines)
    process = replay(path, urls["private"])
    assert process.returncode == 3, process.stdout + process.stderr
    assert one_error_line(process).endswith(
        f"line {at + 1}: record {at + 1} of crawl 1 was edited: its digest does not match its content"
    )


def test_a_body_rewritten_under_its_hash_is_named(trail):
    path, urls = trail
    body = path.parent / BODIES_DIR / sha(RULES)
    body.write_text(ALLOW_ALL)
    first = next(i for i, r in enumerate(records(path)) if sha(RULES) in (r.get("sha256"), r.get("governing_sha256")))
    process = replay(path, urls["open"])  # another origin's URL: every body is checked
    assert process.returncode == 3, process.stdout + process.stderr
    assert one_error_line(process).endswith(
        f"line {first + 1}: the robots.txt body it names does not match its hash: {body} was altered"
    )
    body.unlink()
    process = replay(path, "--summary")
    assert process.returncode == 3
    assert f"line {first + 1}: the robots.txt body it names ({sha(RULES)}) is not in" in one_error_line(process)


def test_a_whole_trail_rewritten_without_the_key_is_caught_only_with_a_key(trail):
    """The limit of a trail without a key: whoever recomputes every digest
    goes unnoticed (docs/audit.md); a key makes that impossible."""
    path, urls = trail
    sealer = Sealer()
    out = []
    for record in records(path):
        record.pop("h"), record.pop("n"), record.pop("records", None)
        if record.get("url") == urls["private"]:
            record["type"] = "allowed"
        out.append(sealer.seal(record))
    rewrite(path, out)
    assert replay(path, "--summary").returncode == 0  # undetectable without a key
    process = replay(path, "--summary", env={"RFC9309_AUDIT_KEY": KEY})
    assert process.returncode == 3
    assert one_error_line(process).endswith(
        "line 1: crawl 1 is not sealed with a key (SHA-256 chain) although a key was given: anyone could have rewritten it"
    )


def test_a_closing_record_that_miscounts_its_records_is_named(trail):
    """A record deleted and the trail sealed again without a key, the closing
    record's count left as it was (issue 36, item 13): its seal fits, its count
    does not; exit 3 as any alteration (docs/audit.md)."""
    from scrapy_rfc9309.audit import chain

    path, urls = trail
    sealer = Sealer()
    out = []
    kept = [r for r in records(path) if r.get("url") != urls["private2"]]  # one record deleted
    assert len(kept) == len(records(path)) - 1
    for record in kept[:-1]:
        record.pop("h"), record.pop("n")
        out.append(sealer.seal(record))
    closing = kept[-1]  # its "records" still counts the deleted one
    closing.pop("h")
    closing["n"] = sealer.count + 1
    body = chain.dumps(closing)
    out.append(body[:-1] + b',"h":"' + chain._digest(None, sealer.last, body) + b'"}\n')
    rewrite(path, out)
    for args in ((urls["private"],), ("--summary",)):
        process = replay(path, *args)
        assert process.returncode == 3, process.stdout + process.stderr
        assert one_error_line(process).endswith(f"line {len(out)}: the closing record of crawl 1 miscounts its records")
        assert process.stdout == ""  # nothing is replayed


# -- truncation -------------------------------------------------------------------------------------
def test_a_trail_without_its_closing_record_is_truncated_not_tampered(trail):
    path, urls = trail
    lines = lines_of(path)
    rewrite(path, lines[:-2])
    process = replay(path, urls["private"])
    assert process.returncode == 4, process.stdout + process.stderr
    assert one_error_line(process).endswith(
        f"crawl 1 (lines 1-{len(lines) - 2}): truncated or unfinished (no closing record)"
    )
    assert "DENIED" in process.stdout  # what the verified records say is still replayed
    # cut mid-line, as a crash during a write leaves it
    rewrite(path, [*lines[:-2], lines[-2][:40]])
    process = replay(path, "--summary")
    assert process.returncode == 4
    assert one_error_line(process).endswith(
        f"crawl 1 (lines 1-{len(lines) - 2}): truncated or unfinished (no closing record); "
        f"line {len(lines) - 1}, its last, is cut mid-write"
    )


def test_a_crawl_killed_mid_crawl_leaves_a_trail_replay_calls_unfinished(tmp_path):
    with Server("127.0.0.2") as site:
        site.routes["/robots.txt"] = robots(RULES)
        pages = [f"/p{i}" for i in range(200)]
        for page in pages:
            site.routes[page] = Reply(200, "<html>page</html>", {"Content-Type": "text/html"}, delay=0.05)
        make_project(tmp_path, [site.url(p) for p in pages])
        args = ["-s", audit_setting(allowed=True), "-s", "CONCURRENT_REQUESTS=2"]
        crawl = subprocess.Popen(  # noqa: S603
            [sys.executable, "-m", "scrapy", "crawl", "probe", *args],
            cwd=tmp_path, env=crawl_env(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )  # fmt: skip
        try:
            path = tmp_path / TRAIL
            deadline = time.monotonic() + 30
            while time.monotonic() < deadline and (
                not path.exists() or path.read_bytes().count(b'"type":"allowed"') < 5
            ):
                time.sleep(0.05)
            crawl.send_signal(signal.SIGKILL)
        finally:
            crawl.wait(10)
    kinds = [r["type"] for r in records(path)]
    assert kinds[0] == "crawl" and "closed" not in kinds
    process = replay(path, site.url("/p1"))
    assert process.returncode == 4, process.stdout + process.stderr
    assert "truncated or unfinished (no closing record)" in one_error_line(process)
    assert "ALLOWED" in process.stdout

    # a crawl appended to the same file later: its own chain; the killed one is still named
    before = len(lines_of(path))
    with Server("127.0.0.2") as again:
        again.routes["/robots.txt"] = robots(RULES)
        done = scrapy_crawl(tmp_path, [again.url("/q")], "-s", f"RFC9309_AUDIT={TRAIL}")
        assert done.returncode == 0, done.stderr[-3000:]
    process = replay(path, "--summary")
    assert process.returncode == 4
    assert one_error_line(process).endswith(f"crawl 1 (lines 1-{before}): truncated or unfinished (no closing record)")
    assert "2 crawl(s)" in process.stdout


# -- a keyed trail -----------------------------------------------------------------------------------
def test_a_keyed_trail_verifies_with_its_key_from_the_environment_a_file_or_the_setting(keyed_trail, tmp_path):
    path, urls = keyed_trail
    first = records(path)[0]
    assert first["chain"] == "hmac-sha256" and len(first["key_id"]) == 16
    # the key is never written: not in the trail, not in the log
    assert KEY not in path.read_text() and KEY not in urls["log"]
    assert replay(path, urls["public"], env={"RFC9309_AUDIT_KEY": KEY}).returncode == 0
    key_file = tmp_path / "key"
    key_file.write_text(KEY + "\n")
    process = replay(path, urls["private"], "--audit-key-file", str(key_file))
    assert process.returncode == 1, process.stdout + process.stderr
    assert "(HMAC-SHA256, keyed)" in process.stdout
    assert KEY not in process.stdout + process.stderr
    # or from the setting: RFC9309_AUDIT's key (the command's own crawl writes no trail)
    process = replay(path, urls["public"], "-s", "RFC9309_AUDIT=" + json.dumps({"path": TRAIL, "key": KEY}))
    assert process.returncode == 0, process.stdout + process.stderr
    assert KEY not in process.stdout + process.stderr

    process = replay(path, urls["public"])
    assert process.returncode == 2
    assert "is sealed with a key (HMAC-SHA256): give it" in one_error_line(process)
    process = replay(path, urls["public"], env={"RFC9309_AUDIT_KEY": "another-key-0123456789"})
    assert process.returncode == 3
    assert "line 1: crawl 1 was sealed with another key" in one_error_line(process)


def test_a_record_forged_without_the_key_is_named(keyed_trail):
    """Edit the denial to an allowance and reseal from there on, as someone
    without the key can: with SHA-256, or with a key of their own."""
    path, urls = keyed_trail
    lines = lines_of(path)
    at = index_of(path, "denied", urls["private"])
    for forger in (Sealer(), Sealer(b"guessed-key-0123456789")):
        forger.count, forger.last = at, json.loads(lines[at - 1])["h"].encode()
        forged = []
        for line in lines[at:]:
            record = json.loads(line)
            record.pop("h"), record.pop("n"), record.pop("records", None)
            if record.get("url") == urls["private"]:
                record["type"], record["verdict"] = "allowed", "allowed_implicit"
            forged.append(forger.seal(record))
        rewrite(path, [*lines[:at], *forged])
        process = replay(path, urls["private"], env={"RFC9309_AUDIT_KEY": KEY})
        assert process.returncode == 3, process.stdout + process.stderr
        assert one_error_line(process).endswith(
            f"line {at + 1}: record {at + 1} of crawl 1 was edited: its HMAC does not match: edited, or forged without the key"
        )


# -- a failing disk ------------------------------------------------------------------------------------
#: the trail's size limit: about 70 records, reached a fraction of a second in
FILE_LIMIT = 24_000


def _limit_file_size() -> None:  # runs in the crawl's process, before Scrapy starts
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the limit fails (EFBIG) instead of killing
    resource.setrlimit(resource.RLIMIT_FSIZE, (FILE_LIMIT, resource.getrlimit(resource.RLIMIT_FSIZE)[1]))


def crawl_on_a_failing_disk(tmp_path: Path, sync: bool = False, pages: int = 2000) -> dict:
    """A crawl whose trail cannot grow past :data:`FILE_LIMIT` bytes (a real
    kernel limit: the write fails with EFBIG, as on a full disk).  What the
    server served, what the trail holds, and the pages fetched without a
    record (and over how many seconds, server time)."""
    with Server("127.0.0.2") as site:
        site.routes["/robots.txt"] = robots(RULES)
        paths = [f"/p{i}" for i in range(pages)]
        for page in paths:
            site.routes[page] = Reply(200, "<html>page</html>", {"Content-Type": "text/html"}, delay=0.02)
        process = scrapy_crawl(
            tmp_path, [site.url(p) for p in paths], "-s", audit_setting(allowed=True, sync=sync),
            "-s", "CONCURRENT_REQUESTS=8", preexec_fn=_limit_file_size,
        )  # fmt: skip
        hits = site.page_hits()
    path = tmp_path / TRAIL
    complete = [line for line in lines_of(path) if line.endswith(b"\n")]
    recorded = {json.loads(line)["url"] for line in complete if b'"type":"allowed"' in line}
    served = {f"http://127.0.0.2:{site.port}{hit.path}": hit.at for hit in hits}
    unrecorded = sorted(at for url, at in served.items() if url not in recorded)
    return {
        "process": process,
        "served": len(served),
        "recorded": len(recorded),
        "unrecorded": len(unrecorded),
        "seconds": (max(served.values()) - unrecorded[0]) if unrecorded else 0.0,
        "trail": path,
        "size": os.path.getsize(path),
    }


def test_with_audit_sync_no_page_is_fetched_without_its_record_on_a_failing_disk(tmp_path):
    found = crawl_on_a_failing_disk(tmp_path, sync=True)
    log = found["process"].stderr
    assert found["process"].returncode == 1, log[-3000:]
    assert "'finish_reason': 'rfc9309_audit_failed'" in log
    assert "File too large" in log  # the kernel's EFBIG, named in the ERROR line
    assert found["size"] <= FILE_LIMIT
    assert 0 < found["served"] < 2000
    assert found["unrecorded"] == 0, found  # every page served has its record in the trail
    # every request counted allowed has its record: the one whose record failed (and those after
    # it) were dropped instead, counted and logged. (On a loaded machine the write that fails may be
    # the per-second counts record, and the crawl stops before another request is decided: the
    # in-process test below drops one for sure.)
    allowed = sum(int(n) for n in re.findall(r"'rfc9309/requests/allowed/\w+': (\d+)", log))
    assert allowed == found["recorded"], (allowed, found)
    # the replay names the cut: the crawl never closed its trail
    process = replay(found["trail"], "--summary")
    assert process.returncode == 4, process.stdout + process.stderr
    assert "truncated or unfinished (no closing record)" in one_error_line(process)


# -- RFC9309_AUDIT's sync in the crawl's own process ------------------------------------------------------
@pytest_twisted.ensureDeferred
async def test_audit_sync_records_every_allowed_request_and_drops_those_it_cannot_record(servers, tmp_path):
    site = servers("127.0.0.2")
    site.routes["/robots.txt"] = robots(RULES)
    urls = [site.url("/a"), site.url("/b"), site.url("/private/c")]
    path = tmp_path / "trail.jsonl"
    # a healthy disk: allowed requests recorded without "allowed", the trail intact
    result = await crawl(urls, {"RFC9309_AUDIT": {"path": str(path), "sync": True}})
    check_accounting(result)
    written = records(path)
    assert written[0]["sync"] is True and written[-1]["type"] == "closed"
    assert sorted(r["url"] for r in written if r["type"] == "allowed") == urls[:2]
    process = replay(path, "--summary")
    assert process.returncode == 0, process.stdout + process.stderr

    # a full disk (every write: ENOSPC): no allowed request goes on; each is dropped and counted
    full = tmp_path / "full.jsonl"
    full.symlink_to("/dev/full")
    before = len(site.page_hits())
    result = await crawl(urls, {"RFC9309_AUDIT": {"path": str(full), "sync": True}})
    check_accounting(result)
    assert len(site.page_hits()) == before  # not one page
    assert result.stats["finish_reason"] == "rfc9309_audit_failed"
    dropped = [o for o in result.outcomes if o.message.startswith("Dropped: its audit record could not be written")]
    assert dropped and result.stat("requests/dropped/audit_failed") == len(dropped)
    assert result.stat("requests/allowed/allowed_implicit") == 0
