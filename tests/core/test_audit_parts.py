"""The pure parts of issue 15: several product tokens, rule changes, the
audit file's name, its writer thread and reading a trail back (no reactor)."""

from __future__ import annotations

import hashlib
import json
import re
import time

import pytest

from scrapy_rfc9309 import parse
from scrapy_rfc9309.audit import (
    BODIES_DIR,
    Trail,
    TrailError,
    TrailTampered,
    Writer,
    audit_path,
    decide_all,
    denial_reason,
    rule_changes,
)
from scrapy_rfc9309.audit.chain import KeyNeeded, Sealer, Tampered, Verifier
from scrapy_rfc9309.settings import OriginPolicy, Rfc9309Settings
from scrapy_rfc9309.useragent import derive_tokens


# -- several tokens ---------------------------------------------------------------------
def test_derive_tokens_holds_every_item_to_the_one_rule():
    assert derive_tokens("ExampleBot/1.0 (+https://example.com)") == ("ExampleBot",)
    assert derive_tokens(["ExampleBot/1.0", "CCBot/2.0", "examplebot"]) == ("ExampleBot", "CCBot")
    for bad in ([], ["ExampleBot", "my bot/1.0"], ["ExampleBot", "Bot2000"], ["ExampleBot", 7]):
        with pytest.raises(ValueError):
            derive_tokens(bad)


def test_settings_take_a_list_everywhere_and_refuse_a_bad_item_at_start_up():
    settings = Rfc9309Settings.from_settings(
        {
            "ROBOTSTXT_USER_AGENT": ["ExampleBot", "CCBot"],
            "RFC9309_ORIGINS": {"https://partner.example": {"user_agent": ["PartnerBot", "CCBot"]}},
        }
    )
    assert (settings.user_agent, settings.user_agents) == ("ExampleBot", ("ExampleBot", "CCBot"))
    assert settings.for_origin("https://other.example:443").user_agents == ("ExampleBot", "CCBot")
    partner = settings.for_origin("https://partner.example:443")
    assert partner == OriginPolicy(True, "PartnerBot", "deny", ("PartnerBot", "CCBot"))
    # from the command line: a JSON list
    cmdline = Rfc9309Settings.from_settings({"ROBOTSTXT_USER_AGENT": '["ExampleBot", "CCBot"]'})
    assert cmdline.user_agents == ("ExampleBot", "CCBot")
    with pytest.raises(ValueError, match="ambiguous"):
        Rfc9309Settings.from_settings({"ROBOTSTXT_USER_AGENT": ["ExampleBot", "my bot/1.0"]})
    with pytest.raises(ValueError, match=r"RFC9309_ORIGINS\['https://p.example'\]\['user_agent'\]"):
        Rfc9309Settings.from_settings({"RFC9309_ORIGINS": {"https://p.example": {"user_agent": ["A", "B1"]}}})
    with pytest.raises(ValueError, match="RFC9309_AUDIT"):
        Rfc9309Settings.from_settings({"RFC9309_AUDIT": 3})


def test_every_token_must_allow_and_the_denial_names_the_token():
    robots = parse("User-agent: a\nDisallow: /x\n\nUser-agent: b\nDisallow: /y\n")
    decision, token = decide_all(robots, "/y/1", ("a", "b"))
    assert (decision.allowed, token, decision.rule.line) == (False, "b", 5)
    assert denial_reason(decision, token, ("a", "b")) == "disallowed_explicit (line 5: Disallow: /y) for b"
    assert denial_reason(decision, token, ("b",)) == "disallowed_explicit (line 5: Disallow: /y)"
    assert decide_all(robots, "/x/1", ("a", "b"))[1] == "a"
    assert decide_all(robots, "/z", ("a", "b"))[0].allowed


# -- changes --------------------------------------------------------------------------
def test_rule_changes_list_added_and_removed_rules_of_the_crawl_group_by_line():
    old = parse("User-agent: *\nDisallow: /a\nDisallow: /b\n\nUser-agent: other\nDisallow: /o\n")
    new = parse("# v2\nUser-agent: *\nDisallow: /b\nAllow: /a/pub\nDisallow: /c\n\nUser-agent: other\nDisallow: /p\n")
    assert new.rules_for("ExampleBot")[0].line == 3
    added, removed = rule_changes(old, new, ("ExampleBot",))
    assert added == ["line 4: Allow: /a/pub", "line 5: Disallow: /c"]
    assert removed == ["line 2: Disallow: /a"]
    assert rule_changes(old, new, ("other",)) == (["line 8: Disallow: /p"], ["line 6: Disallow: /o"])


