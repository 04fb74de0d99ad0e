"""``agent-bot demo``: the tour of every command, printed as readable text, on a running stack.

:func:`run_demo` starts a stack (:func:`bot.stack.running_stack`: the sandbox Agent API, the Slack
emulator and the bot on loopback) and runs the tour: every command of :data:`TOUR` as the emulated
people, then one step per feature that needs more than a command (agent sessions and the agent's
hook, the daily digest, alerts, a credit-limit approval, the Home tab and the bot's Messages tab,
Socket Mode in a separate process, feedback on the agent's answers, a channel's defaults, a thread
handed to the agent: :func:`handover_step`). Each step prints what the people see; a step that does
not happen in time says so in a line and the tour goes on. With ``interactive`` it then hands over to
the prompt (:func:`bot.interactive.run_interactive`).
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import datetime as dt
import json
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any, TextIO

import httpx

from bot.hooks import SIGNATURE_HEADER, TIMESTAMP_HEADER, sign
from bot.interactive import run_interactive
from bot.services.feedback import COMMENT_VIEW, FEEDBACK_ACTION
from bot.services.home import REFRESH_TICK_SECONDS
from bot.services.sessions.context import SHORTCUT_CALLBACK, SHORTCUT_VIEW
from bot.stack import (
    DEMO_CHANNEL,
    HOOK_SECRET,
    PEOPLE,
    SESSION_PROMPT,
    Reply,
    Stack,
    running_stack,
    session_with_reply,
    thread_has,
    tick_alerts,
    tick_digests,
    tick_home,
)
from sandbox.agent_api.keys import KEY_PREFIX
from sandbox.slack_emulator import dm_channel_id
from sandbox.slack_emulator.recorder import WaitTimeout
from sandbox.slack_emulator.render import render_stream, render_text

TOUR: Sequence[tuple[str, str]] = (
    ("bob", "help"),
    ("carol", "help"),
    ("bob", "usge 7d"),
    ("bob", "usage"),
    ("bob", "usage 7d"),
    ("bob", "usage 30d by model"),
    ("bob", "usage 7d by client"),
    ("bob", "usage 7d by user"),
    ("bob", "usage user alice@example.com 30d"),
    ("bob", "usage last week by model"),
    ("bob", "usage today"),
    ("bob", "usage 2025-12-01"),
    ("carol", "usage 7d"),
    ("carol", "usage me 7d"),
    ("dave", "help usage"),
    ("carol", "reports"),
    ("carol", "reports acme/web"),
    ("carol", "reports web"),
    ("carol", "reports acme/nope"),
    ("bob", "controls"),
    ("bob", "controls history 5"),
    ("bob", "controls diff 6 7"),
    ("carol", "computers"),
    ("bob", "users alice"),
    ("bob", "users"),
    ("dave", "reports acme/web"),
    ("bob", "help digest subscribe"),
    ("bob", "usage 30d chart"),
    ("bob", "digest list"),
    ("bob", 'limits set carol@example.com 5000 reason="Q4 migration"'),
)
"""Besides these commands, the demo's credit-limit step (:func:`_limits_step`) has alice approve bob's
request with a click and prints the request message, the thread and bob's DM."""


def _digest_tick(stack: Stack) -> str:
    """One digest tick (:func:`tick_digests`), what it did in words, its channels by name (``#engineering``)."""
    report = tick_digests(stack)
    named = {key: [_channel(stack, channel) for channel in getattr(report, key)] for key in ("posted", "recovered", "failed")}
    return str(dataclasses.replace(report, **named).describe())


def _digest_step(stack: Stack, out: TextIO, chart_dir: Path) -> None:
    """The digest in the tour: #eng subscribes, the day has not landed, the batch lands, one digest."""
    import httpx

    out.write("\n\u2500\u2500 Daily digest: the sandbox's batch has not landed yesterday yet\n")
    httpx.post(f"{stack.sandbox.url}/_sandbox/batch", json={"lands_at": "23:59"}).raise_for_status()
    _print_reply(out, "bob", "digest subscribe at=00:00", stack.command("digest subscribe at=00:00", user=PEOPLE["bob"]), stack)
    out.write(f"digest tick: {_digest_tick(stack)}\n")
    landed = httpx.post(f"{stack.sandbox.url}/_sandbox/land").json()["landed"]
    out.write(f"(the sandbox lands {landed} now, as its daily batch would)\n")
    out.write(f"digest tick: {_digest_tick(stack)}\n")
    for message in stack.slack.recorder.messages(DEMO_CHANNEL):
        if (message.metadata or {}).get("event_type") and not message.is_reply:
            out.write(f"\n{_channel(stack, DEMO_CHANNEL)} now shows:\n")
            out.write(_shown(stack, {"text": message.text, "blocks": message.blocks}) + "\n")
    for file in stack.slack.recorder.files(DEMO_CHANNEL):
        path = chart_dir / file.filename
        path.write_bytes(file.content)
        out.write(f"chart in the digest's thread, saved to {path.resolve()}\n  alt text: {file.alt_txt}\n")
    out.write(f"digest tick again: {_digest_tick(stack)} (exactly once)\n")
    httpx.post(f"{stack.sandbox.url}/_sandbox/batch", json={"lands_at": None}).raise_for_status()


ALERTS_SUBSCRIBE: Sequence[tuple[str, str]] = (
    ("bob", "alerts subscribe controls"),
    ("carol", "alerts subscribe readiness repo=acme/web drop=5"),
    ("carol", "alerts subscribe computers"),
    ("carol", "alerts subscribe usage"),
    ("bob", "alerts subscribe usage spike=5x min=10M"),
)
"""How #engineering subscribes in the alerts step (:func:`_alerts_step`): bob (manager) to controls
and usage, carol (member) to readiness and computers; her ``usage`` is refused (it needs a manager)."""
ALERT_COMPUTER = "cmp-ci-sandbox"
ALERT_COMPUTER_FAILURE = {"status": "error", "step": "install-deps", "error": "npm ERR! 404 '@acme/ui-kit@4.2.0' is not in this registry"}
ALERT_REPORTS = ({"repo": "acme/web", "pass_rate": 25}, {"repo": "acme/web", "pass_rate": 10})
"""The readiness reports the alerts step makes (``POST /_sandbox/readiness``): acme/web falling well
past ``drop=5`` each time, in the normal sandbox (from 56%) and the hostile one (from 33%)."""
ALERT_THREAD_TITLE = "the computer's alert: the same message, edited in place when it recovered, and the recovery in its thread"
ALERTS_MUTE = ("carol", "alerts mute readiness for=1h")
ALERTS_UNMUTE = ("carol", "alerts unmute readiness")
ALERTS_LIST = ("bob", "alerts list")
USAGE_SURGE = {"factor": 20}
"""``POST /_sandbox/usage`` in the alerts step: the second person (bob) uses 20 times their volume on a new model."""
USAGE_MORNING = dt.time(6, 0)
USAGE_LANDS_AT = "08:00"
"""The alerts step's "next morning" and when the sandbox's daily batch lands (UTC): at 06:00 yesterday
has not landed yet, until ``POST /_sandbox/usage`` lands it with a spike."""


