"""Agent sessions from Slack: start one, follow it in a thread, reply to the agent there.

    /agent session start [computer=<name|id>] [cwd=<path>] [model=<id>] <prompt...>
    /agent session start                       (no prompt: a modal asks for everything)
    @agent [computer=...] [cwd=...] [model=...] <prompt...>      (a mention in a channel)
    /agent sessions
    /agent session status <id>
    /agent session set <id> key=value ...
    /agent session archive <id>

Three ways to start, one code path (:func:`start_session` then :func:`launch`): the computer is
the one named (id, or name case-insensitively, or a unique name prefix), else the user's last-used
one, else the only ``active`` one; several active and none named: a select menu (only the asker
sees it, it expires after :data:`bot.services.sessions.CHOICE_TTL`); a computer that is not ``active`` is
refused with its status. Then ``POST /sessions`` (``computerId``, ``cwd``, ``sessionSettings.model``)
and ``POST /messages`` with the prompt (management-api-v0.md, "Endpoints"); one parent message in
the channel (edited in place as things change) whose thread is the session's.

Exactly once: each start claims a row keyed by where it came from (``command:<trigger_id>``,
``view:<view id>``, ``mention:<channel>:<ts>``, or the menu's row) before ``POST /sessions``, which
is never called twice for one row, whatever Slack retries, double submits or replicas do.

Thread replies (Events API ``message`` with ``thread_ts``; ``file_share`` and ``thread_broadcast``
included; bots, edits and deletions ignored; a thread that is not a session's ignored silently)
are sent to the session once (a ``forward:<channel>:<ts>`` claim: the same words arrive as
``app_mention`` and as ``message``), marked :eyes: then :white_check_mark: or :x: with the reason.
Attached images, PDFs and text files are downloaded with the bot token and sent as base64
(:data:`MAX_FILE_BYTES` at most each); an HTML answer to a download (Slack's sign-in page when the
token or the ``files:read`` scope is wrong) is an error, not a file. The role check (policy key
``thread_reply``) ran before any of this, in the middleware.
"""

from __future__ import annotations

import base64
import datetime as dt
import logging
import re
from collections.abc import Awaitable, Callable
from dataclasses import replace
from typing import TYPE_CHECKING, Any

import httpx
from pydantic import SecretStr
from slack_sdk.web.async_client import AsyncWebClient

from bot.api import AgentAPIError, AgentClient, NotFoundError
from bot.api.models import Computer
from bot.commands import SubCommand, unescape_slack
from bot.errors import reported
from bot.services.follower import REACTIONS, Follower, view_of
from bot.middleware import THREAD_REPLY, is_person_reply
from bot.store import Store
from bot.services.sessions import CHOICE_TTL, CHOOSING, STARTING, NewStart, SessionLink, SessionStore
from formatters.blocks import message_link
from formatters.notices import error_message
from formatters.sessions import (
    ARCHIVE_ACTION,
    ARCHIVED_BY,
    CHOICE_EXPIRED,
    CHOICE_EXPIRED_HINT,
    CHOICE_TAKEN,
    FILE_SKIPPED,
    NOT_YOURS,
    PICK_ACTION,
    REFRESH_ACTION,
    REPLY_FAILED,
    START_BLOCKS,
    START_VIEW,
    SessionRow,
    computer_choice,
    one_line,
    parent_message,
    session_status,
    sessions_list,
    start_modal,
    started_notice,
    thread_note,
)
from handlers.router import CommandRequest, Router, UserInputError, describe_api_error

if TYPE_CHECKING:
    from bot.container import Services

logger = logging.getLogger(__name__)

