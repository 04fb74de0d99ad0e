"""``--hostile``: spec-legal data nobody planned for, in every free-text field and list.

With ``SandboxConfig.hostile`` the sandbox keeps its normal organization, then makes it hostile where
the spec allows anything: every free-text field (names, descriptions, rationales, computer and step
names, host names, errors, model ids, tool and MCP server names, repository URLs, languages, author
names) cycles through :data:`TEXTS` (``<!channel>``, ``<@U123>``, ``<https://x|link>``, ``*_~``,
backticks, ``&``, newlines, RTL overrides and zero-width characters, emoji, 5,000+ characters);
lists get huge (:data:`COMPUTERS` computers, a report with :data:`CRITERIA` criteria and :data:`APPS`
applications, :data:`TOOLS` tools a day, :data:`REVISIONS` revisions, :data:`CUSTOM_MODELS` custom
models); optional fields are null or absent; enumerations carry values the spec does not list
(``delegation_level "turbo"``, ``primary_model_tier "ultra"``, client ``"ide-plugin"``, reasoning
effort ``"extreme"``, computer status ``"hibernating"``); date-time strings include a leap second and
``9999-12-31T23:00:00-01:00``; the analytics ``/users`` meta says ``hasMore``/``nextCursor`` (the
spelling of the spec's prose) instead of ``has_more``/``next_cursor``; analytics rows leave figures
out (the spec's row tables mark no field as required): on some days, and in some breakdown items and
grouped rows, a figure or breakdown list is absent or null (:data:`GAPS`, :func:`drop`), while
every row keeps its ``date``, ``group_key``, ``user_id`` and item names.

What stays friendly, so a client can still be exercised: IDs, cursors, numbers, dates of analytics
rows, the five fixed people's e-mails (roles are resolved by e-mail), and the slug ``acme/web``.
Secrets in the hostile history (:data:`SECRET_PREFIX`) must never reach a client's user.

Functions here are pure transforms of the normal payloads (deterministic, by position), called by
:mod:`sandbox.agent_api.state` and :mod:`sandbox.agent_api.analytics_api` when the flag is on.
"""

from __future__ import annotations

import copy
import dataclasses
import datetime as dt
from typing import Any

from .people import Person, iso

LONG = ("<!channel> " + "\u202eeulav gnol `x` *y* _z_ & ") * 160 + "<@U123> end"
"""More than 5,000 characters, pings spread all through."""
TEXTS = (
    "<!channel> deploy now",
    "<!here> & <!everyone>",
    "<@U123> <@W0BOSS|boss>",
    "<https://x.example|link> <mailto:a@b.example|mail>",
    "*bold* _it_ ~strike~ `code` ```block``` > quote",
    "AT&T &amp; &lt;tag&gt; <b>",
    "line one\nline two\r\n> forged line",
    "\u202eexe.txt\u202c \u200bzero\u200b width \u2066isolate\u2069 \ufeffbom",
    "emoji \U0001f680\U0001f468\u200d\U0001f469\u200d\U0001f467 \u05e9\u05dc\u05d5\u05dd \u0645\u0631\u062d\u0628\u0627",
    LONG,
)
SECRET_PREFIX = "sk-hostile-secret-"
FAR_FUTURE = "9999-12-31T23:00:00-01:00"
LEAP_SECOND = "2016-12-31T23:59:60Z"
COMPUTERS = 300
CRITERIA = 120
APPS = 60
TOOLS = 200
REVISIONS = 150
CUSTOM_MODELS = 500
HOSTILE_REPO = "https://github.com/acme/<!channel>`\n\u202e"


GAPS: dict[str, tuple[tuple[str, ...], ...]] = {
    "tokens": (("cache_write_tokens", "output_tokens"), ("by_model", "input_tokens"), ()),
    "tools": (("tool_calls", "autonomy_ratio_p90"), ("mcp_by_server", "web_users")),
    "activity": (("weekly_active_users", "sessions"), (), ("daily_active_users_by_client",), ("messages",)),
    "productivity": (("git_prs_created", "files_edited"), (), ("git_commits",)),
    "users": (("tool_calls", "sessions"), (), ("primary_model", "languages"), ("delegation_level",)),
}
"""Per endpoint, the members left out of a row, cycling by day (``users``: by position): entry
``date.toordinal() % len(cycle)``. The first of each tuple is absent, the others are null."""


def drop(row: dict, names: tuple[str, ...]) -> dict:
    """``row`` without ``names[0]`` and with the other ``names`` null (a new dict)."""
    row = dict(row)
    for k, name in enumerate(names):
        if k == 0:
            row.pop(name, None)
        else:
            row[name] = None
    return row


def _gaps(endpoint: str, row: dict, n: int | None = None) -> dict:
    cycle = GAPS[endpoint]
    key = dt.date.fromisoformat(row["date"]).toordinal() if n is None else n
    return drop(row, cycle[key % len(cycle)])


