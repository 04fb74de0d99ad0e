"""Agent sessions and their messages, with a simulated agent that answers each user message.

Lifecycle (spec: "transitions not shown"; the sandbox's choice):

* ``POST /sessions`` -> ``pending`` (the computer is attaching); after ``reply_delay`` it becomes ``idle``
  unless a message arrived first.
* ``POST /sessions/{id}/messages`` stores the user message and returns ``{messageId, status: "running"}``;
  the session is ``running``. After ``reply_delay`` the agent appends, when the text asks for an action
  (a word from :data:`ACTIONS`: test, lint, build, fix, bug, read, file, review, explain), a ``tool``
  message first, then an ``assistant`` reply that quotes the user's text (:data:`REPLY_TEMPLATE`).
  Several messages queue and are answered in order; when the last is answered the session is ``idle``
  and ``completedAt`` is set. ``title`` is the first line of the first user message (60 characters).
* Now and then an answer has more parts, so that clients exercise their filtering (deterministic):
  the first answer of a session starts with a ``system`` message (the session's context); a text
  with "plan" or "steps" gets a ``commentary`` assistant message before the final one, and two tool
  steps; "think" adds an ``llm_only`` message (visibility ``llm_only``, ``isUserVisible: false``);
  "error" or "fail" adds an assistant message with ``isError: true``.
* ``messageCount`` counts every message (user, tool and assistant). ``sessionSettings.tokenUsage``
  grows with each reply. Messages are listed oldest first; the message-list cursor is a message ID.
* The session remembers who created it (``created_by``, the creating key's
  :meth:`~sandbox.agent_api.keys.Caller.who`), inside the sandbox only: not in the session object,
  shown by ``GET /_sandbox/sessions``; :mod:`sandbox.agent_api.access` uses it.
* ``PATCH`` merges ``sessionSettings`` member by member (a member set to ``null`` is removed); a
  request carrying ``tokenUsage`` (response-only) or an unknown member is a 400.

Message objects carry ``id, role, content: [{type: "text", text, id}], createdAt, updatedAt, parentId``
(the previous message; absent on the first), ``visibility: "both"``, ``isUserVisible``, ``isError``;
assistant replies also ``providerAPhase: "final_answer"``.
"""

from __future__ import annotations

import asyncio
import uuid
from dataclasses import dataclass, field

from .clock import now_ms
from .errors import bad_request

STRING_SETTINGS = (
    "model",
    "reasoningEffort",
    "interactionMode",
    "autonomyLevel",
    "autonomyMode",
    "specModeModel",
    "specModeReasoningEffort",
    "providerLock",
    "providerLockTimestamp",
    "apiProviderLock",
    "archivedAt",
)
LIST_SETTINGS = ("enabledToolIds", "disabledToolIds")
ROLES = ("user", "assistant", "tool")  # values of the messages list's role filter
TOKEN_USAGE_MEMBERS = (
    "inputTokens",
    "outputTokens",
    "cacheCreationTokens",
    "cacheReadTokens",
    "thinkingTokens",
)
TITLE_LENGTH = 60
QUOTE_LENGTH = 200
#: keyword in the user's text -> (tool message, what the reply says was done)
ACTIONS = (
    ("test", "$ pytest -q\n128 passed in 4.21s", "Ran the test suite: 128 passed"),
    ("lint", "$ ruff check .\nAll checks passed!", "Ran the linter: all checks passed"),
    ("build", "$ npm run build\nCompiled successfully in 12.4s", "Built the project: no errors"),
    ("fix", "Edit src/app/service.py (+4 -2)", "Edited src/app/service.py to fix it"),
    ("bug", "Edit src/app/service.py (+4 -2)", "Edited src/app/service.py to fix it"),
    ("read", "Read README.md (142 lines)", "Read README.md"),
    ("file", "Glob **/*.py (37 files)", "Listed the Python files"),
    (
        "review",
        "$ git diff --stat main\n 3 files changed, 41 insertions(+), 7 deletions(-)",
        "Reviewed the diff against main",
    ),
    ("explain", "Read src/app/service.py (310 lines)", "Read src/app/service.py"),
)
SYSTEM_TEXT = "Session context: working directory {cwd}; tools enabled."
THINKING_TEXT = "(reasoning kept for the model only)"
PLAN_TEXT = "Plan: look at the code, make the change, run the checks."
ERROR_TEXT = "A command failed: exit status 1 (see the output above)."
REPLY_TEMPLATE = 'Done. You asked: "{quote}"\n\nWhat I did in {cwd}:\n- {action}\n{attachments}\nReply to continue.'


