"""The credit-limit request store and its state machine, on SQLite and PostgreSQL.

Every transition, every refused one, and two replicas (two ``Store`` instances on one database)
approving the same request at once: exactly one wins.
"""

import asyncio
import datetime as dt

import pytest

from bot.roles import Role, RolesConfigError
from bot.services.limits import (
    APPLIED,
    APPROVED,
    CANCELLED,
    EXPIRED,
    NOT_APPLIED,
    PENDING,
    REJECTED,
    ApprovalsConfig,
    LimitEntry,
    LimitsStore,
    Outcome,
    TransitionRefused,
    entries_hash,
)
from bot.store import Store
from tests.conftest import postgres_url

NOW = dt.datetime(2026, 11, 22, 9, 0, tzinfo=dt.UTC)
LATER = NOW + dt.timedelta(days=2)
ENTRIES = (LimitEntry("carol@example.com", 500), LimitEntry("dave@example.com", 0))


@pytest.fixture(params=["sqlite", "postgresql"])
def database_url(request, tmp_path):
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'bot.db'}"
    return postgres_url("limit_requests", "known_limits")


@pytest.fixture
def limits(database_url):
    store = Store(database_url)
    yield LimitsStore(store)
    store.close()


async def file(limits, entries=ENTRIES, hours=24):
    return await limits.file(
        requester_id="U0MANAGER",
        requester_email="Bob@example.com",
        reason="Q4 crunch",
        entries=list(entries),
        now=NOW,
        expires_at=NOW + dt.timedelta(hours=hours),
        channel="C0ENG",
    )


async def refused(coroutine, state):
    with pytest.raises(TransitionRefused) as caught:
        await coroutine
    assert (caught.value.request.state if caught.value.request else "missing") == state
    return caught.value


async def test_a_filed_request_is_pending_with_its_hash_and_unknown_before(limits):
    request = await file(limits)
    assert request.state == PENDING
    assert request.entries == ENTRIES and request.intact
    assert request.entries_hash == entries_hash(ENTRIES)
    assert request.before == {"carol@example.com": None, "dave@example.com": None}
    assert request.requester_email == "bob@example.com" and request.reason == "Q4 crunch"
    assert request.created_at == NOW and request.expires_at == NOW + dt.timedelta(hours=24)
    assert request.total_change == 500 and request.size == 500
    await limits.set_message(request.id, "C0ENG", "1.000100")
    stored = await limits.get(request.id)
    assert (stored.channel, stored.message_ts) == ("C0ENG", "1.000100")
    assert await limits.get(request.id + 100) is None


async def test_approve_then_apply_records_known_limits_for_updated_only(limits):
    request = await file(limits)
    approved = await limits.approve(request.id, "U0OWNER", NOW)
    assert (approved.state, approved.decided_by, approved.decided_at) == (APPROVED, "U0OWNER", NOW)
    outcome = Outcome({"carol@example.com": 500}, {"dave@example.com": "no organization user has this e-mail"})
    applied = await limits.mark_applied(request.id, outcome, NOW)
    assert applied.state == APPLIED and applied.outcome == outcome and applied.applied_at == NOW
    known = await limits.known()
    assert list(known) == ["carol@example.com"]
    assert (known["carol@example.com"].limit, known["carol@example.com"].request_id, known["carol@example.com"].approved_by) == (
        500,
        request.id,
        "U0OWNER",
    )
    # a later request sees the known limit as its "before" value
    second = await file(limits, [LimitEntry("carol@example.com", 800)])
    assert second.before == {"carol@example.com": 500} and second.total_change == 300
    await limits.approve(second.id, "U0OWNER", NOW)
    await limits.mark_applied(second.id, Outcome({"carol@example.com": 800}), NOW)
    assert (await limits.known(["CAROL@example.com"]))["carol@example.com"].limit == 800


async def test_every_transition_out_of_pending_and_what_is_refused_after(limits):
    rejected = await file(limits)
    with pytest.raises(ValueError):
        await limits.reject(rejected.id, "U0OWNER", "  ", NOW)
    done = await limits.reject(rejected.id, "U0OWNER", "too much", NOW)
    assert (done.state, done.reject_reason, done.decided_by) == (REJECTED, "too much", "U0OWNER")

    cancelled = await file(limits)
    assert (await limits.cancel(cancelled.id, "U0MANAGER", NOW)).state == CANCELLED

    expired = await file(limits, hours=1)
    await refused(limits.expire(expired.id, NOW), PENDING)  # not due yet
    assert (await limits.expire(expired.id, NOW + dt.timedelta(hours=1))).state == EXPIRED

    for request_id, state in ((rejected.id, REJECTED), (cancelled.id, CANCELLED), (expired.id, EXPIRED)):
        await refused(limits.approve(request_id, "U0OWNER", NOW), state)
        await refused(limits.reject(request_id, "U0OWNER", "no", NOW), state)
        await refused(limits.cancel(request_id, "U0MANAGER", NOW), state)
        await refused(limits.expire(request_id, LATER), state)
        await refused(limits.retry(request_id), state)
        await refused(limits.mark_applied(request_id, Outcome(), NOW), state)
        await refused(limits.mark_not_applied(request_id, Outcome(problem="x"), NOW), state)
    await refused(limits.approve(9999, "U0OWNER", NOW), "missing")


