"""``agent-bot doctor``: checks a deployment's settings, one line per check, and what to do when one fails.

Each check gives a :class:`Check`, printed as one line by :meth:`Check.line`::

    ok   slack bot token: auth.test ok (team T0AGENT, bot user U0AGENTBOT); all 18 bot scopes of manifest.yaml granted
    FAIL agent api key: analytics answered 403: the key is not a manager's or owner's -> create a key ...

``ok`` passed, ``warn`` works but deserves a look, ``FAIL`` stops the bot from working: after ``->``
comes what to do. :func:`run_checks` runs them in this order (each on its own: one failing does not
hide the others):

1. **slack bot token** (``SLACK_BOT_TOKEN``, ``SLACK_API_URL``): ``auth.test``; then the scopes Slack
   names in the answer's ``x-oauth-scopes`` header (Slack doc "Scopes": every Web API answer carries
   the token's scopes) against the bot scopes of ``manifest.yaml`` (``oauth_config.scopes.bot``),
   naming the missing ones: a failure, unless each missing one only takes a feature away
   (:data:`SCOPE_FALLBACKS`: ``assistant:write``, without which the Messages tab's prompts come as
   a message with buttons), a warning naming what falls back. In OAuth mode (``SLACK_CLIENT_ID``)
   instead **slack installs (oauth mode)**: the mode, its secrets set, and the workspaces the bot
   holds an installation of.
2. **slack credentials** for the mode: HTTP (``SLACK_SIGNING_SECRET``: set; Slack has no call to
   test it, a wrong one shows as 401s on ``POST /slack/events``), or Socket Mode (``SLACK_APP_TOKEN``:
   an ``xapp-`` token that ``apps.connections.open`` accepts; the URL it answers is not opened).
3. **agent api key** (``AGENT_API_URL``, ``AGENT_API_KEY``): one day of ``GET /api/v1/analytics/tokens``
   (analytics-and-readiness-api.md, "Authentication": 401 an invalid key, 403 a key that is not a
   Manager's or Owner's).
4. **readiness endpoint** (``AGENT_APP_URL``): one readiness report (``limit=1``).
5. **database** (``AGENT_BOT_DATABASE_URL``): reachable and writable (:meth:`bot.store.Store.check_writable`);
   the URL is shown without its password.
6. **hook secret** (``AGENT_BOT_HOOK_SECRET``): set or not, and what that means (:mod:`bot.services.hooks`).
7. **roles file** (``AGENT_BOT_CONFIG``): parsed, and every owner it lists found in Slack (an e-mail
   with ``users.lookupByEmail``, a user ID with ``users.info``, a ``@handle`` with ``usergroups.list``).
8. **encryption key** (``AGENT_BOT_ENCRYPTION_KEY``): set or not (unset: ``/agent link`` is refused;
   a failure under ``AGENT_BOT_SESSIONS_AS=person``, where nobody could then start a session),
   how many Fernet keys, and whether they decrypt every linked key stored (and how many still wait
   for re-encryption with the first key, :mod:`bot.services.accounts.crypto`).
9. **computer rules** (the roles file's ``computers:`` section, :mod:`bot.services.computer_rules`):
   a warning when there are none (every member can use every computer), else how many and what
   decides for a computer no pattern matches.
10. **session display** (``AGENT_BOT_SESSION_DISPLAY``): streamed (one message per agent turn) or
   messages; a warning naming where Slack refused streaming (the workspace, a channel), which the
   bot recorded once (:mod:`bot.services.sessions.stream`) and shows as messages there.
11. **analytics store** (:mod:`bot.services.analytics_store`): days stored, the oldest, the last sync
    and the lag (yesterday minus the newest stored day); a warning when more than a day behind.

No secret is printed: tokens and keys only by the name of their variable. Exit status (the CLI): 1
when a check fails, else 0. The Web API calls other than ``auth.test`` go through
:class:`bot.slack.SlackGateway`; ``auth.test`` is read from the SDK's answer because the gateway
gives the data, not the ``x-oauth-scopes`` header.
"""

from __future__ import annotations

import asyncio
import datetime as dt
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final, Literal

import yaml
from slack_sdk.web.async_client import AsyncWebClient
from sqlalchemy import create_engine, inspect, select
from sqlalchemy.engine import make_url
from sqlalchemy.exc import ArgumentError, SQLAlchemyError