# -- the file ---------------------------------------------------------------------------
class _Spider:
    name = "shop"
    region = "eu"


def test_audit_path_fills_feed_style_placeholders():
    started = 1_795_000_000.0
    assert audit_path("a/%(name)s-%(region)s-%(time)s.jsonl", _Spider(), started) == (
        "a/shop-eu-2026-11-18T11-06-40.jsonl"
    )
    with pytest.raises(ValueError, match="unknown placeholder"):
        audit_path("%(nope)s.jsonl", _Spider(), started)


def test_writer_flushes_within_seconds_without_closing_and_keeps_a_body_once(tmp_path):
    path = tmp_path / "trail.jsonl"
    writer = Writer(str(path))
    try:
        writer.put({"type": "crawl", "x": 1})
        writer.put(("ab" * 32, b"User-agent: *\n"))
        writer.put(("ab" * 32, b"User-agent: *\n"))
        deadline = time.monotonic() + 10  # written by the thread on its own (every second)
        while time.monotonic() < deadline and not path.read_text():
            time.sleep(0.05)
        written = json.loads(path.read_text())
        assert (written["type"], written["x"], written["n"], len(written["h"])) == ("crawl", 1, 1, 64)
        assert [p.name for p in (tmp_path / BODIES_DIR).iterdir()] == ["ab" * 32]
    finally:
        writer.close()


def _trail(tmp_path, body: bytes, tail: str = "") -> Trail:
    digest = hashlib.sha256(body).hexdigest()
    (tmp_path / BODIES_DIR).mkdir()
    (tmp_path / BODIES_DIR / digest).write_bytes(body)
    state = {
        "type": "fetch", "origin": "http://a.example:80", "in_force": True, "access": "success", "status": 200,
        "governing_access": "success", "governing_sha256": digest, "governing_status": 200,
        "fetched_at": "2026-11-24T22:00:00.000Z", "tokens": ["ExampleBot"],
    }  # fmt: skip
    sealer = Sealer()
    crawl = {"type": "crawl", "crawl_id": "c1", **sealer.describe(), "tokens": ["ExampleBot"], "max_bytes": 512000}
    (tmp_path / "t.jsonl").write_bytes(sealer.seal(crawl) + sealer.seal(state) + tail.encode())
    asked = {"http://a.example:80": ["http://a.example/x"], "http://b.example:80": ["http://b.example/"]}
    return Trail(str(tmp_path / "t.jsonl"), urls=asked)


def test_a_trail_cut_mid_line_is_read_and_an_altered_body_is_refused(tmp_path):
    trail = _trail(tmp_path, b"User-agent: *\nDisallow: /x\n", tail='{"type":"den')
    state, decided = trail.state_for("http://a.example:80", "http://a.example/x")
    assert decided is None
    assert not trail.robots_of(state).can_fetch("http://a.example/x", "ExampleBot")
    (tmp_path / BODIES_DIR / state["governing_sha256"]).write_bytes(b"User-agent: *\nAllow: /\n")
    with pytest.raises(TrailTampered, match="line 2: the robots.txt body it names does not match its hash"):
        trail.robots_of(state)
    with pytest.raises(TrailError, match="no robots.txt of http://b.example:80"):
        trail.state_for("http://b.example:80", "http://b.example/")


class _Named:
    def __init__(self, name: str, **attrs: object) -> None:
        self.name = name
        self.__dict__.update(attrs)


@pytest.mark.parametrize(
    ("template", "name", "expected"),
    [
        ("audit/%(name)s.jsonl", "../../../escaped", "audit/.._.._.._escaped.jsonl"),
        ("audit/%(name)s/trail.jsonl", "..", "audit/__/trail.jsonl"),
        ("audit/%(name)s.jsonl", "a\\b\x00c", "audit/a_b_c.jsonl"),
        ("audit/%(job)s.jsonl", "s", "audit/_etc_passwd.jsonl"),
    ],
)
def test_placeholders_cannot_leave_the_directory_the_setting_names(template, name, expected):
    assert audit_path(template, _Named(name, job="/etc/passwd"), 0) == expected