START = SubCommand(
    "session start",
    "Start an agent session on a computer and follow it in a thread.",
    "/agent session start [computer=<name|id>] [cwd=<path>] [model=<id>] <prompt...>",
    (
        "/agent session start fix the flaky login test",
        "/agent session start computer=build-01 cwd=~/src/web run the linter",
        "/agent session start",
    ),
    details=(
        "Without `computer=` I use the computer of your last session, else the only active one, else I "
        "ask. Without a prompt a form opens. I post one message in the channel; the agent's answers "
        "arrive in its thread, and whatever you write in that thread goes to the agent (images, PDFs "
        "and text files too). You can also mention me: `@agent run the tests`."
    ),
    policy_key="session start",
)
LIST = SubCommand("sessions", "The agent sessions started from this workspace, newest first.", "/agent sessions", ("/agent sessions",))
STATUS = SubCommand(
    "session status", "One agent session: status, settings, token usage.", "/agent session status <id>",
    ("/agent session status 3f2a…",), policy_key="session status",
)
SET = SubCommand(
    "session set",
    "Change a session's settings (model, reasoningEffort, autonomyLevel, ...).",
    "/agent session set <id> key=value ...",
    ("/agent session set 3f2a… model=fast-model reasoningEffort=high",),
    details="Only the settings you name are sent (PATCH); the session is shown as the platform returns it.",
    policy_key="session set",
)
ARCHIVE = SubCommand(
    "session archive", "Archive a session; I stop following it.", "/agent session archive <id>",
    ("/agent session archive 3f2a…",), policy_key="session archive",
)

START_OPTIONS = ("computer", "cwd", "model")
SETTABLE = {
    name.lower(): name
    for name in (
        "model", "reasoningEffort", "interactionMode", "autonomyLevel", "autonomyMode",
        "specModeModel", "specModeReasoningEffort",
    )
}
SETTABLE.update({re.sub(r"(?<!^)(?=[A-Z])", "_", v).lower(): v for v in list(SETTABLE.values())})
CWD_MAX = 4096
MAX_FILE_BYTES = 10 * 1024 * 1024
IMAGE_TYPES = ("image/png", "image/jpeg", "image/gif", "image/webp")
FILE_TYPES = ("application/pdf",)
EMPTY_TEXT_WITH_FILES = "Please look at the attached file(s)."
SESSIONS_LISTED = 20
_OPTION = re.compile(r"(?:(?<=\s)|^)(computer|cwd|model)=(\"[^\"]*\"|\u201c[^\u201d]*\u201d|\S+)", re.IGNORECASE)
_LEADING_MENTION = re.compile(r"^\s*(<@[UW][A-Z0-9]+(?:\|[^>]*)?>\s*)+")

NO_PROMPT = "Tell the agent what to do: `/agent session start <prompt>`."
NO_ACTIVE = "No computer is active, so there is nowhere to run a session."
NO_ACTIVE_HINT = "Run `/agent computers` to see their state; a computer in error has a Retry install button."
NOT_ACTIVE = "The computer *{name}* is {status}, not active, so it cannot run a session now."
NOT_ACTIVE_HINT = {
    "provisioning": "Wait until it finishes provisioning (`/agent computers`), or name another one with `computer=`.",
    "error": "A manager can retry its install from `/agent computers`; or name another one with `computer=`.",
}
UNKNOWN_COMPUTER = "No computer is called or has the id `{name}`."
AMBIGUOUS_COMPUTER = "`{name}` could be any of: {names}."
COMPUTER_HINT = "Active computers: {names}. Name one with `computer=<name>`."
CWD_TOO_LONG = f"The working directory must be 1 to {CWD_MAX} characters long."
ALREADY_STARTED = "This request already started a session; see its thread."
NO_SUCH_SESSION = "I do not know a session `{id}` started from Slack, and the platform has none either."
SET_NOTHING = "Name at least one setting: `key=value` with key one of {keys}."
SET_UNKNOWN = "I cannot set `{names}`; settable: {keys}."
SET_DONE = ":white_check_mark: Settings changed (only the ones you named were sent)."
ARCHIVED = ":file_cabinet: Session archived; I stopped following it."
CANNOT_POST = "I cannot post in this channel, so I started no session (there would be no thread to follow it in)."
CANNOT_POST_HINT = "Invite me with `/invite @agent`, or start the session in a channel I am in."
PROMPT_NOT_DELIVERED = "The prompt was not delivered: {what} Reply in this thread to send it again."

Tell = Callable[[dict[str, Any]], Awaitable[Any]]