from bot.api import AgentAPIError, AgentClient
from bot.api.errors import AgentAPITransportError, ForbiddenError, NotFoundError, UnauthorizedError
from bot.config import Settings
from bot.db import SQLITE_CANNOT_OPEN
from bot.installations import slack_bots, slack_installation_states, team_key
from bot.migrations import SchemaBehind
from bot.roles import CATCH_ALL, Role, RolesConfigError, RolesFile
from bot.services.accounts import EncryptionKeyError, key_ring, linked_accounts
from bot.services.accounts.crypto import InvalidToken
from bot.services.sessions.store import stream_support
from bot.slack import SlackFailure, SlackGateway, failure_of, web_client
from bot.store import DatabaseUnusable, Store

Status = Literal["ok", "warn", "fail"]
Mode = Literal["http", "socket"]

MANIFEST: Final = "manifest.yaml"
"""The app manifest whose bot scopes the token must have: ``--manifest``, else this file in the
current directory, else the one next to the ``bot`` package (a source checkout)."""
CHECK_TIMEOUT: Final = 10.0
"""Seconds each check may take."""

# What to do, per failure (user-facing copy: tests import these)
FIX_BOT_TOKEN_MISSING: Final = "set SLACK_BOT_TOKEN to the Bot User OAuth Token (xoxb-...) of the app's OAuth & Permissions page"
FIX_BOT_TOKEN: Final = "check SLACK_BOT_TOKEN (reinstall the app if it was revoked) and SLACK_API_URL"
FIX_SCOPES: Final = "add them under OAuth & Permissions (or paste manifest.yaml again) and reinstall the app to the workspace"
SCOPE_FALLBACKS: Final = {
    "assistant:write": "the Messages tab's prompts come as a message with buttons, not as Slack's suggested prompts",
}
"""Bot scopes the bot works without, each with what falls back then: ``assistant:write`` lets
``assistant.threads.setSuggestedPrompts`` work (Slack doc
https://docs.slack.dev/reference/methods/assistant.threads.setSuggestedPrompts; refused without it,
:mod:`bot.services.sessions.suggestions` sends the message instead). The agent display needs only
``chat:write`` (``chat.*Stream``, ``assistant.threads.setStatus`` since 2026-03)."""
FIX_AGENT_SCOPE: Final = (
    "make the app an agent app: paste manifest.yaml again (features.agent_view and the scope assistant:write, "
    "or turn on Agents & AI Apps in the app's settings) and reinstall the app to the workspace"
)
FIX_OAUTH_SECRETS: Final = (
    "set SLACK_CLIENT_SECRET (Basic Information), SLACK_STATE_SECRET (any long random string) and "
    "AGENT_BOT_ENCRYPTION_KEY (a Fernet key: the installations' tokens are stored encrypted)"
)
NO_INSTALLATION: Final = "no workspace has installed the app yet"
FIX_NO_INSTALLATION: Final = (
    "open the bot's /slack/install page in a browser and allow the app (docs/operations.md, Installing for a company)"
)
FIX_SIGNING_SECRET: Final = "set SLACK_SIGNING_SECRET to the Signing Secret of the app's Basic Information page"
FIX_APP_TOKEN_MISSING: Final = "create an app-level token with connections:write (Basic Information) and set SLACK_APP_TOKEN (xapp-...)"
FIX_APP_TOKEN: Final = "check SLACK_APP_TOKEN (an app-level xapp- token with connections:write) and that Socket Mode is on"
FIX_API_MISSING: Final = "set AGENT_API_URL (the platform's API host) and AGENT_API_KEY"
FIX_API_KEY_INVALID: Final = "check AGENT_API_KEY: create a new key in the web application's API-key settings"
FIX_API_KEY_ROLE: Final = "create the key as a user with the Manager or Owner role (analytics answer 403 to members and guests)"
FIX_API_UNREACHABLE: Final = "check AGENT_API_URL and that this host can reach it"
FIX_APP_URL: Final = "set AGENT_APP_URL to the web application's host (readiness reports live there; it defaults to AGENT_API_URL)"
FIX_DATABASE: Final = "check AGENT_BOT_DATABASE_URL: the database must be reachable and writable by this process"
FIX_ROLES: Final = "fix the roles file named by AGENT_BOT_CONFIG (README, Roles)"
FIX_ROLES_MISSING: Final = "write a roles file (README, Roles) and set AGENT_BOT_CONFIG to its path"
FIX_OWNERS: Final = "use the owner's Slack e-mail, user ID (U...) or user-group handle (@group)"
FIX_NO_OWNER: Final = "list at least one owner under roles.owners"