def _new_alerts(stack: Stack, channel: str, seen: dict[str, str]) -> list[Any]:
    """The top-level alerts posted in ``channel`` since ``seen`` (event key -> message ts), in the
    order of :data:`bot.services.alerts.ALL_KINDS` (one tick delivers kinds in no set order), then
    oldest first; records them in ``seen``."""
    from bot.services.alerts import ALL_KINDS, EVENT_TYPE

    found: list[tuple[int, float, Any]] = []
    for message in stack.slack.recorder.messages(channel):
        meta = message.metadata or {}
        key = str((meta.get("event_payload") or {}).get("key", ""))
        if message.is_reply or meta.get("event_type") != EVENT_TYPE or key in seen:
            continue
        seen[key] = message.ts
        kind = key.partition(":")[0]
        found.append((ALL_KINDS.index(kind) if kind in ALL_KINDS else len(ALL_KINDS), float(message.ts), message))
    return [message for *_, message in sorted(found, key=lambda entry: entry[:2])]


def _alerts_tick(stack: Stack, out: TextIO, seen: dict[str, str], now: Any = None, note: str = "") -> None:
    """One alerts tick (:func:`tick_alerts`), what it did, and each new alert as #engineering shows it."""
    out.write(f"alerts tick: {tick_alerts(stack, now).describe()}{note}\n")
    for message in _new_alerts(stack, DEMO_CHANNEL, seen):
        out.write(f"\n{_channel(stack, DEMO_CHANNEL)} now shows:\n")
        out.write(_shown(stack, message.as_payload()) + "\n")
    out.flush()


def _sandbox(stack: Stack, path: str, body: dict[str, Any] | None = None) -> dict[str, Any]:
    """``POST /_sandbox/<path>`` (the sandbox's admin endpoints) -> its JSON answer; raises ``httpx.HTTPStatusError``."""
    answer = httpx.post(f"{stack.sandbox.url}/_sandbox/{path}", json=body)
    answer.raise_for_status()
    result: dict[str, Any] = answer.json()
    return result


def _short(uuid: str) -> str:
    """An id as the bot shows it to people: its first 8 characters (``report 34a26910``)."""
    return uuid[:8]


def _computer_name(stack: Stack, computer_id: str) -> str:
    """A computer by its name (``CI sandbox``), as ``/agent computers`` lists it; its id when the platform does not name it."""
    found = next((c for c in _sandbox_get(stack, "/api/v0/computers").get("computers", []) if c.get("id") == computer_id), None)
    return str(found.get("name") or computer_id) if found else computer_id


def _sandbox_get(stack: Stack, path: str) -> dict[str, Any]:
    """``GET`` ``path`` of the sandbox Agent API with the bot's key -> its JSON answer; raises ``httpx.HTTPStatusError``."""
    key = stack.bot.services.settings.required("agent_api_key")
    answer = httpx.get(f"{stack.sandbox.url}{path}", headers={"Authorization": f"Bearer {key}"})
    answer.raise_for_status()
    result: dict[str, Any] = answer.json()
    return result


def _alerts_step(stack: Stack, out: TextIO) -> None:
    """Alerts in the tour (issue #18, section 6): #engineering subscribes to every kind (as the people
    the policy allows), the sandbox's admin endpoints make each kind of change happen, one tick posts
    one alert each; the failed computer recovers (its alert edited in place, the recovery in its
    thread); a muted subscription records an alert without posting it and lists it on unmute; the
    next morning a landed day with a spike is a usage alert; a tick after it posts nothing. A sandbox
    or Agent API failure stops the step with a line saying so (the tour goes on)."""
    from bot.api import AgentAPIError

    try:
        _alerts_tour(stack, out)
    except (httpx.HTTPError, AgentAPIError, WaitTimeout) as exc:
        out.write(f"\n(the alerts step stopped: {exc})\n")


def _alerts_tour(stack: Stack, out: TextIO) -> None:
    """The body of :func:`_alerts_step`; ``seen`` maps the event key of each alert printed to its message ts."""
    seen: dict[str, str] = {}
    out.write("\n\u2500\u2500 Alerts: #engineering hears when something changes (controls, readiness, computers, usage)\n")
    for who, text in ALERTS_SUBSCRIBE:
        _print_reply(out, who, text, stack.command(text, user=PEOPLE[who]), stack)
    out.write("\n")
    _alerts_tick(stack, out, seen, note=" (a subscription starts from now: nothing before is replayed)")

    revision = _sandbox(stack, "controls")["revision"]
    report = _sandbox(stack, "readiness", ALERT_REPORTS[0])
    _sandbox(stack, f"computers/{ALERT_COMPUTER}/status", ALERT_COMPUTER_FAILURE)
    computer = _computer_name(stack, ALERT_COMPUTER)
    out.write(
        f"\n(in the platform: someone changes the enterprise controls (revision {revision}); a new readiness report of "
        f"acme/web (report {_short(report['reportId'])}) passes {ALERT_REPORTS[0]['pass_rate']}% of its criteria; the {computer} "
        "fails its dependency install)\n"
    )
    _alerts_tick(stack, out, seen)

    _sandbox(stack, f"computers/{ALERT_COMPUTER}/status", {"status": "active"})
    out.write(f"\n(in the platform: the {computer} is active again)\n")
    _alerts_tick(stack, out, seen)
    incident = next((ts for key, ts in seen.items() if key.startswith(f"computers:{ALERT_COMPUTER}:incident:")), None)
    if incident is None:
        out.write("(the computer's alert was not posted, so there is no recovery to show)\n")
    else:
        _print_thread(out, stack, DEMO_CHANNEL, incident, ALERT_THREAD_TITLE)

    who, text = ALERTS_MUTE
    _print_reply(out, who, text, stack.command(text, user=PEOPLE[who]), stack)
    muted = _sandbox(stack, "readiness", ALERT_REPORTS[1])
    out.write(
        f"\n(in the platform: another readiness report of acme/web, report {_short(muted['reportId'])}: "
        f"{ALERT_REPORTS[1]['pass_rate']}% of its criteria pass)\n"
    )
    _alerts_tick(stack, out, seen, note=" (muted: recorded, not posted)")
    who, text = ALERTS_UNMUTE
    _print_reply(out, who, text, stack.command(text, user=PEOPLE[who]), stack)

    _usage_morning(stack, out, seen)
    who, text = ALERTS_LIST
    _print_reply(out, who, text, stack.command(text, user=PEOPLE[who]), stack)


