"""The App Home view: whole payloads per role, the Block Kit schema, the 100-block cap, faults."""

from __future__ import annotations

import datetime as dt

from bot.services.home import Fault, Home, HomeSession
from bot.services.limits import PENDING, LimitEntry, LimitRequest
from formatters import home as fmt
from formatters.blocks import actions, button, context, divider, header, section
from formatters.limits import APPROVE_ACTION, REJECT_ACTION, when
from formatters.sessions import archive_button

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


def test_a_guest_sees_the_title_only(block_kit_validator):
    view = fmt.home_view(Home("U0GUEST", "guest", NOW))
    assert view == {"type": "home", "callback_id": fmt.HOME_CALLBACK, "blocks": TOP}
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
