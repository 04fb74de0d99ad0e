"""``agent-bot demo --interactive`` and ``--web``: the demo's workspace for you to use, as any of its people.

:func:`run_interactive` is a text Slack client on a running stack (:mod:`bot.stack`) for the
emulated people: ``/agent`` commands, ``@agent`` mentions, thread replies, clicks on buttons and
menus, and forms (modals) filled in field by field (:data:`INTERACTIVE_HELP`; the loop is
:class:`InteractiveDemo`). :func:`run_web` serves the Slack emulator's browser console instead,
seeded with a little to look at (:func:`seed_console`), until Ctrl-C.
"""

from __future__ import annotations

import json
import shlex
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, TextIO

import httpx

from bot.stack import DEMO_CHANNEL, PEOPLE, Stack, serve_console, session_with_reply, start_stack, tick_digests
from sandbox.slack_emulator.console import slack_mentions
from sandbox.slack_emulator.recorder import WaitTimeout
from sandbox.slack_emulator.render import SINGLE_SELECTS, choices, form_fields, menu_lines, render_modal, render_text

DIGEST_CHANNEL = "C0DIGEST"
SEED_DIGEST = "digest subscribe #agent-digest at=00:00"
SEED_LIMIT_REQUEST = 'limits request 5000 reason="load tests for the Q4 migration"'
WEB_PORT = 8000


def seed_digest(stack: Stack) -> Any:
    """bob subscribes #agent-digest to the daily digest and one digest tick posts it, with its chart in
    the thread (the sandbox lands yesterday's batch first when it has not); returns the tick's report."""
    stack.command(slack_mentions(SEED_DIGEST, stack.slack.directory), user=PEOPLE["bob"])
    report = tick_digests(stack)
    if not stack.slack.recorder.messages(DIGEST_CHANNEL):
        httpx.post(f"{stack.sandbox.url}/_sandbox/land").raise_for_status()
        report = tick_digests(stack)
    return report


def seed_console(stack: Stack, out: TextIO) -> None:
    """What makes the console worth opening (``agent-bot demo --web``): a digest with its chart in
    #agent-digest, carol's agent session in #engineering (the agent answered her reply in the thread)
    and carol's credit-limit request waiting for a manager. A step that fails is reported, not raised."""
    steps: Sequence[tuple[str, Callable[[], Any]]] = (
        ("the daily digest in #agent-digest", lambda: seed_digest(stack)),
        ("carol's agent session in #engineering", lambda: session_with_reply(stack)),
        ("carol's credit-limit request", lambda: stack.command(SEED_LIMIT_REQUEST, user=PEOPLE["carol"])),
    )
    for title, step in steps:
        out.write(f"  {title}... ")
        out.flush()
        try:
            step()
        except (WaitTimeout, httpx.HTTPError, RuntimeError) as exc:
            out.write(f"did not happen ({exc})\n")
            continue
        out.write("done\n")


