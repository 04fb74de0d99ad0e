"""A Slack thread as the agent's context: the earlier messages of a thread, read, bounded and put
into plain words, carried in a session's prompt (issue #28: "Send to agent" on a message, a mention
inside a thread).

Reading (:class:`ThreadReader`): ``conversations.replies`` of the thread through the gateway
(:meth:`bot.slack.SlackGateway.replies_page`), page after page, oldest first, stopping at the first
message at or after ``before_ts`` (the message handed to the agent, or the mention): every page
needed and no more. Kept: people's messages, other apps' (a CI bot) and the bot's own alerts and
digests (:data:`KEPT_BOT_EVENTS`, told by their Slack metadata); left out: the bot's other messages
(its session noise: parent messages, notes, the agent's relayed answers, help), Slack's notices (a
join, a topic) and a mention of the bot that only asked for help. Then bounded to the last
:data:`MESSAGES_MAX` messages and :data:`CHARS_MAX` characters (the oldest go first; a single
message longer than that is cut), and how many were left out is said.

Each message is one entry: ``[2026-11-28 14:03 UTC] Alice Smith: words`` (its author's name from
``users.info``, looked up once per author; an app's name from the message), with the names of its
files, never their contents (``[files: log.txt, screenshot.png]``). Slack's markup becomes plain
text (:func:`bot.services.sessions.text.readable_for_agent`, then
:func:`bot.commands.unescape_slack`): ``<!channel>`` reaches the agent as ``@channel``, ``&lt;`` as
``<``. That text goes to the agent only; whatever of it is echoed to Slack (the parent message shows
the request) is escaped by the formatters as any user's words.

Carrying it (no column of its own: a start resumed after a restart sends the very same prompt):
:func:`with_context` appends the block to the person's request under a marker line that names the
count; :func:`split_prompt` gives back ``(request, count)`` for what Slack shows (the parent
message's request and its "with 12 earlier messages of this thread as context" line).
"""

from __future__ import annotations

import asyncio
import datetime as dt
import logging
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from bot.commands import unescape_slack
from bot.identity import Identity
from bot.services.sessions.text import readable_for_agent, without_own_mention
from bot.slack import HISTORY_PAGE, SlackFailure, SlackGateway

logger = logging.getLogger(__name__)

MESSAGES_MAX: Final = 50
"""Earlier messages of a thread at most in a session's prompt (the last ones)."""
CHARS_MAX: Final = 20_000
"""Characters at most of those messages (their lines, joined), the newest kept."""
NAME_TIMEOUT: Final = 2.0
"""Seconds a ``users.info`` of an author may take; then the user's ID stands for their name."""
MAX_PAGES: Final = 50
"""Pages of ``conversations.replies`` read at most (a thread of 10,000 replies at 200 a page)."""

SHORTCUT_CALLBACK: Final = "session.send_to_agent"
"""The ``callback_id`` of the "Send to agent" message shortcut (``manifest.yaml``; a policy key that
:data:`bot.policy.POLICY_ALIASES` reads as ``session start``)."""
SHORTCUT_VIEW: Final = "session.start_from_message"
"""The ``callback_id`` of the start form the shortcut opens (a policy key read as ``session start``)."""

TAKE_THREAD_PROMPT: Final = "Take this Slack thread as your task: read the discussion below and do what it asks."
"""The request of ``@agent`` alone in a thread: the thread is the task."""
CONTEXT_HEAD: Final = "--- Slack thread context: {count} earlier message{s} of this thread, oldest first{cut} ---"
CONTEXT_CUT: Final = "; {n} older left out"
MESSAGE_HEAD: Final = "--- The Slack message handed to you ---"
CONTEXT_END: Final = "--- End of the Slack context ---"
_HEAD: Final = re.compile(
    r"\n\n--- Slack thread context: (\d+) earlier messages? of this thread, oldest first(?:; \d+ older left out)? ---\n"
)
_MESSAGE: Final = re.compile(r"\n\n--- The Slack message handed to you ---\n")

KEPT_BOT_EVENTS: Final = frozenset({"agent_alert", "agent_digest"})
"""The bot's own messages that are content, not session noise (their Slack metadata's
``event_type``): an alert or a digest a thread discusses goes to the agent too."""
KEPT_SUBTYPES: Final = frozenset({None, "file_share", "thread_broadcast", "bot_message", "me_message"})
"""Message subtypes that are someone's words; every other subtype is Slack's notice (a join...)."""
HELP_WORDS: Final = frozenset({"", "help", "?"})


