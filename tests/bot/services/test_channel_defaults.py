"""``ChannelDefaultsService`` (bot/services/channel_defaults.py): a channel's session defaults kept
per team and channel, the log of who changed what when (the injected clock), reset, the one "apply
defaults" decision of the start paths, and the ``replies=mentions`` event policy; on SQLite and
PostgreSQL. The Agent API is a stub here (its computers); the model policy against the sandbox is in
``tests/handlers/test_channel_defaults.py``."""

from __future__ import annotations

import asyncio
import datetime as dt
from pathlib import Path

import pytest

from bot.api.models import Computer
from bot.middleware import THREAD_REPLY
from bot.outcomes import NothingChanged
from bot.roles import ComputerRule, ResolvedUser, Role
from bot.services.channel_defaults import (
    CWD_BAD,
    EMPTY_VALUE,
    IN_A_DM,
    NOTHING_TO_RESET,
    REPLIES_BAD,
    SET_NOTHING,
    SET_STRAY,
    SET_UNKNOWN,
    SET_USAGE,
    Applied,
    Change,
    ChannelDefaults,
    ChannelDefaultsService,
    Dropped,
    parse_reset,
    parse_set,
)
from bot.services.computer_rules import ComputerRules
from bot.services.sessions.starter import UNKNOWN_COMPUTER
from bot.store import Store
from bot.user_errors import UserInputError
from formatters.blocks import esc
from tests.api_fakes import computer_payload
from tests.conftest import postgres_url

T0 = dt.datetime(2026, 11, 28, 9, 0, tzinfo=dt.UTC)
TEAM, CHANNEL = "T0DEMO", "C0ENGINEERING"
MEMBER = ResolvedUser("U0MEMBER", "carol@example.com", Role.member, "organization user")


class Clock:
    def __init__(self) -> None:
        self.now = T0

    def __call__(self) -> dt.datetime:
        return self.now


class Computers:
    """The Agent API as far as the service reads it without a model: its computers."""

    def __init__(self, *computers: dict) -> None:
        self.computers = [Computer.model_validate(c) for c in computers]

    async def list_computers(self) -> list[Computer]:
        return list(self.computers)


BUILD = computer_payload(id="cmp_build", name="build-01")
GPU = computer_payload(id="cmp_gpu", name="gpu-01")


@pytest.fixture(params=["sqlite", "postgresql"])
def store(request, tmp_path: Path):
    url = f"sqlite:///{tmp_path / 'defaults.db'}" if request.param == "sqlite" else postgres_url("channel_defaults")
    opened = Store(url)
    yield opened
    opened.close()


def service(store: Store, clock: Clock, *computers: dict, rules: ComputerRules | None = None) -> ChannelDefaultsService:
    return ChannelDefaultsService(
        store=store,
        agent=Computers(*(computers or (BUILD, GPU))),  # type: ignore[arg-type]
        rules=rules or ComputerRules(()),
        now=clock,
        one_line=lambda value, limit: esc(value)[:limit],
    )


async def test_set_keeps_the_computer_as_its_id_with_its_name_and_logs_each_change_with_who_and_when(store):
    clock = Clock()
    defaults = service(store, clock)
    done = await defaults.set(TEAM, CHANNEL, {"computer": "BUILD", "cwd": "~/src/web", "replies": "Mentions"}, by="U0MANAGER")
    first = {
        "computer": Change("computer", None, "build-01", "U0MANAGER", T0),
        "cwd": Change("cwd", None, "~/src/web", "U0MANAGER", T0),
        "replies": Change("replies", "all", "mentions", "U0MANAGER", T0),
    }
    assert done == ChannelDefaults(
        TEAM, CHANNEL, computer_id="cmp_build", computer_name="build-01", cwd="~/src/web", replies="mentions", changed=first
    )
    clock.now = T0 + dt.timedelta(hours=2)
    again = await defaults.set(TEAM, CHANNEL, {"cwd": "~/src/api", "computer": "cmp_build"}, by="U0OWNER")
    assert again == ChannelDefaults(
        TEAM,
        CHANNEL,
        computer_id="cmp_build",
        computer_name="build-01",
        cwd="~/src/api",
        replies="mentions",
        changed={**first, "cwd": Change("cwd", "~/src/web", "~/src/api", "U0OWNER", clock.now)},
    )
    assert await defaults.get(TEAM, CHANNEL) == again
    assert await defaults.history(TEAM, CHANNEL) == [
        Change("cwd", "~/src/web", "~/src/api", "U0OWNER", clock.now),
        first["replies"],
        first["cwd"],
        first["computer"],
    ]
    assert await defaults.get(TEAM, "C0OTHER") == ChannelDefaults(TEAM, "C0OTHER")  # per channel
    assert await defaults.get("T0OTHER", CHANNEL) == ChannelDefaults("T0OTHER", CHANNEL)  # per team


