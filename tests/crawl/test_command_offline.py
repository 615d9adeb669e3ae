"""``scrapy robots --file`` and ``--lint``: no network.

The report functions are tested directly; the command itself runs as a user
runs it (``python -m scrapy robots`` in a subprocess, outside any project), so
the entry point, the exit statuses and Scrapy's usage-error path are real.
"""

from __future__ import annotations

import pytest

from scrapy_rfc9309 import parse
from scrapy_rfc9309.commands.report import describe_group, exit_status, file_lines, lint_lines, verdict_lines

from .command_runner import scrapy_robots

pytestmark = pytest.mark.main_run_only  # not again on the oldest Scrapy, nor without a reactor (setup.cfg)

ROBOTS = (
    "User-agent: *\n"  # 1
    "Disallow: /private\n"  # 2
    "Allow: /private/press\n"  # 3
    "Crawl-delay: 2\n"  # 4
    "Request-rate: 1/10s\n"  # 5
    "Sitemap: https://example.com/sitemap.xml\n"  # 6
    "\n"  # 7
    "User-agent: PartnerBot\n"  # 8
    "Disallow: /\n"  # 9
)
#: two problems: a missing colon (line 3) and a line that is no record (line 4)
MESSY = "User-agent: *\nDisallow: /a\nDisallow /b\nthis is not a record\n"


def verdicts(stdout: str) -> dict[str, str]:
    found = {}
    for line in stdout.splitlines():
        parts = line.split()
        if parts and parts[0] in ("ALLOWED", "DENIED"):
            found[parts[1]] = f"{parts[0]} {' '.join(parts[2:])}"
    return found


@pytest.fixture
def robots_file(tmp_path):
    path = tmp_path / "robots.txt"
    path.write_text(ROBOTS)
    return path


# -- the report, without a process --------------------------------------------------
def test_group_description_names_the_lines_of_the_groups_obeyed():
    robots = parse(ROBOTS)
    assert describe_group(robots, "PartnerBot") == "line 8 (naming the agent)"
    assert describe_group(robots, "OtherBot") == "line 1 ('*': no group names the agent)"
    assert describe_group(parse("User-agent: a\nDisallow: /\n"), "b").startswith("none: ")


def test_file_lines_list_delay_rate_sitemaps_and_every_diagnostic_up_to_a_cap():
    lines = "\n".join(file_lines(parse(ROBOTS), "OtherBot"))
    assert "crawl-delay:  2 s" in lines
    assert "request-rate: 1 per 10 s (one request every 10 s)" in lines
    assert "sitemaps:     https://example.com/sitemap.xml" in lines
    assert "diagnostics:  none" in lines
    many = parse("".join(f"junk line {i}\n" for i in range(30)))
    listed = file_lines(many, "OtherBot", max_diagnostics=5)
    assert sum("unparsable_line" in line for line in listed) == 5
    assert listed[-1].strip() == "... 25 more (scrapy robots --lint FILE lists all)"


def test_verdict_lines_align_reasons_and_exit_status_follows_denials():
    robots = parse(ROBOTS)
    targets = ["/private/x", "/a"]
    decisions = [robots.check(t, "OtherBot") for t in targets]
    lines = verdict_lines(targets, decisions)
    assert lines[0].index("disallowed_explicit") == lines[1].index("allowed_implicit")
    assert exit_status(decisions) == 1
    assert exit_status(decisions[1:]) == 0


def test_lint_lines_and_status():
    lines, status = lint_lines("f.txt", parse(MESSY))
    assert status == 1
    assert lines[0].startswith("f.txt:3: missing_colon: ")
    assert lines[1].startswith("f.txt:4: unparsable_line: ")
    assert lines[-1] == "f.txt: 2 problems"
    assert lint_lines("f.txt", parse(ROBOTS)) == (["f.txt: no problems found"], 0)


# -- the command ---------------------------------------------------------------------
def test_file_verdicts_with_lines_and_exit_1_when_one_is_denied(robots_file, tmp_path):
    process = scrapy_robots(
        "/private/x", "https://example.com/private/press/a", "/public", "--file", str(robots_file), cwd=tmp_path
    )
    assert process.returncode == 1, process.stderr
    found = verdicts(process.stdout)
    assert found["/private/x"] == "DENIED disallowed_explicit (line 2: Disallow: /private)"
    assert found["https://example.com/private/press/a"] == "ALLOWED allowed_explicit (line 3: Allow: /private/press)"
    assert found["/public"] == "ALLOWED allowed_implicit"
    # outside a project the token comes from Scrapy's default USER_AGENT
    assert "agent:        Scrapy" in process.stdout
    assert "crawl-delay:  2 s" in process.stdout
    assert "request-rate: 1 per 10 s" in process.stdout
    assert "sitemaps:     https://example.com/sitemap.xml" in process.stdout


def test_file_all_allowed_exits_0(robots_file, tmp_path):
    process = scrapy_robots("/public", "/private/press/x", "--file", str(robots_file), cwd=tmp_path)
    assert process.returncode == 0, process.stderr
    assert set(verdicts(process.stdout)) == {"/public", "/private/press/x"}


