"""An Enterprise Grid: one organization (an enterprise ``E...``) with two workspaces, each with its own people
and channels, and the app installed org-wide or in single workspaces of it.

Slack docs followed:

- "Organization-wide apps" / "Changes to API methods and payloads" (api.slack.com/enterprise/apps):
  ``oauth.v2.access`` of an org-wide install answers ``"team": null``, ``"enterprise": {"id", "name"}``
  and ``"is_enterprise_install": true``; an install in one workspace of a Grid answers its ``team``
  and the ``enterprise`` it belongs to, ``"is_enterprise_install": false``.
- Events API envelopes carry ``team_id`` (the workspace where it happened), ``enterprise_id`` and
  ``authorizations`` (``enterprise_id``, ``team_id``: null for an org-wide installation,
  ``user_id``, ``is_bot``, ``is_enterprise_install``).
- Slash commands carry ``team_id``, ``enterprise_id``, ``enterprise_name`` and
  ``is_enterprise_install`` (form fields); interaction payloads ``team`` (``id``, ``domain``,
  ``enterprise_id``, ``enterprise_name``), ``enterprise`` (``id``, ``name``), ``user.team_id`` and
  ``is_enterprise_install``.
- Channel and user IDs are unique across a Grid; an org-wide token reaches every workspace of the
  organization, a workspace's token only that workspace (another workspace's channel is
  ``channel_not_found``, its person ``user_not_found``).

What this module adds to :class:`.emulator.SlackEmulator` (``SlackEmulator(grid=Grid())``):

- :class:`Grid`: the organization and its workspaces; :meth:`Grid.directory` is the one
  :class:`.directory.Directory` of every person and channel of the Grid (the Web API's look-ups).
- :class:`GridOAuth`: the OAuth server installing org-wide (:attr:`GridOAuth.install_to` None, the
  default) or in one workspace (a team ID; or the authorize URL's ``team``); every token knows its
  *owner*: the enterprise ID for an org-wide token, the team ID for a workspace's.
- :func:`attach`: the Web API answers each token as Slack does (``auth.test`` of its own installation;
  a workspace token refused another workspace's channels and people) and notes who each call went
  as (:attr:`GridOAuth.calls`: ``(method, owner, arguments)``).
- :class:`GridClientSide`: the client side whose requests carry the workspace of the person (or
  channel) acting and the enterprise fields above; :meth:`GridClientSide.in_workspace` for requests
  that name no person (``app_uninstalled``, ``tokens_revoked``).

:class:`GridConsole`: the browser console of a Grid, whose person switcher switches workspace too.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, Unpack
from urllib.parse import parse_qsl, urlencode, urlsplit

from starlette.requests import Request
from starlette.responses import Response

from .client_side import DeliveryOptions, SentRequest, SlackClientSide, SlackRequest
from .console import Console
from .directory import (
    DEFAULT_CHANNELS,
    DEFAULT_USER_GROUPS,
    DEFAULT_USERS,
    BotIdentity,
    Directory,
    EmulatedChannel,
    EmulatedUser,
    Team,
    dm_channel_id,
)
from .oauth import IssuedToken, OAuthError, OAuthServer
from .web_api import SlackApiError, WebApi

ENTERPRISE_ID = "E0GRID"
ENTERPRISE_NAME = "Emulated Grid"


@dataclass(frozen=True)
class GridWorkspace:
    """One workspace of the Grid: its ``team``, the ``users`` whose home it is and its ``channels``."""

    team: Team
    users: tuple[EmulatedUser, ...]
    channels: tuple[EmulatedChannel, ...]

    def holds(self, id_: str) -> bool:
        """Whether the user, channel or DM ``id_`` is this workspace's."""
        users = {u.id for u in self.users}
        return id_ in users or id_ in {c.id for c in self.channels} or (id_.startswith("D") and ("U" + id_[1:]) in users)


SECOND_TEAM = Team("T0SECOND", "Second Workspace", "second-workspace")
SECOND_USERS = (
    EmulatedUser("U1ERIN", "erin", "erin@example.com", real_name="Erin Member"),
    EmulatedUser("U1FRANK", "frank", "frank@example.com", real_name="Frank Manager"),
)
SECOND_CHANNELS = (
    EmulatedChannel("C1GENERAL", "second-general"),
    EmulatedChannel("C1DIGEST", "second-digest"),
)