def _usage_morning(stack: Stack, out: TextIO, seen: dict[str, str]) -> None:
    """The next morning (:data:`USAGE_MORNING`): the daily batch lands today's analytics with bob at
    :data:`USAGE_SURGE` times his usual volume, on a new model; one usage alert, and a second tick
    posts nothing. The sandbox's clock and batch are put back afterwards (the tour goes on in the
    present; a clock pinned before stays pinned)."""
    before = httpx.get(f"{stack.sandbox.url}/_sandbox/batch").json()
    pinned = stack.sandbox_state.config.now if stack.sandbox_state is not None else None
    today = dt.datetime.fromisoformat(before["now"]).date()
    morning = dt.datetime.combine(today + dt.timedelta(days=1), USAGE_MORNING, tzinfo=dt.UTC)
    try:
        _sandbox(stack, "batch", {"lands_at": USAGE_LANDS_AT})
        _sandbox(stack, "clock", {"now": morning.isoformat()})
        out.write(f"\n\u2500\u2500 The next morning, {morning:%Y-%m-%d %H:%M} UTC: yesterday's analytics have not landed yet\n")
        _alerts_tick(stack, out, seen, now=lambda: morning)
        made = _sandbox(stack, "usage", USAGE_SURGE)
        out.write(
            f"(the daily batch lands {made['day']}: {made['user']['email']} used {made['billable_tokens']:,} billable tokens, "
            f"about {made['usual']:,.0f} a day the week before, on {made['model']}, a model nobody used before)\n"
        )
        _alerts_tick(stack, out, seen, now=lambda: morning)
        _alerts_tick(stack, out, seen, now=lambda: morning, note=" (exactly once: nothing is posted twice)")
    finally:
        _sandbox(stack, "clock", {"now": pinned.isoformat() if pinned else None})
        _sandbox(stack, "batch", {"lands_at": before["lands_at"]})


def _shown(stack: Stack, payload: Any) -> str:
    """``payload`` (a message, ``text`` and/or ``blocks``) as text, with people and channels named
    as a person sees them in Slack: ``@bob``, ``#engineering`` (the emulator's directory knows
    them), never their IDs."""
    directory = stack.slack.directory
    users = {user.id: user.name for user in directory.users}
    channels = {channel.id: channel.name for channel in directory.channels}
    return render_text(payload, users=users, channels=channels)


def _person(stack: Stack, user_id: str) -> str:
    """A person as the tour names them: their name (``bob``), ``agent (bot)`` for the bot, else the ID."""
    if user_id == stack.slack.directory.bot.user_id:
        return "agent (bot)"
    found = stack.slack.directory.user(user_id)
    return found.name if found is not None else user_id


def _people(stack: Stack, user_ids: Sequence[str]) -> str:
    """The Home tabs of ``user_ids`` as the tour names them (``bob's Home``, :func:`_person`),
    comma-separated; ``nothing`` when none."""
    return ", ".join(f"{_person(stack, user)}'s Home" for user in user_ids) or "nothing"


def _channel(stack: Stack, channel_id: str) -> str:
    """A channel as Slack shows it: ``#engineering``, else the ID."""
    found = stack.slack.directory.channel(channel_id)
    return f"#{found.name}" if found is not None and not found.is_im else channel_id


def _print_reply(out: TextIO, who: str, text: str, reply: Reply, stack: Stack) -> None:
    out.write(f"\n\u2500\u2500 {who}: /agent {text}\n")
    if not reply.payloads:
        out.write(f"(no reply; HTTP {reply.status})\n")
    for payload in reply.payloads:
        out.write(_shown(stack, payload) + "\n")
    out.flush()


MENTION_PROMPT = "read the README and explain the setup"
NOT_HERS = f'session start computer="Alice\'s dev box" {SESSION_PROMPT}'
"""carol asks for Alice's dev box, which the demo's roles file keeps for alice: the refusal names her."""


def _print_thread(out: TextIO, stack: Stack, channel: str, thread_ts: str, title: str) -> None:
    """Every message of a thread as people see it now (parent first), with who wrote it."""
    out.write(f"\n\u2500\u2500 {title}\n")
    for message in stack.slack.recorder.messages(channel, thread_ts=thread_ts):
        who = _person(stack, message.user) if message.user else "?"
        reactions = stack.slack.recorder.reactions(channel, message.ts)
        marks = " ".join(f":{name}:" for name in reactions)
        out.write(f"[{who}]{' ' + marks if marks else ''}\n{_shown(stack, message.as_payload())}\n")
    out.flush()


TOUR_LINKED = ("alice", "bob")
"""The people whose own keys the tour's stack links at start; carol links hers in the tour (:func:`link_step`)."""


def link_step(stack: Stack, out: TextIO) -> None:
    """Act as the person (issue #25): carol has not linked her own platform key, so her session
    start is answered with why and a link button, and nothing reaches the platform; she runs
    ``/agent link``, pastes her key in the private form (never shown again), gets the DM, and
    ``/agent whoami`` says her sessions now run as her. Without ``carol`` unlinked (another
    stack), it only shows ``whoami``."""
    carol = PEOPLE["carol"]
    recorder = stack.slack.recorder
    if stack.bot.services.settings.sessions_as != "person" or _linked(stack, carol):
        _print_reply(out, "carol", "whoami", stack.command("whoami", user=carol), stack)
        return
    text = f"session start computer=ci {SESSION_PROMPT}"
    out.write("\n(carol has not linked her own platform key yet: under AGENT_BOT_SESSIONS_AS=person nothing is sent as anyone else)")
    _print_reply(out, "carol", text, stack.command(text, user=carol), stack)
    forms = len(recorder.modals())
    assert stack.client is not None
    opened = stack.client.send_slash_command("link", user_id=carol, channel_id=DEMO_CHANNEL)  # answered by a form, not a reply
    out.write(f"\n\u2500\u2500 carol: /agent link\n(HTTP {opened.status_code}: a private form opens; she pastes her own key there)\n")
    recorder.wait_for(lambda: len(recorder.modals()) > forms, timeout=10, what="the link form")
    modal = recorder.modals()[forms]
    [field] = [b for b in modal.view.get("blocks", []) if b.get("type") == "input"]
    dm = dm_channel_id(carol)
    before = len(recorder.messages(dm))
    stack.client.send_view_submission(
        {**modal.view, "id": modal.view_id}, {field["block_id"]: {field["element"]["action_id"]: f"{KEY_PREFIX}carol"}}, user_id=carol
    )
    told = recorder.wait_for(lambda: recorder.messages(dm)[before:], timeout=10, what="the link's confirmation")
    out.write(f"\n\u2500\u2500 carol's DM from the bot\n{_shown(stack, told[-1].as_payload())}\n")
    _print_reply(out, "carol", "whoami", stack.command("whoami", user=carol), stack)