def test_a_template_whose_result_leaves_its_directory_is_refused():
    with pytest.raises(ValueError, match="outside"):
        audit_path("audit/%(name)s/../../x.jsonl", _Named("s"), 0)


def test_a_stalled_disk_bounds_the_queue_and_counts_what_was_not_written(tmp_path, monkeypatch):
    """The trail is a FIFO nobody reads: once the pipe's buffer is full the
    writer thread's write never returns, as on a hung mount."""
    import os

    from scrapy_rfc9309.audit import writer as writer_module

    monkeypatch.setattr(writer_module, "MAX_PENDING", 500)
    fifo = tmp_path / "trail.jsonl"
    os.mkfifo(fifo)
    reader = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)  # never read
    try:
        writer = writer_module.Writer(str(fifo))
        record = {"type": "denied", "url": "http://example.com/" + "x" * 1000}
        for _ in range(100):  # 100 KB: more than the pipe holds
            writer.put(record)
        writer._wake.set()
        deadline = time.monotonic() + 10
        while writer._writing != 100 and time.monotonic() < deadline:
            time.sleep(0.01)
        assert writer._writing == 100  # the thread is stuck in its write
        for _ in range(5_000):
            writer.put(record)
        assert isinstance(writer.error, writer_module.TrailBehind)
        assert len(writer._queue) == 500
        writer.close(timeout=0.5)
        assert (writer.written, writer.unwritten) == (0, 5_100)
    finally:
        os.close(reader)  # the stuck write ends (EPIPE), the thread with it
    writer._thread.join(5)
    assert not writer._thread.is_alive()


# -- the chain (issue 30, item 3) ---------------------------------------------------------------
def _crawl(sealer: Sealer, crawl_id: str, *kinds: str) -> list[bytes]:
    """One crawl's sealed lines: its first record, ``kinds``, its closing record."""
    out = [sealer.seal({"type": "crawl", "crawl_id": crawl_id, **sealer.describe()})]
    out += [sealer.seal({"type": kind, "url": f"http://a.example/{i}"}) for i, kind in enumerate(kinds)]
    return [*out, sealer.seal({"type": "closed", "reason": "finished"})]


def _verify(lines: list[bytes], key: bytes | None = None) -> Verifier:
    verifier = Verifier(key)
    for number, line in enumerate(b"".join(lines).split(b"\n")[:-1] if lines else [], 1):
        verifier.feed(number, line)
    verifier.finish()
    return verifier


def test_two_crawls_appended_to_one_file_are_two_chains():
    lines = _crawl(Sealer(), "c1", "denied") + _crawl(Sealer(), "c2", "allowed", "denied")
    verifier = _verify(lines)
    assert (verifier.crawls, verifier.closed, verifier.records, verifier.unfinished) == (2, 2, 7, [])
    assert verifier.describe() == "chain intact: 7 records, 2 crawls (SHA-256, no key)"


@pytest.mark.parametrize(
    ("alter", "message"),
    [
        (lambda ls: [*ls[:2], b"\n", *ls[2:]], "line 3: not a sealed record"),  # a blank line inserted
        (lambda ls: [*ls, ls[1]], "line 4: record 2 outside a crawl (after the closing record of its crawl)"),
        (lambda ls: ls + ls, "line 4: crawl 2 repeats an earlier crawl (a copied crawl_id)"),
        (lambda ls: ls[1:], "line 1: record 2 outside a crawl (its crawl's first record is missing)"),
        (
            lambda ls: [ls[0], ls[1][:30] + b"\n", ls[1], ls[2]],
            "line 2: not a sealed record (edited, or a line inserted)",
        ),
        (lambda ls: [ls[0], ls[1].replace(b'"n":2', b'"n":"2"'), ls[2]], "line 2: edited: its record number '2'"),
        (lambda ls: [ls[0].replace(b'"sha256"', b'"md5"'), *ls[1:]], "line 1: crawl 1 names no known chain ('md5')"),
    ],
)
def test_each_way_a_line_can_be_out_of_place_is_named(alter, message):
    lines = _crawl(Sealer(), "c1", "denied")
    with pytest.raises(Tampered) as caught:
        _verify(alter(lines))
    assert str(caught.value).startswith(message), caught.value