def run_web(
    *,
    host: str = "127.0.0.1",
    port: int = WEB_PORT,
    users: int = 40,
    seed: int = 7,
    seed_content: bool = True,
    out: TextIO = sys.stdout,
    stop: Any = None,
    stack_options: dict[str, Any] | None = None,
) -> int:
    """``agent-bot demo --web``: the stack with the emulator on ``host:port`` (port 0: a free one), the
    browser console served there, :func:`seed_console` (unless ``seed_content`` is false); then serve
    until Ctrl-C or SIGTERM (or until ``stop``, a ``threading.Event``, is set). Returns 0, or 2 when the
    emulator cannot listen on ``host:port``."""
    import logging
    import signal
    import threading

    logging.basicConfig(level=logging.ERROR)
    out.write("Starting the sandbox Agent API, the Slack emulator and the bot...\n")
    out.flush()
    options: dict[str, Any] = {"analytics_cache_ttl": 300.0, **(stack_options or {})}
    try:
        stack = start_stack(users=users, seed=seed, slack_host=host, slack_port=port, **options)
    except RuntimeError as exc:
        out.write(f"cannot serve the console on {host}:{port}: {exc}; is the port in use? Choose another with --port.\n")
        return 2
    try:
        url = serve_console(stack)
        if seed_content:
            out.write("Seeding the workspace:\n")
            seed_console(stack, out)
        out.write(
            f"\nThe console: {url}?as=bob&view={DEMO_CHANNEL}\n"
            "People (switch at the top left): alice (owner), bob (manager), carol (member), dave (guest).\n"
            "Every click is a signed request the emulator sends to the bot, as Slack would. Ctrl-C stops it.\n"
        )
        out.flush()
        stop = stop or threading.Event()
        if threading.current_thread() is threading.main_thread():  # SIGTERM (docker stop, kill) stops it as Ctrl-C does
            signal.signal(signal.SIGTERM, lambda *_: stop.set())
        stop.wait()
    except KeyboardInterrupt:
        pass
    finally:
        stack.close()
    out.write("\nConsole stopped.\n")
    return 0


INTERACTIVE_HELP = """\
What you can type (as bob unless you start with `as <alice|bob|carol|dave>`, e.g. `as carol /agent usage me 7d`):
  /agent <sub-command>       a slash command in #engineering, e.g. `/agent usage 7d`, `/agent session start`
  @agent <text>              mention the bot in #engineering, e.g. `@agent computer=ci run the tests`
  reply <n> <text>           reply in the thread of message [n]
  click <n> <label>          click the button <label> of message [n], or choose the menu option <label>
  fill <field>=<value> ...   fill the open form (quote values with spaces; \\n is a new line)
  submit | cancel | form     submit the open form, close it, or show it again
  help                       this list
  quit | exit | Ctrl-D       end the demo
@name and #channel in what you type become Slack mentions (@bob, #engineering); every message
shown gets a number [n]; new messages in threads show up when they arrive."""
INTERACTIVE_INTRO = "\nNow it is your turn. Type `help` for what you can type."
PROMPT = "> "
FORM_HINT = "Fill it with `fill <field>=<value> ...` (quote values with spaces; \\n is a new line), then `submit` or `cancel`."

UNKNOWN_PERSON = "unknown person {who!r}: use one of {people}."
UNKNOWN_LINE = "I do not know {line!r}: type `help` for what you can type (slash commands start with `/agent`)."
ONLY_AGENT_COMMAND = "only /agent is installed in this demo: try `/agent help`."
NEEDS_NUMBER = "`{verb}` needs the number of a message shown, e.g. `{verb} 1 {example}`."
NO_SUCH_MESSAGE = "there is no message [{n}] (the last shown is [{last}])."
NEEDS_TEXT = "`{verb}` needs some text after it, e.g. `{example}`."
CANNOT_REPLY_EPHEMERAL = "message [{n}] is only visible to {who}, so it has no thread: reply to a message in a channel."
NOTHING_TO_CLICK = "message [{n}] has no button or menu to click."
NO_SUCH_CHOICE = "message [{n}] has no button or menu option {label!r}; it has: {choices}."
AMBIGUOUS_CHOICE = "{label!r} matches several choices of message [{n}]: {choices}; type more of the label."
NO_FORM = "no form is open: a command such as `/agent session start` opens one."
FORM_BAD_PAIR = "{word!r} is not <field>=<value>; the fields are: {fields}."
FORM_NO_FIELD = "the form has no field {name!r}; its fields are: {fields}."
FORM_NOT_FILLABLE = "the field {name!r} is a {kind}, which the demo cannot fill."
FORM_NO_OPTION = "{value!r} is not an option of {name!r}; choose one of: {options}."
FORM_FILLED = "filled: {filled}."
FORM_MISSING = "the form still needs: {fields} (Slack does not submit a form with an empty required field)."
FORM_ERRORS = "the form was not accepted; it is still open:"
FORM_DONE = "form submitted and closed."
FORM_CANCELLED = "form closed without submitting."
FORM_REFUSED = "the bot refused the submission: HTTP {status}."
HTTP_REFUSED = "the bot answered HTTP {status} {body}"
NOT_DELIVERED = "(Slack would not deliver that: the bot is not in that channel)"
NO_REPLY = "(nothing came back within {seconds:g} s)"
NO_THREAD_ANSWER = "(no answer in that thread within {seconds:g} s; it shows here when it arrives)"
LINE_FAILED = "(that did not work: {error})"
BOT_NAME = "agent (bot)"

