"""The credit-limit workflow's state machine, on a real SQLite store with a fake gateway and agent.

Slack and the Agent platform are outside systems: the gateway and the agent are small fakes that
record what the workflow sent (the end-to-end tests in tests/handlers/test_limits.py run the same
paths against the Slack emulator and the sandbox API). Every Slack payload is compared whole with
the formatter's.
"""

from __future__ import annotations

import asyncio
import dataclasses
import datetime as dt

import pytest

from bot import outcomes
from bot.api.errors import PartialLimitsUpdateError, ServerError
from bot.api.models import CreditLimitEntry, CreditLimitError, CreditLimitUpdateResult
from bot.policy import Policy
from bot.roles import DEFAULT_POLICY, ResolvedUser, Role
from bot.services.limits import (
    APPLIED,
    APPROVED,
    CANCELLED,
    EXPIRED,
    NOT_APPLIED,
    PENDING,
    POST_FAILED,
    POST_FAILED_HINT,
    REJECTED,
    STALL_MINUTES,
    STALLED,
    VIEW_FAILED,
    VIEW_FAILED_HINT,
    ApprovalsConfig,
    LimitEntry,
    LimitsStore,
    LimitsWorkflow,
    Outcome,
    Refusal,
    Refused,
)
from bot.slack import DONE, Posted, SlackFailure
from bot.store import Store
from formatters import limits as fmt
from formatters.notices import error_message, refusal_message

START = dt.datetime(2026, 11, 22, 9, 0, tzinfo=dt.UTC)
CHANNEL = "C0ENG"
BOB = ResolvedUser("U0MANAGER", "bob@example.com", Role.manager, "roles file")
ALICE = ResolvedUser("U0OWNER", "alice@example.com", Role.owner, "roles file")
CAROL = ResolvedUser("U0MEMBER", "carol@example.com", Role.member, "organization user")
DAN = ResolvedUser("U0DAN", "dan@example.com", Role.manager, "roles file")
THRESHOLD = 10000


class Clock:
    def __init__(self) -> None:
        self.now = START

    def __call__(self) -> dt.datetime:
        return self.now


class FakeGateway:
    """The gateway's post / update / open_view, recorded; ``fail`` maps a method to Slack's error."""

    def __init__(self) -> None:
        self.posts: list[tuple[str, dict, str | None]] = []
        self.updates: list[tuple[str, str, dict]] = []
        self.views: list[tuple[str, dict]] = []
        self.fail: dict[str, str] = {}
        self._ts = 0

    async def post(self, channel, payload, *, thread_ts=None, metadata=None, unfurl_links=False):
        if "chat.postMessage" in self.fail:
            return SlackFailure("chat.postMessage", self.fail["chat.postMessage"], True)
        self.posts.append((channel, dict(payload), thread_ts))
        self._ts += 1
        return Posted(channel, f"1700000000.{self._ts:06d}")

    async def update(self, channel, ts, payload):
        if "chat.update" in self.fail:
            return SlackFailure("chat.update", self.fail["chat.update"], True)
        self.updates.append((channel, ts, dict(payload)))
        return Posted(channel, ts)

    async def open_view(self, trigger_id, view):
        if "views.open" in self.fail:
            return SlackFailure("views.open", self.fail["views.open"], True)
        self.views.append((trigger_id, dict(view)))
        return DONE


class FakeAgent:
    """PUT /api/v0/organization/usage/limits/users: applies every entry, or raises ``error``; ``rejected``
    e-mails come back in ``errors`` (per-user outcome)."""

    def __init__(self) -> None:
        self.puts: list[list[tuple[str, int]]] = []
        self.error: Exception | None = None
        self.rejected: dict[str, str] = {}

    async def set_user_limits(self, *, entries):
        self.puts.append(list(entries))
        await asyncio.sleep(0)  # let a concurrent click run in between
        if self.error is not None:
            raise self.error
        return CreditLimitUpdateResult(
            updated=[CreditLimitEntry(email=e, limit=n) for e, n in entries if e not in self.rejected],
            errors=[CreditLimitError(email=e, error=self.rejected[e]) for e, _ in entries if e in self.rejected],
        )


def server_error() -> ServerError:
    return ServerError("500", method="PUT", url="/api/v0/organization/usage/limits/users", status=500)


@pytest.fixture
def database(tmp_path):
    return f"sqlite:///{tmp_path / 'bot.db'}"


