"""Settings of the bot, read from the environment (or a ``.env`` file) with pydantic-settings.

The variables are the ones of docs/configuration.md (``.env.example`` lists them too):

=========================  =====================================================  ==========================
variable                   meaning                                                default
=========================  =====================================================  ==========================
SLACK_BOT_TOKEN            bot token (``xoxb-...``)                               none
SLACK_SIGNING_SECRET       signs every request Slack sends (HTTP mode)            none
SLACK_APP_TOKEN            app-level token (``xapp-...``), Socket Mode only       none
SLACK_API_URL              Slack Web API base URL (the emulator in tests)         ``https://slack.com/api/``
SLACK_CLIENT_ID            OAuth mode (installs with OAuth, :mod:`bot.            none (one bot token)
                           installations`): the app's client ID
SLACK_CLIENT_SECRET        OAuth mode: the app's client secret                    none
SLACK_STATE_SECRET         OAuth mode: signs the install's ``state``              none
SLACK_REDIRECT_URI         OAuth mode: the bot's ``/slack/oauth_redirect`` URL    none (the app's own)
SLACK_TOKEN_ROTATION_EXPIRATION_MINUTES  OAuth mode, rotating tokens: refresh a   ``120``
                           token that expires within this many minutes
AGENT_API_URL              the Agent API host (``{base_url}`` in the spec)        none
AGENT_APP_URL              the web-application host (``{app_url}``)               ``AGENT_API_URL``
AGENT_API_KEY              bearer key for the Agent API                           none
AGENT_BOT_DATABASE_URL     SQLAlchemy URL (SQLite file, or PostgreSQL)            ``sqlite:///agent-bot.db``
AGENT_BOT_DB_AUTO_UPGRADE  start-up runs the pending schema migrations; when      true for a SQLite URL,
                           false, ``serve``/``socket`` refuse a database behind   false otherwise
                           the code (run ``agent-bot db upgrade``)
AGENT_BOT_CONFIG           YAML file: roles, policy, digest defaults              none
AGENT_BOT_USER_CACHE_TTL   seconds a Slack user's e-mail / role stays cached      ``600``
AGENT_BOT_ANALYTICS_CACHE_TTL  seconds analytics answers are kept (0 = off)       ``300``
AGENT_BOT_ANALYTICS_BACKFILL_DAYS  how many past days the store of landed        ``90``
                           analytics days keeps filled (:mod:`bot.services.analytics_store`);
                           0: no sync job (the store is read, and filled only by
                           ``agent-bot analytics sync``)
AGENT_BOT_ANALYTICS_SYNC_INTERVAL  seconds at least between two requests of the   ``2``
                           store's sync (its share of the platform's rate)
AGENT_BOT_ANALYTICS_SYNC_SECONDS  how often the sync looks for newly landed days  ``900``
AGENT_BOT_LOG_LEVEL        Python log level name                                  ``INFO``
AGENT_BOT_LOG_FORMAT       ``text`` or ``json`` (one JSON object a line;          ``text``
                           :mod:`bot.logs`)
AGENT_BOT_METRICS_PORT     Socket Mode: port of the ``GET /metrics`` listener     none
                           (``serve`` has it on its own port; :mod:`bot.metrics`)
AGENT_BOT_DIGEST_CHECK_SECONDS  how often the scheduler looks for due digests     ``300``
AGENT_BOT_ALERT_CONTROLS_SECONDS  how often enterprise controls are checked for   ``300``
                           a new revision (``controls`` alerts)
AGENT_BOT_ALERT_COMPUTERS_SECONDS  how often computers are checked (``computers``  ``60``
                           alerts)
AGENT_BOT_ALERT_READINESS_SECONDS  how often readiness reports are checked         ``900``
                           (``readiness`` alerts); ``usage`` alerts check with
                           the digest's cadence
AGENT_BOT_AUTORUN_DAILY_CAP  sessions alert autorun starts in one channel per     ``3``
                           UTC day (``alerts subscribe computers autorun``);
                           over it, said once in the channel
AGENT_BOT_SESSION_FOLLOW_HOURS  hours an idle session is still polled             ``24``
AGENT_BOT_HOME_REFRESH_SECONDS  seconds at least between two refreshes of one     ``30``
                           person's Home tab after changes (opening it always
                           publishes it)
AGENT_BOT_HOOK_SECRET      shared secret that signs agent hook events; for a      none
                           single-user setup only (it speaks for anyone; see
                           :mod:`bot.hooks`)
AGENT_BOT_HOOK_TOKEN       the developer's own hook token (for ``agent-bot        none
                           hook``; ``/agent hook token`` sends it by DM); signs
                           their hook events, and wins over the shared secret
AGENT_BOT_HOOK_URL         the bot's ``/hooks/agent`` URL (for ``agent-bot hook``) none
                           (set on the bot too, it is shown in the token's DM)
AGENT_BOT_HOOK_USER        the developer's e-mail (for ``agent-bot hook``)        none
AGENT_BOT_HOOK_TIMEOUT     seconds ``agent-bot hook`` may take in all (above 0,   ``3``
                           below the hooks configuration's ``timeout`` of 10)
AGENT_BOT_HOOK_PORT        Socket Mode: port of the small hook listener           none
AGENT_BOT_SOCKET_PING_SECONDS  Socket Mode: a ping after this many seconds without  ``2``
                           a frame; a connection whose pong is half of it late
                           is replaced at once (:mod:`bot.socket_mode`)
AGENT_BOT_ENCRYPTION_KEY   Fernet key(s) that encrypt people's linked platform    none (``/agent link``
                           API keys at rest; several comma-separated for          is refused)
                           rotation: the first encrypts, all decrypt
                           (:mod:`bot.services.accounts.crypto`)
AGENT_BOT_SESSIONS_AS      who acts on the platform for a person who has not      ``person``
                           linked their key: ``person`` (nobody: they are asked
                           to ``/agent link``) or ``bot`` (the bot's key, and
                           the messages say so)
=========================  =====================================================  ==========================

Secrets are ``SecretStr``: their ``repr`` and ``str`` print ``**********``; read them with
``.get_secret_value()`` only where they are handed to a client.

Secrets from files, as Kubernetes (a Secret mounted as a volume) and Docker (``secrets:``, under
``/run/secrets/``) provide them: each variable of :data:`FILE_SETTINGS` may instead be given as
``<VARIABLE>_FILE``, the path of a file holding the value (``SLACK_BOT_TOKEN_FILE=/run/secrets/slack-bot-token``).
The file is read at start-up as UTF-8, one trailing line break removed (``\n`` or ``\r\n``, as
``echo`` and editors leave it). A file that cannot be read, is empty, is not UTF-8 or is larger than
:data:`MAX_SECRET_FILE_BYTES`, and a variable set both ways, raise :class:`ConfigurationError` naming the
variable and the path, never the content. An empty ``<VARIABLE>_FILE`` counts as unset.

Only the names above are read: pydantic-settings would also take a field's own name from the
environment (``LOG_LEVEL``, ``DATABASE_URL``, ``METRICS_PORT``), and Kubernetes sets variables such as
``METRICS_PORT=tcp://10.0.0.7:9090`` for every Service of a namespace (its service links), which then
stopped the bot at start-up. ``Settings(database_url=...)`` in code still takes field names.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final, Literal, get_args

from pydantic import AliasChoices, Field, SecretStr, model_validator
from pydantic.fields import FieldInfo
from pydantic_settings import BaseSettings, PydanticBaseSettingsSource, SettingsConfigDict
from pydantic_settings.sources import EnvSettingsSource

from bot.hooks import CONFIG_TIMEOUT, RELAY_TIMEOUT

SessionsAs = Literal["person", "bot"]
SessionDisplay = Literal["stream", "messages"]
"""How a session's thread shows the agent's work (``AGENT_BOT_SESSION_DISPLAY``): ``stream``, one
streamed message per turn with a task timeline and a status line where Slack allows it
(:mod:`bot.services.sessions.stream`), else ``messages``, one message per answer and a working message."""
"""``AGENT_BOT_SESSIONS_AS``: whose key a person's session writes go with when they have no linked key
(``person``: none, they are asked to link; ``bot``: the bot's, said so)."""

FILE_SETTINGS: Final = (
    "slack_bot_token",
    "slack_signing_secret",
    "slack_app_token",
    "slack_client_secret",
    "slack_state_secret",
    "agent_api_key",
    "database_url",
    "hook_secret",
    "hook_token",
    "encryption_key",
)
"""The settings (field names) whose variable may be given as ``<VARIABLE>_FILE`` (module docstring)."""
FILE_SUFFIX: Final = "_FILE"
MAX_SECRET_FILE_BYTES: Final = 64 * 1024
"""The largest secret file read (a path to a log or a device by mistake fails at once, not slowly)."""


class Settings(BaseSettings):
    """The bot's configuration. Raises ``pydantic.ValidationError`` on a malformed value, and
    :class:`ConfigurationError` for a ``<VARIABLE>_FILE`` that cannot be used (module docstring)."""

    model_config = SettingsConfigDict(env_file=".env", extra="ignore", populate_by_name=True)

    slack_bot_token: SecretStr | None = Field(default=None, validation_alias="SLACK_BOT_TOKEN")
    slack_signing_secret: SecretStr | None = Field(default=None, validation_alias="SLACK_SIGNING_SECRET")
    slack_app_token: SecretStr | None = Field(default=None, validation_alias="SLACK_APP_TOKEN")
    slack_api_url: str = Field(default="https://slack.com/api/", validation_alias="SLACK_API_URL")
    slack_client_id: str | None = Field(default=None, validation_alias="SLACK_CLIENT_ID")
    slack_client_secret: SecretStr | None = Field(default=None, validation_alias="SLACK_CLIENT_SECRET")
    slack_state_secret: SecretStr | None = Field(default=None, validation_alias="SLACK_STATE_SECRET")
    slack_redirect_uri: str | None = Field(default=None, validation_alias="SLACK_REDIRECT_URI")
    slack_token_rotation_minutes: int = Field(
        default=120, ge=1, le=720, validation_alias=AliasChoices("SLACK_TOKEN_ROTATION_EXPIRATION_MINUTES", "slack_token_rotation_minutes")
    )
    """OAuth mode, rotating tokens: a token is refreshed once it expires within these minutes (Bolt's
    ``token_rotation_expiration_minutes``; Slack's tokens live 12 hours)."""

    agent_api_url: str | None = Field(default=None, validation_alias="AGENT_API_URL")
    agent_app_url: str | None = Field(default=None, validation_alias="AGENT_APP_URL")
    agent_api_key: SecretStr | None = Field(default=None, validation_alias="AGENT_API_KEY")

    database_url: str = Field(
        default="sqlite:///agent-bot.db",
        validation_alias=AliasChoices("AGENT_BOT_DATABASE_URL", "database_url"),
    )
    db_auto_upgrade: bool | None = Field(default=None, validation_alias=AliasChoices("AGENT_BOT_DB_AUTO_UPGRADE", "db_auto_upgrade"))
    config_file: str | None = Field(default=None, validation_alias=AliasChoices("AGENT_BOT_CONFIG", "config_file"))
    user_cache_ttl: float = Field(default=600.0, ge=0, validation_alias=AliasChoices("AGENT_BOT_USER_CACHE_TTL", "user_cache_ttl"))
    analytics_cache_ttl: float = Field(
        default=300.0, ge=0, validation_alias=AliasChoices("AGENT_BOT_ANALYTICS_CACHE_TTL", "analytics_cache_ttl")
    )
    analytics_backfill_days: int = Field(
        default=90, ge=0, le=366, validation_alias=AliasChoices("AGENT_BOT_ANALYTICS_BACKFILL_DAYS", "analytics_backfill_days")
    )
    analytics_sync_interval: float = Field(
        default=2.0, ge=0, validation_alias=AliasChoices("AGENT_BOT_ANALYTICS_SYNC_INTERVAL", "analytics_sync_interval")
    )
    analytics_sync_seconds: float = Field(
        default=900.0, gt=0, validation_alias=AliasChoices("AGENT_BOT_ANALYTICS_SYNC_SECONDS", "analytics_sync_seconds")
    )
    log_level: str = Field(default="INFO", validation_alias=AliasChoices("AGENT_BOT_LOG_LEVEL", "log_level"))
    log_format: Literal["text", "json"] = Field(default="text", validation_alias=AliasChoices("AGENT_BOT_LOG_FORMAT", "log_format"))
    metrics_port: int | None = Field(default=None, ge=1, le=65535, validation_alias=AliasChoices("AGENT_BOT_METRICS_PORT", "metrics_port"))
    digest_check_seconds: float = Field(
        default=300.0, gt=0, validation_alias=AliasChoices("AGENT_BOT_DIGEST_CHECK_SECONDS", "digest_check_seconds")
    )
    alert_controls_seconds: float = Field(
        default=300.0, gt=0, validation_alias=AliasChoices("AGENT_BOT_ALERT_CONTROLS_SECONDS", "alert_controls_seconds")
    )
    alert_computers_seconds: float = Field(
        default=60.0, gt=0, validation_alias=AliasChoices("AGENT_BOT_ALERT_COMPUTERS_SECONDS", "alert_computers_seconds")
    )
    alert_readiness_seconds: float = Field(
        default=900.0, gt=0, validation_alias=AliasChoices("AGENT_BOT_ALERT_READINESS_SECONDS", "alert_readiness_seconds")
    )
    autorun_daily_cap: int = Field(
        default=3, ge=0, le=1000, validation_alias=AliasChoices("AGENT_BOT_AUTORUN_DAILY_CAP", "autorun_daily_cap")
    )
    session_follow_hours: float = Field(
        default=24.0, gt=0, validation_alias=AliasChoices("AGENT_BOT_SESSION_FOLLOW_HOURS", "session_follow_hours")
    )
    slack_outbox_deadline_seconds: float = Field(
        default=900.0,
        gt=0,
        validation_alias=AliasChoices("AGENT_BOT_SLACK_OUTBOX_DEADLINE_SECONDS", "slack_outbox_deadline_seconds"),
    )
    """How long a post may wait in :mod:`bot.outbox` for Slack (rate-limited) before it is given up
    and the person told; counted in ``agent_bot_slack_outbox_expired_total``."""
    home_refresh_seconds: float = Field(
        default=30.0, gt=0, validation_alias=AliasChoices("AGENT_BOT_HOME_REFRESH_SECONDS", "home_refresh_seconds")
    )
    hook_secret: SecretStr | None = Field(default=None, validation_alias=AliasChoices("AGENT_BOT_HOOK_SECRET", "hook_secret"))
    hook_token: SecretStr | None = Field(default=None, validation_alias=AliasChoices("AGENT_BOT_HOOK_TOKEN", "hook_token"))
    hook_url: str | None = Field(default=None, validation_alias=AliasChoices("AGENT_BOT_HOOK_URL", "hook_url"))
    hook_user: str | None = Field(default=None, validation_alias=AliasChoices("AGENT_BOT_HOOK_USER", "hook_user"))
    hook_timeout: float = Field(
        default=RELAY_TIMEOUT, gt=0, lt=CONFIG_TIMEOUT, validation_alias=AliasChoices("AGENT_BOT_HOOK_TIMEOUT", "hook_timeout")
    )
    hook_port: int | None = Field(default=None, validation_alias=AliasChoices("AGENT_BOT_HOOK_PORT", "hook_port"))
    socket_ping_seconds: float = Field(
        default=2.0, gt=0, validation_alias=AliasChoices("AGENT_BOT_SOCKET_PING_SECONDS", "socket_ping_seconds")
    )
    encryption_key: SecretStr | None = Field(default=None, validation_alias=AliasChoices("AGENT_BOT_ENCRYPTION_KEY", "encryption_key"))
    sessions_as: SessionsAs = Field(default="person", validation_alias=AliasChoices("AGENT_BOT_SESSIONS_AS", "sessions_as"))
    session_display: SessionDisplay = Field(default="stream", validation_alias=AliasChoices("AGENT_BOT_SESSION_DISPLAY", "session_display"))

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        """Highest priority first: arguments in code, ``<VARIABLE>_FILE``, the environment, ``.env``
        (the last two answering only the documented names)."""
        environments = [s.env_vars for s in (env_settings, dotenv_settings) if isinstance(s, EnvSettingsSource)]  # .env's too
        return (
            init_settings,
            _SecretFiles(settings_cls, environments),
            _DocumentedNames(settings_cls, env_settings),
            _DocumentedNames(settings_cls, dotenv_settings),
            file_secret_settings,
        )

    @model_validator(mode="after")
    def _defaults(self) -> Settings:
        if not self.slack_api_url.endswith("/"):
            self.slack_api_url += "/"
        if self.agent_app_url is None:
            self.agent_app_url = self.agent_api_url
        return self

    @property
    def oauth(self) -> bool:
        """OAuth mode (issue #31; :mod:`bot.installations`): ``SLACK_CLIENT_ID`` is set. Otherwise the
        bot runs with one bot token (``SLACK_BOT_TOKEN``), as it always has."""
        return bool(self.slack_client_id)

    @property
    def auto_upgrade(self) -> bool:
        """Whether start-up upgrades the schema (:mod:`bot.migrations`): ``AGENT_BOT_DB_AUTO_UPGRADE``
        when set; by default true for SQLite (one process, the quick start and the demo) and false
        for a server database, whose upgrade is an operator's step (``agent-bot db upgrade``)."""
        if self.db_auto_upgrade is not None:
            return self.db_auto_upgrade
        return self.database_url.split(":", 1)[0].split("+", 1)[0] == "sqlite"

    def required(self, name: str) -> str:
        """The value of the setting ``name`` (a field name; a secret's value in clear), or
        :class:`ConfigurationError` naming its environment variable when it is not set."""
        value = getattr(self, name)
        if value in (None, ""):
            raise ConfigurationError(f"missing settings: {', '.join(self.missing(name))} (see README, Configuration)")
        return value.get_secret_value() if isinstance(value, SecretStr) else str(value)

    def missing(self, *names: str) -> list[str]:
        """Return the environment variable names among ``names`` (field names) that are not set."""
        return [env_name(name) for name in names if getattr(self, name) in (None, "")]


def env_name(name: str) -> str:
    """The environment variable of the setting ``name`` (a field name of :class:`Settings`)."""
    alias = Settings.model_fields[name].validation_alias
    if isinstance(alias, AliasChoices):
        alias = alias.choices[0]
    if not isinstance(alias, str):
        raise TypeError(f"setting {name} has no environment variable")
    return alias


def env_names() -> frozenset[str]:
    """Every environment variable :class:`Settings` reads, without the ``_FILE`` variants."""
    return frozenset(env_name(name) for name in Settings.model_fields)


def read_secret_file(variable: str, path: str) -> str:
    """The secret in the file at ``path``, named by ``variable`` (``SLACK_BOT_TOKEN_FILE``): UTF-8, one
    trailing line break removed. Raises :class:`ConfigurationError` naming ``variable`` and ``path``
    (never the content) when the file cannot be read, is empty, is not UTF-8 or is too large."""
    try:
        with open(path, "rb") as file:
            raw = file.read(MAX_SECRET_FILE_BYTES + 1)
    except OSError as exc:
        raise ConfigurationError(f"{variable}: cannot read {path} ({exc.strerror or type(exc).__name__})") from None
    if len(raw) > MAX_SECRET_FILE_BYTES:
        raise ConfigurationError(f"{variable}: {path} is larger than {MAX_SECRET_FILE_BYTES // 1024} KiB; is it the secret's file?")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise ConfigurationError(f"{variable}: {path} is not UTF-8 text") from None  # the error quotes a byte of it
    text = text.removesuffix("\n").removesuffix("\r") if text.endswith("\n") else text
    if not text:
        raise ConfigurationError(f"{variable}: {path} is empty")
    return text


class _SecretFiles(PydanticBaseSettingsSource):
    """The values of ``<VARIABLE>_FILE`` for :data:`FILE_SETTINGS`, looked up in ``environments`` (the
    process environment, then ``.env``), keyed by the variable (module docstring)."""

    def __init__(self, settings_cls: type[BaseSettings], environments: list[Mapping[str, str | None]]) -> None:
        super().__init__(settings_cls)
        self._environments = environments
        self._case_sensitive = bool(settings_cls.model_config.get("case_sensitive"))

    def _lookup(self, variable: str) -> str | None:
        key = variable if self._case_sensitive else variable.lower()
        for environment in self._environments:
            value = environment.get(key)
            if value:
                return value
        return None

    def get_field_value(self, field: FieldInfo, field_name: str) -> tuple[Any, str, bool]:
        """Not used: :meth:`__call__` answers for every field at once."""
        return None, field_name, False

    def __call__(self) -> dict[str, Any]:
        values: dict[str, Any] = {}
        for name in FILE_SETTINGS:
            variable = env_name(name)
            path = self._lookup(variable + FILE_SUFFIX)
            if path is None:
                continue
            if self._lookup(variable) is not None:
                raise ConfigurationError(f"{variable} and {variable}{FILE_SUFFIX} are both set: set one of them")
            value = read_secret_file(variable + FILE_SUFFIX, path)
            secret = SecretStr in get_args(Settings.model_fields[name].annotation)
            values[variable] = SecretStr(value) if secret else value  # a secret stays masked in pydantic-settings' debug log
        return values


class _DocumentedNames(PydanticBaseSettingsSource):
    """One of pydantic-settings' environment sources, answering only the variables of :func:`env_names`
    (not a field's own name, which pydantic-settings reads too while ``populate_by_name`` is on)."""

    def __init__(self, settings_cls: type[BaseSettings], source: PydanticBaseSettingsSource) -> None:
        super().__init__(settings_cls)
        self._source = source

    def get_field_value(self, field: FieldInfo, field_name: str) -> tuple[Any, str, bool]:
        return self._source.get_field_value(field, field_name)

    def __call__(self) -> dict[str, Any]:
        names = env_names()
        return {key: value for key, value in self._source().items() if key in names}


class ConfigurationError(RuntimeError):
    """A setting the bot needs is missing or unusable (the message names the environment variables)."""