@dataclass(frozen=True)
class Grid:
    """The organization ``enterprise_id`` / ``enterprise_name`` and its ``workspaces``: by default the
    emulator's usual workspace (``T0EMULATED``: alice, bob, carol, dave; #general, #engineering...)
    and ``T0SECOND`` "Second Workspace" (erin@example.com ``U1ERIN``, frank@example.com ``U1FRANK``;
    #second-general ``C1GENERAL``, #second-digest ``C1DIGEST``)."""

    enterprise_id: str = ENTERPRISE_ID
    enterprise_name: str = ENTERPRISE_NAME
    workspaces: tuple[GridWorkspace, ...] = field(
        default_factory=lambda: (
            GridWorkspace(Team(), DEFAULT_USERS, DEFAULT_CHANNELS),
            GridWorkspace(SECOND_TEAM, SECOND_USERS, SECOND_CHANNELS),
        )
    )

    def directory(self, bot: BotIdentity | None = None) -> Directory:
        """Every person and channel of the Grid (IDs are unique across it); ``team`` is the first workspace's."""
        return Directory(
            users=tuple(u for w in self.workspaces for u in w.users),
            user_groups=DEFAULT_USER_GROUPS,
            channels=tuple(c for w in self.workspaces for c in w.channels),
            team=self.workspaces[0].team,
            bot=bot or BotIdentity(),
        )

    def workspace(self, team_id: str) -> GridWorkspace | None:
        return next((w for w in self.workspaces if w.team.id == team_id), None)

    def workspace_of(self, id_: str | None) -> GridWorkspace | None:
        """The workspace of a user, channel or DM ID; None when no workspace has it."""
        return next((w for w in self.workspaces if id_ and w.holds(id_)), None)


class GridOAuth(OAuthServer):
    """The OAuth server of a Grid (module docstring). ``install_to``: None installs org-wide, a team ID
    in that workspace (an authorize URL's ``team`` wins). ``calls`` lists each Web API call as
    ``(method, owner, arguments)``, ``owner`` the enterprise ID (org-wide token) or a team ID."""

    def __init__(self, *, grid: Grid, **options: Any) -> None:
        super().__init__(**options)
        self.grid = grid
        self.install_to: str | None = None
        self.calls: list[tuple[str, str | None, dict[str, Any]]] = []
        self._targets: dict[str, str | None] = {}  # code -> team ID or None (org-wide)
        self._target: str | None = None
        self._grid_lock = threading.RLock()
        self.removed: set[str] = set()
        """Workspaces an org admin removed the org-wide install from (its token no longer reaches them)."""

    # ----------------------------------------------------------------- the grants, per target

    async def _authorize(self, request: Request) -> Response:
        answer = await super()._authorize(request)
        location = answer.headers.get("location")
        if answer.status_code == 302 and location:
            code = dict(parse_qsl(urlsplit(location).query)).get("code")
            if code:
                self._targets[code] = request.query_params.get("team") or self.install_to
        return answer

    def _exchange(self, data: dict[str, str]) -> dict[str, Any]:
        with self._grid_lock:
            self._target = self._targets.pop(data.get("code") or "", self.install_to)
            return super()._exchange(data)

    def _refresh(self, data: dict[str, str]) -> dict[str, Any]:
        with self._grid_lock:
            with self._lock:
                granted = self._refresh_tokens.get(data.get("refresh_token") or "")
            owner = granted[0] if granted else None
            self._target = None if owner == self.grid.enterprise_id else owner
            return super()._refresh(data)

    def _grant(self, scope: str, *, rotating: bool | None = None) -> dict[str, Any]:
        body = super()._grant(scope, rotating=rotating)
        target = self._target
        owner = target or self.grid.enterprise_id
        enterprise = {"id": self.grid.enterprise_id, "name": self.grid.enterprise_name}
        workspace = self.grid.workspace(target) if target else None
        team = {"id": workspace.team.id, "name": workspace.team.name} if workspace else None
        body |= {"team": team, "enterprise": enterprise, "is_enterprise_install": target is None}
        with self._lock:  # the token (and its refresh token) belong to the owner, not the first workspace
            issued = self._tokens[body["access_token"]]
            self._tokens[body["access_token"]] = IssuedToken(owner, issued.expires_at)
            if body.get("refresh_token") in self._refresh_tokens:
                self._refresh_tokens[body["refresh_token"]] = (owner, scope)
        return body

    # ----------------------------------------------------------------- what the Web API asks

    def owner(self, token: str | None) -> str | None:
        """The enterprise ID (org-wide token) or team ID of ``token``; None for a token not issued here."""
        issued = self.issued(token) if token else None
        return issued.team_id if issued is not None else None

    def enterprise_installed(self) -> bool:
        """Whether an org-wide token works now (what Slack's payloads say in ``is_enterprise_install``)."""
        with self._lock:
            tokens = [t for t, issued in self._tokens.items() if issued.team_id == self.grid.enterprise_id]
        return any(self.refusal(t) is None for t in tokens)

    def revoke_org(self) -> None:
        """The org-wide install is removed: its tokens stop working (the workspaces' own installs do not)."""
        self.revoke(self.grid.enterprise_id)