def _linked(stack: Stack, user: str) -> bool:
    team = stack.slack.directory.team.id
    return asyncio.run(stack.bot.services.accounts.status(team, user)).usable


def session_tour(stack: Stack, out: TextIO) -> None:
    """carol starts a session, the agent answers in the thread, she replies there, the agent answers
    again; then a mention starts another one; carol asks for Alice's dev box and is refused (the
    roles file's computer rules: it is alice's), and dave, a guest, may not start one at all. Waits
    are for the real sandbox and follower."""
    recorder = stack.slack.recorder
    root, reply = session_with_reply(stack)
    _print_reply(out, "carol", f"session start computer=ci {SESSION_PROMPT}", reply, stack)
    bot = stack.slack.directory.bot.user_id
    _print_thread(out, stack, DEMO_CHANNEL, root.ts, "the session's thread in #engineering (carol replied in it)")
    hook_step(stack, out, root.ts)

    sent = stack.client.send_mention(f"<@{bot}> computer=ci {MENTION_PROMPT}", user_id=PEOPLE["bob"], channel_id=DEMO_CHANNEL)
    mention_ts = sent.request.payload["event"]["ts"]
    recorder.wait_for(lambda: thread_has(stack, DEMO_CHANNEL, mention_ts, "You asked"), timeout=30, what="the answer to the mention")
    recorder.wait_for(lambda: "white_check_mark" in recorder.reactions(DEMO_CHANNEL, mention_ts), timeout=10, what="the done reaction")
    _print_thread(out, stack, DEMO_CHANNEL, mention_ts, "bob mentioned @agent in #engineering")
    for who, text in (("carol", "sessions"), ("carol", NOT_HERS), ("dave", f"session start computer=ci {SESSION_PROMPT}")):
        _print_reply(out, who, text, stack.command(text, user=PEOPLE[who]), stack)


def hook_step(stack: Stack, out: TextIO, thread_ts: str) -> None:
    """The agent's client on carol's machine runs `agent-bot hook` on a Notification: the bot hears
    it at once (a signed ``POST /hooks/agent``) and says so in the session's thread."""
    recorder = stack.slack.recorder
    row = asyncio.run(stack.bot.services.sessions.store.by_thread(DEMO_CHANNEL, thread_ts))
    if row is None or row.session_id is None:
        out.write("(the session of that thread is not known, so there is no hook to show)\n")
        return
    event = {
        "hook_event_name": "Notification",
        "session_id": row.session_id,
        "cwd": "~/src/web",
        "message": "Permission needed to run `npm publish`",
        "user": "carol@example.com",
    }
    body = json.dumps(event).encode()
    stamp = str(int(time.time()))
    answer = httpx.post(
        f"{stack.bot_url}/hooks/agent",
        content=body,
        headers={"Content-Type": "application/json", TIMESTAMP_HEADER: stamp, SIGNATURE_HEADER: sign(HOOK_SECRET, stamp, body)},
    )
    out.write(f"\n\u2500\u2500 carol's agent runs `agent-bot hook` (Notification): HTTP {answer.status_code} {answer.json()}\n")
    last = [m for m in recorder.messages(DEMO_CHANNEL, thread_ts=thread_ts) if m.ts != thread_ts][-1]
    out.write(f"[agent (bot)] in the session's thread:\n{_shown(stack, last.as_payload())}\n")


LIMITS_AFTER: Sequence[tuple[str, str]] = (("carol", "limits"), ("bob", "limits history 5"))


STREAM_STEP = "── carol's session, drawn the way Slack draws agents: one streamed message per turn"
"""The heading of :func:`stream_step` (issue #27)."""


def stream_step(stack: Stack, out: TextIO) -> None:
    """Issue #27: the first session's thread as Slack's agent display draws it: each turn one
    streamed message (its plan, its task timeline with each task's state and output, its text), the
    closing line with the turn's tokens and time, the session's buttons and the feedback buttons.
    Under ``AGENT_BOT_SESSION_DISPLAY=messages`` (or where Slack refused streaming) it says so."""
    settings = stack.bot.services.settings
    turns = [m for m in stack.slack.recorder.messages(DEMO_CHANNEL) if m.source == "chat.startStream" and m.stream]
    if not turns:
        why = "AGENT_BOT_SESSION_DISPLAY=messages" if settings.session_display == "messages" else "no streamed turn"
        out.write(f"\n(sessions are shown as one message per answer here: {why})\n")
        return
    thread_ts = turns[0].thread_ts
    out.write(f"\n{STREAM_STEP}\n")
    for number, turn in enumerate((t for t in turns if t.thread_ts == thread_ts), start=1):
        out.write(f"[agent (bot), turn {number}]\n{render_stream(turn.stream or {})}\n")
    out.flush()


def _limits_step(stack: Stack, out: TextIO) -> None:
    """alice approves the credit-limit request bob filed in the tour; print what everyone sees."""
    requests = [
        m
        for m in stack.slack.recorder.messages(DEMO_CHANNEL)
        if m.blocks and m.blocks[0].get("type") == "header" and "Credit-limit request" in m.blocks[0]["text"]["text"]
    ]
    if not requests:
        out.write("\n(no credit-limit request was posted)\n")
        return
    message = requests[-1]
    out.write(f"\n\u2500\u2500 in {_channel(stack, DEMO_CHANNEL)}, the request message bob's command posted:\n")
    out.write(_shown(stack, {"text": message.text, "blocks": message.blocks}) + "\n")
    out.write("\n\u2500\u2500 alice clicks Approve\n")
    stack.client.send_block_action("limits.approve", user_id=PEOPLE["alice"], channel_id=DEMO_CHANNEL, message_ts=message.ts)
    try:
        thread = stack.slack.recorder.wait_for(
            lambda: (t := stack.slack.recorder.messages(DEMO_CHANNEL, message.ts))[1:] and t, timeout=10.0, what="the outcome"
        )
    except AssertionError:
        out.write("(no outcome within 10 s)\n")
        return
    edited = stack.slack.recorder.message(DEMO_CHANNEL, message.ts)
    if edited is not None:
        out.write("the request message, edited in place:\n")
        out.write(_shown(stack, {"text": edited.text, "blocks": edited.blocks}) + "\n")
    out.write("in its thread:\n")
    for reply in thread[1:]:
        out.write(_shown(stack, {"text": reply.text, "blocks": reply.blocks}) + "\n")
    try:

        def outcome_dms() -> list[Any]:  # bob's DM also holds the chart of his `usage 30d chart`
            return [m for m in stack.slack.recorder.messages("D" + PEOPLE["bob"][1:]) if "request #" in (m.text or "").lower()]

        dms = stack.slack.recorder.wait_for(outcome_dms, timeout=5.0)
        out.write("bob's DM:\n" + _shown(stack, {"text": dms[-1].text, "blocks": dms[-1].blocks}) + "\n")
    except AssertionError:
        out.write("(no DM to bob within 5 s)\n")
    for who, text in LIMITS_AFTER:
        _print_reply(out, who, text, stack.command(text, user=PEOPLE[who]), stack)


