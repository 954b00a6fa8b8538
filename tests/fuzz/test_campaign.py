"""The CI run of the command-table campaign (tests/fuzz/campaign.py): fixed
seeds, RESP2 and RESP3, about a minute in all (CXLREDIS_CAMPAIGN_SECONDS changes
the budget), against a redis-server of its own (the campaign changes ACL users
and configuration, which the session's oracle must not see).

A long run is one command: ``python tests/fuzz/campaign.py --minutes 60 --seed N``.
"""
from __future__ import annotations

import os
import random
import signal
import sys
import threading
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
import campaign  # noqa: E402

from conftest import ServerProcess  # noqa: E402
from diff_harness import Mismatch, Step  # noqa: E402

BUDGET_S = float(os.environ.get("CXLREDIS_CAMPAIGN_SECONDS", "50"))
SEEDS = [11, 23]
ARENA = 512 * campaign.MIB


@pytest.fixture
def servers(cxl_factory):
    oracle = ServerProcess("redis").start()
    try:
        yield oracle, cxl_factory(**campaign.arena_options(ARENA))
    finally:
        oracle.close()


@pytest.mark.timeout(BUDGET_S + 120)
def test_campaign_over_the_command_table(servers):
    oracle, cxl = servers
    # PING within 3 s, not the long run's 1 s: other processes share this machine in CI.
    stats = campaign.run_campaign(oracle, cxl, SEEDS, [2, 3], BUDGET_S, huge_budget=1,
                                  arena_size=ARENA, ping_timeout=3.0)
    print(f"campaign: {stats.commands} commands ({stats.cxl_only} cxlredis-only), "
          f"{stats.episodes} episodes, peak RSS {stats.peak_rss / campaign.MIB:.0f} MiB")
    generated = {spec.name for spec in campaign.Generator(random.Random(0), 2).specs}
    assert generated - set(stats.per_command) == set(), "commands the run never generated"
    assert stats.episodes >= 4 * len(SEEDS)        # both protocols, a few episodes each


def test_generator_covers_every_implemented_command():
    """Driven by the table: every command and subcommand is generated unless EXCLUDED says why."""
    gen = campaign.Generator(random.Random(1), 3)
    leaves = {spec.name for spec in campaign.table_specs()}
    assert {spec.name for spec in gen.specs} == leaves - set(campaign.EXCLUDED)
    seen = set()
    for _ in range(20000):
        gen.command()
        seen.add(gen.last_spec)
    assert seen == leaves - set(campaign.EXCLUDED)


def test_generator_is_reproducible_and_hostile():
    def run(seed, count=3000):
        gen = campaign.Generator(random.Random(seed), 2, huge_budget=1)
        return [gen.command() for _ in range(count)], gen

    first, gen = run(5)
    assert run(5)[0] == first
    words = [w for argv, _ in first for w in argv]
    for boundary in (b"0", b"-1", b"9223372036854775807", b"9223372036854775808",
                     b"-9223372036854775808", b"nan", b"inf", b"", b"bin\x00\xff\r\n"):
        assert boundary in words, boundary
    assert gen.huge_sent == 1 and max(map(len, words)) == campaign.HUGE_SIZE
    # options repeated and in every order: SET's expiry twice, GET before and after NX
    # (enough commands that SET, one of the table's many, comes up often)
    sets = [[w.upper() for w in argv[3:]] for argv, _ in run(8, 100000)[0]
            if argv[0] == b"SET"]
    assert any(sum(w in (b"EX", b"PX", b"EXAT", b"PXAT") for w in words) > 1 for words in sets)
    for first_option, second in ((b"GET", b"NX"), (b"NX", b"GET")):
        assert any(first_option in words and second in words[words.index(first_option):]
                   for words in sets), (first_option, second)


def test_debug_hrandfield_counts_and_the_threshold_are_fuzzed():
    """DEBUG (gated on both servers), HRANDFIELD's boundary counts and CONFIG SET
    large-value-threshold are all generated; counts Redis would spend minutes on, and the
    threshold Redis does not have, go to cxlredis alone."""
    gen = campaign.Generator(random.Random(3), 2)
    # (each table command gets its share: enough of them that every boundary count comes up)
    commands = [gen.command() for _ in range(150000)]
    assert any(argv[0] == b"DEBUG" and not alone for argv, alone in commands)
    counts = {argv[2]: alone for argv, alone in commands
              if argv[0] == b"HRANDFIELD" and len(argv) > 2 and argv[2].lstrip(b"-").isdigit()}
    assert {b"-9223372036854775808", b"9223372036854775807", b"0", b"-1"} <= set(counts)
    assert counts[b"-9223372036854775808"] and not counts[b"-1"]
    thresholds = [alone for argv, alone in commands
                  if argv[:3] == (b"CONFIG", b"SET", b"large-value-threshold")]
    assert thresholds and all(thresholds)


def test_watchdog_and_comparison_catch_a_broken_server(cxl_factory):
    """The checks have teeth: a reply that differs, a server that stops answering PING
    and RSS over the bound all fail with the command that caused them."""
    cxl = cxl_factory()
    watchdog = campaign.Watchdog(cxl, rss_limit=1 << 40, ping_timeout=1.0)
    try:
        watchdog.check((b"PING",))
        os.kill(cxl.pid, signal.SIGSTOP)         # a server that stops answering
        try:
            with pytest.raises(campaign.WatchdogFailure,
                               match=r"within 1.0s after \(b'HANG',\) \(PONG after 1[0-9.]*s; "):
                threading.Timer(1.5, os.kill, (cxl.pid, signal.SIGCONT)).start()
                watchdog.check((b"HANG",))
        finally:
            os.kill(cxl.pid, signal.SIGCONT)
    finally:
        watchdog.close()
    tight = campaign.Watchdog(cxl, rss_limit=1 << 20)
    try:
        with pytest.raises(campaign.WatchdogFailure, match=r"RSS .* after \(b'GET', b'x'\)"):
            tight.check((b"GET", b"x"))
    finally:
        tight.close()
    # A Lockstep pair of two servers that differ (cxlredis against itself with a key set on one).
    other = cxl_factory()
    with campaign.raw_connection(other.port) as conn:
        conn.request("SET", "k", "v")
    pair = campaign.Lockstep(cxl, other, 2, overrides=campaign.CAMPAIGN_COMPARATORS)
    try:
        with pytest.raises(Mismatch, match="GET k"):
            pair.step(Step(args=(b"GET", b"k")))
    finally:
        pair.close()


def test_a_difference_fails_with_the_command_and_the_replay_line():
    """Two redis-servers that differ in one setting (databases): the campaign stops at the
    first command that shows it, naming the command and the line that replays the run."""
    oracle, other = ServerProcess("redis").start(), ServerProcess("redis", {"databases": 2}).start()
    try:
        with pytest.raises(campaign.CampaignFailure) as failure:
            campaign.run_campaign(oracle, other, [1], [2], 120, arena_size=0, through=50)
    finally:
        oracle.close()
        other.close()
    text = str(failure.value)
    assert "\ncommand: (b'" in text
    assert ("replay: python tests/fuzz/campaign.py --seed 1 --protocol 2 --episode-length 200 "
            "--huge 1 --through ") in text