def split_options(text: str) -> tuple[str, dict[str, str]]:
    """``computer=``, ``cwd=`` and ``model=`` taken out of ``text``; the rest (newlines kept) is the prompt."""
    options: dict[str, str] = {}

    def take(match: re.Match[str]) -> str:
        options[match.group(1).lower()] = match.group(2).strip("\"\u201c\u201d")
        return ""

    prompt = _OPTION.sub(take, text)
    return prompt.strip(), options


def resolve_computer(computers: list[Computer], wanted: str | None, last_used: str | None) -> Computer | list[Computer]:
    """The computer to use, or the active ones to choose from (a list of 2 or more).

    Raises :class:`UserInputError` for an unknown, ambiguous or inactive computer, or none active."""
    active = [c for c in computers if c.status == "active"]
    names = ", ".join(f"`{one_line(c.name, 60)}`" for c in active[:10]) or "none"
    if wanted:
        lowered = wanted.lower()
        found = [c for c in computers if c.id == wanted] or [c for c in computers if (c.name or "").lower() == lowered]
        if not found:
            found = [c for c in computers if (c.name or "").lower().startswith(lowered)]
        if not found:
            raise UserInputError(UNKNOWN_COMPUTER.format(name=one_line(wanted, 80)), COMPUTER_HINT.format(names=names))
        if len(found) > 1:
            raise UserInputError(
                AMBIGUOUS_COMPUTER.format(name=one_line(wanted, 80), names=", ".join(f"`{one_line(c.name, 60)}`" for c in found[:10])),
                COMPUTER_HINT.format(names=names),
            )
        computer = found[0]
        if computer.status != "active":
            status = computer.status or "in an unknown state"
            raise UserInputError(
                NOT_ACTIVE.format(name=one_line(computer.name, 80), status=one_line(status, 40)),
                NOT_ACTIVE_HINT.get(computer.status or "", "Name another one with `computer=`."),
            )
        return computer
    if last_used:
        previous = next((c for c in active if c.id == last_used), None)
        if previous is not None:
            return previous
    if not active:
        raise UserInputError(NO_ACTIVE, NO_ACTIVE_HINT)
    if len(active) == 1:
        return active[0]
    return active


def check_cwd(cwd: str | None) -> str | None:
    if cwd is None:
        return None
    if not 1 <= len(cwd) <= CWD_MAX:
        raise UserInputError(CWD_TOO_LONG, "Give a path on the computer, like `~/src/web`.")
    return cwd


