"""Naming the top users of a usage list as Slack people: ``users.lookupByEmail`` cached like
``users.info``, a few look-ups at once, and never longer than a small bound in all."""

from __future__ import annotations

import asyncio
from typing import Any

from bot.identity import PEOPLE_CONCURRENCY, Identity
from bot.slack import SlackFailure, SlackPerson, person_of

DIRECTORY = {
    "ada@example.com": {"id": "U0ADA", "real_name": "Ada Lovelace"},
    "bo@example.com": {"id": "U0BO", "profile": {"real_name": "Bo From Profile"}},
}


class FakeSlack:
    """The gateway's ``call`` for ``users.lookupByEmail``: answers from :data:`DIRECTORY`; e-mails in
    ``failing`` answer a transient failure, those in ``hanging`` never answer."""

    def __init__(self, *, failing: set[str] = frozenset(), hanging: set[str] = frozenset(), pause: asyncio.Event | None = None) -> None:
        self.asked: list[str] = []
        self.failing, self.hanging, self.pause = failing, hanging, pause
        self.in_flight = self.most_in_flight = 0

    async def call(self, method: str, **arguments: Any) -> dict[str, Any] | SlackFailure:
        assert method == "users.lookupByEmail"
        email = arguments["email"]
        self.asked.append(email)
        self.in_flight += 1
        self.most_in_flight = max(self.most_in_flight, self.in_flight)
        try:
            if email in self.hanging:
                await asyncio.Event().wait()
            if self.pause is not None:
                await self.pause.wait()
            if email in self.failing:
                return SlackFailure(method, "internal_error", permanent=False)
            if email.lower() not in DIRECTORY:
                return SlackFailure(method, "users_not_found", permanent=True)
            return {"ok": True, "user": DIRECTORY[email.lower()]}
        finally:
            self.in_flight -= 1

    async def user_by_email(self, email: str) -> SlackPerson | SlackFailure | None:
        """The gateway's reading of that answer (:meth:`bot.slack.SlackGateway.user_by_email`)."""
        answer = await self.call("users.lookupByEmail", email=email)
        if isinstance(answer, SlackFailure):
            return None if answer.error == "users_not_found" else answer
        return person_of(answer)


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def identity(slack: FakeSlack, clock: Clock | None = None) -> Identity:
    return Identity(slack, ttl=600.0, clock=clock or Clock())  # type: ignore[arg-type]  # a fake gateway


async def test_a_person_found_by_email_is_cached_for_the_ttl_and_so_is_nobody():
    slack, clock = FakeSlack(), Clock()
    who = identity(slack, clock)
    assert await who.person_of_email("Ada@Example.com") == SlackPerson("U0ADA", "Ada Lovelace")
    assert await who.person_of_email("ada@example.com") == SlackPerson("U0ADA", "Ada Lovelace")
    assert await who.user_of_email("ada@example.com") == "U0ADA"
    assert await who.person_of_email("nobody@example.com") is None
    assert await who.person_of_email("nobody@example.com") is None
    assert slack.asked == ["Ada@Example.com", "nobody@example.com"]
    clock.now = 601.0
    assert await who.person_of_email("bo@example.com") == SlackPerson("U0BO", "Bo From Profile")
    assert await who.person_of_email("ada@example.com") == SlackPerson("U0ADA", "Ada Lovelace")
    assert slack.asked == ["Ada@Example.com", "nobody@example.com", "bo@example.com", "ada@example.com"]


async def test_a_failed_look_up_is_not_cached():
    slack = FakeSlack(failing={"ada@example.com"})
    who = identity(slack)
    assert await who.person_of_email("ada@example.com") is None
    slack.failing = set()
    assert await who.person_of_email("ada@example.com") == SlackPerson("U0ADA", "Ada Lovelace")
    assert slack.asked == ["ada@example.com", "ada@example.com"]


async def test_people_of_looks_up_a_few_at_once_and_skips_what_is_no_email():
    pause = asyncio.Event()
    slack = FakeSlack(pause=pause)
    emails = [f"p{n}@example.com" for n in range(10)] + ["ada@example.com", "u_123", "ada@example.com"]
    task = asyncio.ensure_future(identity(slack).people_of(emails))
    while slack.in_flight < PEOPLE_CONCURRENCY:
        await asyncio.sleep(0)
    for _ in range(5):
        await asyncio.sleep(0)
    assert slack.in_flight == PEOPLE_CONCURRENCY  # the others wait for a free slot
    pause.set()
    assert await task == {"ada@example.com": SlackPerson("U0ADA", "Ada Lovelace")}
    assert slack.most_in_flight == PEOPLE_CONCURRENCY
    assert sorted(slack.asked) == sorted(emails[:11])  # once each; "u_123" is no e-mail


async def test_a_slow_or_failed_look_up_leaves_the_email_and_never_holds_the_reply_past_the_bound():
    slack = FakeSlack(failing={"bo@example.com"}, hanging={"cy@example.com"})
    who = identity(slack)
    people = await asyncio.wait_for(who.people_of(["ada@example.com", "bo@example.com", "cy@example.com"], wait=0.05), timeout=2)
    assert people == {"ada@example.com": SlackPerson("U0ADA", "Ada Lovelace")}
    assert slack.in_flight == 0  # the hanging look-up was cancelled, not left running