def _home_section(stack: Stack, user: str, title: str) -> str:
    """The section ``title`` of ``user``'s Home tab as the emulator renders it (up to the next divider)."""
    home = stack.slack.recorder.home(user)
    blocks = list(home.view.get("blocks") or []) if home else []
    start = next((i for i, b in enumerate(blocks) if b.get("type") == "header" and b["text"]["text"] == title), None)
    if start is None:
        return "(no such section)"
    end = next((i for i in range(start + 1, len(blocks)) if blocks[i].get("type") in ("divider", "header")), len(blocks))
    return _shown(stack, {"text": "", "blocks": blocks[start:end]})


def _waiting_title(stack: Stack) -> str:
    """The header of the Home's section of requests waiting for the person's approval, as the bot's
    own Home formatter (the one :func:`bot.wiring.home_refresher` hands its refresh job) renders it:
    the header that a Home with an empty such section has and a Home without it has not."""
    from bot.roles import Role
    from bot.services.home import Home
    from bot.wiring import home_refresher

    render = home_refresher(stack.bot.services).render

    def headers(home: Home) -> list[str]:
        return [block["text"]["text"] for block in render(home)["blocks"] if block.get("type") == "header"]

    bare = Home(user_id=PEOPLE["bob"], role=Role.manager.name, now=stack.bot.services.now())
    without = headers(bare)
    return next(title for title in headers(dataclasses.replace(bare, waiting=[])) if title not in without)


HOME_NEXT_TICK = "the Home refresh job, at its next tick ({seconds} s later)"
"""How the tour says when an open Home shows a change: the job runs every
:data:`bot.services.home.REFRESH_TICK_SECONDS`, and a credit-limit request filed or decided is
shown at the next tick (the ``AGENT_BOT_HOME_REFRESH_SECONDS`` wait is for sessions' changes)."""


def home_step(stack: Stack, out: TextIO) -> None:
    """bob opens the bot's Home tab (``app_home_opened``); print the view the bot published for him.
    Then the Home kept fresh: carol asks for a credit limit, the refresh job republishes bob's Home
    with the request waiting for him, he approves it from there, and the next refresh shows nothing
    waiting. Last, carol starts a session by writing to the bot in its Messages tab."""
    bob, carol = PEOPLE["bob"], PEOPLE["carol"]
    before = stack.slack.recorder.home(bob)
    out.write("\n\u2500\u2500 bob opens the bot's Home tab\n")
    stack.client.send_app_home_opened(bob)
    try:
        home = stack.slack.recorder.wait_for(
            lambda: [h for h in [stack.slack.recorder.home(bob)] if h is not None and h != before], timeout=15.0, what="bob's Home tab"
        )[0]
    except AssertionError:
        out.write("(no Home tab published within 15 s)\n")
        return
    out.write(_shown(stack, {"text": "", "blocks": home.view.get("blocks") or []}) + "\n")
    tick = dt.timedelta(seconds=REFRESH_TICK_SECONDS)
    waiting = _waiting_title(stack)

    text = 'limits request 2500 reason="demo: load tests"'
    _print_reply(out, "carol", text, stack.command(text, user=carol), stack)
    report = tick_home(stack, tick)
    out.write(f"\n\u2500\u2500 {HOME_NEXT_TICK.format(seconds=tick.seconds)}: republished {_people(stack, report.published)}\n")
    out.write("bob's Home tab now shows:\n" + _home_section(stack, bob, waiting) + "\n")

    recent = asyncio.run(stack.bot.services.limits.store.recent(1))  # the request carol just filed (a database read)
    request_id = str(recent[0].id) if recent else None
    if request_id is not None:
        out.write(f"\n\u2500\u2500 bob clicks Approve on request #{request_id} in his Home tab\n")
        stack.client.send_home_action("limits.approve", request_id, user_id=bob)
        try:
            stack.slack.recorder.wait_for(
                lambda: [m for m in stack.slack.recorder.messages("D" + carol[1:]) if f"#{request_id}" in (m.text or "")],
                timeout=10.0,
                what="the outcome",
            )
        except AssertionError:
            out.write("(no outcome within 10 s)\n")
        report = tick_home(stack, 2 * tick)
        out.write(f"the Home refresh job: republished {_people(stack, report.published)}\n")
        out.write("bob's Home tab now shows:\n" + _home_section(stack, bob, waiting) + "\n")
    _dm_step(stack, out)
    out.flush()


DM_PROMPT = "computer=ci run the unit tests"


def _dm_step(stack: Stack, out: TextIO) -> None:
    """carol writes a task to the bot in its Messages tab: the first-DM hint, and a session followed in that message's thread."""
    carol = PEOPLE["carol"]
    channel = "D" + carol[1:]
    out.write(f"\n\u2500\u2500 carol writes to the bot in its Messages tab: {DM_PROMPT}\n")
    sent = stack.client.send_message(DM_PROMPT, user_id=carol, channel_id=channel)
    ts = sent.request.payload["event"]["ts"]
    bot = stack.slack.directory.bot.user_id
    try:
        stack.slack.recorder.wait_for(
            lambda: [m for m in stack.slack.recorder.messages(channel, thread_ts=ts) if m.user == bot], timeout=15.0, what="the session"
        )
    except AssertionError:
        out.write("(no session message within 15 s)\n")
        return
    for message in stack.slack.recorder.messages(channel):
        if message.user == bot and not message.is_reply and message.ts > ts:
            out.write("[agent (bot)]\n" + _shown(stack, message.as_payload()) + "\n")
    _print_thread(out, stack, channel, ts, "the thread of carol's DM: her task, and the session the bot started for it")


FEEDBACK_COMMENT = "it fixed the test but left a debug print in app.py"


def _answer_of(stack: Stack, channel: str, thread_ts: str) -> Any:
    """The agent's last answer in a session's thread: the message whose closing blocks carry the
    feedback buttons (the streamed display's), else the bot's last message there."""
    bot = stack.slack.directory.bot.user_id
    answers = [m for m in stack.slack.recorder.messages(channel, thread_ts=thread_ts) if m.user == bot and m.ts != thread_ts]
    rated = [m for m in answers if any(b.get("block_id") == FEEDBACK_ACTION for b in m.blocks or [])]
    found = rated or answers
    return found[-1] if found else None