@dataclass(frozen=True)
class ThreadContext:
    """The earlier messages of a thread as the agent reads them: ``entries`` (one per message,
    oldest first), ``left_out`` (earlier messages not carried: over the bounds), and ``message``
    (the entry of the message handed to the agent with a shortcut, None for a mention)."""

    entries: tuple[str, ...] = ()
    left_out: int = 0
    message: str | None = None

    @property
    def count(self) -> int:
        """How many earlier messages are carried."""
        return len(self.entries)

    @property
    def empty(self) -> bool:
        return not self.entries and self.message is None


@dataclass(frozen=True)
class OwnBot:
    """Who the bot is in Slack (Bolt's ``context.bot_user_id`` and ``context.bot_id``): its messages
    in a thread are its own noise, left out."""

    user_id: str | None = None
    bot_id: str | None = None

    def wrote(self, message: Mapping[str, Any]) -> bool:
        return bool((self.user_id and message.get("user") == self.user_id) or (self.bot_id and message.get("bot_id") == self.bot_id))

    def noise(self, message: Mapping[str, Any]) -> bool:
        """The bot's own message that is not content (:data:`KEPT_BOT_EVENTS`): a session's parent,
        its notes, the agent's relayed answers, help."""
        return self.wrote(message) and (message.get("metadata") or {}).get("event_type") not in KEPT_BOT_EVENTS

    def asked_for_help(self, message: Mapping[str, Any]) -> bool:
        """A message that starts with this bot's own mention (:func:`bot.services.sessions.text.without_own_mention`)
        and whose only other words ask for help (nothing, ``help``, ``?``); ``<@U0CAROL> help`` asks
        someone else, and is kept as the thread's content."""
        text = str(message.get("text") or "")
        rest = without_own_mention(text, self.user_id)
        return bool(self.user_id) and rest != text and rest.strip().lower() in HELP_WORDS


def with_context(request: str, context: ThreadContext) -> str:
    """The prompt the agent gets: ``request`` (the person's words, plain text), then the thread's
    earlier messages under :data:`CONTEXT_HEAD` and the handed message under :data:`MESSAGE_HEAD`;
    ``request`` alone when there is no context."""
    if context.empty:
        return request
    parts = [request.rstrip()]
    if context.entries or context.left_out:
        cut = CONTEXT_CUT.format(n=context.left_out) if context.left_out else ""
        head = CONTEXT_HEAD.format(count=context.count, s="" if context.count == 1 else "s", cut=cut)
        parts.append(head + "\n" + "\n".join(context.entries))
    if context.message is not None:
        parts.append(MESSAGE_HEAD + "\n" + context.message)
    return "\n\n".join(parts) + "\n" + CONTEXT_END


def split_prompt(prompt: str) -> tuple[str, int | None]:
    """``(request, count)`` of a prompt :func:`with_context` made: the person's words and how many
    earlier messages of the thread it carries (0 for a handed message alone); ``(prompt, None)`` for
    a prompt without context."""
    head = _HEAD.search(prompt)
    message = _MESSAGE.search(prompt)
    if head is None and message is None:
        return prompt, None
    starts = [m.start() for m in (head, message) if m is not None]
    return prompt[: min(starts)], int(head.group(1)) if head is not None else 0


def slack_time(ts: str) -> str:
    """A message's ``ts`` as ``2026-11-28 14:03 UTC`` ("" for one that is no timestamp)."""
    try:
        return dt.datetime.fromtimestamp(float(ts), dt.UTC).strftime("%Y-%m-%d %H:%M UTC")
    except (TypeError, ValueError, OverflowError):
        return ""


def file_names(message: Mapping[str, Any]) -> list[str]:
    """The names of a message's files (``name``, else ``title``; a Slack Connect file without either: ``a file``)."""
    return [str(f.get("name") or f.get("title") or "a file") for f in message.get("files") or [] if isinstance(f, Mapping)]