class Sessions:
    """The sessions feature of one bot: the store, the follower, and the start / reply logic."""

    def __init__(
        self,
        *,
        agent: AgentClient,
        store: Store,
        slack: AsyncWebClient,
        now: Callable[[], dt.datetime],
        follow_hours: float,
        bot_token: SecretStr,
    ) -> None:
        self.agent = agent
        self.claims = store
        self.now = now
        self.bot_token = bot_token
        self.store = SessionStore(store)
        self.follower = Follower(sessions=self.store, agent=agent, slack=slack, now=now, follow_hours=follow_hours)

    # ------------------------------------------------------------------ starting

    async def start_session(self, start: NewStart, computer: str | None, *, ask: Tell) -> SessionLink | None:
        """Resolve the computer (``computer``: what was asked for, id or name, or None) and start;
        returns the session's row (or None after asking which computer with ``ask``: a menu). Raises
        :class:`UserInputError` (bad input, no usable computer) or :class:`bot.api.AgentAPIError`
        (listing the computers failed) for the caller to show."""
        if not start.prompt.strip():
            raise UserInputError(NO_PROMPT, f"Usage: `{START.usage}`")
        start = replace(start, cwd=check_cwd(start.cwd))
        computers = await self.agent.list_computers()
        last_used = await self.store.last_computer(start.slack_user)
        chosen = resolve_computer(computers, computer, last_used)
        now = self.now()
        if isinstance(chosen, list):
            row, created = await self.store.claim_start(start, state=CHOOSING, now=now)
            if created:
                await ask(computer_choice(chosen, row.id, minutes=int(CHOICE_TTL.total_seconds() // 60)))
            return None
        start = replace(start, computer_id=chosen.id, computer_name=chosen.name)
        row, created = await self.store.claim_start(start, state=STARTING, now=now)
        if not created:
            logger.info("start %s was claimed before; not starting again", start.start_key)
            return row
        return await self.launch(row)

    async def start_telling(self, start: NewStart, computer: str | None, tell: Tell) -> None:
        """:meth:`start_session` for a start that has no ``respond`` (a form, a mention): the menu and
        any refusal or API failure go to the person with ``tell`` (an ephemeral message)."""
        try:
            row = await self.start_session(start, computer, ask=tell)
            if row is not None and row.state == "failed" and not row.parent_ts:
                await tell(error_message(row.error or CANNOT_POST, CANNOT_POST_HINT))
        except UserInputError as exc:
            await tell(error_message(exc.message, exc.hint))
        except AgentAPIError as exc:
            await tell(error_message(*describe_api_error(exc)))

    async def launch(self, row: SessionLink) -> SessionLink:
        """The one path after a claim: parent message, POST /sessions, POST /messages, follow."""
        agent = self.agent
        parent = await self.follower.call_slack(
            "chat_postMessage", channel=row.channel, thread_ts=row.thread_ts, **parent_message(view_of(row, status="starting"))
        )
        parent_ts = (parent or {}).get("ts") if parent else None
        if not parent_ts:  # nowhere to follow it: start nothing rather than a session nobody sees
            await self.store.mark_failed(row.id, CANNOT_POST)
            logger.warning("no parent message for session row %s in %s; nothing started", row.id, row.channel)
            return await self.store.get(row.id) or row
        thread_ts = row.thread_ts or parent_ts
        await self.store.set_thread(row.id, thread_ts=thread_ts, parent_ts=parent_ts)
        row.thread_ts, row.parent_ts = thread_ts, parent_ts
        try:
            session = await agent.create_session(
                computer_id=row.computer_id,
                cwd=row.cwd,
                session_settings={"model": row.model} if row.model else None,
            )
        except AgentAPIError as exc:
            what, hint = describe_api_error(exc)
            await self.store.mark_failed(row.id, f"{what} {hint}")
            logger.warning("POST /sessions failed for row %s: %s", row.id, type(exc).__name__)
            failed = await self.store.get(row.id) or row
            await self._edit_parent(failed, status="failed")
            await self.follower.set_reaction(failed, REACTIONS["error"])
            return failed
        now = self.now()
        await self.store.record_session(row.id, session_id=session.session_id, status=session.status, now=now)
        try:
            await agent.create_message(session_id=session.session_id, text=row.prompt)
        except AgentAPIError as exc:
            what, hint = describe_api_error(exc)
            await self.store.set_error(row.id, PROMPT_NOT_DELIVERED.format(what=what))
        started = await self.store.get(row.id) or row
        await self._edit_parent(started)
        return started

    async def _edit_parent(self, row: SessionLink, *, status: str | None = None) -> None:
        if row.parent_ts:
            await self.follower.call_slack(
                "chat_update", channel=row.channel, ts=row.parent_ts, **parent_message(view_of(row, status=status))
            )

    async def pick(self, body: dict, respond: Any) -> None:
        """The select menu's choice: start the waiting row on the chosen computer, once."""
        action = (body.get("actions") or [{}])[0]
        block_id = action.get("block_id") or ""
        computer_id = ((action.get("selected_option") or {}).get("value") or "").strip()
        user_id = (body.get("user") or {}).get("id")
        try:
            row_id = int(block_id.removeprefix("pick:"))
        except ValueError:
            row_id = -1
        row = await self.store.get(row_id)

        async def tell(payload: dict) -> None:
            await respond(**payload, response_type="ephemeral", replace_original=False)

        if row is None or not computer_id:
            await tell(error_message(CHOICE_EXPIRED, CHOICE_EXPIRED_HINT))
            return
        if row.slack_user != user_id:
            await tell(error_message(NOT_YOURS))
            return
        try:
            computers = await self.agent.list_computers()
            chosen = resolve_computer(computers, computer_id, None)
        except UserInputError as exc:
            await tell(error_message(exc.message, exc.hint))
            return
        except AgentAPIError as exc:
            await tell(error_message(*describe_api_error(exc)))
            return
        assert isinstance(chosen, Computer)
        if not await self.store.take_choice(row.id, computer_id=chosen.id, computer_name=chosen.name, now=self.now()):
            fresh = await self.store.get(row.id)
            taken = fresh is not None and fresh.state != CHOOSING
            await tell(error_message(CHOICE_TAKEN) if taken else error_message(CHOICE_EXPIRED, CHOICE_EXPIRED_HINT))
            return
        row = await self.store.get(row.id)
        assert row is not None and row.state == STARTING
        started = await self.launch(row)
        link = message_link(started.channel, started.thread_ts)
        if link:
            await respond(**started_notice(chosen.name, link), replace_original=True)

    # ------------------------------------------------------------------ thread replies

    async def forward(self, event: dict, link: SessionLink, client: Any) -> None:
        """Send a person's thread reply to the session, once; mark it with reactions."""
        channel, ts = event.get("channel", ""), event.get("ts", "")
        if not await self.claims.claim(f"forward:{channel}:{ts}"):
            return
        slack = self.follower
        await slack.call_slack("reactions_add", channel=channel, timestamp=ts, name="eyes")
        text = _LEADING_MENTION.sub("", unescape_slack(event.get("text") or "")).strip()
        images, files, notes = await self.attachments(event.get("files") or [])
        for note in notes:
            await slack.note(link, note)
        if not text and not images and not files:
            await slack.call_slack("reactions_remove", channel=channel, timestamp=ts, name="eyes")
            return
        try:
            assert link.session_id is not None
            await self.agent.create_message(
                session_id=link.session_id, text=text or EMPTY_TEXT_WITH_FILES, images=images or None, files=files or None
            )
        except AgentAPIError as exc:
            what, hint = describe_api_error(exc)
            logger.warning("forwarding a reply to session row %s failed: %s", link.id, type(exc).__name__)
            await slack.call_slack("reactions_remove", channel=channel, timestamp=ts, name="eyes")
            await slack.call_slack("reactions_add", channel=channel, timestamp=ts, name="x")
            await slack.note(link, REPLY_FAILED.format(what=one_line(f"{what} {hint}", 500)))
            return
        await slack.call_slack("reactions_remove", channel=channel, timestamp=ts, name="eyes")
        await slack.call_slack("reactions_add", channel=channel, timestamp=ts, name="white_check_mark")
        await self.store.wake(link.id, self.now())

    async def attachments(self, files: list[dict]) -> tuple[list[dict], list[dict], list[str]]:
        """Download a reply's files with the bot token: ``(images, files, notes about skipped ones)``."""
        images: list[dict] = []
        documents: list[dict] = []
        notes: list[str] = []
        token = self.bot_token.get_secret_value()
        async with httpx.AsyncClient(timeout=20.0, follow_redirects=True) as http:
            for item in files[:10]:
                name = str(item.get("name") or item.get("title") or "file")
                mimetype = str(item.get("mimetype") or "")
                size = item.get("size") or 0
                kind = "image" if mimetype in IMAGE_TYPES else "file" if (mimetype in FILE_TYPES or mimetype.startswith("text/")) else None
                if kind is None:
                    notes.append(FILE_SKIPPED.format(name=one_line(name, 80), why=f"I only send images, PDFs and text files, and this is {one_line(mimetype or 'of an unknown type', 60)}"))
                    continue
                if isinstance(size, int) and size > MAX_FILE_BYTES:
                    notes.append(FILE_SKIPPED.format(name=one_line(name, 80), why=f"it is larger than {MAX_FILE_BYTES // (1024 * 1024)} MB"))
                    continue
                url = item.get("url_private_download") or item.get("url_private")
                if not url:
                    notes.append(FILE_SKIPPED.format(name=one_line(name, 80), why="Slack gave no download address"))
                    continue
                try:
                    response = await http.get(url, headers={"Authorization": f"Bearer {token}"})
                except httpx.HTTPError as exc:
                    notes.append(FILE_SKIPPED.format(name=one_line(name, 80), why=f"the download failed ({type(exc).__name__})"))
                    continue
                content_type = response.headers.get("content-type", "").split(";")[0].strip().lower()
                if response.status_code != 200 or (content_type == "text/html" and mimetype != "text/html"):
                    notes.append(FILE_SKIPPED.format(
                        name=one_line(name, 80),
                        why="Slack answered with a web page instead of the file (the bot needs the files:read scope)",
                    ))
                    continue
                data = response.content
                if len(data) > MAX_FILE_BYTES:
                    notes.append(FILE_SKIPPED.format(name=one_line(name, 80), why=f"it is larger than {MAX_FILE_BYTES // (1024 * 1024)} MB"))
                    continue
                encoded = base64.b64encode(data).decode("ascii")
                if kind == "image":
                    images.append({"type": "base64", "data": encoded, "mediaType": mimetype})
                else:
                    entry = {"type": "base64", "data": encoded, "mediaType": mimetype, "name": name}
                    if mimetype.startswith("text/"):
                        entry["parsedData"] = data.decode("utf-8", errors="replace")
                    documents.append(entry)
        return images, documents, notes

    # ------------------------------------------------------------------ role-check policy of events

    async def event_policy(self, body: dict) -> str | None:
        """The policy key of an event: ``thread_reply`` in a session's thread, ``session start``
        for a mention elsewhere, None otherwise (not for this bot: no role check, ignored)."""
        event = body.get("event") or {}
        if event.get("bot_id") or not event.get("user"):
            return None
        thread_ts = event.get("thread_ts")
        if thread_ts and thread_ts != event.get("ts"):
            if await self.store.by_thread(event.get("channel", ""), thread_ts) is not None and is_person_reply(event):
                return THREAD_REPLY
        if event.get("type") == "app_mention":
            return START.policy_key
        return None


# ---------------------------------------------------------------------- handlers


def register(app: Any, router: Router, services: Services) -> None:
    """Add the session sub-commands, the buttons, the modal, mentions and thread replies."""
    feature = services.sessions

    async def handle_start(request: CommandRequest) -> None:
        raw = unescape_slack(request.command.text)
        raw = re.sub(r"^\s*session\s+start\b", "", raw, flags=re.IGNORECASE)
        prompt, options = split_options(raw)
        if not prompt:
            await open_modal(request, options)
            return
        start = NewStart(
            start_key=f"command:{request.body.get('trigger_id') or request.body.get('response_url')}",
            slack_user=request.user.user_id,
            user_email=request.user.email,
            channel=request.channel_id,
            origin="command",
            prompt=prompt,
            cwd=options.get("cwd"),
            model=options.get("model"),
        )

        async def ask(payload: dict) -> None:
            await request.reply(payload)

        row = await feature.start_session(start, options.get("computer"), ask=ask)
        if row is None:
            return  # the menu was offered
        if row.state == "failed":
            hint = "See the message in the channel." if row.parent_ts else CANNOT_POST_HINT
            await request.reply(error_message(row.error or "The session could not be started.", hint))
        elif row.thread_ts:
            await request.reply(started_notice(row.computer_name or row.computer_id or "", message_link(row.channel, row.thread_ts) or ""))
        else:
            await request.reply(error_message(ALREADY_STARTED))

    async def open_modal(request: CommandRequest, options: dict[str, str]) -> None:
        computers = [c for c in await services.agent.list_computers() if c.status == "active"]
        if not computers:
            raise UserInputError(NO_ACTIVE, NO_ACTIVE_HINT)
        last = await feature.store.last_computer(request.user.user_id)
        trigger_id = request.body.get("trigger_id")
        view = start_modal(computers, channel=request.channel_id, default_computer=last)
        await request.client.views_open(trigger_id=trigger_id, view=view)

    async def handle_list(request: CommandRequest) -> None:
        rows = await feature.store.recent(SESSIONS_LISTED + 1)
        await request.reply(
            sessions_list(
                [
                    SessionRow(
                        title=r.title or r.prompt,
                        status="archived" if r.archived else (r.status or "pending"),
                        computer=r.computer_name or r.computer_id or "unknown",
                        slack_user=r.slack_user,
                        link=message_link(r.channel, r.thread_ts),
                        created_at=r.created_at,
                    )
                    for r in rows
                ],
                total_shown_limit=SESSIONS_LISTED,
            )
        )

    def session_id_arg(request: CommandRequest, spec: SubCommand) -> str:
        if not request.command.args:
            raise UserInputError("Which session? Give its id.", f"Usage: `{spec.usage}`; `/agent sessions` lists them.")
        return request.command.args[0]

    async def show(request: CommandRequest, session: Any, note: str | None = None) -> None:
        """Reply with one session as the API returned it, with its computer and thread when known."""
        row = await feature.store.by_session_id(session.session_id)
        await request.reply(
            session_status(
                session,
                computer=row.computer_name if row else None,
                link=message_link(row.channel, row.thread_ts) if row else None,
                note=note,
            )
        )

    async def handle_status(request: CommandRequest) -> None:
        session_id = session_id_arg(request, STATUS)
        try:
            session = await services.agent.get_session(session_id=session_id)
        except NotFoundError:
            raise UserInputError(NO_SUCH_SESSION.format(id=one_line(session_id, 80)), "`/agent sessions` lists the sessions started here.") from None
        await show(request, session)

    async def handle_set(request: CommandRequest) -> None:
        session_id = session_id_arg(request, SET)
        keys = ", ".join(f"`{k}`" for k in sorted(set(SETTABLE.values())))
        if not request.command.options:
            raise UserInputError(SET_NOTHING.format(keys=keys), f"Usage: `{SET.usage}`")
        unknown = [name for name in request.command.options if name not in SETTABLE]
        if unknown:
            raise UserInputError(SET_UNKNOWN.format(names=one_line(", ".join(unknown), 200), keys=keys), f"Usage: `{SET.usage}`")
        changes = {SETTABLE[name]: value for name, value in request.command.options.items()}
        try:
            session = await services.agent.update_session(session_id=session_id, session_settings=changes)
        except NotFoundError:
            raise UserInputError(NO_SUCH_SESSION.format(id=one_line(session_id, 80))) from None
        await show(request, session, SET_DONE)

    async def archive(session_id: str, user_id: str) -> SessionLink | None:
        stamp = services.now().isoformat().replace("+00:00", "Z")
        await services.agent.update_session(session_id=session_id, session_settings={"archivedAt": stamp})
        row = await feature.store.by_session_id(session_id)
        if row is not None:
            await feature.store.stop_following(row.id, archived=True)
            row = await feature.store.get(row.id)
            assert row is not None
            await feature._edit_parent(row)
            await feature.follower.note(row, ARCHIVED_BY.format(who=f"<@{user_id}>"))
        return row

    async def handle_archive(request: CommandRequest) -> None:
        session_id = session_id_arg(request, ARCHIVE)
        try:
            await archive(session_id, request.user.user_id)
        except NotFoundError:
            raise UserInputError(NO_SUCH_SESSION.format(id=one_line(session_id, 80))) from None
        await request.reply(thread_note(ARCHIVED))

    router.add(START, handle_start)
    router.add(LIST, handle_list)
    router.add(STATUS, handle_status)
    router.add(SET, handle_set)
    router.add(ARCHIVE, handle_archive)

    # -------------------------------------------------------------- buttons, menu, modal

    @reported
    async def on_refresh(ack: Any, body: dict, respond: Any) -> None:
        await ack()
        session_id = ((body.get("actions") or [{}])[0].get("value") or "").strip()
        row = await feature.store.by_session_id(session_id) if session_id else None
        if row is None:
            await respond(**error_message(NO_SUCH_SESSION.format(id=one_line(session_id, 80))), response_type="ephemeral", replace_original=False)
            return
        await feature.store.wake(row.id, services.now())
        await feature.follower.poll_now(row.id)
        fresh = await feature.store.get(row.id)
        if fresh is not None:
            await feature._edit_parent(fresh)

    @reported
    async def on_archive(ack: Any, body: dict, respond: Any) -> None:
        await ack()
        session_id = ((body.get("actions") or [{}])[0].get("value") or "").strip()
        user_id = (body.get("user") or {}).get("id", "")
        try:
            await archive(session_id, user_id)
        except AgentAPIError as exc:
            await respond(**error_message(*describe_api_error(exc)), response_type="ephemeral", replace_original=False)

    @reported
    async def on_pick(ack: Any, body: dict, respond: Any) -> None:
        await ack()
        await feature.pick(body, respond)

    @reported
    async def on_start_view(ack: Any, body: dict, client: Any, context: dict) -> None:
        view = body.get("view") or {}
        values = (view.get("state") or {}).get("values") or {}

        def value(block: str) -> str | None:
            element = (values.get(START_BLOCKS[block]) or {}).get("value") or {}
            if element.get("selected_option"):
                return element["selected_option"].get("value")
            text = element.get("value")
            return text.strip() if isinstance(text, str) and text.strip() else None

        errors: dict[str, str] = {}
        prompt = value("prompt") or ""
        if not prompt:
            errors[START_BLOCKS["prompt"]] = "Tell the agent what to do."
        cwd = value("cwd")
        if cwd is not None and len(cwd) > CWD_MAX:
            errors[START_BLOCKS["cwd"]] = CWD_TOO_LONG
        computer_id = value("computer")
        computers: list[Computer] = []
        try:
            computers = await services.agent.list_computers()
            if computer_id:
                resolve_computer(computers, computer_id, None)
            else:
                errors[START_BLOCKS["computer"]] = "Choose a computer."
        except UserInputError as exc:
            errors[START_BLOCKS["computer"]] = exc.message.replace("*", "")[:150]
        except AgentAPIError as exc:
            errors[START_BLOCKS["computer"]] = describe_api_error(exc)[0][:150]
        if errors:
            await ack(response_action="errors", errors=errors)
            return
        await ack()
        user = context.get("agent_user")
        user_id = (body.get("user") or {}).get("id", "")
        channel = view.get("private_metadata") or user_id
        start = NewStart(
            start_key=f"view:{view.get('id')}",
            slack_user=user_id,
            user_email=getattr(user, "email", None),
            channel=channel,
            origin="modal",
            prompt=prompt,
            cwd=cwd,
            model=value("model"),
        )

        async def tell(payload: dict) -> None:
            await client.chat_postEphemeral(channel=channel, user=user_id, **payload)

        await feature.start_telling(start, computer_id, tell)

    app.action(REFRESH_ACTION)(on_refresh)
    app.action(ARCHIVE_ACTION)(on_archive)
    app.action(PICK_ACTION)(on_pick)
    app.view(START_VIEW)(on_start_view)

    # -------------------------------------------------------------- events

    async def mention_or_reply(event: dict, client: Any, context: dict) -> None:
        channel = event.get("channel", "")
        thread_ts = event.get("thread_ts")
        if thread_ts and thread_ts != event.get("ts"):
            link = await feature.store.by_thread(channel, thread_ts)
            if link is not None:
                if is_person_reply(event):
                    await feature.forward(event, link, client)
                return
        if event.get("type") != "app_mention":
            return
        user_id = event.get("user", "")
        user = context.get("agent_user")
        text = _LEADING_MENTION.sub("", unescape_slack(event.get("text") or ""))
        prompt, options = split_options(text)
        where = thread_ts or event.get("ts")
        start = NewStart(
            start_key=f"mention:{channel}:{event.get('ts')}",
            slack_user=user_id,
            user_email=getattr(user, "email", None),
            channel=channel,
            origin="mention",
            prompt=prompt,
            cwd=options.get("cwd"),
            model=options.get("model"),
            thread_ts=where,
        )

        async def tell(payload: dict) -> None:
            await client.chat_postEphemeral(channel=channel, user=user_id, thread_ts=where, **payload)

        await feature.start_telling(start, options.get("computer"), tell)

    @reported
    async def on_mention(ack: Any, event: dict, client: Any, context: dict) -> None:
        await ack()
        await mention_or_reply(event, client, context)

    @reported
    async def on_message(ack: Any, event: dict, client: Any, context: dict) -> None:
        await ack()
        if is_person_reply(event):
            await mention_or_reply(event, client, context)

    app.event("app_mention")(on_mention)
    app.event("message")(on_message)