HOOK_SECRET_SET: Final = (
    "set: hook events signed with it are accepted for anyone (a single-user setup; with several people "
    "unset it and give each a token with /agent hook token)"
)
HOOK_SECRET_UNSET: Final = "not set: only per-developer hook tokens (/agent hook token) sign hook events"
FIX_ENCRYPTION_KEY_MISSING: Final = (
    "make a key with `python3 -c 'from cryptography.fernet import Fernet; print(Fernet.generate_key().decode())'` "
    "and set AGENT_BOT_ENCRYPTION_KEY (docs/configuration.md)"
)
FIX_ENCRYPTION_KEY: Final = "give AGENT_BOT_ENCRYPTION_KEY Fernet keys only, comma-separated (Fernet.generate_key())"
FIX_ENCRYPTION_KEY_LOST: Final = (
    "put the key they were encrypted with back after the first one (NEW,OLD), or have those people run /agent link again"
)
ENCRYPTION_KEY_UNSET: Final = "AGENT_BOT_ENCRYPTION_KEY is not set: /agent link is refused, nobody can link their own platform key"
ENCRYPTION_KEY_UNSET_PERSON: Final = (
    "AGENT_BOT_ENCRYPTION_KEY is not set while AGENT_BOT_SESSIONS_AS=person: nobody can link their own "
    "platform key, so nobody can start or steer an agent session"
)
FIX_ENCRYPTION_KEY_PERSON: Final = (
    "set AGENT_BOT_ENCRYPTION_KEY (make one with `python3 -c 'from cryptography.fernet import Fernet; "
    "print(Fernet.generate_key().decode())'`), or set AGENT_BOT_SESSIONS_AS=bot to run sessions with the bot's key "
    "(docs/configuration.md)"
)
MAX_ROWS_CHECKED: Final = 10_000
"""How many stored linked keys the encryption-key check tries to decrypt at most."""
ROLES_UNSET: Final = "AGENT_BOT_CONFIG is not set: nobody is a manager or owner, so usage, controls and approvals are refused to all"
COMPUTER_RULES_NONE: Final = "no computers: section in the roles file: every member can use every computer"
COMPUTER_RULES_UNREAD: Final = "not read: the roles file cannot be used"
COMPUTER_RULES_OK: Final = "{count} rule(s) ({patterns}); {rest}"
COMPUTER_RULES_REST_OPEN: Final = 'a computer no pattern matches is open to every member (end with "*" to decide for them)'
COMPUTER_RULES_REST_CAUGHT: Final = '"*" decides for the other computers'
DISPLAY_MESSAGES: Final = "messages (AGENT_BOT_SESSION_DISPLAY=messages): one message per answer and a working message"
DISPLAY_STREAM: Final = "streamed: one message per agent turn, with a task timeline, a status line and feedback buttons"
DISPLAY_REFUSED: Final = "streamed where Slack allows it; shown as messages where it refused: {where}"
FIX_DISPLAY_REFUSED: Final = (
    "Slack refuses chat.startStream to this app there (agent features not enabled, or a channel type without streams); "
    "nothing to do for the messages display, or enable the app's agent features"
)
FIX_COMPUTER_RULES: Final = "add a computers: section to the roles file (docs/configuration.md, Computer rules), e.g. ci-*: [members]"


@dataclass(frozen=True)
class Check:
    """The outcome of one check: ``name``, ``status``, what was found (``detail``) and, unless it
    passed, what to do (``fix``)."""

    name: str
    status: Status
    detail: str
    fix: str = ""

    def line(self) -> str:
        """One line: ``ok   name: detail``, ``warn name: detail -> fix`` or ``FAIL name: detail -> fix``."""
        label = {"ok": "ok  ", "warn": "warn", "fail": "FAIL"}[self.status]
        text = f"{label} {self.name}: {self.detail}"
        return f"{text} -> {self.fix}" if self.status != "ok" and self.fix else text


def manifest_scopes(path: str | Path) -> list[str]:
    """The bot scopes of an app manifest (``oauth_config.scopes.bot``), in its order. Raises
    ``OSError`` or ``yaml.YAMLError`` for an unreadable file, ``ValueError`` when it names none."""
    data = yaml.safe_load(Path(path).read_text(encoding="utf-8")) or {}
    scopes = ((data.get("oauth_config") or {}).get("scopes") or {}).get("bot") or []
    if not isinstance(scopes, list) or not scopes:
        raise ValueError(f"{path} names no bot scopes (oauth_config.scopes.bot)")
    return [str(s) for s in scopes]


def default_manifest() -> Path:
    """:data:`MANIFEST` in the current directory, else in the source checkout above ``bot``."""
    here = Path(MANIFEST)
    return here if here.is_file() else Path(__file__).resolve().parent.parent / MANIFEST