HEADER_MESSAGE = "[{n}] {who} in {where}:"
HEADER_THREAD = "[{n}] {who} in {where}, in the thread of {parent}:"
HEADER_EPHEMERAL = "[{n}] {who}, only {viewer} sees this, in {where}:"
HEADER_EDITED = "[{n}] {ref} was edited; it now reads:"
HEADER_FORM = "[form] opened for {who}:"
HEADER_FORM_UPDATED = "[form] changed:"


@dataclass
class Shown:
    """One numbered thing on the screen: a message (``ts`` in ``channel``, in ``thread_ts``'s
    thread) or an ephemeral only ``viewer`` sees (``payload`` is what it showed, with its ``ts``)."""

    number: int
    channel: str
    ts: str
    payload: dict[str, Any]
    thread_ts: str | None = None
    viewer: str | None = None


@dataclass
class OpenForm:
    """The modal on the person's screen: ``view`` (with its ``id`` and ``hash``), who opened it,
    and the values filled so far (block ID -> text, or an option's value)."""

    view: dict[str, Any]
    person: str
    values: dict[str, str] = field(default_factory=dict)


@dataclass
class _Seen:
    messages: set[tuple[str, str]] = field(default_factory=set)
    ephemerals: int = 0
    updates: int = 0
    modals: dict[str, int] = field(default_factory=dict)


@dataclass(frozen=True)
class _New:
    """What arrived since the last look: new messages, ephemerals, edited messages, modals."""

    messages: list[Any]
    ephemerals: list[Any]
    edited: list[Any]
    modals: list[Any]
    updates_seen: int

    def __bool__(self) -> bool:
        return bool(self.messages or self.ephemerals or self.edited or self.modals)