def text(n: int) -> str:
    """The ``n``-th hostile string (cycling through :data:`TEXTS`)."""
    return TEXTS[n % len(TEXTS)]


# ---- people (v0 organization users; names in analytics follow the IDs) -----------------------


def people(normal: list[Person]) -> list[Person]:
    """Hostile first and last names for everyone; hostile e-mails for people after the fixed five
    (still one ``@``, so they stay addresses)."""
    out = []
    for person in normal:
        changes: dict[str, Any] = {"first_name": text(person.index), "last_name": text(person.index + 3)}
        if person.index >= 5:
            local = text(person.index).replace("@", "").replace(" ", "")[:40] or "x"
            changes["email"] = f"{local}.{person.index}@example.com"
            changes["analytics_email"] = None if person.index % 3 == 0 else changes["email"]
        out.append(dataclasses.replace(person, **changes))
    return out


def v0_user(user: dict, index: int) -> dict:
    """One organization user: odd dates, nulls and absent members."""
    user = dict(user)
    kind = index % 5
    if kind == 0:
        user["lastSignInAt"] = FAR_FUTURE
        user["createdAt"] = FAR_FUTURE
    elif kind == 1:
        user["lastSignInAt"] = LEAP_SECOND
        user["createdAt"] = "yesterday-ish " + text(index)
    elif kind == 2:
        user["lastSignInAt"] = None
        user.pop("createdAt", None)
        user["firstName"] = None
    elif kind == 3:
        user.pop("firstName", None)
        user.pop("lastName", None)
        user["metadata"] = None
    return user


# ---- analytics rows ----------------------------------------------------------------------------


def tokens_row(row: dict) -> dict:
    row = copy.deepcopy(row)
    for n, item in enumerate(row["by_model"]):
        item["model_id"] = text(n) if n % 2 else item["model_id"] + text(n)[:60]
        item["model_tier"] = "ultra" if n % 2 else item["model_tier"]
    for n, user in enumerate(row["by_user"]):
        if n % 4 == 0:
            user["user_email"] = None
        if n % 7 == 3:
            user.pop("billable_tokens", None)
        user["by_model"] = [{"model_id": text(n), "tier": "ultra", "odd": None}]
    return _gaps("tokens", row)


def tokens_by_model(rows: list[dict]) -> list[dict]:
    return [{**row, "group_key": text(n) + str(n)} | ({"billable_tokens": None} if n % 5 == 4 else {}) for n, row in enumerate(rows)]


def tools_row(row: dict) -> dict:
    row = copy.deepcopy(row)
    row["by_tool"] = [{"tool": f"{text(n)} #{n}", "invocations": None if n % 9 == 8 else 1000 - n} for n in range(TOOLS)]
    row["mcp_by_server"] = [{"server": f"{text(n)}{n}", "invocations": 300 - n} for n in range(TOOLS)]
    row["skills_by_name"] = [{"name": text(n), "count": n} for n in range(20)]
    row["hooks_by_event"] = [{"event": text(n), "matcher": text(n + 1), "command": text(n + 2), "count": n} for n in range(20)]
    return _gaps("tools", row)


def tools_by_tool_name(rows: list[dict]) -> list[dict]:
    day = rows[0]["date"] if rows else None
    if day is None:
        return rows
    return [{"date": day, "group_key": f"{text(n)} #{n}"} | ({} if n % 7 == 6 else {"tool_calls": 1000 - n}) for n in range(TOOLS)]


def activity_row(row: dict) -> dict:
    row = copy.deepcopy(row)
    row["daily_active_users_by_client"] = {**row["daily_active_users_by_client"], "ide-plugin": 3, text(0): 1, "unreported": None}
    return _gaps("activity", row)


def activity_by_client(rows: list[dict]) -> list[dict]:
    day = rows[0]["date"] if rows else None
    extra = [
        {"date": day, "group_key": "ide-plugin", "daily_active_users": None},
        {"date": day, "group_key": text(2), "daily_active_users": 1},
    ]
    return rows + (extra if day else [])


def productivity_row(row: dict) -> dict:
    row = copy.deepcopy(row)
    row["by_extension"] = [{"extension": text(n), "count": n} for n in range(30)]
    row["by_language"] = [{"language": text(n), "count": n} for n in range(30)]
    return _gaps("productivity", row)


def user_row(row: dict, n: int) -> dict:
    row = dict(row)
    row["primary_model"] = text(n)
    row["primary_model_tier"] = "ultra" if n % 2 else row["primary_model_tier"]
    row["delegation_level"] = "turbo" if n % 3 == 0 else row["delegation_level"]
    row["languages"] = [text(n), text(n + 1), text(n + 2)]
    return _gaps("users", row, n)


ROWS = {
    "tokens": (tokens_row, tokens_by_model),
    "tools": (tools_row, tools_by_tool_name),
    "activity": (activity_row, activity_by_client),
    "productivity": (productivity_row, None),
}