def _header(headers: Any, name: str) -> str | None:
    for key, value in dict(headers or {}).items():
        if str(key).lower() == name:
            return str(value[0] if isinstance(value, list | tuple) else value)
    return None


async def check_bot_token(settings: Settings, manifest: Path) -> Check:
    """1. ``auth.test`` and the granted scopes (see the module docstring)."""
    name = "slack bot token"
    if settings.slack_bot_token is None:
        return Check(name, "fail", "SLACK_BOT_TOKEN is not set", FIX_BOT_TOKEN_MISSING)
    client = web_client(settings.slack_bot_token.get_secret_value(), settings.slack_api_url)
    try:
        response = await client.auth_test()
    except Exception as exc:  # a Slack error or any transport failure: one line, never a trace
        return Check(name, "fail", f"auth.test failed ({failure_of('auth.test', exc).error})", FIX_BOT_TOKEN)
    data = response.data if isinstance(response.data, dict) else {}
    found = f"auth.test ok (team {data.get('team_id')}, bot user {data.get('user_id')})"
    try:
        wanted = manifest_scopes(manifest)
    except (OSError, yaml.YAMLError, ValueError) as exc:
        return Check(
            name, "warn", f"{found}; scopes not checked: cannot read {manifest} ({type(exc).__name__})", "run with --manifest PATH"
        )
    header = _header(response.headers, "x-oauth-scopes")
    if header is None:
        return Check(name, "warn", f"{found}; Slack sent no x-oauth-scopes header, scopes not checked", "")
    granted = {s.strip() for s in header.split(",") if s.strip()}
    missing = [s for s in wanted if s not in granted]
    if missing:
        named = ", ".join(f"{s} ({SCOPE_FALLBACKS[s]})" if s in SCOPE_FALLBACKS else s for s in missing)
        if all(s in SCOPE_FALLBACKS for s in missing):  # the bot works, a feature falls back
            return Check(name, "warn", f"{found}; missing bot scopes: {named}", FIX_AGENT_SCOPE)
        return Check(name, "fail", f"{found}; missing bot scopes: {named}", FIX_SCOPES)
    return Check(name, "ok", f"{found}; all {len(wanted)} bot scopes of {manifest.name} granted")


def check_installations(settings: Settings) -> Check:
    """1, in OAuth mode (``SLACK_CLIENT_ID``; :mod:`bot.installations`): the mode, its secrets, and how
    many workspaces the bot holds an installation of (not revoked) in its database, and the Enterprise
    Grid organizations it is installed in org-wide. Reads only."""
    name = "slack installs (oauth mode)"
    missing = settings.missing("slack_client_secret", "slack_state_secret", "encryption_key")
    if missing:
        return Check(name, "fail", f"OAuth mode (SLACK_CLIENT_ID is set), but {', '.join(missing)} not set", FIX_OAUTH_SECRETS)
    if _missing_sqlite_file(settings.database_url) is not None:
        return Check(name, "warn", f"OAuth mode; {NO_INSTALLATION}", FIX_NO_INSTALLATION)
    engine = create_engine(settings.database_url)
    try:
        with engine.connect() as conn:
            if not inspect(conn).has_table(slack_bots.name):
                return Check(name, "warn", f"OAuth mode; {NO_INSTALLATION} (the schema is not upgraded yet)", FIX_NO_INSTALLATION)
            teams = {(r.enterprise_id, r.team_id) for r in conn.execute(select(slack_bots.c.enterprise_id, slack_bots.c.team_id))}
            revoked = {
                r.key
                for r in conn.execute(select(slack_installation_states.c.key).where(slack_installation_states.c.revoked_at.is_not(None)))
            }
    except SQLAlchemyError as exc:
        return Check(name, "fail", f"OAuth mode; the installations cannot be read ({type(exc).__name__})", FIX_DATABASE)
    finally:
        engine.dispose()
    held = [team for team in teams if team_key(*team) not in revoked]
    if not held:
        gone = f" ({len(teams)} uninstalled or revoked, kept)" if teams else ""
        return Check(name, "warn", f"OAuth mode; {NO_INSTALLATION}{gone}", FIX_NO_INSTALLATION)
    organizations = sorted(str(enterprise) for enterprise, team in held if team is None)  # org-wide (Enterprise Grid)
    workspaces = sorted(str(team) for _, team in held if team is not None)
    said = [f"installed org-wide in {', '.join(organizations)}"] if organizations else []
    if workspaces or not organizations:
        said.append(f"installed in {len(workspaces)} workspace(s): {', '.join(workspaces)}")
    return Check(name, "ok", f"OAuth mode; {'; '.join(said)}")