async def test_setting_what_is_already_so_changes_nothing_and_logs_nothing(store):
    defaults = service(store, Clock())
    await defaults.set(TEAM, CHANNEL, {"cwd": "~/src/web"}, by="U0MANAGER")
    assert await defaults.set(TEAM, CHANNEL, {"cwd": "~/src/web", "replies": "all"}, by="U0MANAGER") == NothingChanged(
        "This channel's defaults are already so."
    )
    assert len(await defaults.history(TEAM, CHANNEL)) == 1


async def test_reset_removes_the_named_defaults_or_all_and_logs_it(store):
    clock = Clock()
    defaults = service(store, clock)
    await defaults.set(TEAM, CHANNEL, {"computer": "gpu", "cwd": "/srv", "replies": "mentions"}, by="U0MANAGER")
    clock.now = T0 + dt.timedelta(minutes=5)
    only_cwd = await defaults.reset(TEAM, CHANNEL, ("cwd",), by="U0OWNER")
    assert isinstance(only_cwd, ChannelDefaults)
    assert (only_cwd.computer_id, only_cwd.cwd, only_cwd.replies) == ("cmp_gpu", None, "mentions")
    assert only_cwd.changed["cwd"] == Change("cwd", "/srv", None, "U0OWNER", clock.now)
    everything = await defaults.reset(TEAM, CHANNEL, by="U0OWNER")
    assert isinstance(everything, ChannelDefaults) and everything.empty
    assert everything.changed["computer"] == Change("computer", "gpu-01", None, "U0OWNER", clock.now)
    assert everything.changed["replies"] == Change("replies", "mentions", "all", "U0OWNER", clock.now)
    assert await defaults.reset(TEAM, CHANNEL, by="U0OWNER") == NothingChanged(NOTHING_TO_RESET)
    assert await defaults.replies(TEAM, CHANNEL) == "all"


async def test_an_unknown_computer_is_refused_naming_the_active_ones_and_nothing_is_kept(store):
    defaults = service(store, Clock())
    with pytest.raises(UserInputError) as refused:
        await defaults.set(TEAM, CHANNEL, {"computer": "nope", "cwd": "/srv"}, by="U0MANAGER")
    assert refused.value.message == UNKNOWN_COMPUTER.format(name="nope")
    assert refused.value.hint == "Active computers: `build-01`, `gpu-01`. Name one with `computer=<name>`."
    assert await defaults.get(TEAM, CHANNEL) == ChannelDefaults(TEAM, CHANNEL)


async def test_channel_defaults_are_for_channels_not_dms(store):
    defaults = service(store, Clock())
    for attempt in (defaults.set(TEAM, "D0DM", {"cwd": "/srv"}, by="U0MANAGER"), defaults.reset(TEAM, "D0DM", by="U0MANAGER")):
        with pytest.raises(UserInputError) as refused:
            await attempt
        assert refused.value.message == IN_A_DM


@pytest.mark.parametrize(
    ("options", "args", "message"),
    [
        ({}, (), SET_NOTHING),
        ({"colour": "blue"}, (), SET_UNKNOWN.format(names="colour")),
        ({"cwd": "/srv"}, ("please",), SET_STRAY.format(words="please")),
        ({"replies": "some"}, (), REPLIES_BAD),
        ({"model": " "}, (), EMPTY_VALUE.format(key="model")),
        ({"cwd": "x" * 4097}, (), CWD_BAD),
    ],
)
def test_bad_keys_and_values_get_an_error_naming_the_accepted_forms(options, args, message):
    with pytest.raises(UserInputError) as refused:
        parse_set(options, args)
    assert refused.value.message == message
    assert refused.value.hint == f"Usage: `{SET_USAGE}`"


def test_reset_names_settings_or_nothing():
    assert parse_reset(()) == ("computer", "cwd", "model", "replies")
    assert parse_reset(("Model", "cwd", "model")) == ("model", "cwd")
    with pytest.raises(UserInputError):
        parse_reset(("colour",))