def test_a_cut_line_is_an_unfinished_crawl_when_a_new_crawl_or_the_end_follows():
    first, second = _crawl(Sealer(), "c1", "denied"), _crawl(Sealer(), "c2")
    killed = [*first[:2], first[2][:25] + b"\n"]  # killed mid-write; the next crawl ended the line
    verifier = _verify(killed + second)
    assert verifier.unfinished == [
        "crawl 1 (lines 1-2): truncated or unfinished (no closing record); line 3, its last, is cut mid-write"
    ]
    assert verifier.closed == 1
    assert _verify([first[0][:7] + b"\n"]).unfinished == [
        "line 1: a crawl truncated or unfinished (no closing record): its first record is cut mid-write"
    ]
    assert _verify([]).crawls == 0


def test_a_keyed_chain_needs_its_key_and_its_key_only():
    key = b"k" * 32
    lines = _crawl(Sealer(key), "c1", "denied")
    assert key not in b"".join(lines)
    assert _verify(lines, key).describe() == "chain intact: 3 records, 1 crawl (HMAC-SHA256, keyed)"
    with pytest.raises(KeyNeeded):
        _verify(lines)
    with pytest.raises(Tampered, match="line 1: crawl 1 was sealed with another key"):
        _verify(lines, b"j" * 32)
    # the right key id on a record sealed with another key: the record's HMAC fails
    forged = Sealer(b"j" * 32)
    crawl = json.loads(lines[0])
    del crawl["n"], crawl["h"]
    with pytest.raises(Tampered, match="line 1: record 1 of crawl 1 was edited: its HMAC does not match"):
        _verify([forged.seal(crawl), *lines[1:]], key)


def test_a_lone_surrogate_is_written_as_its_json_escape_and_reads_back():
    sealer = Sealer()
    lines = _crawl(sealer, "c1")
    odd = sealer.seal({"type": "denied", "url": "http://a.example/\udc80\u00e9"})
    assert b"\\udc80" in odd and "\u00e9".encode() in odd
    verifier = Verifier()
    verifier.feed(1, lines[0].rstrip(b"\n"))
    assert verifier.feed(2, lines[1].rstrip(b"\n"))["type"] == "closed"
    assert json.loads(odd)["url"] == "http://a.example/\udc80\u00e9"


# -- the key ---------------------------------------------------------------------------------------
def test_the_audit_key_comes_from_the_setting_else_the_environment_and_never_prints(monkeypatch):
    monkeypatch.delenv("RFC9309_AUDIT_KEY", raising=False)
    assert Rfc9309Settings.from_settings({}).audit_key is None
    secret = "s3cret-" + "x" * 20
    settings = Rfc9309Settings.from_settings({"RFC9309_AUDIT": {"path": "t.jsonl", "key": secret}})
    assert settings.audit_key.reveal() == secret.encode()
    assert secret not in repr(settings) and secret not in str(settings.audit_key)
    keyed = {"path": "t.jsonl", "key": secret.encode()}  # bytes too
    assert Rfc9309Settings.from_settings({"RFC9309_AUDIT": keyed}).audit_key.reveal() == secret.encode()
    monkeypatch.setenv("RFC9309_AUDIT_KEY", "from-the-environment-0123")
    assert Rfc9309Settings.from_settings({}).audit_key.reveal() == b"from-the-environment-0123"
    assert (
        Rfc9309Settings.from_settings({"RFC9309_AUDIT": "t.jsonl"}).audit_key.reveal() == b"from-the-environment-0123"
    )
    keyed = {"RFC9309_AUDIT": {"path": "t.jsonl", "key": secret}}  # the setting's key wins
    assert Rfc9309Settings.from_settings(keyed).audit_key.reveal() == secret.encode()
    for bad, message in (
        ("tiny-k3y", "RFC9309_AUDIT['key'] is too short (8 bytes): at least 16"),
        (9309123, "RFC9309_AUDIT['key'] must be a string"),
    ):
        for value in ({"path": "t.jsonl", "key": bad}, json.dumps({"path": "t.jsonl", "key": bad})):
            with pytest.raises(ValueError, match=re.escape(message)) as caught:
                Rfc9309Settings.from_settings({"RFC9309_AUDIT": value})
            assert str(bad) not in str(caught.value)  # no message names the value
    with pytest.raises(ValueError) as caught:  # another key's bad value: the key is not shown either
        Rfc9309Settings.from_settings({"RFC9309_AUDIT": {"path": 3, "key": secret}})
    assert str(caught.value).startswith("RFC9309_AUDIT['path']=3 must be the trail's file path")
    assert secret not in str(caught.value)
    monkeypatch.setenv("RFC9309_AUDIT_KEY", "tiny")
    with pytest.raises(ValueError, match="the environment variable RFC9309_AUDIT_KEY is too short"):
        Rfc9309Settings.from_settings({})
    monkeypatch.delenv("RFC9309_AUDIT_KEY")