async def check_mode_credentials(settings: Settings, mode: Mode) -> Check:
    """2. The signing secret (HTTP mode) or the app-level token (Socket Mode)."""
    if mode == "http":
        name = "slack signing secret (http mode)"
        if settings.slack_signing_secret is None or not settings.slack_signing_secret.get_secret_value():
            return Check(name, "fail", "SLACK_SIGNING_SECRET is not set: every request from Slack would be refused", FIX_SIGNING_SECRET)
        return Check(name, "ok", "SLACK_SIGNING_SECRET is set (Slack cannot test it: a wrong one shows as 401s on POST /slack/events)")
    name = "slack app token (socket mode)"
    if settings.slack_app_token is None or not settings.slack_app_token.get_secret_value():
        return Check(name, "fail", "SLACK_APP_TOKEN is not set", FIX_APP_TOKEN_MISSING)
    token = settings.slack_app_token.get_secret_value()
    if not token.startswith("xapp-"):
        return Check(name, "fail", "SLACK_APP_TOKEN is not an app-level token (xapp-...)", FIX_APP_TOKEN)
    client = AsyncWebClient(token=token, base_url=settings.slack_api_url, timeout=int(CHECK_TIMEOUT))
    try:
        await client.apps_connections_open(app_token=token)
    except Exception as exc:  # as in check_bot_token
        return Check(name, "fail", f"apps.connections.open failed ({failure_of('apps.connections.open', exc).error})", FIX_APP_TOKEN)
    return Check(name, "ok", "apps.connections.open accepts SLACK_APP_TOKEN")


def _api_problem(exc: AgentAPIError) -> tuple[str, str]:
    if isinstance(exc, UnauthorizedError):
        return "answered 401: the key is not valid", FIX_API_KEY_INVALID
    if isinstance(exc, ForbiddenError):
        return "answered 403: the key is not a manager's or owner's", FIX_API_KEY_ROLE
    if isinstance(exc, AgentAPITransportError):
        return f"unreachable ({type(exc).__name__})", FIX_API_UNREACHABLE
    status = getattr(exc, "status", None)
    return (f"answered {status}" if status else f"failed ({type(exc).__name__})"), FIX_API_UNREACHABLE


async def check_api_key(settings: Settings, agent: AgentClient | None, today: dt.date) -> Check:
    """3. The key on one day of analytics (yesterday: today's date is refused by the spec)."""
    name = "agent api key"
    if agent is None:
        return Check(name, "fail", f"{', '.join(settings.missing('agent_api_url', 'agent_api_key'))} not set", FIX_API_MISSING)
    day = today - dt.timedelta(days=1)
    try:
        await agent.get_tokens(start_date=day, end_date=day)
    except AgentAPIError as exc:
        problem, fix = _api_problem(exc)
        return Check(name, "fail", f"GET /api/v1/analytics/tokens {problem}", fix)
    return Check(name, "ok", "the key reads analytics (a manager's or owner's key)")


async def check_readiness(settings: Settings, agent: AgentClient | None) -> Check:
    """4. One readiness report from ``AGENT_APP_URL``."""
    name = "readiness endpoint"
    if agent is None:
        return Check(name, "fail", "AGENT_API_URL or AGENT_API_KEY not set", FIX_API_MISSING)
    try:
        await agent.list_readiness_reports(limit=1)
    except NotFoundError:
        return Check(name, "fail", f"{settings.agent_app_url} has no readiness reports endpoint (404)", FIX_APP_URL)
    except AgentAPIError as exc:
        problem, fix = _api_problem(exc)
        return Check(name, "fail", f"{settings.agent_app_url} {problem}", FIX_APP_URL if fix == FIX_API_UNREACHABLE else fix)
    return Check(name, "ok", f"{settings.agent_app_url} answers readiness reports")


DATABASE_CREATED_AT_START = "no file yet; start-up creates it (its folder exists)"
SCHEMA_UPGRADED_AT_START = "its schema is behind this version; start-up upgrades it (AGENT_BOT_DB_AUTO_UPGRADE)"
FIX_SCHEMA = "back the database up, then run `agent-bot db upgrade` once (docs/operations.md, Upgrading and the database)"