def bounded(entries: Sequence[str], *, messages: int = MESSAGES_MAX, chars: int = CHARS_MAX) -> tuple[tuple[str, ...], int]:
    """The last ``messages`` of ``entries`` whose lines together (joined with a newline) hold at most
    ``chars`` characters, and how many were left out; the newest entry alone longer than ``chars``
    is cut (ending in ``…``)."""
    kept: list[str] = []
    total = 0
    for entry in reversed(entries[-messages:] if messages > 0 else []):
        size = len(entry) + (1 if kept else 0)
        if total + size > chars:
            if not kept:
                kept.append(entry[: max(chars - 1, 0)] + "\u2026")
            break
        kept.append(entry)
        total += size
    return tuple(reversed(kept)), len(entries) - len(kept)


@dataclass
class ThreadReader:
    """Reads a thread's earlier messages (module docstring) through ``slack`` (the gateway),
    putting mentions into words with ``identity``; ``page_size`` messages a page."""

    slack: SlackGateway
    identity: Identity
    page_size: int = HISTORY_PAGE
    _names: dict[str, str] = field(default_factory=dict)

    async def read(self, channel: str, thread_ts: str, *, before_ts: str, own: OwnBot, at: bool = False) -> ThreadContext | SlackFailure:
        """The messages of the thread ``thread_ts`` in ``channel`` older than ``before_ts``, bounded,
        as :class:`ThreadContext`; with ``at``, the message ``before_ts`` itself (the message handed
        to the agent) is its ``message`` (None when the thread does not hold it). A
        :class:`bot.slack.SlackFailure` when Slack would not answer (``not_in_channel``,
        ``channel_not_found``, ``thread_not_found``...)."""
        found: list[dict[str, Any]] = []
        handed: dict[str, Any] | None = None
        cursor: str | None = None
        for _page in range(MAX_PAGES):
            page = await self.slack.replies_page(channel, thread_ts, cursor=cursor, limit=self.page_size, include_all_metadata=True)
            if isinstance(page, SlackFailure):
                return page
            reached = False
            for message in page.messages:
                if _ts(message) >= _ts_of(before_ts):
                    reached = True
                    handed = message if at and str(message.get("ts") or "") == before_ts else None
                    break
                if self.kept(message, own):
                    found.append(message)
            cursor = page.next_cursor
            if reached or not cursor:
                break
        else:
            logger.warning("thread %s of %s: read %d pages, the bound; the rest is left out", thread_ts, channel, MAX_PAGES)
        last = found[-MESSAGES_MAX:]
        entries, left_out = bounded([await self.entry(m) for m in last] if last else [])
        handed_entry = bounded([await self.entry(handed)])[0][0] if handed is not None else None
        return ThreadContext(entries, left_out + len(found) - len(last), handed_entry)

    @staticmethod
    def kept(message: Mapping[str, Any], own: OwnBot) -> bool:
        """Whether a message of the thread is carried: someone's words, not the bot's own, not a help mention."""
        return message.get("subtype") in KEPT_SUBTYPES and not own.noise(message) and not own.asked_for_help(message)

    async def entry(self, message: Mapping[str, Any]) -> str:
        """One message as a line for the agent: ``[time] author: words [files: ...]``."""
        text = unescape_slack(await readable_for_agent(str(message.get("text") or ""), self.identity)).strip()
        files = file_names(message)
        if files:
            text = f"{text} [files: {', '.join(files)}]".strip()
        return f"[{slack_time(str(message.get('ts') or ''))}] {await self.author(message)}: {text}"

    async def author(self, message: Mapping[str, Any]) -> str:
        """Who wrote ``message``: a person's name (``users.info``, once per person per reader), an app's
        name (``username``, ``bot_profile.name``), else the ID."""
        user = str(message.get("user") or "")
        if message.get("bot_id") and not user:
            profile = message.get("bot_profile") or {}
            return str(message.get("username") or profile.get("name") or message.get("bot_id"))
        if not user:
            return "someone"
        if user not in self._names:
            try:
                name = await asyncio.wait_for(self.slack.user_name(user), NAME_TIMEOUT)
            except TimeoutError:
                name = None
            self._names[user] = name if isinstance(name, str) and name else user
        return self._names[user]


def _ts(message: Mapping[str, Any]) -> float:
    return _ts_of(str(message.get("ts") or "0"))


def _ts_of(ts: str) -> float:
    try:
        return float(ts)
    except ValueError:
        return 0.0