@pytest.fixture
def parts(database):
    store = Store(database)
    clock, slack, agent = Clock(), FakeGateway(), FakeAgent()
    policy = Policy(DEFAULT_POLICY, owner_required_above=THRESHOLD)
    workflow = LimitsWorkflow(
        agent=agent, store=LimitsStore(store), slack=slack, now=clock, config=ApprovalsConfig(), policy=policy, messages=fmt
    )
    yield workflow, slack, agent, clock
    store.close()


DAVE_500 = (LimitEntry("dave@example.com", 500),)


async def file(workflow, entries=DAVE_500, requester=BOB):
    filed = await workflow.file(
        requester_id=requester.user_id, requester_email=requester.email, reason=" Q4 ", entries=list(entries), channel=CHANNEL
    )
    assert not isinstance(filed, Refusal)
    return filed


def said(outcome):
    """A refusal as the workflow typed it (reason, the request as it is now) and as its handler
    words it (:func:`formatters.limits.refusal_notice`)."""
    assert isinstance(outcome, Refusal), outcome
    return outcome.reason, outcome.request, fmt.refusal_notice(outcome)


def shown_message(request):
    """The request message as the workflow shows it: with who may press its buttons (default policy)."""
    return fmt.request_message(request, button_roles=fmt.ButtonRoles("manager", "manager", "manager", THRESHOLD))


def shown(slack, request):
    """Whether the last edit of the request message shows ``request`` as it is."""
    return slack.updates[-1] == (request.channel, request.message_ts, shown_message(request))


def published(slack, request):
    """The outcome in the request's thread and by DM to the requester, the last two posts."""
    notice = fmt.outcome_notice(request)
    return slack.posts[-2:] == [(request.channel, notice, request.message_ts), (request.requester_id, notice, None)]


async def test_filing_posts_the_request_message_and_records_where(parts):
    workflow, slack, _, _ = parts
    request = await file(workflow)
    assert (request.state, request.reason, request.channel) == (PENDING, "Q4", CHANNEL)
    assert request.expires_at == START + dt.timedelta(hours=24)
    assert slack.posts == [(CHANNEL, shown_message(await workflow.store.get(request.id)), None)]
    assert request.message_ts == "1700000000.000001"


async def test_a_refused_post_cancels_the_request_and_names_channel_and_error(parts):
    workflow, slack, _, _ = parts
    slack.fail["chat.postMessage"] = "not_in_channel"
    refusal = await workflow.file(
        requester_id=BOB.user_id, requester_email=BOB.email, reason="", entries=[LimitEntry("dave@example.com", 1)], channel=CHANNEL
    )
    assert isinstance(refusal, Refusal) and refusal.reason is Refused.POST_FAILED
    assert fmt.refusal_notice(refusal) == error_message(POST_FAILED.format(channel=CHANNEL, error="not_in_channel"), POST_FAILED_HINT)
    assert refusal.request.state == CANCELLED
    assert (await workflow.store.get(refusal.request.id)).state == CANCELLED


async def test_approved_then_applied_once_shown_in_place_in_the_thread_and_by_dm(parts):
    workflow, slack, agent, _ = parts
    request = await file(workflow)
    done = await workflow.approve(request, ALICE)
    assert (done.state, done.decided_by) == (APPLIED, ALICE.user_id)
    assert done.outcome == Outcome({"dave@example.com": 500})
    assert agent.puts == [[("dave@example.com", 500)]]
    approved = dataclasses.replace(done, state=APPROVED, outcome=None, applied_at=None)
    assert slack.updates == [
        (CHANNEL, done.message_ts, shown_message(approved)),
        (CHANNEL, done.message_ts, shown_message(done)),
    ]
    assert published(slack, done)
    assert (await workflow.store.known(["dave@example.com"]))["dave@example.com"].limit == 500
    again = await workflow.approve(await workflow.store.get(request.id), ALICE)
    assert said(again) == (Refused.DECIDED, done, fmt.decided_before(done))
    assert len(agent.puts) == 1


async def test_the_requester_never_approves_by_id_or_by_e_mail(parts):
    workflow, _, agent, _ = parts
    request = await file(workflow)
    same_person = ResolvedUser("U0OTHERID", "BOB@example.com", Role.owner, "roles file")
    for user in (BOB, same_person):
        assert said(await workflow.approve(request, user)) == (Refused.SELF_APPROVAL, request, fmt.self_approval(request))
    assert (await workflow.store.get(request.id)).state == PENDING and agent.puts == []