def _missing_sqlite_file(database_url: str) -> Path | None:
    """The file of an SQLite URL when it does not exist yet (SQLite would create it on connect);
    None for an existing file, an in-memory database or another database."""
    url = make_url(database_url)
    if url.get_backend_name() != "sqlite" or not url.database or url.database == ":memory:" or url.database.startswith("file:"):
        return None
    path = Path(url.database)
    return None if path.exists() else path


def check_database(settings: Settings) -> Check:
    """5. The database: reachable, migrated and writable (a probe row, rolled back). The doctor
    changes nothing: a schema behind the code is reported (fine when start-up will upgrade it,
    ``AGENT_BOT_DB_AUTO_UPGRADE``), never upgraded here."""
    name = "database"
    try:
        shown = make_url(settings.database_url).render_as_string(hide_password=True)
    except ArgumentError:
        return Check(name, "fail", "AGENT_BOT_DATABASE_URL is not an SQLAlchemy URL", FIX_DATABASE)
    missing = _missing_sqlite_file(settings.database_url)
    if missing is not None:  # opening it would create it: a check writes nothing
        if missing.parent.is_dir():
            return Check(name, "ok", f"{shown}: {DATABASE_CREATED_AT_START}")
        return Check(name, "fail", f"{shown}: {SQLITE_CANNOT_OPEN}", FIX_DATABASE)
    store: Store | None = None
    try:
        store = Store(settings.database_url, auto_upgrade=False)
        store.check_writable()
    except SchemaBehind as exc:
        if settings.auto_upgrade:
            return Check(name, "ok", f"{shown}: {SCHEMA_UPGRADED_AT_START}")
        return Check(name, "fail", f"{shown}: {exc}", FIX_SCHEMA)
    except DatabaseUnusable as exc:
        return Check(name, "fail", f"{shown}: {exc}", FIX_DATABASE)
    except SQLAlchemyError as exc:
        return Check(name, "fail", f"{shown}: unusable ({type(exc).__name__})", FIX_DATABASE)
    finally:
        if store is not None:
            store.close()
    return Check(name, "ok", f"{shown} is reachable and writable")


ANALYTICS_STORE_EMPTY = "no landed day stored yet: the bot's start-up backfill fills it, or `agent-bot analytics sync`"
FIX_ANALYTICS_STORE = "run `agent-bot analytics sync --days 90` (or start the bot and let its backfill run)"


def check_analytics_store(settings: Settings, today: dt.date) -> Check:
    """10. The store of landed analytics days (:mod:`bot.services.analytics_store`): days stored,
    the oldest, the last sync and the lag (yesterday minus the newest stored day); a warning when
    more than a day behind (empty is fine: a new deployment's backfill fills it). Nothing is
    written; a database it cannot read is the database check's failure, only noted here."""
    from bot.services.analytics_store import AnalyticsStore

    name = "analytics store"
    if _missing_sqlite_file(settings.database_url) is not None:
        return Check(name, "ok", ANALYTICS_STORE_EMPTY)
    store: Store | None = None
    try:
        store = Store(settings.database_url, auto_upgrade=False)
        status = asyncio.run(AnalyticsStore(store).status())  # in the doctor's worker thread: a loop of its own
    except (DatabaseUnusable, SQLAlchemyError):
        return Check(name, "warn", "not readable (see the database check)", FIX_DATABASE)
    finally:
        if store is not None:
            store.close()
    if status.days == 0 or status.newest is None or status.oldest is None:  # a new deployment: its backfill fills it
        return Check(name, "ok", ANALYTICS_STORE_EMPTY)
    lag = (today - dt.timedelta(days=1) - status.newest).days
    last = status.last_sync.isoformat(timespec="seconds") if status.last_sync else "never"
    detail = f"{status.days} days stored, oldest {status.oldest.isoformat()}, last sync {last}, lag {lag} day{'s' if lag != 1 else ''}"
    if status.failing:
        detail += f", {status.failing} day{'s' if status.failing != 1 else ''} failing (asked again later)"
    return Check(name, "ok" if lag <= 1 else "warn", detail, "" if lag <= 1 else FIX_ANALYTICS_STORE)


def check_hook_secret(settings: Settings) -> Check:
    """6. Whether ``AGENT_BOT_HOOK_SECRET`` is set, and what that means (informational)."""
    secret = settings.hook_secret.get_secret_value() if settings.hook_secret else ""
    return Check("hook secret", "ok", HOOK_SECRET_SET if secret else HOOK_SECRET_UNSET)


