"""The App Home view: whole payloads per role, the Block Kit schema, the 100-block cap, faults."""

from __future__ import annotations

import datetime as dt

from bot.api.models import Computer
from bot.roles import SOURCE_NO_EMAIL
from bot.services.alerts import AlertSubscription
from bot.services.controls import ControlsHistory
from bot.services.home import ChartImage, Fault, Home, HomeSession
from bot.services.limits import PENDING, LimitEntry, LimitRequest
from bot.services.periods import Period
from bot.services.readiness import RepositorySummary
from bot.services.usage import Ranked, Totals, UsageSummary
from formatters import home as fmt
from formatters.blocks import actions, button, context, divider, header, section
from formatters.limits import APPROVE_ACTION, REJECT_ACTION, when
from formatters.notices import who_you_are
from formatters.sessions import archive_button
from tests.formatters.test_reports import LATEST, WEB

NOW = dt.datetime(2026, 11, 22, 9, 0, tzinfo=dt.UTC)
TOP = [header(fmt.TITLE).to_dict(), context(fmt.REFRESHED.format(when=when(NOW))).to_dict()]


def running(n: int = 1) -> HomeSession:
    return HomeSession(f"sess-{n}", f"Fix <the> build {n}", "running", "devbox-1", "C0ENG", "1700000000.000100")


def pending(request_id: int = 7) -> LimitRequest:
    return LimitRequest(
        id=request_id,
        requester_id="U0MEMBER",
        requester_email="carol@example.com",
        reason="load & tests",
        entries=(LimitEntry("carol@example.com", 3000),),
        entries_hash="",
        before={"carol@example.com": 1000},
        state=PENDING,
        created_at=NOW,
        expires_at=NOW + dt.timedelta(hours=24),
    )


def validate_blocks(validator, blocks):
    for start in range(0, len(blocks), 50):  # the validator checks messages: 50 blocks at a time
        validator({"text": "home", "blocks": blocks[start : start + 50]})


def test_a_guest_sees_who_they_are_why_and_what_to_do(block_kit_validator):
    view = fmt.home_view(Home("U0GUEST", "guest", NOW, source=SOURCE_NO_EMAIL))
    you, hint = who_you_are("guest", SOURCE_NO_EMAIL, None)
    assert view == {
        "type": "home",
        "callback_id": fmt.HOME_CALLBACK,
        "blocks": [*TOP, divider().to_dict(), section(f"{fmt.GUEST_HEAD}\n{you}").to_dict(), context(hint).to_dict()],
    }
    assert hint
    validate_blocks(block_kit_validator, view["blocks"])


def test_a_member_sees_sessions_with_archive_and_requests(block_kit_validator):
    view = fmt.home_view(Home("U0MEMBER", "member", NOW, sessions=[running()], requests=[]))
    assert view["blocks"] == [
        *TOP,
        divider().to_dict(),
        header(fmt.SESSIONS_TITLE).to_dict(),
        section(
            "*Fix &lt;the&gt; build 1*\n:gear: working \u00b7 devbox-1 \u00b7 <https://slack.com/archives/C0ENG/p1700000000000100|thread>",
            accessory=archive_button("sess-1"),
        ).to_dict(),
        divider().to_dict(),
        header(fmt.REQUESTS_TITLE).to_dict(),
        section(fmt.NO_REQUESTS).to_dict(),
        context(fmt.NO_REQUESTS_HINT).to_dict(),
    ]
    validate_blocks(block_kit_validator, view["blocks"])


def test_an_approver_gets_approve_and_reject_with_the_request_messages_action_ids(block_kit_validator):
    view = fmt.home_view(Home("U0MANAGER", "manager", NOW, waiting=[pending()]))
    assert view["blocks"][2:] == [
        divider().to_dict(),
        header(fmt.WAITING_TITLE).to_dict(),
        section(
            fmt.WAITING_LINE.format(
                id=7,
                requester="<@U0MEMBER>",
                entries="`carol@example.com` \u2192 3,000",
                total="+2,000",
                reason="load &amp; tests",
                expires=when(NOW + dt.timedelta(hours=24)),
            )
        ).to_dict(),
        actions(
            button("Approve", APPROVE_ACTION, "7", style="primary"),
            button("Reject", REJECT_ACTION, "7", style="danger"),
            block_id="home-limits-7",
        ).to_dict(),
    ]
    validate_blocks(block_kit_validator, view["blocks"])