def test_the_audit_setting_is_a_path_or_a_dict():
    assert Rfc9309Settings.from_settings({}).audit is None
    plain = Rfc9309Settings.from_settings({"RFC9309_AUDIT": "audit/%(name)s.jsonl"})
    assert (plain.audit, plain.audit_allowed, plain.audit_sync) == ("audit/%(name)s.jsonl", False, False)
    full = Rfc9309Settings.from_settings({"RFC9309_AUDIT": {"path": "a.jsonl", "allowed": True}})
    assert (full.audit, full.audit_allowed, full.audit_sync) == ("a.jsonl", True, False)
    synced = Rfc9309Settings.from_settings({"RFC9309_AUDIT": {"path": "a.jsonl", "sync": True}})
    assert (synced.audit_allowed, synced.audit_sync) == (True, True)  # sync records every request
    cmdline = Rfc9309Settings.from_settings({"RFC9309_AUDIT": '{"path": "a.jsonl", "allowed": "true"}'})
    assert (cmdline.audit, cmdline.audit_allowed) == ("a.jsonl", True)
    for bad, says in (
        (3, "RFC9309_AUDIT must be a file path (str)"),
        ({"allowed": True}, "RFC9309_AUDIT['path']=None must be the trail's file path"),
        ({"path": "a.jsonl", "allowed": "yes"}, "RFC9309_AUDIT['allowed']='yes' is not a boolean"),
        ({"path": "a.jsonl", "sync": 2}, "RFC9309_AUDIT['sync']=2 is not a boolean"),
        ({"path": "a.jsonl", "keys": "x"}, "RFC9309_AUDIT: unknown key(s) ['keys']; known: path, allowed, sync, key"),
        ('{"path": "a.jsonl",', "RFC9309_AUDIT is not valid JSON"),
    ):
        with pytest.raises(ValueError) as caught:
            Rfc9309Settings.from_settings({"RFC9309_AUDIT": bad})
        assert str(caught.value).startswith(says), caught.value
        assert "\n" not in str(caught.value)


# -- the writer's chain ------------------------------------------------------------------------------
def test_a_sync_writer_has_the_record_in_the_file_when_put_returns(tmp_path):
    path = tmp_path / "trail.jsonl"
    path.write_bytes(b'{"type":"denied","url":"http://cut')  # a crawl killed mid-write
    writer = Writer(str(path), sync=True)
    writer.put({"type": "crawl", "crawl_id": "c1", **writer.describe()})
    writer.put({"type": "closed", "reason": "finished"})
    lines = path.read_bytes().split(b"\n")  # no close, no wait
    assert lines[0] == b'{"type":"denied","url":"http://cut' and lines[-1] == b""
    assert json.loads(lines[2])["h"] == writer.last_digest
    writer.close()
    verifier = _verify([line + b"\n" for line in lines[:-1]])
    assert (verifier.closed, len(verifier.unfinished)) == (1, 1)


# -- the closing record's count (issue 36, item 13) -------------------------------------------------
def _miscounted(lines: list[bytes]) -> list[bytes]:
    """``lines`` with the closing record's count one short, sealed again as a
    forger without a key can: the digest fits, only the count is wrong."""
    from scrapy_rfc9309.audit import chain

    closing = json.loads(lines[-1])
    previous = json.loads(lines[-2])["h"].encode()
    del closing["h"]
    closing["records"] -= 1
    body = chain.dumps(closing)
    return [*lines[:-1], body[:-1] + b',"h":"' + chain._digest(None, previous, body) + b'"}\n']