async def _owner_found(slack: SlackGateway, entry: str) -> bool | SlackFailure:
    if entry.startswith("@"):
        members = await slack.user_group_members(entry)
        return members if isinstance(members, SlackFailure) else bool(members)
    if "@" in entry:
        found = await slack.user_by_email(entry)
        return found if isinstance(found, SlackFailure) else found is not None
    email = await slack.user_email(entry)
    if isinstance(email, SlackFailure):
        return False if email.error == "user_not_found" else email
    return True


async def check_roles(settings: Settings, slack: SlackGateway | None) -> Check:
    """7. The roles file: parsed, and each owner found in Slack."""
    name = "roles file"
    if settings.config_file is None:
        return Check(name, "warn", ROLES_UNSET, FIX_ROLES_MISSING)
    try:
        roles = RolesFile.load(settings.config_file)
    except RolesConfigError as exc:
        return Check(name, "fail", f"{settings.config_file} cannot be used ({type(exc.__cause__).__name__})", FIX_ROLES)
    owners = roles.roles.get(Role.owner, [])
    if not owners:
        return Check(name, "warn", f"{settings.config_file} lists no owner", FIX_NO_OWNER)
    if slack is None:
        return Check(
            name, "fail", f"{settings.config_file} parsed; owners not looked up: SLACK_BOT_TOKEN is not set", FIX_BOT_TOKEN_MISSING
        )
    missing: list[str] = []
    for owner in owners:
        found = await _owner_found(slack, owner)
        if isinstance(found, SlackFailure):
            return Check(
                name, "fail", f"{settings.config_file} parsed; owners not looked up: {found.method} failed ({found.error})", FIX_BOT_TOKEN
            )
        if not found:
            missing.append(owner)
    if missing:
        return Check(name, "fail", f"{settings.config_file}: owners not found in Slack: {', '.join(missing)}", FIX_OWNERS)
    return Check(name, "ok", f"{settings.config_file} parsed; all {len(owners)} owner(s) found in Slack")


def check_encryption_key(settings: Settings) -> Check:
    """8. ``AGENT_BOT_ENCRYPTION_KEY``: set, made of Fernet keys, and decrypting the linked keys
    stored (each tried; never printed). A database that cannot be read leaves the rows unchecked
    (the database check says why)."""
    name = "encryption key"
    try:
        ring = key_ring(settings.encryption_key)
    except EncryptionKeyError as exc:
        return Check(name, "fail", str(exc).removeprefix("AGENT_BOT_ENCRYPTION_KEY: "), FIX_ENCRYPTION_KEY)
    if ring is None:
        if settings.sessions_as == "person":  # nobody can link, so nobody can start or steer a session
            return Check(name, "fail", ENCRYPTION_KEY_UNSET_PERSON, FIX_ENCRYPTION_KEY_PERSON)
        return Check(name, "warn", ENCRYPTION_KEY_UNSET, FIX_ENCRYPTION_KEY_MISSING)
    keys = f"{ring.count} Fernet key{'s' if ring.count != 1 else ''}" + (" (the first encrypts)" if ring.count > 1 else "")
    try:
        missing = _missing_sqlite_file(settings.database_url)
    except ArgumentError:
        missing = None
    if missing is not None:  # opening it would create it: a check writes nothing
        return Check(name, "ok", f"{keys}; no linked key stored yet (no database file yet)")
    store: Store | None = None
    try:
        store = Store(settings.database_url, auto_upgrade=False)
        with store.engine.connect() as conn:
            tokens = [row.key_token for row in conn.execute(select(linked_accounts.c.key_token).limit(MAX_ROWS_CHECKED))]
    except SchemaBehind:
        return Check(name, "ok", f"{keys}; no linked key stored yet (the database schema is behind this version)")
    except (DatabaseUnusable, SQLAlchemyError, ArgumentError):
        return Check(name, "ok", f"{keys}; stored linked keys not checked (the database cannot be read)")
    finally:
        if store is not None:
            store.close()
    if not tokens:
        return Check(name, "ok", f"{keys}; no linked key stored yet")
    lost = older = 0
    for token in tokens:
        try:
            ring.decrypt(token)
        except InvalidToken:
            lost += 1
            continue
        older += not ring.is_current(token)
    if lost:
        return Check(name, "fail", f"{keys}; {lost} of {len(tokens)} stored linked keys cannot be decrypted", FIX_ENCRYPTION_KEY_LOST)
    waiting = f"; {older} still encrypted with an older key (re-encrypted when next used)" if older else ""
    return Check(name, "ok", f"{keys}; decrypts all {len(tokens)} stored linked keys{waiting}")