def test_agent_option_and_user_agent_setting_choose_the_group(robots_file, tmp_path):
    by_option = scrapy_robots("/public", "--agent", "PartnerBot", "--file", str(robots_file), cwd=tmp_path)
    assert by_option.returncode == 1
    assert verdicts(by_option.stdout)["/public"] == "DENIED disallowed_explicit (line 9: Disallow: /)"
    assert "crawl-delay:  none" in by_option.stdout  # PartnerBot's group has none
    # the token is derived from USER_AGENT as the middleware derives it
    user_agent = "USER_AGENT=PartnerBot/2.0 (+https://partner.example)"
    by_setting = scrapy_robots("/public", "-s", user_agent, "--file", str(robots_file), cwd=tmp_path)
    assert by_setting.returncode == 1
    assert "agent:        PartnerBot" in by_setting.stdout


def test_file_from_stdin_with_diagnostics(tmp_path):
    process = scrapy_robots("/a", "/b", "--file", "-", cwd=tmp_path, stdin=MESSY)
    assert process.returncode == 1
    assert "robots.txt from <stdin>" in process.stdout
    assert "diagnostics:  2" in process.stdout
    assert "line 3: missing_colon" in process.stdout
    # the lenient reading of "Disallow /b" (line 3) is what decides
    assert verdicts(process.stdout)["/b"] == "DENIED disallowed_explicit (line 3: Disallow: /b)"


def test_lint(robots_file, tmp_path):
    messy = tmp_path / "messy.txt"
    messy.write_text(MESSY)
    dirty = scrapy_robots("--lint", str(messy), cwd=tmp_path)
    assert dirty.returncode == 1
    assert dirty.stdout.splitlines()[-1] == f"{messy}: 2 problems"
    assert f"{messy}:3: missing_colon: " in dirty.stdout
    clean = scrapy_robots("--lint", str(robots_file), cwd=tmp_path)
    assert clean.returncode == 0
    assert clean.stdout == f"{robots_file}: no problems found\n"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["/x", "--agent", "Bot2/1.0", "--file", "ROBOTS"], "its product 'Bot2' is not made of letters"),
        (["--file", "ROBOTS"], "give at least one URL"),
        ([], "give at least one URL"),
        (["/x", "--file", "missing.txt"], "cannot read missing.txt"),
        (["--lint", "missing.txt"], "cannot read missing.txt"),
        (["/x", "--lint", "ROBOTS"], "--lint PATH takes no URL"),
        (["/x"], "is not an absolute http(s) URL"),
        (["/x", "-s", "RFC9309_UNREACHABLE=maybe", "--file", "ROBOTS"], "RFC9309_UNREACHABLE='maybe'"),
    ],
    ids=[
        "bad-token",
        "no-url",
        "nothing",
        "unreadable",
        "lint-unreadable",
        "lint-with-url",
        "path-online",
        "bad-setting",
    ],
)
def test_usage_errors_exit_2(args, message, robots_file, tmp_path):
    args = [str(robots_file) if arg == "ROBOTS" else arg for arg in args]
    process = scrapy_robots(*args, cwd=tmp_path)
    assert process.returncode == 2
    assert message in process.stderr
    assert process.stdout == ""


def test_agent_takes_a_full_user_agent_string_by_the_same_rule_as_settings(robots_file, tmp_path):
    by_token = scrapy_robots("/public", "--agent", "PartnerBot", "--file", str(robots_file), cwd=tmp_path)
    by_string = scrapy_robots(
        "/public", "--agent", "PartnerBot/2.0 (+https://x)", "--file", str(robots_file), cwd=tmp_path
    )
    assert by_string.returncode == by_token.returncode and by_string.stdout == by_token.stdout
    for agent in ("my bot/1.0", "Mozilla/5.0 (compatible; Foo Bar/1.0)"):  # one rule, wherever
        ambiguous = scrapy_robots("/public", "--agent", agent, "--file", str(robots_file), cwd=tmp_path)
        assert ambiguous.returncode == 2 and "ambiguous" in ambiguous.stderr, agent


def test_a_target_that_is_neither_path_nor_url_is_a_usage_error(robots_file, tmp_path):
    process = scrapy_robots("not-a-url", "--file", str(robots_file), cwd=tmp_path)
    assert process.returncode == 2
    assert "neither a path" in process.stderr and process.stdout == ""


def test_inside_a_project_logging_at_info_the_command_still_logs_at_warning(robots_file, tmp_path):
    (tmp_path / "scrapy.cfg").write_text("[settings]\ndefault = chatty.settings\n")
    (tmp_path / "chatty").mkdir()
    (tmp_path / "chatty" / "__init__.py").write_text("")
    (tmp_path / "chatty" / "settings.py").write_text('BOT_NAME = "chatty"\nLOG_LEVEL = "INFO"\n')
    quiet = scrapy_robots("http://127.0.0.1:9/x", cwd=tmp_path)  # a refused connection: a real crawl runs
    assert " INFO: " not in quiet.stderr, quiet.stderr
    loud = scrapy_robots("http://127.0.0.1:9/x", "-L", "INFO", cwd=tmp_path)
    assert " INFO: " in loud.stderr