def _bearer(request: Request) -> str | None:
    scheme, _, token = request.headers.get("authorization", "").partition(" ")
    return token.strip() if scheme.lower() == "bearer" and token.strip() else None


SUBJECTS = ("channel", "user", "users", "user_id")
"""The arguments naming a conversation or a person, checked against a workspace token's reach."""


def attach(web_api: WebApi, oauth: GridOAuth, bot_token: str) -> None:
    """Make ``web_api`` answer the Grid's tokens (module docstring). ``bot_token`` (the emulator's static
    token) counts as the first workspace's."""
    grid = oauth.grid
    first = grid.workspaces[0].team.id

    def owner_of(request: Request) -> str | None:
        token = _bearer(request)
        return first if token == bot_token else oauth.owner(token)

    def auth_test(args: Any, request: Request) -> dict[str, Any]:
        owner, bot = owner_of(request), web_api.directory.bot
        workspace = grid.workspace(owner or "")
        org = owner == grid.enterprise_id
        return {
            "url": f"https://{workspace.team.domain if workspace else 'emulated-grid.enterprise'}.slack.com/",
            "team": workspace.team.name if workspace else grid.enterprise_name,
            "user": bot.name,
            "team_id": workspace.team.id if workspace else grid.enterprise_id,
            "user_id": bot.user_id,
            "bot_id": bot.bot_id,
            "enterprise_id": grid.enterprise_id,
            "is_enterprise_install": org,
        }

    def reaching(method: str, handler: Any) -> Any:
        def handle(args: Any, request: Request) -> dict[str, Any]:
            owner = owner_of(request)
            data = dict(getattr(args, "data", None) or {})
            if owner is not None:  # a workspace's token reaches that workspace only; the org's, those not removed
                for name in SUBJECTS:
                    value = data.get(name)
                    held = grid.workspace_of(str(value)) if value else None
                    if held is not None and (held.team.id in oauth.removed if owner == grid.enterprise_id else held.team.id != owner):
                        raise SlackApiError("user_not_found" if name.startswith("user") else "channel_not_found")
            oauth.calls.append((method, owner, data))
            return handler(args, request)

        return handle

    methods = web_api._methods
    methods["auth.test"] = auth_test
    for method, handler in list(methods.items()):
        methods[method] = reaching(method, handler)