def check_computer_rules(settings: Settings) -> Check:
    """9. Whether the roles file has computer rules (a warning when not: every member can use every
    computer); an unreadable roles file is the roles file check's failure, only noted here."""
    name = "computer rules"
    if settings.config_file is None:
        return Check(name, "warn", COMPUTER_RULES_NONE, FIX_COMPUTER_RULES)
    try:
        roles = RolesFile.load(settings.config_file)
    except RolesConfigError:
        return Check(name, "warn", COMPUTER_RULES_UNREAD, FIX_ROLES)
    if not roles.computers:
        return Check(name, "warn", COMPUTER_RULES_NONE, FIX_COMPUTER_RULES)
    patterns = [rule.pattern for rule in roles.computers]
    rest = COMPUTER_RULES_REST_CAUGHT if CATCH_ALL in patterns else COMPUTER_RULES_REST_OPEN
    return Check(name, "ok", COMPUTER_RULES_OK.format(count=len(patterns), patterns=", ".join(patterns), rest=rest))


def check_session_display(settings: Settings) -> Check:
    """10. How sessions' threads are drawn (``AGENT_BOT_SESSION_DISPLAY``, :mod:`bot.services.sessions.stream`):
    the setting, and where Slack refused streaming (``stream_support``, read only: nothing written)."""
    name = "session display"
    if settings.session_display == "messages":
        return Check(name, "ok", DISPLAY_MESSAGES)
    try:
        missing = _missing_sqlite_file(settings.database_url)
    except ArgumentError:
        missing = None
    if missing is not None:
        return Check(name, "ok", DISPLAY_STREAM)
    store: Store | None = None
    try:
        store = Store(settings.database_url, auto_upgrade=False)
        with store.engine.connect() as conn:
            refused = [(row.scope, row.reason) for row in conn.execute(select(stream_support.c.scope, stream_support.c.reason))]
    except (SchemaBehind, DatabaseUnusable, SQLAlchemyError, ArgumentError):
        refused = []  # nothing recorded yet, or the database check says why it cannot be read
    finally:
        if store is not None:
            store.close()
    if not refused:
        return Check(name, "ok", DISPLAY_STREAM)
    where = ", ".join(f"{scope.replace(':', ' ')} ({reason})" for scope, reason in sorted(refused))
    return Check(name, "warn", DISPLAY_REFUSED.format(where=where), FIX_DISPLAY_REFUSED)


async def _bounded(name: str, check: Awaitable[Check]) -> Check:
    try:
        return await asyncio.wait_for(check, CHECK_TIMEOUT)
    except TimeoutError:
        return Check(name, "fail", f"no answer within {CHECK_TIMEOUT:g} s", "check the host's network and the URL settings")


async def run_checks(
    settings: Settings,
    *,
    mode: Mode = "http",
    manifest: Path | None = None,
    today: Callable[[], dt.date] = lambda: dt.datetime.now(dt.UTC).date(),
) -> list[Check]:
    """Every check of the module docstring, in order."""
    agent = None
    if not settings.missing("agent_api_url", "agent_api_key"):
        try:
            agent = AgentClient(
                base_url=settings.required("agent_api_url"),
                app_url=settings.agent_app_url,
                api_key=settings.required("agent_api_key"),
                timeout=CHECK_TIMEOUT,
            )
        except AgentAPIError:  # a malformed URL: reported as not set by both API checks
            agent = None
    slack = (
        SlackGateway(web_client(settings.slack_bot_token.get_secret_value(), settings.slack_api_url)) if settings.slack_bot_token else None
    )
    try:
        return [
            (
                await asyncio.to_thread(check_installations, settings)
                if settings.oauth
                else await _bounded("slack bot token", check_bot_token(settings, manifest or default_manifest()))
            ),
            await _bounded("slack credentials", check_mode_credentials(settings, mode)),
            await _bounded("agent api key", check_api_key(settings, agent, today())),
            await _bounded("readiness endpoint", check_readiness(settings, agent)),
            await asyncio.to_thread(check_database, settings),
            check_hook_secret(settings),
            await _bounded("roles file", check_roles(settings, slack)),
            await asyncio.to_thread(check_encryption_key, settings),
            check_computer_rules(settings),
            await asyncio.to_thread(check_session_display, settings),
            await asyncio.to_thread(check_analytics_store, settings, today()),
        ]
    finally:
        if agent is not None:
            await agent.aclose()


def report(checks: list[Check]) -> tuple[str, int]:
    """The printed report (one line per check) and the exit status: 1 when a check failed, else 0."""
    return "\n".join(c.line() for c in checks), 1 if any(c.status == "fail" for c in checks) else 0