def _feedback_click(stack: Stack, out: TextIO, who: str, value: str, channel: str, answer: Any) -> None:
    """``who`` clicks the 👍 or 👎 (``value``) under ``answer``; prints the quiet thanks only they see."""
    assert stack.client is not None
    sent = stack.client.send_block_action(
        FEEDBACK_ACTION, value, user_id=PEOPLE[who], channel_id=channel, message_ts=answer.ts, thread_ts=answer.thread_ts
    )
    mark = ":+1:" if value.startswith("up:") else ":-1:"
    out.write(f"\n\u2500\u2500 {who} clicks {mark} under the agent's answer (HTTP {sent.status_code})\n")
    told = stack.slack.recorder.wait_for(lambda: stack.slack.recorder.responses(sent.response_url_id), timeout=10, what="the thanks")
    out.write(_shown(stack, told[-1].payload) + "\n")


def feedback_step(stack: Stack, out: TextIO) -> None:
    """Feedback on the agent's answers (issue #27): carol rates her session's answer 👍, bob 👎 and
    says what went wrong in the form that opens; bob reads ``/agent sessions feedback``."""
    rows = asyncio.run(stack.bot.services.sessions.store.recent(50))
    row = next((r for r in rows if r.slack_user == PEOPLE["carol"] and r.session_id and r.thread_ts and r.channel == DEMO_CHANNEL), None)
    answer = _answer_of(stack, row.channel, row.thread_ts) if row is not None and row.thread_ts else None
    if row is None or answer is None:
        out.write("\n(no answer of carol's session to rate: the feedback step is skipped)\n")
        return
    out.write("\n\u2500\u2500 Feedback: each finished answer of the agent has :+1: / :-1: buttons\n")
    recorder = stack.slack.recorder
    forms = len(recorder.modals(COMMENT_VIEW))
    try:
        _feedback_click(stack, out, "carol", f"up:{row.session_id}", row.channel, answer)
        _feedback_click(stack, out, "bob", f"down:{row.session_id}", row.channel, answer)
        recorder.wait_for(lambda: len(recorder.modals(COMMENT_VIEW)) > forms, timeout=10, what="the what-went-wrong form")
    except WaitTimeout as exc:
        out.write(f"(the feedback step stopped: {exc})\n")
        return
    modal = recorder.modals(COMMENT_VIEW)[forms]
    [field] = [b for b in modal.view.get("blocks", []) if b.get("type") == "input"]
    out.write(f'(a form opens for bob, "{modal.view["title"]["text"]}"; he writes: {FEEDBACK_COMMENT})\n')
    assert stack.client is not None
    values = {field["block_id"]: {field["element"]["action_id"]: FEEDBACK_COMMENT}}
    stack.client.send_view_submission({**modal.view, "id": modal.view_id}, values, user_id=PEOPLE["bob"])
    _print_reply(out, "bob", "sessions feedback", stack.command("sessions feedback", user=PEOPLE["bob"]), stack)


SOCKET_TOUR: Sequence[tuple[str, str]] = (("bob", "help usage"), ("bob", "usage 7d"))
"""Sent over Socket Mode to a separate ``agent-bot socket`` process by :func:`socket_step`."""


def socket_step(stack: Stack, out: TextIO, *, startup_timeout: float = 30.0) -> None:
    """``agent-bot socket`` as its own process, connected to the emulator's Socket Mode: two commands,
    a dropped connection the bot re-opens, and one more command. Problems are printed, never raised."""
    import os
    import subprocess

    settings = stack.bot.services.settings
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SLACK_", "AGENT_"))}
    env.update(
        SLACK_BOT_TOKEN=stack.slack.bot_token,
        SLACK_APP_TOKEN=stack.slack.app_token,
        SLACK_API_URL=stack.slack.api_url,
        AGENT_API_URL=stack.sandbox.url,
        AGENT_API_KEY=settings.required("agent_api_key"),
        AGENT_BOT_DATABASE_URL=f"sqlite:///{stack.workdir / 'socket.db'}",
        AGENT_BOT_CONFIG=settings.config_file or "",
        AGENT_BOT_LOG_LEVEL="WARNING",
    )
    hub = stack.slack.socket_mode
    before = max((c.id for c in hub.connections), default=0)
    out.write("\n\u2500\u2500 Socket Mode: starting `agent-bot socket` (SLACK_APP_TOKEN, no public URL)...\n")
    with (stack.workdir / "socket.log").open("wb") as log:
        proc = subprocess.Popen([sys.executable, "-m", "bot.cli", "socket"], env=env, cwd=stack.workdir, stdout=log, stderr=log)
    try:
        first = hub.wait_connected(after=before, timeout=startup_timeout)
        out.write(f"connected over the emulator's WebSocket (connection {first.id})\n")
        over_socket = dataclasses.replace(stack, client=stack.slack.socket_client(timeout=20))
        for who, text in SOCKET_TOUR:
            _print_reply(out, f"{who} (Socket Mode)", text, over_socket.command(text, user=PEOPLE[who]), stack)
        hub.drop(first)
        again = hub.wait_connected(after=first.id, timeout=startup_timeout)
        out.write(f"\nthe emulator dropped connection {first.id}; the bot opened connection {again.id}\n")
        _print_reply(out, "bob (Socket Mode)", "help", over_socket.command("help", user=PEOPLE["bob"]), stack)
    except (AssertionError, OSError) as exc:
        out.write(f"(the Socket Mode step stopped: {exc})\n")
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()


def run_demo(
    *,
    interactive: bool = False,
    users: int = 40,
    seed: int = 7,
    hostile: bool = False,
    out: TextIO = sys.stdout,
    lines: TextIO = sys.stdin,
    chart_dir: Path | None = None,
    tour: bool = True,
    stack_options: dict[str, Any] | None = None,
) -> int:
    """Run the tour (and the interactive loop); returns the exit code (0). ``hostile``: against the
    sandbox's hostile data (``agent-bot sandbox --hostile``). ``tour=False`` skips the tour (only
    with ``interactive``: straight to the loop, :func:`run_interactive`). ``stack_options`` go to
    :func:`bot.stack.start_stack` (tests pin the day and the API client's retries)."""
    import logging

    logging.basicConfig(level=logging.ERROR)
    out.write("Starting the sandbox Agent API, the Slack emulator and the bot on loopback...\n")
    options: dict[str, Any] = {"analytics_cache_ttl": 300.0, **(stack_options or {})}
    if hostile:
        options["sandbox_options"] = {**options.get("sandbox_options", {}), "hostile": True}
    if tour or not interactive:
        options.setdefault("linked", TOUR_LINKED)  # carol links her own key in the tour
    with running_stack(users=users, seed=seed, **options) as stack:
        out.write(
            f"sandbox API {stack.sandbox.url} | Slack emulator {stack.slack.url} | bot {stack.bot_url}\n"
            "People: alice (owner), bob (manager), carol (member), dave (guest).\n"
        )
        if tour or not interactive:
            _tour(stack, out, chart_dir or Path.cwd())
        if interactive:
            run_interactive(stack, lines, out)
    out.write("\nDemo finished.\n")
    return 0