class GridClientSide(SlackClientSide):
    """The client side of a Grid: each request is rewritten for the workspace of the person (or the
    channel) it comes from, with the enterprise fields Slack adds (module docstring). Requests that
    name no one go as the first workspace's, or as :meth:`in_workspace` says."""

    def __init__(self, emulator: Any, bot_url: str, *, grid: Grid, oauth: GridOAuth, **options: Any) -> None:
        super().__init__(emulator, bot_url, **options)
        self.grid, self.oauth = grid, oauth
        self._team: str | None = None

    @contextlib.contextmanager
    def in_workspace(self, team_id: str) -> Iterator[None]:
        """Requests sent meanwhile come from ``team_id`` (those naming nobody: lifecycle events)."""
        self._team, before = team_id, self._team
        try:
            yield
        finally:
            self._team = before

    def send_team_access(self, team_ids: list[str], *, granted: bool, **delivery: Unpack[DeliveryOptions]) -> SentRequest:
        """An org admin added the org-wide install to workspaces ``team_ids`` (``granted``: the
        ``team_access_granted`` event) or removed it from them (``team_access_revoked``; the org-wide
        token no longer reaches them). Slack docs of those events: ``event.team_ids``."""
        if granted:
            self.oauth.removed.difference_update(team_ids)
        else:
            self.oauth.removed.update(team_ids)
        kind = "team_access_granted" if granted else "team_access_revoked"
        with self.in_workspace(self.grid.workspaces[0].team.id):
            return self.send_event({"type": kind, "team_ids": list(team_ids), "event_ts": f"{time.time():.6f}"}, **delivery)

    def send(self, request: SlackRequest, **delivery: Unpack[DeliveryOptions]) -> SentRequest:
        return super().send(self.rewritten(request), **delivery)

    def _workspace(self, *ids: Any) -> GridWorkspace:
        if self._team is not None and (chosen := self.grid.workspace(self._team)) is not None:
            return chosen
        for id_ in ids:
            if isinstance(id_, str) and (found := self.grid.workspace_of(id_)) is not None:
                return found
        return self.grid.workspaces[0]

    def rewritten(self, request: SlackRequest) -> SlackRequest:
        """``request`` as Slack sends it from the Grid: the workspace's ``team_id`` and the enterprise fields."""
        org = self.oauth.enterprise_installed()
        enterprise = {"id": self.grid.enterprise_id, "name": self.grid.enterprise_name}
        payload = json.loads(json.dumps(request.payload))
        if request.kind == "slash_command":
            team = self._workspace(payload.get("user_id"), payload.get("channel_id")).team
            payload |= {
                "team_id": team.id,
                "team_domain": team.domain,
                "enterprise_id": enterprise["id"],
                "enterprise_name": enterprise["name"],
                "is_enterprise_install": "true" if org else "false",
            }
            return self._as(request, urlencode(payload), payload)
        if request.kind == "event_callback":
            event = payload.get("event") or {}
            team = self._workspace(event.get("user"), event.get("channel")).team
            payload["team_id"] = team.id
            payload["enterprise_id"] = enterprise["id"]
            if "team" in event:
                event["team"] = team.id
            for authorization in payload.get("authorizations") or []:
                authorization |= {"enterprise_id": enterprise["id"], "team_id": None if org else team.id, "is_enterprise_install": org}
            return self._as(request, json.dumps(payload), payload)
        if request.kind in ("block_actions", "view_submission") or payload.get("type") in ("block_actions", "view_submission"):
            user = payload.get("user") or {}
            team = self._workspace(user.get("id"), (payload.get("channel") or {}).get("id")).team
            ids = {"enterprise_id": enterprise["id"], "enterprise_name": enterprise["name"]}
            payload["team"] = {"id": team.id, "domain": team.domain, **ids}
            payload["enterprise"] = enterprise
            payload["is_enterprise_install"] = org
            if user:
                user["team_id"] = team.id
            if isinstance(payload.get("view"), dict):
                payload["view"]["team_id"] = team.id
            return self._as(request, urlencode({"payload": json.dumps(payload)}), payload)
        return request

    @staticmethod
    def _as(request: SlackRequest, body: str, payload: dict[str, Any]) -> SlackRequest:
        return SlackRequest(request.kind, body, request.content_type, payload, request.response_url_id, request.response_url)


class GridConsole(Console):
    """The browser console (:mod:`.console`) on a Grid: switching to a person switches to their
    workspace; the page's header names it, the channel list holds that workspace's channels, and the
    state lists every workspace (``workspaces``: :func:`console_workspaces`). Requests go through
    :meth:`.emulator.SlackEmulator.client`, the Grid's client side."""

    def __init__(self, emulator: Any, bot_url: str, *, grid: Grid, **options: Any) -> None:
        super().__init__(emulator, bot_url, **options)
        self.grid = grid

    def _conversations(self, person: EmulatedUser) -> list[EmulatedChannel]:
        mine = self.grid.workspace_of(person.id)
        return [c for c in super()._conversations(person) if mine is None or c.is_im or mine.holds(c.id)]

    def state(self, person: EmulatedUser, *, view: str = "", thread_ts: str | None = None) -> dict[str, Any]:
        answer = super().state(person, view=view, thread_ts=thread_ts)
        mine = self.grid.workspace_of(person.id) or self.grid.workspaces[0]
        answer.pop("version", None)
        answer["workspace"] = {"name": mine.team.name, "domain": mine.team.domain, "id": mine.team.id}
        answer["workspaces"] = console_workspaces(self.grid)
        answer["version"] = hashlib.sha1(json.dumps(answer, sort_keys=True, default=str).encode()).hexdigest()[:16]
        return answer


def console_workspaces(grid: Grid) -> list[dict[str, Any]]:
    """What the console's workspace switch lists: each workspace's team and its people and channels."""
    return [
        {
            "team": {"id": w.team.id, "name": w.team.name, "domain": w.team.domain},
            "users": [{"id": u.id, "name": u.name} for u in w.users],
            "channels": [{"id": c.id, "name": c.name} for c in w.channels] + [{"id": dm_channel_id(u.id), "name": u.name} for u in w.users],
        }
        for w in grid.workspaces
    ]


__all__ = ["ENTERPRISE_ID", "Grid", "GridClientSide", "GridOAuth", "GridWorkspace", "OAuthError", "attach", "console_workspaces"]