def test_a_closing_record_that_miscounts_its_records_is_named():
    lines = _crawl(Sealer(), "c1", "denied", "allowed")
    assert _verify(lines).closed == 1
    with pytest.raises(Tampered, match="line 4: the closing record of crawl 1 miscounts its records"):
        _verify(_miscounted(lines))


# -- replay in bounded memory (issue 37, item 3) ---------------------------------------------------
def _generated(where, size: int, origins: int = 20) -> str:
    """A sealed trail of about ``size`` bytes, as a long crawl with RFC9309_AUDIT's allowed
    writes: each origin's robots.txt once (its body kept), then allowed and denied
    records of long URLs over all of them, a counts record every 1,000, the closing record."""
    bodies = where / BODIES_DIR
    bodies.mkdir(parents=True)
    sealer = Sealer()
    at = "2026-11-24T22:00:00.000Z"
    parts = [sealer.seal({"type": "crawl", "at": at, "crawl_id": "c" * 32, **sealer.describe(),
                          "tokens": ["ExampleBot"], "max_bytes": 512_000})]  # fmt: skip
    digests = []
    for o in range(origins):
        body = f"User-agent: *\nDisallow: /private{o}/\n".encode()
        digests.append(hashlib.sha256(body).hexdigest())
        (bodies / digests[-1]).write_bytes(body)
        origin = f"http://o{o}.example:80"
        parts.append(
            sealer.seal(
                {
                    "type": "fetch",
                    "at": at,
                    "origin": origin,
                    "status": 200,
                    "outcome": "2xx",
                    "access": "success",
                    "sha256": digests[-1],
                    "in_force": True,
                    "governing_sha256": digests[-1],
                    "governing_access": "success",
                    "governing_status": 200,
                    "governing_url": f"{origin}/robots.txt",
                    "fetched_at": at,
                    "tokens": ["ExampleBot"],
                }  # fmt: skip
            )
        )
    written = sum(map(len, parts))
    path = where / "trail.jsonl"
    with path.open("wb") as out:
        out.write(b"".join(parts))
        i = 0
        while written < size:
            o = i % origins
            denied = i % 7 == 0
            url = f"http://o{o}.example/private{o}/{i}" if denied else f"http://o{o}.example/page/{i}/" + "x" * 250
            line = sealer.seal(
                {
                    "type": "denied" if denied else "allowed",
                    "at": at,
                    "url": url,
                    "origin": f"http://o{o}.example:80",
                    "verdict": "disallowed_explicit" if denied else "allowed_implicit",
                    "token": "ExampleBot",
                    "sha256": digests[o],
                    "access": "success",
                    "fetched_at": at,
                }  # fmt: skip
            )
            i += 1
            if i % 1_000 == 0:
                line += sealer.seal(
                    {"type": "counts", "at": at, "origins": {f"http://o{k}.example:80": [1, 2] for k in range(origins)}}
                )
            out.write(line)
            written += len(line)
        out.write(sealer.seal({"type": "closed", "at": at, "reason": "finished"}))
    return str(path)


def _peak(read) -> tuple[int, object]:
    """The most memory ``read()`` held at once (tracemalloc), and what it returned."""
    import gc
    import tracemalloc

    gc.collect()
    tracemalloc.start()
    try:
        value = read()
        return tracemalloc.get_traced_memory()[1], value
    finally:
        tracemalloc.stop()


def test_a_replay_takes_memory_bounded_whatever_the_trails_size(tmp_path):
    """Before, a replay kept every record: 3.4 times the trail in traced memory
    (4.3 times in RSS); now a fixed amount, whatever the size (docs/audit.md)."""
    import os

    asked = {"http://o3.example:80": ["http://o3.example/private3/63", "http://o3.example/page/23/" + "x" * 250]}
    peaks = {}
    for size in (8_000_000, 24_000_000):
        path = _generated(tmp_path / str(size), size)
        assert os.path.getsize(path) >= size

        def replay(path=path):
            trail = Trail(path, urls=asked, summary=True)
            assert trail.check_bodies() == 20
            answers = []
            for url in asked["http://o3.example:80"]:
                state, decided = trail.state_for("http://o3.example:80", url)
                answers.append((trail.robots_of(state).can_fetch(url, "ExampleBot"), decided["type"]))
            return answers, trail.request_records["allowed"] + trail.request_records["denied"], trail.summary()

        peaks[size], (answers, decisions, rows) = _peak(replay)
        assert answers == [(False, "denied"), (True, "allowed")]
        assert len(rows) == 20 and rows[3]["origin"] == "http://o3.example:80" and rows[3]["fetches"] == 1
        assert rows[3]["allowed"] == decisions // 1_000 and rows[3]["denied"] == 2 * (decisions // 1_000)
    small, large = peaks[8_000_000], peaks[24_000_000]
    assert large < 4_000_000, peaks  # (8 MB and 24 MB trails)
    assert large - small < 500_000, peaks  # three times the trail, the same memory