async def test_an_expired_request_cannot_be_approved_even_before_the_scheduler_marks_it(limits):
    request = await file(limits, hours=1)
    loser = await refused(limits.approve(request.id, "U0OWNER", NOW + dt.timedelta(hours=1)), PENDING)
    assert loser.request.expires_at <= NOW + dt.timedelta(hours=1)
    assert [r.id for r in await limits.due(PENDING, "expires_at", NOW + dt.timedelta(hours=1))] == [request.id]


async def test_approve_twice_the_second_is_told_who_decided_first(limits):
    request = await file(limits)
    await limits.approve(request.id, "U0OWNER", NOW)
    loser = await refused(limits.approve(request.id, "U0OTHER", NOW), APPROVED)
    assert loser.request.decided_by == "U0OWNER"
    await refused(limits.reject(request.id, "U0OTHER", "no", NOW), APPROVED)
    await refused(limits.cancel(request.id, "U0MANAGER", NOW), APPROVED)
    await refused(limits.retry(request.id), APPROVED)


async def test_failed_apply_then_retry_then_applied(limits):
    request = await file(limits)
    await limits.approve(request.id, "U0OWNER", NOW)
    failed = await limits.mark_not_applied(request.id, Outcome(problem="The Agent platform had an internal error."), NOW)
    assert failed.state == NOT_APPLIED and failed.outcome.problem
    await refused(limits.mark_applied(request.id, Outcome(), NOW), NOT_APPLIED)
    assert (await limits.retry(request.id)).state == APPROVED
    await refused(limits.retry(request.id), APPROVED)  # a second Retry click loses
    assert (await limits.mark_applied(request.id, Outcome({"carol@example.com": 500}), NOW)).state == APPLIED
    await refused(limits.retry(request.id), APPLIED)


async def test_a_stalled_approval_becomes_not_applied_only_after_the_grace(limits):
    request = await file(limits)
    await limits.approve(request.id, "U0OWNER", NOW)
    await refused(limits.mark_stalled(request.id, Outcome(problem="stalled"), NOW - dt.timedelta(minutes=1)), APPROVED)
    assert [r.id for r in await limits.due(APPROVED, "decided_at", NOW)] == [request.id]
    assert (await limits.mark_stalled(request.id, Outcome(problem="stalled"), NOW)).state == NOT_APPLIED


async def test_refresh_before_only_while_pending(limits):
    request = await file(limits)
    refreshed = await limits.refresh_before(request.id, {"carol@example.com": 100, "dave@example.com": None})
    assert refreshed.before["carol@example.com"] == 100 and refreshed.state == PENDING
    await limits.cancel(request.id, "U0MANAGER", NOW)
    await refused(limits.refresh_before(request.id, {}), CANCELLED)


async def test_two_replicas_approving_at_once_make_one_winner(database_url):
    replicas = [LimitsStore(Store(database_url)), LimitsStore(Store(database_url))]
    requests = [await file(replicas[0]) for _ in range(3)]
    for request in requests:
        results = await asyncio.gather(
            *(replicas[i % 2].approve(request.id, f"U0APPROVER{i}", NOW) for i in range(8)), return_exceptions=True
        )
        winners = [r for r in results if not isinstance(r, Exception)]
        losers = [r for r in results if isinstance(r, TransitionRefused)]
        assert len(winners) == 1 and len(losers) == 7
        assert {loser.request.decided_by for loser in losers} == {winners[0].decided_by}
    for replica in replicas:
        replica.store.close()


def test_approvals_config_defaults_and_errors():
    assert ApprovalsConfig.from_extra({}) == ApprovalsConfig(
        approver_role=Role.manager, owner_required_above=10000, expires_after_hours=24, channel=None
    )
    config = ApprovalsConfig.from_extra({"approvals": {"approver_role": "owners", "channel": "C0APPROVALS"}})
    assert (config.approver_role, config.channel) == (Role.owner, "C0APPROVALS")
    for bad in ({"approver_role": "boss"}, {"expires_after_hours": 0}, {"unknown": 1}):
        with pytest.raises(RolesConfigError):
            ApprovalsConfig.from_extra({"approvals": bad})
