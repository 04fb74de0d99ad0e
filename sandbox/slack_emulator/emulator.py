"""``SlackEmulator``: the emulated workspace, its Web API server, its recorder and its client side.

    with SlackEmulator().start() as slack:
        bot = build_bot(slack_api_url=slack.api_url, token=slack.bot_token,
                        signing_secret=slack.signing_secret)          # the caller's own wiring
        with serve_in_thread(bot) as running, slack.client(running.url) as client:
            sent = client.send_slash_command("usage", user_id="U0MANAGER", channel_id="C0GENERAL")
            assert sent.status_code == 200
            [reply] = slack.recorder.wait_for(lambda: slack.recorder.responses(sent.response_url_id))

Credentials default to the constants below; the workspace to :func:`.directory.default_directory`.
The parts: :mod:`.web_api` (server), :mod:`.recorder` (what was received),
:mod:`.response_urls` (5 uses in 30 minutes), :mod:`.client_side` (requests to the bot),
:mod:`.render` (Block Kit as text), :mod:`.console` (the workspace in a browser, :meth:`SlackEmulator.serve_console`).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from typing import Any

from slack_sdk import WebClient
from slack_sdk.web.async_client import AsyncWebClient

from sandbox.server import RunningServer, serve_in_thread

from .client_side import EVENTS_PATH, AsyncSlackClientSide, SlackClientSide
from .console import Console
from .directory import Directory, default_directory
from .grid import Grid, GridClientSide, GridConsole, GridOAuth
from .grid import attach as attach_grid
from .oauth import OAuthServer
from .recorder import Recorder
from .response_urls import ResponseUrlOrigin, ResponseUrlRegistry
from .socket_mode import DEFAULT_APP_TOKEN, SocketModeClientSide, SocketModeHub
from .web_api import WebApi

DEFAULT_BOT_TOKEN = "xoxb-emulated-bot-token"
DEFAULT_SIGNING_SECRET = "emulated-signing-secret"
DEFAULT_VERIFICATION_TOKEN = "emulated-verification-token"


class SlackEmulator:
    """One emulated Slack workspace. ``start()`` serves it on a loopback port; ``stop()`` ends it.

    ``clock`` (monotonic seconds) times response URL lifetimes and the rate limit, so tests can move
    time forward; ``post_message_rate_limit`` (messages per second per channel) is off when ``None``.
    """

    def __init__(
        self,
        *,
        directory: Directory | None = None,
        bot_token: str = DEFAULT_BOT_TOKEN,
        signing_secret: str = DEFAULT_SIGNING_SECRET,
        verification_token: str = DEFAULT_VERIFICATION_TOKEN,
        post_message_rate_limit: int | None = None,
        clock: Callable[[], float] = time.monotonic,
        app_token: str = DEFAULT_APP_TOKEN,
        grid: Grid | None = None,
    ) -> None:
        self.grid = grid  # an Enterprise Grid (.grid): its people and channels, org-wide and workspace installs
        self.directory = directory or (grid.directory() if grid is not None else default_directory())
        self.socket_mode = SocketModeHub(app_token=app_token, app_id=self.directory.bot.app_id)
        self.bot_token = bot_token
        self.signing_secret = signing_secret
        self.verification_token = verification_token
        self.recorder = Recorder()
        self.response_urls = ResponseUrlRegistry(clock)
        self.web_api = WebApi(
            directory=self.directory,
            recorder=self.recorder,
            response_urls=self.response_urls,
            bot_token=bot_token,
            post_message_rate_limit=post_message_rate_limit,
            clock=clock,
            socket_mode=self.socket_mode,
        )
        self.oauth = (  # OAuth installs and rotating tokens (.oauth; a Grid's: .grid)
            OAuthServer(directory=self.directory) if grid is None else GridOAuth(grid=grid, directory=self.directory)
        )
        if isinstance(self.oauth, GridOAuth):
            attach_grid(self.web_api, self.oauth, bot_token)
        self.web_api.token_refusal = self.oauth.refusal  # type: ignore[method-assign]
        self.web_api.app.router.routes[0:0] = self.oauth.routes()
        self._server: RunningServer | None = None
        self._console: Console | None = None

    @property
    def app(self) -> Any:
        """The ASGI app (Starlette) serving the Web API, upload URLs and response URLs."""
        return self.web_api.app

    # ----------------------------------------------------------------- lifecycle

    def start(self, *, host: str = "127.0.0.1", port: int | None = None) -> SlackEmulator:
        if self._server is None:
            self._server = serve_in_thread(self.app, host=host, port=port)
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.stop()
            self._server = None

    def __enter__(self) -> SlackEmulator:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    def reset(self) -> None:
        """Forget what was recorded, the issued response URLs, the rate-limit counts, the streams and
        thread statuses (and a refusal of streaming), and the channels the bot joined (back to the directory's seed); keep serving."""
        self.recorder.clear()
        self.directory.joined.clear()
        self.response_urls.clear()
        self.web_api.reset_rate_limits()
        self.web_api.streams.reset()
        self.socket_mode.clear()

    @property
    def url(self) -> str:
        """``http://127.0.0.1:<port>`` (no trailing slash). Raises ``RuntimeError`` before ``start()``."""
        if self._server is None:
            raise RuntimeError("the Slack emulator is not started; call start() first")
        return self._server.url

    @property
    def api_url(self) -> str:
        """The Web API base URL for slack_sdk (``base_url=``) and ``SLACK_API_URL``; ends with ``/``."""
        return f"{self.url}/api/"

    # ----------------------------------------------------------------- helpers

    def issue_response_url(self, origin: ResponseUrlOrigin) -> tuple[str, str]:
        """A fresh ``(response_url_id, response_url)`` for an interaction."""
        response_url_id = self.response_urls.issue(origin)
        return response_url_id, self.response_url(response_url_id)

    def response_url(self, response_url_id: str) -> str:
        return f"{self.url}/response/{response_url_id}"

    def client(self, bot_url: str, *, path: str = EVENTS_PATH, timeout: float = 10.0) -> SlackClientSide:
        """A blocking client side that sends signed requests to ``{bot_url}{path}`` (on a Grid: :meth:`grid_client`)."""
        if self.grid is not None:
            return self.grid_client(bot_url, path=path, timeout=timeout)
        return SlackClientSide(self, bot_url, path=path, timeout=timeout)

    def grid_client(self, bot_url: str, *, path: str = EVENTS_PATH, timeout: float = 10.0) -> GridClientSide:
        """The blocking client side of a Grid (:class:`.grid.GridClientSide`); needs ``grid``."""
        if self.grid is None or not isinstance(self.oauth, GridOAuth):
            raise RuntimeError("this emulator has no Enterprise Grid; pass grid=Grid()")
        return GridClientSide(self, bot_url, grid=self.grid, oauth=self.oauth, path=path, timeout=timeout)

    def async_client(self, bot_url: str, *, path: str = EVENTS_PATH, timeout: float = 10.0) -> AsyncSlackClientSide:
        """The same as :meth:`client`, with coroutine methods."""
        return AsyncSlackClientSide(self, bot_url, path=path, timeout=timeout)

    @property
    def app_token(self) -> str:
        """The app-level token (``xapp-...``, ``SLACK_APP_TOKEN``) that opens Socket Mode connections."""
        return self.socket_mode.app_token

    def socket_client(self, *, timeout: float = 10.0) -> SocketModeClientSide:
        """A blocking client side that sends the same requests as :meth:`client` as Socket Mode
        envelopes to the app connected with :attr:`app_token` (see :mod:`.socket_mode`)."""
        return SocketModeClientSide(self, self.socket_mode, timeout=timeout)

    def serve_console(self, bot_url: str, *, notes: Mapping[str, str] | None = None) -> Console:
        """Serve the browser console at ``{url}/console`` (:mod:`.console`), sending what people do to
        the bot at ``bot_url`` as signed requests; ``notes`` label people in it (``{"U0OWNER": "owner"}``).
        Returns the :class:`.console.Console`; calling it again replaces the bot URL and notes."""
        if self._console is None:
            grid = self.grid
            self._console = Console(self, bot_url, notes=notes) if grid is None else GridConsole(self, bot_url, grid=grid, notes=notes)
            self.app.router.routes.extend(self._console.routes())
        else:
            self._console.bot_url = bot_url
            self._console.notes = dict(notes or {})
        return self._console

    @property
    def console_url(self) -> str:
        """``{url}/console``, the page of :meth:`serve_console`."""
        return f"{self.url}/console"

    def web_client(self) -> WebClient:
        """slack_sdk's ``WebClient`` pointed at this emulator with the bot token."""
        return WebClient(token=self.bot_token, base_url=self.api_url)

    def async_web_client(self) -> AsyncWebClient:
        """slack_sdk's ``AsyncWebClient`` pointed at this emulator with the bot token."""
        return AsyncWebClient(token=self.bot_token, base_url=self.api_url)