def validate_settings(value: object) -> dict:
    """A request's ``sessionSettings``: an object of known members with the right JSON types."""
    if not isinstance(value, dict):
        raise bad_request("sessionSettings must be an object")
    for name, member in value.items():
        if member is None:
            continue
        if name == "tokenUsage":
            raise bad_request("sessionSettings.tokenUsage is response-only")
        if name in STRING_SETTINGS:
            ok = isinstance(member, str)
        elif name in LIST_SETTINGS:
            ok = isinstance(member, list) and all(isinstance(item, str) for item in member)
        elif name == "assistantActiveTimeMs":
            ok = isinstance(member, (int, float)) and not isinstance(member, bool)
        elif name == "tags":
            ok = isinstance(member, list) and all(
                isinstance(tag, dict) and isinstance(tag.get("name"), str) and isinstance(tag.get("metadata", {}), dict) for tag in member
            )
        else:
            raise bad_request(f"unknown sessionSettings member {name!r}")
        if not ok:
            raise bad_request(f"sessionSettings.{name} has the wrong type")
    return value


def validate_attachments(body: dict) -> tuple[int, int]:
    """Check ``images``/``files`` of a message body; returns their counts."""
    counts = []
    for name in ("images", "files"):
        items = body.get(name, [])
        if not isinstance(items, list):
            raise bad_request(f"{name} must be an array")
        for item in items:
            if not (
                isinstance(item, dict)
                and item.get("type") == "base64"
                and isinstance(item.get("data"), str)
                and isinstance(item.get("mediaType"), str)
            ):
                raise bad_request(f"each of {name} needs type 'base64', data and mediaType strings")
            if name == "images" and not item["mediaType"].startswith("image/"):
                raise bad_request(f"image mediaType must be an image type, got {item['mediaType']!r}")
            if any(not isinstance(item.get(k, ""), str) for k in ("parsedData", "name", "path")):
                raise bad_request("file parsedData, name and path must be strings")
        counts.append(len(items))
    return counts[0], counts[1]


def _message(role: str, text: str, parent: dict | None) -> dict:
    message_id = f"msg_{uuid.uuid4().hex[:24]}"
    now = now_ms()
    message = {
        "id": message_id,
        "role": role,
        "content": [{"type": "text", "text": text, "id": f"{message_id}_0"}],
        "createdAt": now,
        "updatedAt": now,
        "visibility": "both",
        "isUserVisible": True,
        "isError": False,
    }
    if parent is not None:
        message["parentId"] = parent["id"]
    return message


def reply_for(text: str, cwd: str, images: int, files: int) -> tuple[str | None, str]:
    """(tool message text or None, assistant reply text) for a user message; deterministic."""
    lowered = text.lower()
    tool, action = next(
        ((tool, action) for word, tool, action in ACTIONS if word in lowered),
        (None, "Thought it through; no changes were needed"),
    )
    quote = text if len(text) <= QUOTE_LENGTH else text[: QUOTE_LENGTH - 1] + "…"
    attached = [f"{n} {kind}{'s' if n != 1 else ''}" for n, kind in ((images, "image"), (files, "file")) if n]
    attachments = f"- Looked at the attachments ({' and '.join(attached)})\n" if attached else ""
    return tool, REPLY_TEMPLATE.format(quote=quote, cwd=cwd, action=action, attachments=attachments)