async def test_above_the_owner_threshold_only_an_owner_approves(parts):
    workflow, _, agent, _ = parts
    big = await file(workflow, [LimitEntry("dave@example.com", THRESHOLD), LimitEntry("erin@example.com", 1)])
    assert big.size == THRESHOLD + 1
    assert said(await workflow.approve(big, DAN)) == (Refused.OWNER_NEEDED, big, fmt.owner_needed(big, THRESHOLD))
    assert agent.puts == []
    assert (await workflow.approve(big, ALICE)).state == APPLIED
    at_threshold = await file(workflow, [LimitEntry("frank@example.com", THRESHOLD)])
    assert (await workflow.approve(at_threshold, DAN)).state == APPLIED


async def test_below_the_approver_role_is_refused_with_the_role_checks_message(parts):
    workflow, _, _, _ = parts
    request = await file(workflow)
    refusal = await workflow.approve(request, CAROL)
    assert said(refusal) == (
        Refused.ROLE,
        request,
        refusal_message(fmt.APPROVE_ACTION, "manager", "member", source=CAROL.source, email=CAROL.email),
    )


async def test_a_failed_put_leaves_it_not_applied_and_retry_applies_it_once(parts):
    workflow, slack, agent, _ = parts
    request = await file(workflow)
    agent.error = server_error()
    failed = await workflow.approve(request, ALICE)
    assert (failed.state, failed.outcome.problem) == (NOT_APPLIED, "The Agent platform had an internal error.")
    assert shown(slack, failed) and published(slack, failed)
    agent.error = None
    done = await workflow.retry(failed, DAN)
    assert (done.state, done.decided_by) == (APPLIED, ALICE.user_id)
    assert agent.puts == [[("dave@example.com", 500)]] * 2
    late = await workflow.retry(failed, DAN)
    assert said(late) == (Refused.NOT_RETRYABLE, done, fmt.not_retryable(done))


async def test_a_later_batch_failing_records_what_was_applied(parts):
    workflow, _, agent, _ = parts
    request = await file(workflow, [LimitEntry("dave@example.com", 5), LimitEntry("erin@example.com", 6)])
    partial = CreditLimitUpdateResult(updated=[CreditLimitEntry(email="dave@example.com", limit=5)], errors=[])
    error = PartialLimitsUpdateError("batch 2 failed", result=partial, unsent=[])
    error.__cause__ = server_error()
    agent.error = error
    failed = await workflow.approve(request, ALICE)
    assert failed.state == NOT_APPLIED
    assert failed.outcome == Outcome({"dave@example.com": 5}, {}, "The Agent platform had an internal error.")
    assert list(await workflow.store.known()) == ["dave@example.com"]


async def test_per_user_errors_are_kept_and_only_updated_users_become_known(parts):
    workflow, _, agent, _ = parts
    agent.rejected = {"left@example.com": "no organization user has this e-mail"}
    request = await file(workflow, [LimitEntry("dave@example.com", 5), LimitEntry("left@example.com", 6)])
    done = await workflow.approve(request, ALICE)
    assert done.outcome == Outcome({"dave@example.com": 5}, {"left@example.com": "no organization user has this e-mail"})
    assert list(await workflow.store.known()) == ["dave@example.com"]


async def test_a_failed_edit_does_not_undo_an_applied_limit(parts):
    workflow, slack, agent, _ = parts
    request = await file(workflow)
    slack.fail["chat.update"] = "message_not_found"
    done = await workflow.approve(request, ALICE)
    assert done.state == APPLIED and agent.puts == [[("dave@example.com", 500)]]
    assert slack.updates == [] and published(slack, done)  # the thread and the DM still go out


async def test_changed_last_known_limits_refresh_the_message_and_ask_to_confirm(parts):
    workflow, slack, agent, _ = parts
    first = await file(workflow, [LimitEntry("dave@example.com", 100)])
    second = await file(workflow, [LimitEntry("dave@example.com", 300)])
    assert (await workflow.approve(first, ALICE)).state == APPLIED
    prompt = await workflow.approve(second, ALICE)
    refreshed = await workflow.store.get(second.id)
    assert refreshed.state == PENDING and refreshed.before == {"dave@example.com": 100}
    assert said(prompt) == (Refused.BEFORE_CHANGED, refreshed, fmt.before_changed(refreshed))
    assert shown(slack, refreshed)
    done = await workflow.approve(refreshed, ALICE, confirmed=True)
    assert done.state == APPLIED and agent.puts[-1] == [("dave@example.com", 300)]