# ---- readiness reports ---------------------------------------------------------------------------


def reports(normal: list[dict]) -> list[dict]:
    """The normal reports with hostile text, plus, newest, one huge report of ``acme/web`` and one
    of a repository whose URL is hostile."""
    out = []
    for n, report in enumerate(normal):
        report = copy.deepcopy(report)
        for key, evaluation in report["report"].items():
            evaluation["rationale"] = text(n + len(key))
        report["apps"] = {path: {"description": text(n + i)} for i, path in enumerate(report["apps"])}
        if "modelUsed" in report:
            report["modelUsed"] = {"id": text(n), "reasoningEffort": "extreme" if n % 2 else None}
        if n % 3 == 0:
            report["branch"] = text(n)
            report["commitHash"] = None
        out.append(report)
    newest = max((r["createdAt"] for r in normal), default=0)
    apps = {f"apps/{text(i)[:30]}/{i}": {"description": text(i)} for i in range(APPS)}
    huge = {
        "reportId": "rep-hostile-huge",
        "createdAt": newest + 60_000,
        "repoUrl": "https://github.com/acme/web",
        "apps": apps,
        "report": {f"{text(i)[:20]}_{i}": {"numerator": i % 3, "denominator": 2, "rationale": text(i)} for i in range(CRITERIA)},
        "commitHash": text(4),
        "branch": text(6),
        "hasLocalChanges": None,
        "modelUsed": {"id": text(9), "reasoningEffort": "extreme"},
        "agentVersion": text(1),
    }
    odd_repo = {
        "reportId": "rep-hostile-url",
        "createdAt": newest + 120_000,
        "repoUrl": HOSTILE_REPO,
        "apps": {text(0): {"description": text(7)}},
        "report": {text(1): {"numerator": 0, "denominator": 0, "rationale": text(8)}},
    }
    return [odd_repo, huge, *out]


# ---- computers ----------------------------------------------------------------------------------------


def computers(now_ms: int) -> list[dict]:
    """:data:`COMPUTERS` extra computers as ``(id, name, provider, status, hostname, user, steps)``."""
    statuses = ("error", "hibernating", "provisioning", "active", None)
    out = []
    for n in range(COMPUTERS):
        steps = [
            {"id": f"s{k}", "name": text(n + k), "status": ("failed", "paused", None)[k % 3], "error": text(n + k + 1)}
            for k in range(3 + n % 10)
        ]
        if n % 7 == 0:
            steps = []
        out.append(
            {
                "id": f"cmp-hostile-{n:03d}",
                "name": text(n),
                "providerType": text(n + 1) if n % 2 else "byom",
                "createdAt": now_ms - n * 60_000,
                "status": statuses[n % len(statuses)],
                "hostname": text(n + 2) if n % 3 else None,
                "remoteUser": text(n + 3) if n % 4 else None,
                "steps": steps,
            }
        )
    return out


# ---- enterprise-control history ----------------------------------------------------------------------


def history(normal: list[dict]) -> list[dict]:
    """:data:`REVISIONS` revisions (newest first): hostile authors, odd dates, hostile setting keys
        and values, custom models with secret API keys (:data:`CUSTOM_MODELS` of them in the newest ten
    revisions, five before: a history page stays a few megabytes)."""
    base = copy.deepcopy(normal[0]["settings"]) if normal else {}
    changes = []
    moment = dt.datetime(2026, 11, 20, 12, tzinfo=dt.UTC)
    settings = base
    for revision in range(1, REVISIONS + 1):
        settings = copy.deepcopy(settings)
        settings[f"{text(revision)[:40]}"] = text(revision + 1)
        settings["maxAutonomyLevel"] = text(revision)
        settings.setdefault("mcpPolicy", {})["allowlist"] = [text(revision + k)[:300] for k in range(8)]
        if revision % 10 == 0:
            settings["customModels"] = [
                {
                    "id": f"cm{k}",
                    "model": text(k)[:80],
                    "displayName": text(k + revision)[:80],
                    "baseUrl": f"https://{text(k)[:20]}.example",
                    "apiKey": f"{SECRET_PREFIX}{revision}-{k}",
                }
                for k in range(CUSTOM_MODELS if revision >= REVISIONS - 10 else 5)
            ]
        kind = revision % 6
        updated = iso(moment - dt.timedelta(days=REVISIONS - revision))
        if kind == 1:
            updated = FAR_FUTURE
        elif kind == 2:
            updated = LEAP_SECOND
        author: dict[str, Any] = {"id": f"usr_{revision}", "email": text(revision), "name": text(revision + 1)}
        if kind == 3:
            author = {}
        elif kind == 4:
            author = {"id": None, "email": None, "name": None}
        changes.append({"revision": revision, "settings": settings, "user": author, "updatedAt": updated})
    return list(reversed(changes))
