"""Slack's OAuth v2 for the emulated workspace: the authorize page, ``oauth.v2.access``, rotating tokens.

Slack docs followed: "Installing with OAuth" (``https://slack.com/oauth/v2/authorize`` with
``client_id``, ``scope``, ``user_scope``, ``state``, ``redirect_uri``; the redirect back with ``code``
and ``state``; a code is used once and within 10 minutes), ``oauth.v2.access`` (``grant_type``
``authorization_code`` or ``refresh_token``; the client's ID and secret in HTTP Basic auth, or as
``client_id`` / ``client_secret`` arguments; errors ``invalid_client_id``, ``bad_client_secret``,
``invalid_code``, ``bad_redirect_uri``, ``invalid_refresh_token``, ``invalid_grant_type``) and "Token
rotation" (with rotation on, an access token is ``xoxe.xoxb-1-...`` and comes with a
``refresh_token`` ``xoxe-1-...`` and ``expires_in`` seconds, 12 hours by default; an expired token is
answered ``token_expired``; a refresh token is used once: the refresh gives a new access token and a
new refresh token, the old access token keeps working until it expires).

:class:`OAuthServer` serves:

- ``GET /oauth/v2/authorize``: the emulator approves at once (as if the installer clicked Allow) and
  redirects to ``redirect_uri?code=...&state=...``; an unknown ``client_id`` is a 400 page;
- ``POST /api/oauth.v2.access`` (also ``GET``): the exchange and the refresh, answered as Slack does
  (HTTP 200, ``{"ok": false, "error": ...}`` for a refusal).

Every token it issues is accepted by every Web API method of :mod:`.web_api` until it expires or is
revoked (:meth:`OAuthServer.refusal`, which the Web API consults for a token that is not its static bot
token). Time is :attr:`OAuthServer.clock` (epoch seconds), which tests move.
"""

from __future__ import annotations

import base64
import binascii
import itertools
import secrets
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, RedirectResponse, Response
from starlette.routing import Route

from .directory import Directory

DEFAULT_CLIENT_ID = "1111111111.2222222222"
DEFAULT_CLIENT_SECRET = "emulated-client-secret"
CODE_LIFETIME = 600.0
"""Seconds an authorization code may be exchanged (Slack: 10 minutes)."""
TOKEN_LIFETIME = 43200
"""``expires_in`` of a rotating token, seconds (Slack: 12 hours)."""
AUTHORIZE_PATH = "/oauth/v2/authorize"
ACCESS_PATH = "/api/oauth.v2.access"


class OAuthError(Exception):
    """A refusal of ``oauth.v2.access``: ``{"ok": false, "error": error}``."""

    def __init__(self, error: str) -> None:
        super().__init__(error)
        self.error = error


@dataclass
class IssuedToken:
    """A bot token the emulator issued: its ``team_id``, ``expires_at`` (epoch seconds; None: never)
    and whether it was ``revoked``."""

    team_id: str
    expires_at: float | None
    revoked: bool = False


@dataclass(frozen=True)
class _Code:
    client_id: str
    scope: str
    redirect_uri: str | None
    issued_at: float