def test_a_fault_shows_in_its_section_and_the_others_stay():
    fault = Fault("The Agent platform had an internal error.", "Try again in a few minutes.")
    view = fmt.home_view(Home("U0MANAGER", "manager", NOW, sessions=[], computers=fault))
    assert view["blocks"][2:] == [
        divider().to_dict(),
        header(fmt.SESSIONS_TITLE).to_dict(),
        section(fmt.NO_SESSIONS).to_dict(),
        context(fmt.NO_SESSIONS_HINT).to_dict(),
        divider().to_dict(),
        header(fmt.DASHBOARD_TITLE).to_dict(),
        section(fmt.COMPUTERS_IN_ERROR).to_dict(),
        section(fmt.FAULT.format(error=fault.error)).to_dict(),
        context(fault.hint).to_dict(),
    ]


def test_the_view_never_exceeds_100_blocks(block_kit_validator):
    sessions = [running(n) for n in range(120)]
    view = fmt.home_view(Home("U0MEMBER", "member", NOW, sessions=sessions, requests=[]))
    blocks = view["blocks"]
    assert len(blocks) == fmt.MAX_HOME_BLOCKS
    dropped = len(TOP) + 2 + len(sessions) + 4 - (fmt.MAX_HOME_BLOCKS - 1)  # + divider, header, section, context of the requests
    assert blocks[-1] == context(fmt.MORE_BLOCKS.format(n=dropped)).to_dict()
    validate_blocks(block_kit_validator, blocks)


# ---------------------------------------------------------------------- alerts, top users, the chart, the DM hint

PERIOD = Period(dt.date(2026, 11, 15), dt.date(2026, 11, 21))


def subscription(sub_id: int, channel: str, *, kind: str = "controls", muted_until: dt.datetime | None = None) -> AlertSubscription:
    return AlertSubscription(sub_id, kind, channel, "5", "U0MANAGER", NOW - dt.timedelta(days=2), muted_until)


def usage_summary(top: list[Ranked]) -> UsageSummary:
    return UsageSummary(
        period=PERIOD,
        previous_period=Period(dt.date(2026, 11, 8), dt.date(2026, 11, 14)),
        totals=Totals(billable_tokens=12_345_678, wau=20, sessions=140),
        previous=Totals(billable_tokens=10_000_000, wau=20, sessions=150),
        top_users=top,
    )


CHART = ChartImage("F0CHART", "Billable tokens per day, 2026-11-15 \u2013 2026-11-21 (7 days): 12.3M in all", "Billable tokens per day")


def test_alert_subscriptions_say_where_and_whether_muted(block_kit_validator):
    subs = [subscription(3, "D0MANAGER"), subscription(4, "C0ENG", kind="<!here>", muted_until=NOW + dt.timedelta(hours=2))]
    view = fmt.home_view(Home("U0MANAGER", "manager", NOW, alerts=subs))
    assert view["blocks"][2:] == [
        divider().to_dict(),
        header(fmt.ALERTS_TITLE).to_dict(),
        section(
            "*3* \u00b7 controls \u00b7 your DMs with me \u00b7 on\n"
            f"*4* \u00b7 &lt;!here&gt; \u00b7 <#C0ENG> \u00b7 muted until {when(NOW + dt.timedelta(hours=2))}"
        ).to_dict(),
    ]
    validate_blocks(block_kit_validator, view["blocks"])
    empty = fmt.home_view(Home("U0MEMBER", "member", NOW, alerts=[]))
    assert empty["blocks"][4:] == [section(fmt.NO_ALERTS).to_dict(), context(fmt.NO_ALERTS_HINT).to_dict()]