async def test_two_approvers_at_once_on_two_replicas_one_put(parts, database):
    workflow, _, agent, clock = parts
    other = Store(database)
    try:
        replica = LimitsWorkflow(
            agent=agent,
            store=LimitsStore(other),
            slack=FakeGateway(),
            now=clock,
            config=ApprovalsConfig(),
            policy=workflow.policy,
            messages=fmt,
        )
        request = await file(workflow)
        results = await asyncio.gather(*(w.approve(request, u) for w, u in [(workflow, ALICE), (replica, DAN)] * 3))
        won = [r for r in results if not isinstance(r, Refusal)]
        lost = [r for r in results if isinstance(r, Refusal)]
        assert len(won) == 1 and won[0].state == APPLIED
        assert {r.reason for r in lost} == {Refused.DECIDED} and len(lost) == 5
        assert agent.puts == [[("dave@example.com", 500)]]
    finally:
        other.close()


async def test_cancel_is_the_requesters_only(parts):
    workflow, slack, _, _ = parts
    request = await file(workflow, requester=CAROL)
    assert said(await workflow.cancel(request, ALICE)) == (Refused.ONLY_REQUESTER, request, fmt.only_requester(request))
    cancelled = await workflow.cancel(request, CAROL)
    assert (cancelled.state, cancelled.decided_by) == (CANCELLED, CAROL.user_id)
    assert shown(slack, cancelled) and published(slack, cancelled)
    assert said(await workflow.cancel(request, CAROL)) == (Refused.DECIDED, cancelled, fmt.decided_before(cancelled))


async def test_reject_opens_the_modal_and_its_submission_decides(parts):
    workflow, slack, _, _ = parts
    request = await file(workflow)
    assert said(await workflow.open_reject(request, BOB, "T1")) == (Refused.SELF_REJECTION, request, fmt.self_rejection(request))
    assert await workflow.open_reject(request, ALICE, "T2") == request
    assert slack.views == [("T2", fmt.reject_modal(request))]
    value = str(request.id)
    assert fmt.reject_errors(await workflow.reject(value, ALICE.user_id, "  ")) == {fmt.REJECT_BLOCK: fmt.REJECT_REQUIRED}
    assert fmt.reject_errors(await workflow.reject("999", ALICE.user_id, "no")) == {fmt.REJECT_BLOCK: fmt.MISSING.format(id="999")}
    assert fmt.reject_errors(await workflow.reject(value, BOB.user_id, "no")) == {
        fmt.REJECT_BLOCK: fmt.SELF_REJECTION.format(id=request.id)
    }
    rejected = await workflow.reject(value, ALICE.user_id, " too much ")
    assert (rejected.state, rejected.decided_by, rejected.reject_reason) == (REJECTED, ALICE.user_id, "too much")
    again = await workflow.reject(value, DAN.user_id, "me too")
    assert fmt.reject_errors(again) == {fmt.REJECT_BLOCK: fmt.ALREADY_DECIDED.format(id=request.id, state="rejected")}
    assert said(await workflow.open_reject(rejected, DAN, "T3")) == (Refused.DECIDED, rejected, fmt.decided_before(rejected))


async def test_a_modal_that_cannot_open_is_told(parts):
    workflow, slack, _, _ = parts
    request = await file(workflow)
    slack.fail["views.open"] = "expired_trigger_id"
    refusal = await workflow.open_reject(request, ALICE, "T1")
    assert said(refusal) == (Refused.VIEW_FAILED, request, error_message(VIEW_FAILED.format(error="expired_trigger_id"), VIEW_FAILED_HINT))


async def test_a_missing_request_is_told(parts):
    workflow, _, _, _ = parts
    assert said(await workflow.load("42")) == (Refused.MISSING, None, fmt.missing("42"))
    assert said(await workflow.load("")) == (Refused.MISSING, None, fmt.missing("?"))
    for value in ("1; DROP", "\u00b2", "9" * 30):  # not ASCII digits, or beyond any id: no look-up, no crash
        assert said(await workflow.load(value)) == (Refused.MISSING, None, fmt.missing(value))
        assert fmt.reject_errors(await workflow.reject(value, ALICE.user_id, "no")) == {fmt.REJECT_BLOCK: fmt.MISSING.format(id=value[:40])}


async def test_expiry_by_the_job_and_at_click_time(parts):
    workflow, slack, agent, clock = parts
    swept = await file(workflow)
    clicked = await file(workflow, [LimitEntry("erin@example.com", 1)])
    clock.now = START + dt.timedelta(hours=23, minutes=59)
    await workflow.tick()
    assert (await workflow.store.get(swept.id)).state == PENDING
    clock.now = START + dt.timedelta(hours=24)
    refusal = await workflow.approve(clicked, ALICE)
    assert said(refusal) == (Refused.EXPIRED, clicked, fmt.expired_notice(clicked))
    expired = await workflow.store.get(clicked.id)
    assert expired.state == EXPIRED and shown(slack, expired) and published(slack, expired)
    await workflow.tick()
    assert (await workflow.store.get(swept.id)).state == EXPIRED
    assert agent.puts == []