class OAuthServer:
    """The OAuth side of the emulated workspace (module docstring): ``directory`` (the team and bot
    the tokens are for), the app's ``client_id`` / ``client_secret``, ``clock`` (epoch seconds).

    ``token_rotation`` (off by default) makes issued tokens rotate; ``expires_in`` is their lifetime.
    ``refreshes`` counts the refreshes granted, ``refresh_calls`` every refresh asked for (granted or
    not), ``exchanges`` the codes exchanged."""

    def __init__(
        self,
        *,
        directory: Directory,
        client_id: str = DEFAULT_CLIENT_ID,
        client_secret: str = DEFAULT_CLIENT_SECRET,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.directory = directory
        self.client_id = client_id
        self.client_secret = client_secret
        self.clock = clock
        self.token_rotation = False
        self.expires_in = TOKEN_LIFETIME
        self.refreshes = 0
        self.refresh_calls = 0
        self.refresh_tokens_issued: list[str] = []
        """Every refresh token issued, used or not (tests look for them where they must not be)."""
        self.exchanges = 0
        self._lock = threading.Lock()
        self._codes: dict[str, _Code] = {}
        self._tokens: dict[str, IssuedToken] = {}
        self._refresh_tokens: dict[str, tuple[str, str]] = {}  # refresh token -> (team_id, scope); removed when used
        self._fail_refreshes: list[str] = []
        self._serial = itertools.count(1)

    def routes(self) -> list[Route]:
        """The authorize page and ``oauth.v2.access``; to be placed before the Web API's ``/api/{method}``."""
        return [
            Route(AUTHORIZE_PATH, self._authorize, methods=["GET"]),
            Route(ACCESS_PATH, self._access, methods=["GET", "POST"]),
        ]

    # ----------------------------------------------------------------- what the Web API asks

    def refusal(self, token: str) -> str | None:
        """None when ``token`` is an issued token that works now; else Slack's error for it:
        ``token_expired`` (past its ``expires_in``), ``token_revoked``, or ``invalid_auth`` (unknown)."""
        with self._lock:
            issued = self._tokens.get(token)
        if issued is None:
            return "invalid_auth"
        if issued.revoked:
            return "token_revoked"
        if issued.expires_at is not None and self.clock() >= issued.expires_at:
            return "token_expired"
        return None

    def issued(self, token: str) -> IssuedToken | None:
        """What the emulator knows of ``token`` (None: not one it issued)."""
        with self._lock:
            return self._tokens.get(token)

    def revoke(self, team_id: str) -> None:
        """Revoke every token of ``team_id`` (an uninstall), refresh tokens included."""
        with self._lock:
            for issued in self._tokens.values():
                if issued.team_id == team_id:
                    issued.revoked = True
            self._refresh_tokens = {k: v for k, v in self._refresh_tokens.items() if v[0] != team_id}

    def fail_next_refresh(self, error: str = "internal_error", *, times: int = 1) -> None:
        """Answer the next ``times`` refreshes with ``error`` before doing anything (the refresh token
        stays valid: a retry can use it)."""
        with self._lock:
            self._fail_refreshes.extend([error] * times)

    def authorize_url(self, *, scope: str, state: str, redirect_uri: str, base_url: str) -> str:
        """The authorize URL on the emulator at ``base_url`` (tests; the bot builds its own)."""
        query = urlencode({"client_id": self.client_id, "scope": scope, "state": state, "redirect_uri": redirect_uri})
        return f"{base_url}{AUTHORIZE_PATH}?{query}"

    # ----------------------------------------------------------------- HTTP endpoints

    async def _authorize(self, request: Request) -> Response:
        params = request.query_params
        if params.get("client_id") != self.client_id:
            return PlainTextResponse("invalid_client_id: this app is not known to the workspace", status_code=400)
        redirect_uri = params.get("redirect_uri")
        if not redirect_uri:
            return PlainTextResponse("bad_redirect_uri: no redirect_uri, and the app has no redirect URL set", status_code=400)
        code = f"{next(self._serial)}.{secrets.token_hex(8)}"
        with self._lock:
            self._codes[code] = _Code(self.client_id, params.get("scope", ""), redirect_uri, self.clock())
        back = {"code": code, **({"state": params["state"]} if params.get("state") else {})}
        return RedirectResponse(_with_query(redirect_uri, back), status_code=302)

    async def _access(self, request: Request) -> JSONResponse:
        data: dict[str, str] = dict(request.query_params)
        if request.method == "POST":
            data.update(parse_qsl((await request.body()).decode("utf-8"), keep_blank_values=True))
        try:
            self._check_client(request, data)
            grant = data.get("grant_type") or "authorization_code"
            if grant == "authorization_code":
                body = self._exchange(data)
            elif grant == "refresh_token":
                body = self._refresh(data)
            else:
                raise OAuthError("invalid_grant_type")
        except OAuthError as refused:
            return JSONResponse({"ok": False, "error": refused.error})
        return JSONResponse({"ok": True, **body})

    # ----------------------------------------------------------------- the grants

    def _check_client(self, request: Request, data: dict[str, str]) -> None:
        client_id, client_secret = data.get("client_id"), data.get("client_secret")
        scheme, _, credentials = request.headers.get("authorization", "").partition(" ")
        if scheme.lower() == "basic":
            try:
                client_id, _, client_secret = base64.b64decode(credentials).decode("utf-8").partition(":")
            except (binascii.Error, UnicodeDecodeError):
                raise OAuthError("invalid_client_id") from None
        if client_id != self.client_id:
            raise OAuthError("invalid_client_id")
        if client_secret != self.client_secret:
            raise OAuthError("bad_client_secret")

    def _exchange(self, data: dict[str, str]) -> dict[str, Any]:
        with self._lock:
            code = self._codes.pop(data.get("code") or "", None)
        if code is None or self.clock() - code.issued_at > CODE_LIFETIME:
            raise OAuthError("invalid_code")
        if data.get("redirect_uri") and data["redirect_uri"] != code.redirect_uri:
            raise OAuthError("bad_redirect_uri")
        self.exchanges += 1
        return self._grant(code.scope)

    def _refresh(self, data: dict[str, str]) -> dict[str, Any]:
        with self._lock:
            self.refresh_calls += 1
            if self._fail_refreshes:
                raise OAuthError(self._fail_refreshes.pop(0))
            granted = self._refresh_tokens.pop(data.get("refresh_token") or "", None)  # used once
        if granted is None:
            raise OAuthError("invalid_refresh_token")
        self.refreshes += 1
        return self._grant(granted[1], rotating=True)

    def _grant(self, scope: str, *, rotating: bool | None = None) -> dict[str, Any]:
        team, bot = self.directory.team, self.directory.bot
        rotating = self.token_rotation if rotating is None else rotating
        serial = next(self._serial)
        token = f"xoxb-{serial}-{secrets.token_hex(12)}"
        body: dict[str, Any] = {
            "token_type": "bot",
            "scope": scope,
            "bot_user_id": bot.user_id,
            "app_id": bot.app_id,
            "team": {"id": team.id, "name": team.name},
            "enterprise": None,
            "is_enterprise_install": False,
            "authed_user": {"id": "U0OWNER"},
        }
        expires_at: float | None = None
        if rotating:
            token = f"xoxe.{token}"
            refresh = f"xoxe-1-{secrets.token_hex(16)}"
            expires_at = self.clock() + self.expires_in
            body |= {"refresh_token": refresh, "expires_in": self.expires_in}
            with self._lock:
                self._refresh_tokens[refresh] = (team.id, scope)
                self.refresh_tokens_issued.append(refresh)
        with self._lock:
            self._tokens[token] = IssuedToken(team.id, expires_at)
        return {"access_token": token, **body}


def _with_query(url: str, params: dict[str, str]) -> str:
    parts = urlsplit(url)
    query = "&".join(q for q in (parts.query, urlencode(params)) if q)
    return urlunsplit((parts.scheme, parts.netloc, parts.path, query, parts.fragment))