def test_top_users_slack_knows_are_mentions_and_the_chart_comes_before_them(block_kit_validator):
    top = [Ranked("alice@example.com", 5e6, 0.4), Ranked("<!channel>@evil.example", 2e6, 0.16)]
    view = fmt.home_view(Home("U0MANAGER", "manager", NOW, usage=usage_summary(top), people={"alice@example.com": "U0OWNER"}, chart=CHART))
    image = {
        "type": "image",
        "slack_file": {"id": "F0CHART"},
        "alt_text": CHART.alt_text,
        "title": {"type": "plain_text", "text": CHART.title},
    }
    blocks = view["blocks"]
    at = blocks.index(image)
    named = fmt.TOP_USERS + "\n1. <@U0OWNER>: 5.00M (40%)\n2. &lt;!channel&gt;@evil.example: 2.00M (16%)"
    assert blocks[at + 1] == section(named).to_dict()
    validate_blocks(block_kit_validator, blocks)
    # without the chart (none was made) and without people (Slack knows nobody): the figures alone, names as given
    plain = fmt.home_view(Home("U0MANAGER", "manager", NOW, usage=usage_summary(top)))["blocks"]
    assert plain[:at] == blocks[:at]
    assert plain[at] == section(named.replace("<@U0OWNER>", "alice@example.com")).to_dict()
    assert plain[at + 1 :] == blocks[at + 2 :]


def test_a_full_managers_home_stays_within_100_blocks_and_the_schema(block_kit_validator):
    home = Home(
        "U0OWNER",
        "owner",
        NOW,
        sessions=[running(n) for n in range(10)],
        requests=[pending(n) for n in range(5)],
        waiting=[pending(n) for n in range(10, 20)],
        alerts=[subscription(n, f"C0{n:03d}") for n in range(10)],
        usage=usage_summary([Ranked(f"user{n}@example.com", 1e6 * (5 - n), 0.1) for n in range(5)]),
        people={"user0@example.com": "U0OWNER"},
        chart=CHART,
        readiness=[RepositorySummary(WEB, LATEST, 1)] * 3,
        computers=[Computer(id="cmp-1", name="build-01", provider_type="byom", created_at=0, status="error", hostname="build-01.local")],
        controls=ControlsHistory((), 1),
    )
    view = fmt.home_view(home)
    assert len(view["blocks"]) <= fmt.MAX_HOME_BLOCKS
    assert [b["text"]["text"] for b in view["blocks"] if b["type"] == "header"] == [
        fmt.TITLE,
        fmt.SESSIONS_TITLE,
        fmt.REQUESTS_TITLE,
        fmt.WAITING_TITLE,
        fmt.ALERTS_TITLE,
        fmt.DASHBOARD_TITLE,
    ]
    validate_blocks(block_kit_validator, view["blocks"])


def test_the_first_dm_hint(block_kit_validator):
    hint = block_kit_validator(fmt.dm_hint())
    assert hint == {
        "text": fmt.DM_HINT_TITLE,
        "blocks": [
            section(f"*{fmt.DM_HINT_TITLE}*").to_dict(),
            section("\n".join(f"\u2022 {line}" for line in fmt.DM_HINT_LINES)).to_dict(),
        ],
    }
    assert "<" not in hint["blocks"][1]["text"]["text"]  # a constant of ours, but no accidental link either


def test_a_computer_in_error_is_named_as_people_know_it_not_by_its_platform_id():
    """#29 (second trial): the Home read "Legacy build VM (`cmp-legacy-build`)"; /agent computers and
    the computer alerts name it alone."""
    legacy = Computer(id="cmp-legacy-build", name="Legacy build VM", provider_type="cloud-sandbox", created_at=0, status="error")
    box = Computer(id="cmp-gpu", name="GPU box", provider_type="byom", created_at=0, status="error", hostname="gpu-01.acme.internal")
    assert fmt.computer_blocks([legacy, box]) == [
        section(f"{fmt.COMPUTERS_IN_ERROR}\n:red_circle: *Legacy build VM*\n:red_circle: *GPU box* on `gpu-01.acme.internal`"),
        context(fmt.COMPUTERS_HINT),
    ]


def test_a_waiting_request_says_its_total_as_a_change_not_as_credits_held():
    """A request lowering a limit read "(total -2,500 credits)" (issue #29's second trial)."""
    view = fmt.home_view(Home("U0MANAGER", "manager", NOW, waiting=[pending()]))
    line = view["blocks"][4]["text"]["text"]
    assert line.partition("\n")[0] == "*#7* asked by <@U0MEMBER>: `carol@example.com` \u2192 3,000 (total change: +2,000 credits)"