async def test_apply_uses_the_defaults_where_nothing_was_typed_and_typed_options_win(store):
    defaults = service(store, Clock())
    await defaults.set(TEAM, CHANNEL, {"computer": "build-01", "cwd": "~/src/web", "replies": "mentions"}, by="U0MANAGER")
    nothing_typed = await defaults.apply(TEAM, CHANNEL, computer=None, cwd=None, model=None, by=MEMBER)
    assert nothing_typed == Applied(computer="cmp_build", cwd="~/src/web", model=None, used=("cwd", "computer"), replies="mentions")
    typed = await defaults.apply(TEAM, CHANNEL, computer="gpu-01", cwd="/tmp", model="claude-haiku-4-5", by=MEMBER)
    assert typed == Applied(computer="gpu-01", cwd="/tmp", model="claude-haiku-4-5", replies="mentions")
    in_a_dm = await defaults.apply(TEAM, "D0DM", computer=None, cwd=None, model=None, by=MEMBER)
    assert in_a_dm == Applied(computer=None, cwd=None, model=None)


async def test_a_default_computer_the_person_may_not_use_or_gone_or_inactive_is_not_used_and_said(store):
    rules = ComputerRules((ComputerRule(pattern="gpu-*", who=("managers",)),))
    defaults = service(store, Clock(), BUILD, GPU, rules=rules)
    await defaults.set(TEAM, CHANNEL, {"computer": "gpu-01"}, by="U0MANAGER")
    refused = await defaults.apply(TEAM, CHANNEL, computer=None, cwd=None, model=None, by=MEMBER)
    assert refused == Applied(
        computer=None, cwd=None, model=None, dropped=(Dropped("computer", "gpu-01", "only managers and owners may start sessions on it"),)
    )
    manager = ResolvedUser("U0MANAGER", None, Role.manager, "roles file")
    assert (await defaults.apply(TEAM, CHANNEL, computer=None, cwd=None, model=None, by=manager)).computer == "cmp_gpu"
    gone = service(store, Clock(), BUILD)
    assert (await gone.apply(TEAM, CHANNEL, computer=None, cwd=None, model=None, by=manager)).dropped == (
        Dropped("computer", "gpu-01", "no computer has that id any more"),
    )
    stopped = service(store, Clock(), BUILD, {**GPU, "status": "error"})
    assert (await stopped.apply(TEAM, CHANNEL, computer=None, cwd=None, model=None, by=manager)).dropped == (
        Dropped("computer", "gpu-01", "it is not active now (error)"),
    )


def body(event: dict, *, bot_user: str = "U0BOT") -> dict:
    return {"type": "event_callback", "team_id": TEAM, "authorizations": [{"user_id": bot_user}], "event": event}


async def test_under_replies_mentions_only_replies_that_mention_the_bot_keep_their_policy_key(store):
    defaults = service(store, Clock())

    async def sessions_policy(_body) -> str:
        return THREAD_REPLY

    policy = defaults.event_policy(sessions_policy)
    chatter = body({"type": "message", "channel": CHANNEL, "text": "lunch?", "thread_ts": "1.0", "ts": "2.0", "user": "U0MEMBER"})
    mention = body({"type": "message", "channel": CHANNEL, "text": "<@U0BOT> run it", "thread_ts": "1.0", "ts": "3.0", "user": "U1"})
    app_mention = body({"type": "app_mention", "channel": CHANNEL, "text": "hey <@U0BOT>", "thread_ts": "1.0", "ts": "3.0", "user": "U1"})
    assert [await policy(b) for b in (chatter, mention, app_mention)] == [THREAD_REPLY] * 3  # replies=all: as today
    await defaults.set(TEAM, CHANNEL, {"replies": "mentions"}, by="U0MANAGER")
    assert [await policy(b) for b in (chatter, mention, app_mention)] == [None, THREAD_REPLY, THREAD_REPLY]
    elsewhere = body({**chatter["event"], "channel": "C0OTHER"})
    assert await policy(elsewhere) == THREAD_REPLY


async def test_two_replicas_setting_a_new_channel_at_once_both_land_and_both_are_logged(store, tmp_path):
    """Two bot processes (two stores on one database) set the first defaults of a channel at the
    same moment: the second insert collides and is retried as an update; nothing is lost."""
    second = Store(str(store.engine.url.render_as_string(hide_password=False)))
    try:
        clock = Clock()
        one, two = service(store, clock), service(second, clock)
        for attempt in range(5):  # several rounds, each on a fresh channel, to meet the race
            channel = f"C0RACE{attempt}"
            await asyncio.gather(
                one.set(TEAM, channel, {"cwd": "/one"}, by="U0MANAGER"), two.set(TEAM, channel, {"replies": "mentions"}, by="U0OWNER")
            )
            now = await one.get(TEAM, channel)
            assert (now.cwd, now.replies) == ("/one", "mentions")
            assert sorted((c.setting, c.by) for c in await one.history(TEAM, channel)) == [("cwd", "U0MANAGER"), ("replies", "U0OWNER")]
    finally:
        second.close()
