"""A person's reply in a session's thread, sent to the agent once.

:meth:`Relay.forward` takes a :class:`ThreadReply` (already read from Slack's ``message`` /
``app_mention`` event by the handler; the role check, policy key ``thread_reply``, ran before) and
sends it with ``POST /sessions/{id}/messages`` (management-api-v0.md, "Endpoints", "Message"). The
same words arrive twice (as ``app_mention`` and as ``message``) and Slack retries deliveries, so a
``forward:<channel>:<ts>`` claim row decides who sends it. The reply is marked :eyes: while it
goes, then :white_check_mark:, or :x: with a note in the thread saying why.

The reply goes with the key of whoever wrote it (:mod:`bot.services.sessions.acting`), not the
starter's: their own linked key, or the bot's where ``AGENT_BOT_SESSIONS_AS=bot`` says so for an
unlinked person. The platform's own permissions then apply (a member may only write to their own
sessions: its 403 is said in the note); a 401 marks their key refused and DMs them once. The row
records who steered it last (:meth:`bot.services.sessions.store.SessionStore.steered`).

Attached images, PDFs and text files are downloaded with the bot token (Slack doc "Working with
files": ``url_private`` needs the token and the ``files:read`` scope, else Slack answers its HTML
sign-in page, which is an error here, not a file) and sent as base64, :data:`MAX_FILE_BYTES` at most
each; anything skipped gets a note in the thread.

The bot token goes only to Slack: a file is downloaded only from :data:`SLACK_FILE_HOSTS` (https)
or from the origin of the Slack Web API URL the gateway calls (``SLACK_API_URL``: the emulator in
tests); a ``url_private_download`` anywhere else is skipped with a note, never requested. httpx
drops the ``Authorization`` header when a download is redirected to another origin.

A file shared in a Slack Connect channel arrives as ``{"id", "file_access": "check_file_info"}``
(Slack doc "file_share message", "Slack Connect files"): its object is read with ``files.info``
(:meth:`bot.slack.SlackGateway.file_info`) first.
"""

from __future__ import annotations

import base64
import datetime as dt
import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

import httpx
from pydantic import SecretStr

from bot.api import AgentAPIError, AgentClient
from bot.services.sessions.acting import Identities, Person
from bot.services.sessions.follower import Follower
from bot.services.sessions.messages import SessionMessages
from bot.services.sessions.store import SessionLink, SessionStore
from bot.slack import SlackFailure, SlackGateway
from bot.store import Store
from bot.user_errors import describe_api_error

logger = logging.getLogger(__name__)

MAX_FILE_BYTES: Final = 10 * 1024 * 1024
"""Bytes at most of one attachment sent to the agent."""
MAX_FILES: Final = 10
"""Files at most read from one reply."""
DOWNLOAD_TIMEOUT: Final = 20.0
"""Seconds a file download may take."""
IMAGE_TYPES: Final = ("image/png", "image/jpeg", "image/gif", "image/webp")
FILE_TYPES: Final = ("application/pdf",)
EMPTY_TEXT_WITH_FILES = "Please look at the attached file(s)."
WRONG_KIND = "I only send images, PDFs and text files, and this is {kind}"
KIND_WORDS: Final = {"video": "a video", "audio": "an audio file", "image": "an image in another format"}
"""What :data:`WRONG_KIND` calls a file, by the first part of its MIME type (never the raw type)."""
OTHER_KIND = "another kind of file"
TOO_LARGE = f"it is larger than {MAX_FILE_BYTES // (1024 * 1024)} MB"
NO_ADDRESS = "Slack gave no download address"
DOWNLOAD_FAILED = "the download failed ({error})"
SIGN_IN_PAGE = "Slack answered with a web page instead of the file (the bot needs the files:read scope)"
NOT_SLACK_HOST = "its download address is not on Slack's file host, and I send my Slack token only to Slack"
FILE_INFO_FAILED = "Slack did not describe this shared file ({error})"
REPLY_FAILED = ":x: <@{user}>, I could not pass your reply to the agent: {what}"
FILE_SKIPPED = ":paperclip: I did not send `{name}` to the agent: {why}."
CHECK_FILE_INFO: Final = "check_file_info"
"""``file_access`` of a Slack Connect file: the event has only its id; ``files.info`` has the rest."""
SLACK_FILE_HOSTS: Final = ("files.slack.com",)
"""Hosts (https) that serve ``url_private`` / ``url_private_download``; the bot token goes nowhere else."""
DEFAULT_PORTS: Final = {"https": 443, "http": 80}

