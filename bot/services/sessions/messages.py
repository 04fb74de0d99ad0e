"""What the sessions services say in Slack, handed in at wiring: the services hold no Block Kit.

As the digest and the alerts take their formatter at construction, :class:`bot.services.sessions.Sessions`
(and through it the follower, the starter and the relay) takes a :class:`SessionMessages`: the few
formatting calls they make when they post or edit on their own (the parent message, the agent's
messages, the working message, notes in a thread, the notice of an interrupted start, the one DM
of a refused key) and the one
that puts an API or user value into the words of a reason (:meth:`SessionMessages.one_line`).
:mod:`formatters.sessions` satisfies it as a module; ``create_bot`` passes it.

The typed value the parent message shows (:class:`SessionView`) and the ids of the sessions'
buttons, menu and form (policy keys of the role check: :mod:`bot.roles`) live here, with the
service that owns them; :mod:`formatters.sessions` imports them from here.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final, Protocol

from bot.roles import REPLY_STARTER

Payload = Mapping[str, Any]
"""A Slack message payload (``{"text", "blocks"}``), as :data:`bot.slack.Payload`."""

REFRESH_ACTION: Final = "session.refresh"
"""The parent message's Refresh button (policy key)."""
ARCHIVE_ACTION: Final = "session.archive"
"""The parent message's Archive button (policy key)."""
ARCHIVE_CONFIRM_ACTION: Final = "session.archive_confirm"
"""The Archive button of ``/agent session archive``'s question (policy key)."""
ARCHIVE_CANCEL_ACTION: Final = "session.archive_cancel"
"""The Cancel button of ``/agent session archive``'s question (policy key)."""
PICK_ACTION: Final = "session.pick"
"""The menu that chooses a start's computer (policy key)."""
MENU_ACTION: Final = "session.menu"
"""The overflow menu of a row of ``/agent sessions``; its option values are ``<choice>:<session id>`` (policy key)."""
START_VIEW: Final = "session.start"
"""The ``callback_id`` of the start form (policy key)."""
REPLIES_ALL: Final = "all"
"""A channel's ``replies`` rule under which every reply in a session's thread reaches the agent
(:data:`bot.services.channel_defaults.REPLIES_ALL`)."""
REPLIES_MENTIONS: Final = "mentions"
"""A channel's ``replies`` rule under which only replies that mention the bot reach the agent
(:data:`bot.services.channel_defaults.REPLIES_MENTIONS`)."""


@dataclass(frozen=True)
class SessionView:
    """What the parent message shows: who started it (Slack user id), the prompt, the computer,
    ``status`` (a key of :data:`formatters.sessions.STATUS_LABEL` or an API status), the session id
    (None before the API answered), counts, token usage total, the working directory and model, an
    error text, the title, and who may reply (:data:`bot.roles.REPLY_STARTER` or :data:`bot.roles.REPLY_CHANNEL`);
    ``channel_replies``: which replies reach the agent, the channel's ``replies`` rule
    (:data:`REPLIES_ALL` or :data:`REPLIES_MENTIONS`, which the message says);
    ``bot_key``: started with the bot's key (``AGENT_BOT_SESSIONS_AS=bot``), which the message says;
    ``steered_by``: the Slack user whose reply, ``session set`` or archive the platform took last
    (``steered_with_bot_key``: sent with the bot's key)."""

    slack_user: str
    prompt: str
    computer: str
    status: str
    session_id: str | None = None
    message_count: int = 0
    tokens: int = 0
    cwd: str | None = None
    model: str | None = None
    error: str | None = None
    title: str | None = None
    reply: str = REPLY_STARTER
    channel_replies: str = REPLIES_ALL
    bot_key: bool = False
    steered_by: str | None = None
    steered_with_bot_key: bool = False


class SessionMessages(Protocol):
    """The formatting calls of the sessions services (:mod:`formatters.sessions` is one)."""

    def one_line(self, value: object, limit: int) -> str:
        """An API or user value for mrkdwn words: escaped, on one line, at most ``limit`` characters."""
        ...

    def id_candidates(self, sessions: Sequence[tuple[str, str]]) -> str:
        """``(session_id, title)`` pairs on one line, for a reason that names which sessions an id could mean."""
        ...

    def parent_message(self, view: SessionView) -> Payload:
        """The parent message of a session's thread."""
        ...

    def agent_message(self, text: str, *, is_error: bool = False) -> tuple[Payload, bool]:
        """One agent message for its thread, and whether the whole ``text`` must be uploaded as a file."""
        ...

    def working_message(self, steps: Sequence[str], count: int, *, done: bool = False) -> Payload:
        """The message that shows the agent's last tool ``steps`` and their ``count``; ``done``: one line."""
        ...

    def thread_note(self, text: str) -> Payload:
        """A short note (mrkdwn ``text``) in a session's thread."""
        ...

    def archived_note(self, by_user: str) -> Payload:
        """The note in a session's thread once ``by_user`` (a Slack user ID) archived it."""
        ...

    def start_interrupted_notice(self, computer: str, prompt: str) -> Payload:
        """Told to the person whose start (``computer``, ``prompt``: raw values) was interrupted."""
        ...

    def start_delayed_notice(self, computer: str, prompt: str) -> Payload:
        """Told to the person whose start waits for Slack (its parent message queued: a rate limit)."""
        ...

    def start_not_posted_notice(self, computer: str, prompt: str, reason: str) -> Payload:
        """Told to the person whose start was given up because its parent message never got into
        Slack: ``reason``, the starter's words (plain text)."""
        ...

    def key_refused_dm(self, fingerprint: str) -> Payload:
        """The one DM to a person whose linked key the platform refused (401): nothing was done with
        another key, and how to link again; ``fingerprint``: the key's last 4 characters."""
        ...