async def test_the_stall_sweep_makes_an_interrupted_approval_retryable(parts):
    workflow, slack, agent, clock = parts
    request = await file(workflow)
    await workflow.store.approve(request.id, ALICE.user_id, START)  # then the bot stopped
    clock.now = START + dt.timedelta(minutes=STALL_MINUTES - 1)
    await workflow.tick()
    assert (await workflow.store.get(request.id)).state == APPROVED  # maybe still applying
    clock.now = START + dt.timedelta(minutes=STALL_MINUTES)
    await workflow.tick()
    stalled = await workflow.store.get(request.id)
    assert (stalled.state, stalled.outcome.problem) == (NOT_APPLIED, STALLED)
    assert shown(slack, stalled) and published(slack, stalled)
    done = await workflow.retry(stalled, DAN)
    assert done.state == APPLIED and agent.puts == [[("dave@example.com", 500)]]


async def test_an_outcome_after_the_sweep_took_over_is_not_recorded_twice(parts):
    workflow, _, agent, clock = parts
    request = await file(workflow)
    approved = await workflow.store.approve(request.id, ALICE.user_id, START)
    clock.now = START + dt.timedelta(minutes=STALL_MINUTES)
    await workflow.tick()  # the sweep marks it not applied while the PUT below is under way
    result = await workflow.apply(approved)
    assert result == approved and agent.puts == [[("dave@example.com", 500)]]
    assert (await workflow.store.get(request.id)).outcome.problem == STALLED


async def test_tampered_entries_are_never_sent(parts):
    workflow, slack, agent, _ = parts
    request = await file(workflow)
    approved = await workflow.store.approve(request.id, ALICE.user_id, START)
    forged = dataclasses.replace(approved, entries=(LimitEntry("dave@example.com", 10**9),))
    done = await workflow.apply(forged)
    assert (done.state, done.outcome.problem) == (NOT_APPLIED, fmt.TAMPERED.format(id=request.id))
    assert agent.puts == [] and published(slack, done)


def test_every_reason_is_one_kind_of_the_shared_outcomes():
    assert {reason: reason.kind for reason in Refused} == {
        Refused.MISSING: outcomes.NotFound,
        Refused.DECIDED: outcomes.NothingChanged,
        Refused.EXPIRED: outcomes.NothingChanged,
        Refused.SELF_APPROVAL: outcomes.Refused,
        Refused.SELF_REJECTION: outcomes.Refused,
        Refused.ROLE: outcomes.Refused,
        Refused.OWNER_NEEDED: outcomes.Refused,
        Refused.BEFORE_CHANGED: outcomes.NothingChanged,
        Refused.ONLY_REQUESTER: outcomes.Refused,
        Refused.NOT_RETRYABLE: outcomes.NothingChanged,
        Refused.POST_FAILED: outcomes.Invalid,
        Refused.VIEW_FAILED: outcomes.Invalid,
        Refused.NO_REASON: outcomes.Invalid,
    }


class Recording:
    """A :class:`bot.services.limits.LimitsMessages` that records what the workflow asks it for."""

    def __init__(self) -> None:
        self.asked: list[tuple[str, int]] = []

    def request_message(self, request, *, button_roles=None):
        self.asked.append(("request_message", request.id))
        return {"text": f"request {request.id}", "blocks": []}

    def outcome_notice(self, request):
        self.asked.append(("outcome_notice", request.id))
        return {"text": f"outcome {request.id}", "blocks": []}

    def reject_modal(self, request):
        self.asked.append(("reject_modal", request.id))
        return {"type": "modal"}


async def test_what_the_workflow_posts_comes_from_the_messages_it_was_handed(parts):
    workflow, slack, _, _ = parts
    recording = Recording()
    workflow.messages = recording
    request = await file(workflow)
    await workflow.open_reject(request, ALICE, "T1")
    cancelled = await workflow.cancel(request, BOB)
    assert recording.asked == [
        ("request_message", request.id),
        ("reject_modal", request.id),
        ("request_message", request.id),
        ("outcome_notice", request.id),
    ]
    assert slack.posts[0] == (CHANNEL, {"text": f"request {request.id}", "blocks": []}, None)
    assert slack.views == [("T1", {"type": "modal"})]
    notice = {"text": f"outcome {request.id}", "blocks": []}
    assert slack.posts[-2:] == [(CHANNEL, notice, cancelled.message_ts), (BOB.user_id, notice, None)]