SEEN, SENT, FAILED = "eyes", "white_check_mark", "x"
"""The reactions on a reply: being sent, sent, not sent."""


@dataclass(frozen=True)
class ThreadReply:
    """A person's reply in a thread: ``channel``, its ``ts``, its ``text`` (Slack's escaping undone,
    a leading mention of the bot removed) and ``files`` (Slack file objects: ``name``, ``mimetype``,
    ``size``, ``url_private_download`` / ``url_private``)."""

    channel: str
    ts: str
    text: str
    files: Sequence[Mapping[str, Any]] = ()


@dataclass
class Attachments:
    """A reply's files as the Agent API takes them (``images``, ``files``: base64 ``data``,
    ``mediaType``; files also ``name`` and, for text, ``parsedData``), and ``notes`` (mrkdwn) about
    each file that was skipped and why."""

    images: list[dict[str, str]] = field(default_factory=list)
    files: list[dict[str, str]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


class Relay:
    """Sends thread replies to their session: ``agent`` (the Agent API), ``claims`` (the store that
    holds the ``forward:`` claims), ``sessions`` (the rows; a reply wakes the follower),
    ``follower`` (notes in the thread), ``slack`` (the gateway; reactions), ``messages`` (a note's
    words name a file with :meth:`bot.services.sessions.messages.SessionMessages.one_line`), ``now``
    (the aware UTC clock), ``bot_token`` (downloads of ``url_private``), ``identities`` (whose key
    a reply goes with; by default always the bot's, for callers that build a relay alone)."""

    def __init__(
        self,
        *,
        agent: AgentClient,
        claims: Store,
        sessions: SessionStore,
        follower: Follower,
        slack: SlackGateway,
        messages: SessionMessages,
        now: Callable[[], dt.datetime],
        bot_token: SecretStr,
        identities: Identities | None = None,
    ) -> None:
        self.agent = agent
        self.identities = identities or Identities(bot=agent, accounts=None, sessions_as="bot", slack=slack, messages=messages)
        self.claims = claims
        self.sessions = sessions
        self.follower = follower
        self.slack = slack
        self.now = now
        self.bot_token = bot_token
        self.one_line = messages.one_line

    async def forward(self, reply: ThreadReply, link: SessionLink, by: Person) -> bool:
        """Send ``reply``, written by ``by``, to the session of ``link`` once, with ``by``'s key
        (:meth:`bot.services.sessions.acting.Identities.acting_for`); True when this call sent it.

        False when it was claimed before (the other delivery of the same words), when there was
        nothing to send (no text, no usable file), or when the Agent API refused it (then the
        reply is marked :x: and a note in the thread says why; the person may write it again).
        Raises :class:`bot.services.sessions.acting.LinkNeeded` (once per reply: after the claim)
        when ``by`` must link their key first: nothing is sent."""
        if not await self.claims.claim(f"forward:{reply.channel}:{reply.ts}"):
            return False
        acting = await self.identities.acting_for(by)
        await self._mark(reply, add=SEEN)
        attached = await self.attachments(reply.files)
        for note in attached.notes:
            await self.follower.note(link, note)  # a failed note is logged by the gateway
        if not reply.text and not attached.images and not attached.files:
            await self._mark(reply, remove=SEEN)
            return False
        assert link.session_id is not None  # a thread's row is a started session
        try:
            acting.log_write("POST", f"/api/v0/sessions/{link.session_id}/messages")
            await acting.client.create_message(
                session_id=link.session_id,
                text=reply.text or EMPTY_TEXT_WITH_FILES,
                images=attached.images or None,
                files=attached.files or None,
            )
        except AgentAPIError as exc:
            await self.identities.failed(acting, exc)
            what, hint = describe_api_error(exc, your_key=acting.as_person)
            logger.warning("forwarding a reply to session row %s failed: %s", link.id, type(exc).__name__)
            await self._mark(reply, remove=SEEN, add=FAILED)
            await self.follower.note(
                link, REPLY_FAILED.format(user=self.one_line(by.user_id, 40), what=self.one_line(f"{what} {hint}", 500))
            )
            return False
        await self._mark(reply, remove=SEEN, add=SENT)
        await self.sessions.steered(link.id, by=by.user_id, steered_as=acting.started_as, now=self.now())
        await self.sessions.wake(link.id, self.now())
        return True

    async def _mark(self, reply: ThreadReply, *, remove: str | None = None, add: str | None = None) -> None:
        """Swap the reaction on ``reply``. A reaction only tells the person how it went; one Slack
        refused (logged by the gateway) changes nothing else, so it is not retried."""
        if remove:
            removed = await self.slack.unreact(reply.channel, reply.ts, remove)
            if isinstance(removed, SlackFailure):
                logger.info("reaction %s on a reply in %s not removed: %s", remove, reply.channel, removed.error)
        if add:
            added = await self.slack.react(reply.channel, reply.ts, add)
            if isinstance(added, SlackFailure):
                logger.info("reaction %s on a reply in %s not added: %s", add, reply.channel, added.error)

    def slack_origins(self) -> frozenset[tuple[str, str, int]]:
        """``(scheme, host, port)`` of the places the bot token may be sent with a download:
        :data:`SLACK_FILE_HOSTS` over https, and the origin of the gateway's Web API URL."""
        origins = {("https", host, 443) for host in SLACK_FILE_HOSTS}
        api = _origin(str(self.slack.client.base_url))
        if api is not None:
            origins.add(api)
        return frozenset(origins)

    async def attachments(self, files: Sequence[Mapping[str, Any]]) -> Attachments:
        """Download a reply's files (the first :data:`MAX_FILES`) with the bot token; images,
        files and notes about the skipped ones. A Slack Connect file is read with ``files.info``
        first; a download address outside :meth:`slack_origins` is skipped. Never raises for a
        failed look-up or download (a note)."""
        found = Attachments()
        one_line = self.one_line
        token = self.bot_token.get_secret_value()
        origins = self.slack_origins()
        async with httpx.AsyncClient(timeout=DOWNLOAD_TIMEOUT, follow_redirects=True) as http:
            for shared in files[:MAX_FILES]:
                item: Mapping[str, Any] = shared
                if shared.get("file_access") == CHECK_FILE_INFO:
                    info = await self.slack.file_info(str(shared.get("id") or ""))
                    if isinstance(info, SlackFailure):
                        label = one_line(str(shared.get("name") or shared.get("id") or "file"), 80)
                        found.notes.append(FILE_SKIPPED.format(name=label, why=FILE_INFO_FAILED.format(error=one_line(info.error, 60))))
                        continue
                    item = info
                name = str(item.get("name") or item.get("title") or "file")
                mimetype = str(item.get("mimetype") or "")
                size = item.get("size") or 0

                def skip(why: str) -> None:
                    found.notes.append(FILE_SKIPPED.format(name=one_line(name, 80), why=why))  # noqa: B023

                kind = "image" if mimetype in IMAGE_TYPES else "file" if (mimetype in FILE_TYPES or mimetype.startswith("text/")) else None
                if kind is None:
                    skip(WRONG_KIND.format(kind=KIND_WORDS.get(mimetype.partition("/")[0], OTHER_KIND)))
                    continue
                if isinstance(size, int) and size > MAX_FILE_BYTES:
                    skip(TOO_LARGE)
                    continue
                url = item.get("url_private_download") or item.get("url_private")
                if not url:
                    skip(NO_ADDRESS)
                    continue
                if _origin(str(url)) not in origins:
                    logger.warning("a reply's file download address is not on a Slack host; skipped, the token not sent")
                    skip(NOT_SLACK_HOST)
                    continue
                try:
                    response = await http.get(str(url), headers={"Authorization": f"Bearer {token}"})
                except httpx.HTTPError as exc:
                    skip(DOWNLOAD_FAILED.format(error=type(exc).__name__))
                    continue
                content_type = response.headers.get("content-type", "").split(";")[0].strip().lower()
                if response.status_code != 200 or (content_type == "text/html" and mimetype != "text/html"):
                    skip(SIGN_IN_PAGE)
                    continue
                data = response.content
                if len(data) > MAX_FILE_BYTES:
                    skip(TOO_LARGE)
                    continue
                encoded = base64.b64encode(data).decode("ascii")
                if kind == "image":
                    found.images.append({"type": "base64", "data": encoded, "mediaType": mimetype})
                else:
                    entry = {"type": "base64", "data": encoded, "mediaType": mimetype, "name": name}
                    if mimetype.startswith("text/"):
                        entry["parsedData"] = data.decode("utf-8", errors="replace")
                    found.files.append(entry)
        return found


def _origin(url: str) -> tuple[str, str, int] | None:
    """``(scheme, host, port)`` of ``url`` (the scheme's default port when none is given); None
    for an address that cannot be parsed or has no host."""
    try:
        parsed = httpx.URL(url)
    except (httpx.InvalidURL, TypeError, ValueError):
        return None
    scheme = parsed.scheme.lower()
    if not parsed.host or scheme not in DEFAULT_PORTS:
        return None
    return scheme, parsed.host.lower(), parsed.port or DEFAULT_PORTS[scheme]
