"""Settings of the bot, read from the environment (or a ``.env`` file) with pydantic-settings.

The variables are the ones fixed in DESIGN.md ("Environment"):

=========================  =====================================================  ==========================
variable                   meaning                                                default
=========================  =====================================================  ==========================
SLACK_BOT_TOKEN            bot token (``xoxb-...``)                               none
SLACK_SIGNING_SECRET       signs every request Slack sends (HTTP mode)            none
SLACK_APP_TOKEN            app-level token (``xapp-...``), Socket Mode only       none
SLACK_API_URL              Slack Web API base URL (the emulator in tests)         ``https://slack.com/api/``
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
AGENT_BOT_LOG_LEVEL        Python log level name                                  ``INFO``
AGENT_BOT_LOG_FORMAT       ``text`` or ``json`` (one JSON object a line;          ``text``
                           :mod:`bot.logs`)
AGENT_BOT_METRICS_PORT     Socket Mode: port of the ``GET /metrics`` listener     none
                           (``serve`` has it on its own port; :mod:`bot.metrics`)
AGENT_BOT_DIGEST_CHECK_SECONDS  how often the scheduler looks for due digests     ``300``
AGENT_BOT_ALERT_CONTROLS_SECONDS  how often enterprise controls are checked for   ``300``
                           a new revision (``controls`` alerts)
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
AGENT_BOT_SOCKET_PING_SECONDS  Socket Mode: seconds between pings; a connection   ``10``
                           that misses a pong is replaced (about 2-3 of them)
=========================  =====================================================  ==========================

Secrets are ``SecretStr``: their ``repr`` and ``str`` print ``**********``; read them with
``.get_secret_value()`` only where they are handed to a client.
"""

from __future__ import annotations

from typing import Literal

from pydantic import AliasChoices, Field, SecretStr, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from bot.hooks import CONFIG_TIMEOUT, RELAY_TIMEOUT


class Settings(BaseSettings):
    """The bot's configuration. Raises ``pydantic.ValidationError`` on a malformed value."""

    model_config = SettingsConfigDict(env_file=".env", extra="ignore", populate_by_name=True)

    slack_bot_token: SecretStr | None = Field(default=None, validation_alias="SLACK_BOT_TOKEN")
    slack_signing_secret: SecretStr | None = Field(default=None, validation_alias="SLACK_SIGNING_SECRET")
    slack_app_token: SecretStr | None = Field(default=None, validation_alias="SLACK_APP_TOKEN")
    slack_api_url: str = Field(default="https://slack.com/api/", validation_alias="SLACK_API_URL")

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
    log_level: str = Field(default="INFO", validation_alias=AliasChoices("AGENT_BOT_LOG_LEVEL", "log_level"))
    log_format: Literal["text", "json"] = Field(default="text", validation_alias=AliasChoices("AGENT_BOT_LOG_FORMAT", "log_format"))
    metrics_port: int | None = Field(default=None, ge=1, le=65535, validation_alias=AliasChoices("AGENT_BOT_METRICS_PORT", "metrics_port"))
    digest_check_seconds: float = Field(
        default=300.0, gt=0, validation_alias=AliasChoices("AGENT_BOT_DIGEST_CHECK_SECONDS", "digest_check_seconds")
    )
    alert_controls_seconds: float = Field(
        default=300.0, gt=0, validation_alias=AliasChoices("AGENT_BOT_ALERT_CONTROLS_SECONDS", "alert_controls_seconds")
    )
    session_follow_hours: float = Field(
        default=24.0, gt=0, validation_alias=AliasChoices("AGENT_BOT_SESSION_FOLLOW_HOURS", "session_follow_hours")
    )
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
        default=10.0, gt=0, validation_alias=AliasChoices("AGENT_BOT_SOCKET_PING_SECONDS", "socket_ping_seconds")
    )

    @model_validator(mode="after")
    def _defaults(self) -> Settings:
        if not self.slack_api_url.endswith("/"):
            self.slack_api_url += "/"
        if self.agent_app_url is None:
            self.agent_app_url = self.agent_api_url
        return self

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
        fields = type(self).model_fields
        return [str(fields[name].validation_alias) for name in names if getattr(self, name) in (None, "")]


class ConfigurationError(RuntimeError):
    """A setting the bot needs is missing or unusable (the message names the environment variables)."""