class InteractiveDemo:
    """The demo's read-eval-print loop on a running :class:`Stack`: a text Slack client for the
    emulated people. Every line's outcome is printed and numbered; nothing a person types ends the
    loop except ``quit``/``exit``/end of input (a failure of one line is one line of text).

    Waits are bounded: ``reply_timeout`` seconds for the answer to a command, click or form,
    ``follow_timeout`` for the agent's answer in a thread, then ``settle`` seconds of quiet before
    the prompt comes back (what arrives later is shown before the next prompt)."""

    def __init__(
        self, stack: Stack, out: TextIO, *, reply_timeout: float = 20.0, follow_timeout: float = 30.0, settle: float = 0.5
    ) -> None:
        self.stack = stack
        self.out = out
        self.reply_timeout = reply_timeout
        self.follow_timeout = follow_timeout
        self.settle = settle
        self.recorder = stack.slack.recorder
        self.directory = stack.slack.directory
        self.bot_user = self.directory.bot.user_id
        self.shown: list[Shown] = []
        self.numbers: dict[tuple[str, str], int] = {}
        self.form: OpenForm | None = None
        self.triggers: dict[str, str] = {}
        """``trigger_id`` -> the person whose command or click it came with (who a modal is for)."""
        self.names = {user.id: user.name for user in self.directory.users}
        self.channel_names = {channel.id: channel.name for channel in self.directory.channels}
        self.seen = _Seen()
        self._mark(self._new())  # what the tour left is not news

    # ----------------------------------------------------------------- the loop

    def run(self, lines: TextIO) -> None:
        """Read lines until ``quit``/``exit``/end of input (or Ctrl-C); run each one."""
        while True:
            self._show(self._new())  # what arrived in the meantime, e.g. a followed thread
            self.out.write(PROMPT)
            self.out.flush()
            try:
                line = lines.readline()
            except KeyboardInterrupt:
                line = ""
            if not line:
                self.out.write("\n")
                return
            if line.strip().lower() in ("quit", "exit"):
                return
            self.run_line(line)

    def run_line(self, line: str) -> None:
        """Run one typed line; any failure is printed as one line, never raised."""
        try:
            self._dispatch(line.strip())
        except WaitTimeout:
            self._say(NO_REPLY.format(seconds=self.reply_timeout))
        except KeyboardInterrupt:
            self._say(LINE_FAILED.format(error="interrupted"))
        except Exception as exc:  # the loop must survive whatever one line does; say what broke
            first = (str(exc).splitlines() or [""])[0]
            self._say(LINE_FAILED.format(error=f"{type(exc).__name__}: {first}" if first else type(exc).__name__))
        self.out.flush()

    def _dispatch(self, line: str) -> None:
        if not line:
            return
        who, explicit = "bob", False
        words = line.split(None, 2)
        if words[0].lower() == "as" and len(words) >= 2:
            who, explicit, line = words[1].lower().lstrip("@"), True, (words[2] if len(words) > 2 else "")
            if who not in PEOPLE:
                self._say(UNKNOWN_PERSON.format(who=who, people=", ".join(PEOPLE)))
                return
        verb, _, rest = line.partition(" ")
        verb, rest = verb.lower(), rest.strip()
        if verb in ("help", "?", ""):
            self._say(INTERACTIVE_HELP)
        elif verb == "/agent":
            self.command(who, rest)
        elif verb.startswith("/"):
            self._say(ONLY_AGENT_COMMAND)
        elif verb in ("@agent", f"<@{self.bot_user.lower()}>"):
            self.mention(who, rest)
        elif verb == "reply":
            self.reply(who, rest)
        elif verb == "click":
            self.click(who, rest)
        elif verb in ("fill", "submit", "cancel", "form"):
            self.form_line(verb, rest, who if explicit else None)
        else:
            self._say(UNKNOWN_LINE.format(line=line))

    # ----------------------------------------------------------------- what a person can do

    def command(self, who: str, text: str) -> None:
        """``/agent <text>`` as ``who`` in the demo channel; shows the reply, a form, or whatever came."""
        sent = self.stack.client.send_slash_command(slack_mentions(text, self.directory), user_id=PEOPLE[who], channel_id=DEMO_CHANNEL)
        self.triggers[str(sent.request.payload.get("trigger_id"))] = who
        if sent.status_code != 200:
            self._say(HTTP_REFUSED.format(status=sent.status_code, body=sent.body.strip()[:200]).strip())
            return
        if sent.body.strip():  # the ack carried the reply
            payload = json.loads(sent.body)
            self._add_shown(payload, DEMO_CHANNEL, self.recorder.next_ts(), None, PEOPLE[who])
            self._settle()
            return
        trigger = str(sent.request.payload.get("trigger_id"))

        def answered() -> bool:  # a reply, a form, or something only this person sees
            new = self._new()
            return bool(
                self.recorder.responses(sent.response_url_id)
                or any(self._modal_trigger(m) == trigger for m in new.modals)
                or any(e.user == PEOPLE[who] for e in new.ephemerals)
            )

        self._collect(self.reply_timeout, answered)

    def mention(self, who: str, text: str) -> None:
        """``@agent <text>`` as ``who`` in the demo channel; waits for the bot in the mention's thread."""
        if not text:
            self._say(NEEDS_TEXT.format(verb="@agent", example="@agent computer=ci run the tests"))
            return
        converted = f"<@{self.bot_user}> {slack_mentions(text, self.directory)}"
        sent = self.stack.client.send_mention(converted, user_id=PEOPLE[who], channel_id=DEMO_CHANNEL)
        self._after_message(who, sent, DEMO_CHANNEL, sent.request.payload["event"]["ts"])

    def reply(self, who: str, rest: str) -> None:
        """``reply <n> <text>``: ``who`` writes in the thread of message [n]; waits for the bot there."""
        number, text = self._numbered("reply", rest, "thanks, now the docs")
        if number is None:
            return
        shown = self.shown[number - 1]
        if shown.viewer is not None:
            self._say(CANNOT_REPLY_EPHEMERAL.format(n=number, who=self.names.get(shown.viewer, shown.viewer)))
            return
        if not text:
            self._say(NEEDS_TEXT.format(verb="reply", example=f"reply {number} thanks, now the docs"))
            return
        thread_ts = shown.thread_ts or shown.ts
        converted = slack_mentions(text, self.directory)
        if converted.startswith(f"<@{self.bot_user}>"):
            sent = self.stack.client.send_mention(converted, user_id=PEOPLE[who], channel_id=shown.channel, thread_ts=thread_ts)
        else:
            sent = self.stack.client.send_message(converted, user_id=PEOPLE[who], channel_id=shown.channel, thread_ts=thread_ts)
        self._after_message(who, sent, shown.channel, thread_ts)

    def click(self, who: str, rest: str) -> None:
        """``click <n> <label>``: ``who`` clicks a button of message [n], or picks a menu option."""
        number, label = self._numbered("click", rest, "Refresh")
        if number is None:
            return
        shown = self.shown[number - 1]
        payload = shown.payload
        if shown.viewer is None:
            current = self.recorder.message(shown.channel, shown.ts)
            payload = current.as_payload() if current is not None else payload
        available = choices(payload)
        if not available:
            self._say(NOTHING_TO_CLICK.format(n=number))
            return
        listed = ", ".join(dict.fromkeys(c.label for c in available))
        wanted = label.strip().strip("[]").strip().lower()
        exact = [c for c in available if c.label.strip().lower() == wanted]
        matching = exact or [c for c in available if wanted and wanted in c.label.lower()]
        if not matching:
            self._say(NO_SUCH_CHOICE.format(n=number, label=label, choices=listed))
            return
        if len(matching) > 1:
            self._say(AMBIGUOUS_CHOICE.format(n=number, label=label, choices=", ".join(c.label for c in matching)))
            return
        choice = matching[0]
        sent = self.stack.client.send_block_action(
            choice.action_id,
            choice.value,
            user_id=PEOPLE[who],
            channel_id=shown.channel,
            message_ts=shown.ts,
            thread_ts=shown.thread_ts,
            block_id=choice.block_id,
            message={
                "type": "message",
                "ts": shown.ts,
                **{k: v for k, v in payload.items() if k in ("text", "blocks", "thread_ts", "user")},
            },
        )
        self.triggers[str(sent.request.payload.get("trigger_id"))] = who
        if sent.status_code != 200:
            self._say(HTTP_REFUSED.format(status=sent.status_code, body=sent.body.strip()[:200]).strip())
            return
        self._collect(self.reply_timeout)

    def form_line(self, verb: str, rest: str, who: str | None) -> None:
        """``fill``, ``submit``, ``cancel`` or ``form`` on the open form (``who``: an explicit ``as``)."""
        form = self.form
        if form is None:
            self._say(NO_FORM)
            return
        if verb == "form":
            self._print_form(form, HEADER_FORM.format(who=form.person))
        elif verb == "cancel":
            self.form = None
            self._say(FORM_CANCELLED)
        elif verb == "fill":
            self._fill(form, rest)
        else:
            self._submit(form, who or form.person)

    # ----------------------------------------------------------------- forms

    def _fill(self, form: OpenForm, rest: str) -> None:
        fields = {f.block_id.lower(): f for f in form_fields(form.view)}
        names = ", ".join(f.block_id for f in fields.values())
        try:
            words = shlex.split(rest)
        except ValueError as exc:
            self._say(LINE_FAILED.format(error=f"{exc} (close your quotes)"))
            return
        if not words:
            self._say(FORM_BAD_PAIR.format(word=rest, fields=names))
            return
        updates: dict[str, str] = {}
        for word in words:
            name, equals, value = word.partition("=")
            found = fields.get(name.strip().lower())
            if not equals:
                self._say(FORM_BAD_PAIR.format(word=word, fields=names))
                return
            if found is None:
                self._say(FORM_NO_FIELD.format(name=name, fields=names))
                return
            if not found.fillable:
                self._say(FORM_NOT_FILLABLE.format(name=found.block_id, kind=found.kind))
                return
            value = value.replace("\\n", "\n")
            if found.options:
                option = _pick_option(found.options, value)
                if option is None:
                    self._say(
                        FORM_NO_OPTION.format(value=value, name=found.block_id, options=" | ".join(label for label, _ in found.options))
                    )
                    return
                value = option
            updates[found.block_id] = value
        form.values.update(updates)
        described = ", ".join(f"{name} = {fields[name.lower()].label_of(value)!r}" for name, value in updates.items())
        self._say(FORM_FILLED.format(filled=described))

    def _submit(self, form: OpenForm, who: str) -> None:
        fields = form_fields(form.view)
        values: dict[str, dict[str, Any]] = {}
        missing = []
        for f in fields:
            value = form.values.get(f.block_id, f.initial)
            if value is not None and not value.strip():
                value = None
            if value is None and not f.optional:
                missing.append(f"{f.block_id} ({f.label})")
            if f.kind in SINGLE_SELECTS:
                selected = {"text": {"type": "plain_text", "text": f.label_of(value)}, "value": value} if value is not None else None
                state: dict[str, Any] = {"type": f.kind, "selected_option": selected}
            else:
                state = {"type": f.kind, "value": value}
            values.setdefault(f.block_id, {})[f.action_id] = state
        if missing:
            self._say(FORM_MISSING.format(fields=", ".join(missing)))
            return
        sent = self.stack.client.send_view_submission(form.view, values, user_id=PEOPLE[who])
        if sent.status_code != 200:
            self._say(FORM_REFUSED.format(status=sent.status_code))
            return
        answer = json.loads(sent.body) if sent.body.strip() else {}
        action = answer.get("response_action") if isinstance(answer, dict) else None
        if action == "errors":
            self._say(FORM_ERRORS)
            for name, error in (answer.get("errors") or {}).items():
                self._say(f"  {name}: {error}")
            return
        if action in ("update", "push") and isinstance(answer.get("view"), dict):
            self.form = OpenForm({**answer["view"], "id": form.view.get("id"), "hash": form.view.get("hash")}, form.person)
            self._print_form(self.form, HEADER_FORM_UPDATED)
        else:
            self.form = None
            self._say(FORM_DONE)
        self._collect(self.reply_timeout)

    def _print_form(self, form: OpenForm, header: str) -> None:
        self._say(header)
        self._say(render_modal(form.view, form.values))
        self._say(FORM_HINT)

    # ----------------------------------------------------------------- what came back

    def _after_message(self, who: str, sent: Any, channel: str, thread_ts: str) -> None:
        """After a person's message in ``thread_ts``'s thread: wait for the bot there (or for
        something only that person sees), bounded by ``follow_timeout``; then show everything new."""
        if not sent.delivered:
            self._show(self._new())
            self._say(NOT_DELIVERED)
            return
        if sent.status_code != 200:
            self._show(self._new())
            self._say(HTTP_REFUSED.format(status=sent.status_code, body=sent.body.strip()[:200]).strip())
            return

        after = float(sent.request.payload["event"]["ts"])

        def answered() -> bool:  # the bot in the thread after this message, or something only this person sees
            new = self._new()
            return any(m.user == self.bot_user and thread_ts in (m.thread_ts, m.ts) and float(m.ts) > after for m in new.messages) or any(
                e.user == PEOPLE[who] for e in new.ephemerals
            )

        try:
            self.recorder.wait_for(answered, timeout=self.follow_timeout, what="the bot in the thread")
        except WaitTimeout:
            self._show(self._new())
            self._say(NO_THREAD_ANSWER.format(seconds=self.follow_timeout))
            return
        self._settle()

    def _collect(self, timeout: float, done: Callable[[], Any] | None = None) -> None:
        """Wait up to ``timeout`` s for ``done`` (default: anything new), show what is new, then let it settle."""
        try:
            self.recorder.wait_for(done or self._new, timeout=timeout, what="the answer")
        except WaitTimeout:
            self._show(self._new())
            self._say(NO_REPLY.format(seconds=timeout))
            return
        self._settle()

    def _settle(self) -> None:
        """Show what is new, then whatever follows within ``settle`` s of quiet (at most 20 rounds)."""
        self._show(self._new())
        for _ in range(20):
            try:
                self.recorder.wait_for(self._new, timeout=self.settle, what="more")
            except WaitTimeout:
                return
            self._show(self._new())

    def _new(self) -> _New:
        seen = self.seen
        messages = [m for m in self.recorder.messages() if (m.channel, m.ts) not in seen.messages]
        ephemerals = self.recorder.ephemerals()[seen.ephemerals :]
        all_updates = self.recorder.updates()
        fresh = {(m.channel, m.ts) for m in messages}
        edited_keys = dict.fromkeys((u.channel, u.ts) for u in all_updates[seen.updates :] if (u.channel, u.ts) not in fresh)
        edited = [m for key in edited_keys if (m := self.recorder.message(*key)) is not None and not m.deleted]
        modals = [m for m in self.recorder.modals() if seen.modals.get(m.view_id) != m.updates]
        return _New(messages, ephemerals, edited, modals, len(all_updates))

    def _mark(self, new: _New) -> None:
        self.seen.messages.update((m.channel, m.ts) for m in new.messages)
        self.seen.ephemerals += len(new.ephemerals)
        self.seen.updates = max(self.seen.updates, new.updates_seen)
        self.seen.modals.update({m.view_id: m.updates for m in new.modals})

    def _show(self, new: _New) -> None:
        """Print ``new`` (messages and ephemerals in time order, then edits, then forms), numbered."""
        self._mark(new)
        timeline: list[tuple[float, Any, str | None]] = [(float(m.ts), m, None) for m in new.messages]
        timeline += [(float(e.ts), e, e.user) for e in new.ephemerals]
        for _, item, viewer in sorted(timeline, key=lambda entry: entry[0]):
            payload = {"text": item.text, "blocks": item.blocks}
            if viewer is None:
                payload = item.as_payload()
            self._add_shown(payload, item.channel, item.ts, item.thread_ts, viewer, who=item.user if viewer is None else self.bot_user)
        for message in new.edited:
            ref = self.numbers.get((message.channel, message.ts))
            shown = self._remember(message.as_payload(), message.channel, message.ts, message.thread_ts, None)
            self._say(HEADER_EDITED.format(n=shown.number, ref=f"[{ref}]" if ref else f"a message in {self._where(message.channel)}"))
            self._print_payload(message.as_payload())
        for modal in new.modals:
            kept = self.form.values if self.form is not None and self.form.view.get("id") == modal.view_id else None
            first = kept is None
            person = self._modal_person(modal)
            self.form = OpenForm({**modal.view, "id": modal.view_id, "hash": modal.hash}, person, kept or {})
            self._print_form(self.form, HEADER_FORM.format(who=person) if first else HEADER_FORM_UPDATED)
        self.out.flush()

    def _modal_trigger(self, modal: Any) -> str:
        """The ``trigger_id`` ``views.open`` opened ``modal`` with ("" if not found)."""
        opened = [c for c in self.recorder.calls("views.open") if c.ok and (c.response.get("view") or {}).get("id") == modal.view_id]
        return str(opened[-1].args.get("trigger_id") or "") if opened else ""

    def _modal_person(self, modal: Any) -> str:
        """Who the modal opened for: the person whose slash command or click gave its ``trigger_id``."""
        return self.triggers.get(self._modal_trigger(modal), "bob")

    def _add_shown(
        self, payload: dict[str, Any], channel: str, ts: str, thread_ts: str | None, viewer: str | None, who: str | None = None
    ) -> None:
        shown = self._remember(payload, channel, ts, thread_ts, viewer)
        author = BOT_NAME if (who or self.bot_user) == self.bot_user else self.names.get(who or "", who or "?")
        where = self._where(channel)
        if viewer is not None:
            header = HEADER_EPHEMERAL.format(n=shown.number, who=author, viewer=self.names.get(viewer, viewer), where=where)
        elif thread_ts and thread_ts != ts:
            parent = self.numbers.get((channel, thread_ts))
            header = HEADER_THREAD.format(n=shown.number, who=author, where=where, parent=f"[{parent}]" if parent else "an earlier message")
        else:
            header = HEADER_MESSAGE.format(n=shown.number, who=author, where=where)
        self._say(header)
        self._print_payload(payload)

    def _remember(self, payload: dict[str, Any], channel: str, ts: str, thread_ts: str | None, viewer: str | None) -> Shown:
        shown = Shown(len(self.shown) + 1, channel, ts, payload, thread_ts, viewer)
        self.shown.append(shown)
        if viewer is None:
            self.numbers[(channel, ts)] = shown.number
        return shown

    def _print_payload(self, payload: dict[str, Any]) -> None:
        self._say(render_text(payload, users=self.names, channels=self.channel_names))
        for line in menu_lines(payload):
            self._say(f"  menu {line}")

    def _where(self, channel: str) -> str:
        found = self.directory.channel(channel)
        if found is not None and found.is_im:
            return f"a DM with {found.name}"
        return f"#{self.channel_names.get(channel, channel)}"

    def _numbered(self, verb: str, rest: str, example: str) -> tuple[int | None, str]:
        word, _, text = rest.partition(" ")
        if not word.strip("[]").isdigit():
            self._say(NEEDS_NUMBER.format(verb=verb, example=example))
            return None, ""
        number = int(word.strip("[]"))
        if not 1 <= number <= len(self.shown):
            self._say(NO_SUCH_MESSAGE.format(n=number, last=len(self.shown) or "none"))
            return None, ""
        return number, text.strip()

    def _say(self, text: str) -> None:
        self.out.write(text + "\n")


def _pick_option(options: Sequence[tuple[str, str]], typed: str) -> str | None:
    """The value of the option ``typed`` names: its label or value, else the one label or value it
    is part of (case-insensitive); None when none or several match."""
    wanted = typed.strip().lower()
    exact = [value for label, value in options if wanted in (label.lower(), value.lower())]
    partial = [value for label, value in options if wanted and (wanted in label.lower() or wanted in value.lower())]
    found = exact or partial
    return found[0] if len(found) == 1 else None


def run_interactive(stack: Stack, lines: TextIO, out: TextIO, **timeouts: float) -> None:
    """The interactive loop on a running ``stack``: reads ``lines`` until ``quit``/``exit``/EOF and
    prints to ``out`` (see :class:`InteractiveDemo`; ``timeouts``: ``reply_timeout``,
    ``follow_timeout``, ``settle``, in seconds)."""
    out.write(INTERACTIVE_INTRO + "\n")
    InteractiveDemo(stack, out, **timeouts).run(lines)