def _tour(stack: Stack, out: TextIO, chart_dir: Path) -> None:
    """Every command of :data:`TOUR`, the sessions, the digest, alerts, the credit-limit approval, Socket Mode
    and feedback on the agent's answers."""
    for who, text in TOUR:
        _print_reply(out, who, text, stack.command(text, user=PEOPLE[who]), stack)
    try:
        link_step(stack, out)
        session_tour(stack, out)
    except WaitTimeout as exc:  # a demo step that did not happen is reported, not a traceback
        out.write(f"\n(the session tour stopped: {exc})\n")
    _digest_step(stack, out, chart_dir)
    _alerts_step(stack, out)
    _limits_step(stack, out)
    home_step(stack, out)
    socket_step(stack, out)
    stream_step(stack, out)
    feedback_step(stack, out)
    channel_defaults_step(stack, out)
    try:
        handover_step(stack, out)
    except WaitTimeout as exc:  # reported, not a traceback
        out.write(f"\n(the handover step stopped: {exc})\n")
    analytics_store_step(stack, out)
    ask_agent_step(stack, out)


CHANNEL_DEFAULTS_SET = "channel set computer=ci cwd=~/src/web replies=mentions"
CHANNEL_DEFAULTS_PROMPT = "list the open TODOs in the web app"
CHANNEL_CHATTER = "is anyone else seeing the flaky login test?"
CHANNEL_MENTION = "also count the FIXMEs"


def channel_defaults_step(stack: Stack, out: TextIO) -> None:
    """Channel defaults (issue #28): bob sets #engineering's (the CI sandbox, ``~/src/web``, only
    mentions reach the agent), carol starts a session there naming nothing but the task and it runs
    with them; in its thread her chatter stays between people and her mention reaches the agent;
    bob resets the defaults (the interactive prompt after the tour starts without them)."""
    recorder = stack.slack.recorder
    bob, carol = PEOPLE["bob"], PEOPLE["carol"]
    for who, text in (("bob", CHANNEL_DEFAULTS_SET), ("carol", "channel"), ("carol", "channel set model=claude-haiku-4-5")):
        _print_reply(out, who, text, stack.command(text, user=PEOPLE[who]), stack)
    bot = stack.slack.directory.bot.user_id
    before = {m.ts for m in recorder.messages(DEMO_CHANNEL)}
    text = f"session start {CHANNEL_DEFAULTS_PROMPT}"
    _print_reply(out, "carol", text, stack.command(text, user=carol), stack)
    try:
        parent = recorder.wait_for(
            lambda: next((m for m in recorder.messages(DEMO_CHANNEL) if m.user == bot and not m.is_reply and m.ts not in before), None),
            timeout=15,
            what="the session's parent message",
        )
        assert parent is not None  # wait_for returns what was waited for
        recorder.wait_for(lambda: thread_has(stack, DEMO_CHANNEL, parent.ts, "You asked"), timeout=30, what="the agent's answer")
        stack.client.send_message(CHANNEL_CHATTER, user_id=carol, channel_id=DEMO_CHANNEL, thread_ts=parent.ts)
        stack.client.send_mention(f"<@{bot}> {CHANNEL_MENTION}", user_id=carol, channel_id=DEMO_CHANNEL, thread_ts=parent.ts)
        recorder.wait_for(lambda: thread_has(stack, DEMO_CHANNEL, parent.ts, "You asked", count=2), timeout=30, what="the second answer")
    except WaitTimeout as exc:
        out.write(f"\n(the channel defaults step stopped: {exc})\n")
    else:
        title = "the session in #engineering: the channel's computer and directory; carol's chatter stays hers, her mention reaches it"
        _print_thread(out, stack, DEMO_CHANNEL, parent.ts, title)
    _print_reply(out, "bob", "channel reset", stack.command("channel reset", user=bob), stack)


HANDOVER_THREAD: Sequence[tuple[str, str]] = (
    ("alice", "The nightly export timed out twice this week"),
    ("bob", "It is the report query &amp; its missing index, I think"),
)
"""A discussion in #engineering that carol hands to the agent (issue #28)."""
HANDOVER_PROMPT = "Add the missing index and prove the export is fast again"


def handover_step(stack: Stack, out: TextIO) -> None:
    """A thread handed to the agent (issue #28): alice and bob discuss in a thread; carol picks
    "Send to agent" on bob's reply (a message shortcut): the start form opens prefilled with his
    words, she submits it, and the session follows in that thread, with the discussion as context.
    Then bob mentions the bot alone in another thread: the thread is the task."""
    assert stack.client is not None
    recorder = stack.slack.recorder
    carol, bot = PEOPLE["carol"], stack.slack.directory.bot.user_id
    root_ts = reply_ts = ""
    for who, text in HANDOVER_THREAD:
        sent = stack.client.send_message(text, user_id=PEOPLE[who], channel_id=DEMO_CHANNEL, thread_ts=root_ts or None)
        reply_ts = sent.request.payload["event"]["ts"]
        root_ts = root_ts or reply_ts
    _print_thread(out, stack, DEMO_CHANNEL, root_ts, "Hand a thread to the agent: alice and bob discuss in #engineering")
    shortcut = stack.client.send_message_action(SHORTCUT_CALLBACK, user_id=carol, channel_id=DEMO_CHANNEL, message_ts=reply_ts)
    trigger = shortcut.request.payload["trigger_id"]
    modal = recorder.wait_for(
        lambda: next((m for m in recorder.modals(SHORTCUT_VIEW) if m.trigger_id == trigger), None), timeout=10, what="the form"
    )
    assert modal is not None  # wait_for raises when none came
    prefilled = next(b for b in modal.view["blocks"] if b.get("block_id") == "prompt")["element"].get("initial_value", "")
    out.write(f"\n\u2500\u2500 carol picks Send to agent on bob's reply: the start form opens, prefilled with {prefilled!r}\n")
    out.write(f"(she picks the CI sandbox and writes: {HANDOVER_PROMPT})\n")
    values = {
        "computer": {"value": {"type": "static_select", "selected_option": {"value": "cmp-ci-sandbox"}}},
        "prompt": {"value": HANDOVER_PROMPT},
    }
    stack.client.send_view_submission({**modal.view, "id": modal.view_id, "hash": modal.hash}, values, user_id=carol)
    recorder.wait_for(lambda: thread_has(stack, DEMO_CHANNEL, root_ts, "You asked"), timeout=30, what="the agent's answer")
    _print_thread(out, stack, DEMO_CHANNEL, root_ts, "the same thread: the session follows there, the discussion as its context")

    other = stack.client.send_message("The changelog for 2.4 is still empty", user_id=PEOPLE["alice"], channel_id=DEMO_CHANNEL)
    other_ts = other.request.payload["event"]["ts"]
    stack.client.send_mention(f"<@{bot}> computer=ci", user_id=PEOPLE["bob"], channel_id=DEMO_CHANNEL, thread_ts=other_ts)
    recorder.wait_for(lambda: thread_has(stack, DEMO_CHANNEL, other_ts, "You asked"), timeout=30, what="the answer to the mention")
    _print_thread(out, stack, DEMO_CHANNEL, other_ts, "bob mentions @agent alone in a thread: the thread is the task")


