"""The App Home kept fresh, and its newer sections: dispatched in-process (``tests/inprocess.py``), the
sandbox and the Slack emulator on loopback, the bot's clock moved by the tests (its jobs do not tick
on their own: a test runs the refresh as the job would, :func:`refresh`).

- a change (a session started, a credit-limit request filed or decided) marks the Homes it shows up
  on; the refresh republishes each at the next tick, then at most once per
  ``AGENT_BOT_HOME_REFRESH_SECONDS`` (a request filed or decided at the next tick whatever), only
  for people who opened their Home, and never over a newer view (``hash_conflict``);
- the managers' chart is an image block of a file uploaded once a day; a failed upload leaves the
  figures alone; a file Slack refuses is dropped;
- top users are mentions when Slack knows their e-mail; alert subscriptions are listed.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

from bot.roles import ResolvedUser
from bot.services.home import CHART_REFUSED, CHART_TITLE, REFRESH_RETRY, HomeCharts, RefreshReport
from bot.services.limits import APPLIED, PENDING
from bot.services.periods import parse_period
from bot.stack import DEMO_CHANNEL
from bot.wiring import home_refresher
from formatters import home as fmt
from formatters import limits as limits_fmt
from formatters.alerts import DM_TARGET
from formatters.blocks import esc, header, number
from handlers.home import home_charts, home_service
from sandbox.slack_emulator import dm_channel_id
from tests.inprocess import InProcessReply, inprocess_fixture

START = dt.datetime(2026, 11, 22, 9, 0, tzinfo=dt.UTC)
INTERVAL = dt.timedelta(seconds=30)  # AGENT_BOT_HOME_REFRESH_SECONDS's default


class Clock:
    def __init__(self) -> None:
        self.now = START

    def __call__(self) -> dt.datetime:
        return self.now


CLOCK = Clock()
stack = inprocess_fixture(now=CLOCK, run_jobs=False, sandbox_options={"reply_delay_seconds": 0.0})


def later(delta: dt.timedelta = INTERVAL) -> None:
    CLOCK.now += delta


def open_home(stack: Any, user: str) -> InProcessReply:
    reply = stack.inprocess._reply(stack.run(stack.inprocess.client.send_app_home_opened(user)))
    assert reply.status == 200
    return reply


def view_of(stack: Any, user: str) -> dict[str, Any]:
    home = stack.slack.recorder.home(user)
    assert home is not None, f"no Home tab published for {user}"
    return home.view


def refresh(stack: Any) -> RefreshReport:
    """One tick of the refresh job, as the scheduler runs it."""
    return stack.run(home_refresher(stack.bot.services).tick())


def resolved(stack: Any, user_id: str) -> ResolvedUser:
    return stack.run(stack.bot.services.resolver.resolve(user_id))


def expected(stack: Any, user_id: str) -> dict[str, Any]:
    """The Home the service and the formatter give ``user_id`` now."""
    tab = stack.run(stack.bot.services.home.get(user_id))
    home = stack.run(home_service(stack.bot.services).gather(resolved(stack, user_id), dm_channel=tab.dm_channel if tab else None))
    return fmt.home_view(home)


def tab_of(stack: Any, user_id: str) -> Any:
    return stack.run(stack.bot.services.home.get(user_id))


def blocks_of_type(view: dict[str, Any], kind: str) -> list[dict[str, Any]]:
    return [b for b in view["blocks"] if b["type"] == kind]


def settle(stack: Any) -> None:
    """Nothing dirty and due left from an earlier test: every mark published."""
    later(dt.timedelta(minutes=5))
    refresh(stack)


def test_a_session_started_just_after_an_open_is_on_the_home_at_the_next_tick_then_refreshes_are_an_interval_apart(stack):
    """#29: an open is not a refresh. A change just after the person opened their Home waited the
    whole interval (counted from the open's publish); it is published at the next tick, and the
    refreshes after it keep the interval between them."""
    settle(stack)
    open_home(stack, "U0MEMBER")
    opened = view_of(stack, "U0MEMBER")
    versions = len(stack.slack.recorder.views("U0MEMBER"))
    bot_user = stack.slack.directory.bot.user_id
    stack.run(stack.inprocess.client.send_mention(f"<@{bot_user}> computer=ci tidy the docs", user_id="U0MEMBER", channel_id=DEMO_CHANNEL))
    assert tab_of(stack, "U0MEMBER").dirty_since == CLOCK.now

    assert refresh(stack).published == ["U0MEMBER"]  # at once: published at the open, but not refreshed since
    fresh = view_of(stack, "U0MEMBER")
    assert fresh != opened and fresh == expected(stack, "U0MEMBER")
    assert "tidy the docs" in fresh["blocks"][fresh["blocks"].index(header(fmt.SESSIONS_TITLE).to_dict()) + 1]["text"]["text"]
    assert refresh(stack) == RefreshReport()  # one mark, one publish
    assert len(stack.slack.recorder.views("U0MEMBER")) == versions + 1
    assert tab_of(stack, "U0MEMBER").dirty_since is None

    stack.run(stack.bot.services.home.mark(["U0MEMBER"], now=CLOCK.now))  # the session changed again
    assert refresh(stack) == RefreshReport()  # refreshed less than the interval ago: it waits
    later()
    assert refresh(stack).published == ["U0MEMBER"]
    assert refresh(stack) == RefreshReport()
    assert len(stack.slack.recorder.views("U0MEMBER")) == versions + 2


def test_someone_who_never_opened_their_home_gets_no_refresh(stack):
    settle(stack)
    assert tab_of(stack, "U0GUEST") is None
    stack.command("session start computer=ci check the guest path", user="U0OWNER")  # the owner's Home: never opened here
    later()
    report = refresh(stack)
    assert "U0OWNER" not in report.published
    assert stack.slack.recorder.home("U0OWNER") is None


def test_a_request_filed_and_decided_refreshes_the_requester_and_the_approvers(stack):
    settle(stack)
    open_home(stack, "U0MANAGER")
    open_home(stack, "U0MEMBER")
    stack.command('limits request 4200 reason="load tests"', user="U0MEMBER")
    [request] = stack.run(stack.bot.services.limits.store.recent(1))
    assert request.state == PENDING
    later()
    assert sorted(refresh(stack).published) == ["U0MANAGER", "U0MEMBER"]
    manager = view_of(stack, "U0MANAGER")
    assert manager == expected(stack, "U0MANAGER")
    buttons = [(e["action_id"], e["value"]) for b in blocks_of_type(manager, "actions") for e in b["elements"]]
    assert buttons == [(limits_fmt.APPROVE_ACTION, str(request.id)), (limits_fmt.REJECT_ACTION, str(request.id))]

    clicked = stack.inprocess._reply(
        stack.run(stack.inprocess.client.send_home_action(limits_fmt.APPROVE_ACTION, str(request.id), user_id="U0MANAGER"))
    )
    assert clicked.status == 200
    assert stack.run(stack.bot.services.limits.store.get(request.id)).state == APPLIED
    # refreshed less than the interval ago, but a decision is shown at the next tick (#29: the
    # approver's Home kept offering Approve for the rest of the interval)
    assert sorted(refresh(stack).published) == ["U0MANAGER", "U0MEMBER"]
    manager = view_of(stack, "U0MANAGER")
    waiting = manager["blocks"].index(header(fmt.WAITING_TITLE).to_dict())
    assert manager["blocks"][waiting + 1]["text"]["text"] == fmt.NO_WAITING
    assert view_of(stack, "U0MEMBER") == expected(stack, "U0MEMBER")  # their request, applied
    assert refresh(stack) == RefreshReport()


def test_a_newer_view_is_never_overwritten_and_the_next_refresh_is_unconditional(stack):
    settle(stack)
    open_home(stack, "U0MANAGER")
    stack.run(stack.bot.services.home.mark(["U0MANAGER"], now=CLOCK.now))
    newer = {"type": "home", "blocks": [header("published elsewhere").to_dict()]}
    assert isinstance(stack.run(stack.bot.services.slack.publish_home("U0MANAGER", newer)), str)  # not recorded by the bot
    later()
    report = refresh(stack)
    assert (report.published, report.conflicts) == ([], ["U0MANAGER"])
    assert view_of(stack, "U0MANAGER") == newer  # Slack answered hash_conflict: the newer view stays
    assert tab_of(stack, "U0MANAGER").view_hash is None  # forgotten: the next publish is unconditional
    assert refresh(stack).published == ["U0MANAGER"]  # still dirty, and due
    assert view_of(stack, "U0MANAGER") == expected(stack, "U0MANAGER")
    assert tab_of(stack, "U0MANAGER").view_hash == stack.slack.recorder.home("U0MANAGER").hash


def test_a_failed_publish_is_tried_again_after_a_while(stack):
    settle(stack)
    open_home(stack, "U0MEMBER")
    stack.run(stack.bot.services.home.mark(["U0MEMBER"], now=CLOCK.now))
    later()
    stack.slack.web_api.fail_next("views.publish", "internal_error")  # transient, answered with HTTP 200: not retried in-line
    assert refresh(stack).failed == ["U0MEMBER"]
    assert refresh(stack) == RefreshReport()  # waits REFRESH_RETRY
    stack.run(stack.bot.services.home.mark(["U0MEMBER"], now=CLOCK.now, prompt=True))  # a request's mark lifts no retry's wait
    assert refresh(stack) == RefreshReport()
    later(REFRESH_RETRY)
    assert refresh(stack).published == ["U0MEMBER"]


def test_the_refresh_keeps_under_the_publishes_a_minute_of_every_replica(stack):
    settle(stack)
    for user in ("U0MEMBER", "U0MANAGER", "U0OWNER"):
        open_home(stack, user)
    stack.run(stack.bot.services.home.mark(["U0MEMBER", "U0MANAGER", "U0OWNER"], now=CLOCK.now))
    later()
    refresher = home_refresher(stack.bot.services)
    opened_recently = stack.run(stack.bot.services.home.published_since(CLOCK.now - dt.timedelta(minutes=1)))
    assert opened_recently == 3  # the three opens of 30 s ago count against the minute
    refresher.per_minute = opened_recently + 2
    report = stack.run(refresher.tick())
    assert (len(report.published), report.deferred) == (2, 1)
    later(dt.timedelta(minutes=1))
    assert len(stack.run(refresher.tick()).published) == 1


# ---------------------------------------------------------------------- the managers' chart


def test_the_managers_home_shows_the_two_weeks_chart_uploaded_once_a_day(stack, block_kit_validator):
    open_home(stack, "U0MANAGER")
    open_home(stack, "U0OWNER")
    images = [blocks_of_type(view_of(stack, user), "image") for user in ("U0MANAGER", "U0OWNER")]
    assert images[0] == images[1] and len(images[0]) == 1
    [image] = images[0]
    file = stack.slack.recorder.file(image["slack_file"]["id"])
    assert file is not None and file.completed and file.channel is None and file.content.startswith(b"\x89PNG")
    assert image["title"]["text"] == CHART_TITLE and image["alt_text"] == file.alt_txt
    charts = [f for f in stack.slack.recorder.files(include_pending=True) if f.filename.startswith("agent-home-")]
    assert len(charts) == 1
    view = view_of(stack, "U0MANAGER")
    assert len(view["blocks"]) <= fmt.MAX_HOME_BLOCKS
    for start in range(0, len(view["blocks"]), 50):  # the validator checks messages: 50 blocks at a time
        block_kit_validator({"text": "home", "blocks": view["blocks"][start : start + 50]})
    # another day: one more upload
    today = stack.bot.services.today()
    other = stack.run(home_charts(stack.bot.services).image(parse_period("7d", today - dt.timedelta(days=1))))
    assert other is not None and other.file_id != image["slack_file"]["id"]
    assert len([f for f in stack.slack.recorder.files(include_pending=True) if f.filename.startswith("agent-home-")]) == 2
    open_home(stack, "U0MEMBER")  # not a manager: no chart, and no upload for it
    assert blocks_of_type(view_of(stack, "U0MEMBER"), "image") == []
    assert len([f for f in stack.slack.recorder.files(include_pending=True) if f.filename.startswith("agent-home-")]) == 2


def test_a_failed_chart_upload_leaves_the_figures_and_is_tried_again_an_hour_later(stack):
    charts = HomeCharts(agent=stack.bot.services.agent, store=stack.bot.services.store, slack=stack.bot.services.slack, now=CLOCK)
    period = parse_period("7d", stack.bot.services.today() - dt.timedelta(days=3))
    uploads = len(stack.slack.recorder.files(include_pending=True))
    stack.slack.web_api.fail_next("files.getUploadURLExternal", "internal_error")
    assert stack.run(charts.image(period)) is None
    assert stack.run(charts.image(period)) is None  # not again within the hour
    assert len(stack.slack.recorder.files(include_pending=True)) == uploads
    later(dt.timedelta(hours=1))
    assert stack.run(charts.image(period)) is not None


def test_a_chart_slack_refuses_is_dropped_and_the_home_published_without_it(stack):
    charts = home_charts(stack.bot.services)
    period = parse_period("7d", stack.bot.services.today())
    chart = stack.run(charts.image(period))
    assert chart is not None
    not_an_image = stack.run(stack.bot.services.slack.upload_unshared(content=b"plain", filename="notes.txt", title="notes"))
    assert isinstance(not_an_image, str)

    def swap() -> None:
        from sqlalchemy import update

        from bot.services.home import home_charts as table

        with stack.bot.services.store.engine.begin() as conn:
            conn.execute(update(table).where(table.c.day == period.end).values(file_id=not_an_image))

    stack.run(stack.bot.services.store.run(swap))
    open_home(stack, "U0MANAGER")
    assert blocks_of_type(view_of(stack, "U0MANAGER"), "image") == []
    assert view_of(stack, "U0MANAGER")["blocks"][3:] == expected(stack, "U0MANAGER")["blocks"][3:]
    row = stack.run(charts._row(period.end))
    assert (row.file_id, row.error) == (None, CHART_REFUSED)
    assert stack.run(charts.image(period)) is None  # not uploaded again that day


# ---------------------------------------------------------------------- top users, alert subscriptions


def test_top_users_slack_knows_are_mentions(stack):
    open_home(stack, "U0MANAGER")
    view = view_of(stack, "U0MANAGER")
    summary = stack.run(home_service(stack.bot.services).usage())
    by_email = {u.email: u.id for u in stack.slack.directory.users if u.email}
    lines = [
        f"{i}. {f'<@{by_email[row.name]}>' if row.name in by_email else esc(row.name)}: {number(row.value, compact=True)} ({row.share:.0%})"
        for i, row in enumerate(summary.top_users[: fmt.TOP_USERS_SHOWN], 1)
    ]
    assert any(row.name in by_email for row in summary.top_users[: fmt.TOP_USERS_SHOWN])  # the sandbox's alice is one
    assert {"type": "mrkdwn", "text": fmt.TOP_USERS + "\n" + "\n".join(lines)} in [b.get("text") for b in view["blocks"]]


def test_alert_subscriptions_of_my_dm_and_those_i_created_are_on_my_home(stack):
    dm = dm_channel_id("U0MANAGER")
    assert stack.command("alerts subscribe controls", user="U0MANAGER", channel=dm).status == 200
    assert stack.command("alerts subscribe controls", user="U0MANAGER", channel="C0GENERAL").status == 200
    assert stack.command("alerts subscribe controls", user="U0OWNER", channel="C0DIGEST").status == 200
    subs = {s.channel_id: s for s in stack.run(stack.bot.services.alerts.repo.subscriptions())}
    assert stack.command(f"alerts mute {subs['C0GENERAL'].id} for=2h", user="U0MANAGER", channel="C0GENERAL").status == 200
    open_home(stack, "U0MANAGER")
    view = view_of(stack, "U0MANAGER")
    at = view["blocks"].index(header(fmt.ALERTS_TITLE).to_dict())
    muted = stack.run(stack.bot.services.alerts.repo.get(subs["C0GENERAL"].id)).muted_until
    assert view["blocks"][at + 1]["text"]["text"] == "\n".join(
        [
            fmt.ALERT_LINE.format(id=subs[dm].id, kind="controls", target=DM_TARGET, state=fmt.ALERT_ON),
            fmt.ALERT_LINE.format(
                id=subs["C0GENERAL"].id, kind="controls", target="<#C0GENERAL>", state=fmt.ALERT_MUTED.format(until=limits_fmt.when(muted))
            ),
        ]
    )
    open_home(stack, "U0MEMBER")
    member = view_of(stack, "U0MEMBER")
    at = member["blocks"].index(header(fmt.ALERTS_TITLE).to_dict())
    assert member["blocks"][at + 1]["text"]["text"] == fmt.NO_ALERTS