@dataclass
class Session:
    """One session: its state, its messages (oldest first) and the number of answers still queued."""

    id: str
    computer_id: str
    cwd: str
    settings: dict
    status: str = "pending"
    created_at: int = field(default_factory=now_ms)
    updated_at: int = 0
    completed_at: int | None = None
    title: str | None = None
    messages: list[dict] = field(default_factory=list)
    token_usage: dict = field(default_factory=lambda: dict.fromkeys(TOKEN_USAGE_MEMBERS, 0))
    queued: int = 0
    created_by: dict | None = None  # Caller.who() of the key that created it; never in to_json
    lock: asyncio.Lock = field(default_factory=asyncio.Lock, repr=False)

    def __post_init__(self) -> None:
        self.updated_at = self.updated_at or self.created_at

    def to_json(self) -> dict:
        data = {
            "sessionId": self.id,
            "status": self.status,
            "messageCount": len(self.messages),
            "createdAt": self.created_at,
            "updatedAt": self.updated_at,
            "computerId": self.computer_id,
            "sessionSettings": {**self.settings, "tokenUsage": dict(self.token_usage)},
        }
        if self.title is not None:
            data["title"] = self.title
        if self.completed_at is not None:
            data["completedAt"] = self.completed_at
        return data

    def append(self, role: str, text: str) -> dict:
        message = _message(role, text, self.messages[-1] if self.messages else None)
        self.messages.append(message)
        self.updated_at = message["createdAt"]
        return message

    def merge_settings(self, changes: dict) -> None:
        for name, value in changes.items():
            if value is None:
                self.settings.pop(name, None)
            else:
                self.settings[name] = value
        self.updated_at = now_ms()

    def find(self, message_id: str) -> dict | None:
        return next((m for m in self.messages if m["id"] == message_id), None)


class SessionStore:
    """All sessions of the server's life, and the simulated agent working on them."""

    def __init__(self, spawn, reply_delay: float) -> None:
        self._spawn = spawn
        self.reply_delay = reply_delay
        self.sessions: dict[str, Session] = {}

    def get(self, session_id: str) -> Session | None:
        return self.sessions.get(session_id)

    def create(self, computer_id: str, cwd: str, settings: dict, created_by: dict | None = None) -> Session:
        """A new session; ``created_by`` (``{"who", "email", "role"}``) is kept inside the sandbox."""
        session = Session(
            id=str(uuid.uuid4()),
            computer_id=computer_id,
            cwd=cwd,
            settings={k: v for k, v in settings.items() if v is not None},
            created_by=created_by,
        )
        self.sessions[session.id] = session
        self._spawn(self._attach(session))
        return session

    def submit(self, session: Session, text: str, images: int = 0, files: int = 0) -> dict:
        """Store a user message and queue the agent's answer; returns the user message."""
        message = session.append("user", text)
        if session.title is None:
            session.title = text.strip().splitlines()[0][:TITLE_LENGTH] if text.strip() else None
        session.queued += 1
        session.status = "running"
        session.completed_at = None
        self._spawn(self._answer(session, text, images, files))
        return message

    async def _attach(self, session: Session) -> None:
        await asyncio.sleep(self.reply_delay)
        if session.status == "pending":
            session.status = "idle"
            session.updated_at = now_ms()

    async def _answer(self, session: Session, text: str, images: int, files: int) -> None:
        async with session.lock:
            await asyncio.sleep(self.reply_delay)
            tool, reply = reply_for(text, session.cwd, images, files)
            lowered = text.lower()
            if not any(m["role"] == "system" for m in session.messages):
                session.append("system", SYSTEM_TEXT.format(cwd=session.cwd))
            if "think" in lowered:
                hidden = session.append("assistant", THINKING_TEXT)
                hidden.update(visibility="llm_only", isUserVisible=False)
            if "plan" in lowered or "steps" in lowered:
                session.append("assistant", PLAN_TEXT)["providerAPhase"] = "commentary"
                session.append("tool", "$ git status --short\n M src/app/service.py")
            if tool is not None:
                session.append("tool", tool)
            if "error" in lowered or "fail" in lowered:
                session.append("assistant", ERROR_TEXT)["isError"] = True
            session.append("assistant", reply)["providerAPhase"] = "final_answer"
            usage = session.token_usage
            usage["inputTokens"] += 1200 + 4 * len(text)
            usage["outputTokens"] += 40 + len(reply) // 4
            usage["cacheReadTokens"] += 8000
            usage["cacheCreationTokens"] += 1500
            if session.settings.get("reasoningEffort") not in (None, "off", "none"):
                usage["thinkingTokens"] += 256
            session.queued -= 1
            if session.queued == 0:
                session.status = "idle"
                session.completed_at = session.updated_at