STORE_DAYS = 90
"""The days :func:`analytics_store_step` stores before it asks for ``usage 90d``."""


def analytics_store_step(stack: Stack, out: TextIO) -> None:
    """The store of landed analytics days (issue #30): the last 90 landed days synced into the bot's
    database (as its start-up backfill does, without the pacing), then ``usage 90d`` answered from
    it, and ``usage 30d by model csv``: the table as a CSV file in bob's DM (its first lines shown)."""
    import asyncio

    from bot.api import AgentClient
    from bot.services.analytics_store import AnalyticsStore, AnalyticsSync
    from bot.services.digest import day_landed

    services = stack.bot.services
    out.write("\n\u2500\u2500 The store of landed days: the analytics land once a day, so the bot keeps each landed day\n")

    async def sync() -> tuple[int, str]:
        agent = AgentClient(
            base_url=stack.sandbox.url, api_key=services.settings.required("agent_api_key"), today=services.today
        )  # this loop's own client
        try:
            store = AnalyticsStore(services.store)
            report = await AnalyticsSync(
                agent=agent,
                store=store,
                now=services.now,
                today=services.today,
                landed=lambda day: day_landed(agent, day),
                backfill_days=STORE_DAYS,
                request_interval=0,
            ).run()
            status = await store.status()
        finally:
            await agent.aclose()
        span = f"{status.oldest} to {status.newest}" if status.oldest else "none"
        return status.days, f"{len(report.stored)} days fetched now ({report.requests} requests), {span}"

    days, said = asyncio.run(sync())
    out.write(f"(agent-bot analytics sync --days {STORE_DAYS}: {days} days stored; {said})\n")
    bob = PEOPLE["bob"]
    _print_reply(out, "bob", "usage 90d", stack.command("usage 90d", user=bob), stack)
    _print_reply(out, "bob", "usage 30d by model csv", stack.command("usage 30d by model csv", user=bob), stack)
    try:  # the file follows the reply
        csv_files = stack.slack.recorder.wait_for(
            lambda: [f for f in stack.slack.recorder.files(dm_channel_id(bob)) if f.filename.endswith(".csv")], 20.0, "the CSV file"
        )
    except WaitTimeout as exc:
        out.write(f"(no CSV file: {exc})\n")
        return
    lines = csv_files[-1].content.decode("utf-8-sig").splitlines()
    out.write(f"\u2500\u2500 {csv_files[-1].filename} in bob's DM (first lines of {len(lines)}):\n" + "\n".join(lines[:4]) + "\n")
    out.flush()


ASK_COMPUTER = "cmp-gpu-box"
ASK_FAILURE = {"status": "error", "step": "install-deps", "error": "pip: no matching distribution found for torch==9.9"}
"""The incident of the Ask the agent step: the GPU workstation fails its dependency install."""


def ask_agent_step(stack: Stack, out: TextIO) -> None:
    """An alert's *Ask the agent* (issue #28 part 4): the GPU workstation fails its dependency
    install, #engineering's ``computers`` alert says so with an *Ask the agent* button; carol clicks
    it, the start form opens prefilled with what failed, she submits it on the CI sandbox, and the
    session follows in the alert's thread. A sandbox failure or a wait that times out stops the step
    with a line saying so (the tour goes on)."""
    from bot.api import AgentAPIError
    from bot.services.alerts import EVENT_TYPE
    from bot.services.alerts.ask import ASK_ACTION

    assert stack.client is not None
    recorder = stack.slack.recorder
    carol = PEOPLE["carol"]
    key = f"computers:{ASK_COMPUTER}:incident:"
    try:
        _sandbox(stack, f"computers/{ASK_COMPUTER}/status", ASK_FAILURE)
        out.write(f"\n(in the platform: {ASK_COMPUTER} fails its dependency install)\n")
        out.write(f"alerts tick: {tick_alerts(stack).describe()}\n")
        alert = next(
            (
                m
                for m in recorder.messages(DEMO_CHANNEL)
                if not m.is_reply
                and (m.metadata or {}).get("event_type") == EVENT_TYPE
                and str(((m.metadata or {}).get("event_payload") or {}).get("key", "")).startswith(key)
            ),
            None,
        )
        if alert is None:
            out.write("(no computers alert was posted for it, so there is nothing to ask the agent about)\n")
            return
        out.write(f"\n{_channel(stack, DEMO_CHANNEL)} now shows:\n{_shown(stack, alert.as_payload())}\n")
        click = stack.client.send_block_action(ASK_ACTION, user_id=carol, channel_id=DEMO_CHANNEL, message_ts=alert.ts)
        trigger = click.request.payload["trigger_id"]
        modal = recorder.wait_for(
            lambda: next((m for m in recorder.modals(SHORTCUT_VIEW) if m.trigger_id == trigger), None), timeout=10, what="the form"
        )
        assert modal is not None  # wait_for raises when none came
        prefilled = next(b for b in modal.view["blocks"] if b.get("block_id") == "prompt")["element"].get("initial_value", "")
        out.write(f"\n\u2500\u2500 carol clicks Ask the agent on the alert: the start form opens, prefilled with {prefilled!r}\n")
        out.write("(the GPU workstation is in error, so she picks the CI sandbox and submits)\n")
        values = {
            "computer": {"value": {"type": "static_select", "selected_option": {"value": "cmp-ci-sandbox"}}},
            "prompt": {"value": prefilled},
        }
        stack.client.send_view_submission({**modal.view, "id": modal.view_id, "hash": modal.hash}, values, user_id=carol)
        recorder.wait_for(lambda: thread_has(stack, DEMO_CHANNEL, alert.ts, "You asked"), timeout=30, what="the agent's answer")
        _print_thread(out, stack, DEMO_CHANNEL, alert.ts, "the alert's thread: the session follows there")
    except (httpx.HTTPError, AgentAPIError, WaitTimeout) as exc:
        out.write(f"\n(the Ask the agent step stopped: {exc})\n")
    finally:
        with contextlib.suppress(httpx.HTTPError):  # else the fleet stays as it is; the interactive prompt shows it
            _sandbox(stack, f"computers/{ASK_COMPUTER}/status", {"status": "provisioning"})
