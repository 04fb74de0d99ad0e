"""The App Home tab: ``app_home_opened`` dispatched in-process (``tests/inprocess.py``), the sandbox
Agent API and the Slack emulator on loopback; what the bot published is read from the emulator
(``recorder.home``). A click in the Home tab is sent as Slack sends it: no channel, message nor
response_url (``send_home_action``)."""

from __future__ import annotations

import datetime as dt
from typing import Any

from bot.roles import ResolvedUser
from bot.services.home.build import WAITING_SHOWN
from bot.services.limits import APPLIED, PENDING
from bot.stack import GUEST_EMAIL
from bot.user_errors import describe_api_error
from formatters import home as fmt
from formatters import limits as limits_fmt
from formatters.blocks import context, divider, header, section
from handlers.home import home_service
from sandbox.slack_emulator import dm_channel_id
from tests.conftest import sandbox_get
from tests.inprocess import InProcessReply, inprocess_fixture

START = dt.datetime(2026, 11, 22, 9, 0, tzinfo=dt.UTC)


class Clock:
    def __init__(self) -> None:
        self.now = START

    def __call__(self) -> dt.datetime:
        return self.now


CLOCK = Clock()
stack = inprocess_fixture(now=CLOCK, run_jobs=False)


def open_home(stack: Any, user: str, tab: str = "home") -> InProcessReply:
    reply = stack.inprocess._reply(stack.run(stack.inprocess.client.send_app_home_opened(user, tab=tab)))
    assert reply.status == 200
    return reply


def home_click(stack: Any, action_id: str, user: str, value: str) -> InProcessReply:
    reply = stack.inprocess._reply(stack.run(stack.inprocess.client.send_home_action(action_id, value, user_id=user)))
    assert reply.status == 200
    return reply


def published(stack: Any, user: str) -> dict[str, Any]:
    home = stack.slack.recorder.home(user)
    assert home is not None, f"no Home tab published for {user}"
    return home.view


def headers(view: dict[str, Any]) -> list[str]:
    return [b["text"]["text"] for b in view["blocks"] if b["type"] == "header"]


def expected(stack: Any, user: ResolvedUser) -> dict[str, Any]:
    """The Home the service and the formatter give ``user`` now."""
    return fmt.home_view(stack.run(home_service(stack.bot.services).gather(user)))


def resolved(stack: Any, user_id: str) -> ResolvedUser:
    return stack.run(stack.bot.services.resolver.resolve(user_id))


def test_a_guest_gets_a_home_that_says_who_they_are_why_and_who_can_help(stack, block_kit_validator):
    open_home(stack, "U0GUEST")
    view = published(stack, "U0GUEST")
    dave = GUEST_EMAIL
    assert view == {
        "type": "home",
        "callback_id": fmt.HOME_CALLBACK,
        "blocks": [
            header(fmt.TITLE).to_dict(),
            context(fmt.REFRESHED.format(when=limits_fmt.when(START))).to_dict(),
            divider().to_dict(),
            section(
                f"{fmt.GUEST_HEAD}\nYou are a *guest*: your Slack e-mail `{dave}` is not an organization user of the Agent platform."
            ).to_dict(),
            context(f"Ask an admin of the Agent platform to add `{dave}` to its organization, then try again in a few minutes.").to_dict(),
        ],
    }
    block_kit_validator({"text": "home", "blocks": view["blocks"]})


def test_a_member_gets_their_sessions_and_requests_and_no_approvals(stack, block_kit_validator):
    open_home(stack, "U0MEMBER")
    view = published(stack, "U0MEMBER")
    assert headers(view) == [fmt.TITLE, fmt.SESSIONS_TITLE, fmt.REQUESTS_TITLE, fmt.ALERTS_TITLE]
    assert view == expected(stack, resolved(stack, "U0MEMBER"))
    block_kit_validator({"text": "home", "blocks": view["blocks"]})


def test_a_manager_gets_approvals_and_the_organization(stack, block_kit_validator):
    open_home(stack, "U0MANAGER")
    view = published(stack, "U0MANAGER")
    assert headers(view) == [fmt.TITLE, fmt.SESSIONS_TITLE, fmt.REQUESTS_TITLE, fmt.WAITING_TITLE, fmt.ALERTS_TITLE, fmt.DASHBOARD_TITLE]
    assert view == expected(stack, resolved(stack, "U0MANAGER"))
    assert not any(b["type"] == "section" and b["text"]["text"].startswith(":warning:") for b in view["blocks"] if b.get("text"))
    block_kit_validator({"text": "home", "blocks": view["blocks"]})


def test_the_messages_tab_publishes_nothing(stack):
    before = len(stack.slack.recorder.views("U0OWNER"))
    open_home(stack, "U0OWNER", tab="messages")
    assert len(stack.slack.recorder.views("U0OWNER")) == before


def test_a_failing_api_shows_in_its_sections_and_the_others_stay(stack, faults):
    faults(error_rate=1.0)  # every Agent API call answers 500: the organization's sections fail
    open_home(stack, "U0MANAGER")
    view = published(stack, "U0MANAGER")
    from bot.api import errors

    error, _hint = describe_api_error(errors.ServerError("500", status=500, method="GET", url="http://sandbox.test"))
    failed = [
        b["text"]["text"]
        for b in view["blocks"]
        if b["type"] == "section" and (b.get("text") or {}).get("text", "").startswith(":warning:")
    ]
    assert failed == [fmt.FAULT.format(error=error)] * 4  # usage, readiness, computers, controls
    assert headers(view) == [fmt.TITLE, fmt.SESSIONS_TITLE, fmt.REQUESTS_TITLE, fmt.WAITING_TITLE, fmt.ALERTS_TITLE, fmt.DASHBOARD_TITLE]
    faults(error_rate=0.0)
    user = resolved(stack, "U0MANAGER")
    assert view["blocks"][:8] == expected(stack, user)["blocks"][:8]