def test_a_decision_is_replayed_against_the_file_that_governed_it(tmp_path):
    """Streamed, the pairing is the one the whole trail gave: the last result
    in force with the decision's fetch time and hash, else the origin's last."""
    bodies = tmp_path / BODIES_DIR
    bodies.mkdir()
    sealer = Sealer()
    lines = [sealer.seal({"type": "crawl", "crawl_id": "c1", **sealer.describe(), "tokens": ["ExampleBot"]})]
    origin = "http://a.example:80"

    def state(body: bytes, at: str) -> bytes:
        digest = hashlib.sha256(body).hexdigest()
        (bodies / digest).write_bytes(body)
        return sealer.seal(
            {
                "type": "stored",
                "origin": origin,
                "governing_access": "success",
                "governing_sha256": digest,
                "fetched_at": at,
                "tokens": ["ExampleBot"],
                "added": ["line 2: Disallow: /" + "x" * 1_000],
            }  # fmt: skip
        )

    old, new = b"User-agent: *\nDisallow: /old\n", b"User-agent: *\nDisallow: /new\n"

    def decided(url: str, body: bytes, at: str) -> bytes:
        return sealer.seal(
            {
                "type": "allowed",
                "url": url,
                "origin": origin,
                "sha256": hashlib.sha256(body).hexdigest(),
                "fetched_at": at,
            }
        )

    lines += [state(old, "t1"), decided("http://a.example/old", old, "t1"), state(new, "t2")]
    lines += [decided("http://a.example/new", new, "t2"), sealer.seal({"type": "closed"})]
    (tmp_path / "t.jsonl").write_bytes(b"".join(lines))
    asked = ["http://a.example/old", "http://a.example/new", "http://a.example/never"]
    trail = Trail(str(tmp_path / "t.jsonl"), urls={origin: asked})
    answers = {url: trail.state_for(origin, url) for url in asked}
    assert answers["http://a.example/old"][0]["fetched_at"] == "t1"  # the file then in force, not the last
    assert answers["http://a.example/new"][0]["fetched_at"] == "t2"
    assert answers["http://a.example/never"] == (answers["http://a.example/new"][0], None)  # no decision: the last
    assert "added" not in answers["http://a.example/old"][0]  # (what changed is not kept)
    assert not trail.robots_of(answers["http://a.example/old"][0]).can_fetch("http://a.example/old", "ExampleBot")
    with pytest.raises(ValueError, match="not asked"):
        trail.state_for(origin, "http://a.example/other")


def test_a_line_longer_than_any_record_is_named_without_reading_it_whole(tmp_path, monkeypatch):
    from scrapy_rfc9309.audit import trail as trail_module

    monkeypatch.setattr(trail_module, "MAX_LINE_BYTES", 2_000)
    sealer = Sealer()
    lines = [sealer.seal({"type": "crawl", "crawl_id": "c1", **sealer.describe()})]
    lines.append(sealer.seal({"type": "denied", "url": "http://a.example/" + "x" * 1_800}))  # fits
    (tmp_path / "t.jsonl").write_bytes(b"".join([*lines, sealer.seal({"type": "closed"})]))
    assert Trail(str(tmp_path / "t.jsonl")).chain == "chain intact: 3 records, 1 crawl (SHA-256, no key)"
    lines.append(sealer.seal({"type": "denied", "url": "http://a.example/" + "x" * 2_000}))
    (tmp_path / "t.jsonl").write_bytes(b"".join([*lines, sealer.seal({"type": "closed"})]))
    with pytest.raises(TrailTampered, match="line 3: longer than 2,000 bytes: no record the plugin writes is"):
        Trail(str(tmp_path / "t.jsonl"))