def test_approve_from_the_home_tab_applies_once(stack):
    updates_before = len(sandbox_get(stack, "/_sandbox/limits")["updates"])
    stack.command('limits request 4200 reason="load tests"', user="U0MEMBER")
    [request] = stack.run(stack.bot.services.limits.store.recent(1))
    assert (request.state, request.requester_id) == (PENDING, "U0MEMBER")

    open_home(stack, "U0MANAGER")
    view = published(stack, "U0MANAGER")
    buttons = [e for b in view["blocks"] if b["type"] == "actions" for e in b["elements"]]
    assert [(e["action_id"], e["value"]) for e in buttons] == [
        (limits_fmt.APPROVE_ACTION, str(request.id)),
        (limits_fmt.REJECT_ACTION, str(request.id)),
    ]
    first = home_click(stack, limits_fmt.APPROVE_ACTION, "U0MANAGER", str(request.id))
    assert first.responses == []
    done = stack.run(stack.bot.services.limits.store.get(request.id))
    assert (done.state, done.decided_by) == (APPLIED, "U0MANAGER")
    assert len(sandbox_get(stack, "/_sandbox/limits")["updates"]) == updates_before + 1

    # the same button clicked again (a stale Home): nothing changes, and bob is told why by DM
    dms_before = len(stack.slack.recorder.messages(dm_channel_id("U0MANAGER")))
    home_click(stack, limits_fmt.APPROVE_ACTION, "U0MANAGER", str(request.id))
    assert len(sandbox_get(stack, "/_sandbox/limits")["updates"]) == updates_before + 1
    [told] = stack.slack.recorder.messages(dm_channel_id("U0MANAGER"))[dms_before:]
    assert {"text": told.text, "blocks": told.blocks} == limits_fmt.decided_before(done)

    open_home(stack, "U0MANAGER")  # refreshed when opened: nothing waits any more
    waiting_header = published(stack, "U0MANAGER")["blocks"].index(header(fmt.WAITING_TITLE).to_dict())
    assert published(stack, "U0MANAGER")["blocks"][waiting_header + 1]["text"]["text"] == fmt.NO_WAITING


def test_opening_the_home_right_after_a_request_was_filed_shows_it_with_its_approve_button(stack):
    """alice (owner) opens her Home right after bob filed a request, while a refresh gathered before
    the request published in between: the event carries the hash alice's client had, which Slack no
    longer has; the open must still publish what is true now, not leave the refresh's older view."""
    open_home(stack, "U0OWNER")  # alice saw her Home before
    before = stack.slack.recorder.home("U0OWNER")
    opened = {
        "type": "app_home_opened",
        "user": "U0OWNER",
        "channel": dm_channel_id("U0OWNER"),
        "tab": "home",
        "event_ts": "1795000000.000100",
        "view": {**before.view, "id": before.view_id, "hash": before.hash},
    }
    older = expected(stack, resolved(stack, "U0OWNER"))  # a refresh gathered before bob's request...
    stack.command("limits set carol@example.com 5000 reason=x", user="U0MANAGER")  # bob files a request
    [request] = stack.run(stack.bot.services.limits.store.recent(1))
    assert (request.state, request.requester_id) == (PENDING, "U0MANAGER")
    assert isinstance(stack.run(stack.bot.services.slack.publish_home("U0OWNER", older)), str)  # ...publishes after it

    reply = stack.inprocess._reply(stack.run(stack.inprocess.client.send_event(opened)))  # no refresh tick
    assert reply.status == 200
    view = published(stack, "U0OWNER")
    buttons = [e for b in view["blocks"] if b["type"] == "actions" for e in b["elements"]]
    assert (limits_fmt.APPROVE_ACTION, str(request.id)) in [(e["action_id"], e["value"]) for e in buttons]
    assert view == expected(stack, resolved(stack, "U0OWNER"))


def test_more_requests_waiting_than_the_home_shows_are_counted_so_the_newest_is_not_silently_missing(stack):
    """#29 (second trial): the Home lists the 10 oldest requests an approver may decide; an 11th,
    the one just filed, was simply not there. The Home now says how many newer ones also wait."""
    for n in range(11):
        stack.command(f'limits set carol@example.com {3000 + n} reason="batch {n}"', user="U0MANAGER")
    pending = [
        r
        for r in stack.run(stack.bot.services.limits.store.recent(50))
        if r.state == PENDING and r.requester_id != "U0OWNER" and r.expires_at > CLOCK.now
    ]
    assert len(pending) > WAITING_SHOWN
    open_home(stack, "U0OWNER")

    view = published(stack, "U0OWNER")
    start = view["blocks"].index(header(fmt.WAITING_TITLE).to_dict())
    end = next(i for i in range(start + 1, len(view["blocks"])) if view["blocks"][i]["type"] in ("divider", "header"))
    waiting = view["blocks"][start + 1 : end]
    shown = [b for b in waiting if b["type"] == "actions"]
    assert [b["elements"][0]["value"] for b in shown] == [str(r.id) for r in sorted(pending, key=lambda r: r.id)][:WAITING_SHOWN]
    more = len(pending) - WAITING_SHOWN
    assert (
        waiting[-1]
        == context(
            fmt.WAITING_MORE.format(n=more, requests="requests" if more > 1 else "request", wait="wait" if more > 1 else "waits")
        ).to_dict()
    )
    assert view == expected(stack, resolved(stack, "U0OWNER"))
