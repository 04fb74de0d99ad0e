"""bot/config.py: secrets from files (``<VARIABLE>_FILE``), and only the documented variables read.

The file variants are what Kubernetes (a Secret mounted as a volume) and Docker (``secrets:`` under
``/run/secrets``) give a container; ``agent-bot doctor`` at the end runs on secrets read from files.
"""

from __future__ import annotations

import logging
from pathlib import Path

import pytest
from pydantic import SecretStr

from bot.cli import main
from bot.config import FILE_SETTINGS, MAX_SECRET_FILE_BYTES, ConfigurationError, Settings, env_name, env_names
from bot.doctor import (
    ANALYTICS_STORE_EMPTY,
    COMPUTER_RULES_NONE,
    DATABASE_CREATED_AT_START,
    DISPLAY_STREAM,
    FIX_API_KEY_ROLE,
    FIX_COMPUTER_RULES,
    FIX_ROLES_MISSING,
    HOOK_SECRET_SET,
    ROLES_UNSET,
)

MANIFEST = Path(__file__).resolve().parents[2] / "manifest.yaml"
SECRET = "s3cret-value-from-a-file"
ENCRYPTION_KEY = "a0Y5a2p4cG9tQ1pDZ0x3cmJtTnVsYnJhcW1kRWVaQ2s="  # a Fernet key: 32 bytes, URL-safe base64
VARIABLES = {name: env_name(name) for name in FILE_SETTINGS}


@pytest.fixture
def clean_env(monkeypatch, tmp_path):
    """No bot variable (plain or ``_FILE``) in the environment, and a working directory without ``.env``."""
    for variable in [*env_names(), *(f"{v}_FILE" for v in env_names())]:
        monkeypatch.delenv(variable, raising=False)
    monkeypatch.chdir(tmp_path)
    return monkeypatch


def secret_file(tmp_path: Path, content: bytes | str, name: str = "secret") -> Path:
    path = tmp_path / name
    path.write_bytes(content.encode() if isinstance(content, str) else content)
    return path


def value_of(settings: Settings, name: str) -> str:
    value = getattr(settings, name)
    return value.get_secret_value() if isinstance(value, SecretStr) else value


def test_the_file_settings_are_the_secrets_and_the_database_url():
    secrets = {name for name, field in Settings.model_fields.items() if SecretStr in getattr(field.annotation, "__args__", ())}
    assert set(FILE_SETTINGS) == secrets | {"database_url"}
    assert VARIABLES == {
        "slack_bot_token": "SLACK_BOT_TOKEN",
        "slack_signing_secret": "SLACK_SIGNING_SECRET",
        "slack_app_token": "SLACK_APP_TOKEN",
        "slack_client_secret": "SLACK_CLIENT_SECRET",
        "slack_state_secret": "SLACK_STATE_SECRET",
        "agent_api_key": "AGENT_API_KEY",
        "database_url": "AGENT_BOT_DATABASE_URL",
        "hook_secret": "AGENT_BOT_HOOK_SECRET",
        "hook_token": "AGENT_BOT_HOOK_TOKEN",
        "encryption_key": "AGENT_BOT_ENCRYPTION_KEY",
    }


@pytest.mark.parametrize("name", FILE_SETTINGS)
@pytest.mark.parametrize(
    ("content", "expected"),
    [
        (f"{SECRET}\n", SECRET),  # echo, editors, kubectl create secret --from-file
        (f"{SECRET}\r\n", SECRET),
        (SECRET, SECRET),  # printf, Kubernetes stringData
        (f"{SECRET}\n\n", f"{SECRET}\n"),  # one line break only
        (f" {SECRET} ", f" {SECRET} "),  # spaces are the secret's own
    ],
)
def test_a_variable_file_gives_the_value_without_one_trailing_line_break(clean_env, tmp_path, name, content, expected):
    clean_env.setenv(f"{VARIABLES[name]}_FILE", str(secret_file(tmp_path, content)))
    settings = Settings()
    assert value_of(settings, name) == expected
    assert isinstance(getattr(settings, name), SecretStr) == (name != "database_url")


def test_an_empty_file_variable_counts_as_unset(clean_env):
    clean_env.setenv("SLACK_BOT_TOKEN_FILE", "")
    assert Settings().slack_bot_token is None
    clean_env.setenv("SLACK_BOT_TOKEN", "xoxb-plain")
    assert Settings().slack_bot_token == SecretStr("xoxb-plain")


def test_the_file_wins_over_an_empty_plain_variable(clean_env, tmp_path):
    clean_env.setenv("AGENT_API_KEY", "")
    clean_env.setenv("AGENT_API_KEY_FILE", str(secret_file(tmp_path, SECRET)))
    assert Settings().agent_api_key == SecretStr(SECRET)


def test_a_file_variable_in_dot_env_works_too(clean_env, tmp_path):
    (tmp_path / ".env").write_text(f"SLACK_SIGNING_SECRET_FILE={secret_file(tmp_path, SECRET + chr(10))}\n")
    assert Settings().slack_signing_secret == SecretStr(SECRET)


def test_arguments_in_code_win_over_a_file(clean_env, tmp_path):
    clean_env.setenv("SLACK_BOT_TOKEN_FILE", str(secret_file(tmp_path, SECRET)))
    assert Settings(slack_bot_token="xoxb-code").slack_bot_token == SecretStr("xoxb-code")


def _refused() -> str:
    with pytest.raises(ConfigurationError) as caught:
        Settings()
    return str(caught.value)


def test_a_missing_file_is_refused_naming_the_variable_and_the_path(clean_env, tmp_path):
    missing = tmp_path / "nope" / "slack-bot-token"
    clean_env.setenv("SLACK_BOT_TOKEN_FILE", str(missing))
    assert _refused() == f"SLACK_BOT_TOKEN_FILE: cannot read {missing} (No such file or directory)"


def test_a_directory_is_refused(clean_env, tmp_path):
    clean_env.setenv("AGENT_BOT_DATABASE_URL_FILE", str(tmp_path))
    assert _refused() == f"AGENT_BOT_DATABASE_URL_FILE: cannot read {tmp_path} (Is a directory)"


def test_an_empty_file_is_refused(clean_env, tmp_path):
    for content in ("", "\n"):
        path = secret_file(tmp_path, content)
        clean_env.setenv("AGENT_BOT_HOOK_SECRET_FILE", str(path))
        assert _refused() == f"AGENT_BOT_HOOK_SECRET_FILE: {path} is empty"


def test_a_file_that_is_not_utf8_is_refused_without_quoting_it(clean_env, tmp_path):
    path = secret_file(tmp_path, b"xoxb-\xff\xfe-rest")
    clean_env.setenv("SLACK_BOT_TOKEN_FILE", str(path))
    message = _refused()
    assert message == f"SLACK_BOT_TOKEN_FILE: {path} is not UTF-8 text"


def test_a_file_too_large_for_a_secret_is_refused(clean_env, tmp_path):
    path = secret_file(tmp_path, "x" * (MAX_SECRET_FILE_BYTES + 1))
    clean_env.setenv("AGENT_API_KEY_FILE", str(path))
    assert _refused() == f"AGENT_API_KEY_FILE: {path} is larger than 64 KiB; is it the secret's file?"
    secret_file(tmp_path, "x" * MAX_SECRET_FILE_BYTES)
    assert Settings().agent_api_key == SecretStr("x" * MAX_SECRET_FILE_BYTES)


def test_a_variable_set_both_ways_is_refused(clean_env, tmp_path):
    clean_env.setenv("SLACK_APP_TOKEN_FILE", str(secret_file(tmp_path, SECRET)))
    clean_env.setenv("SLACK_APP_TOKEN", "xapp-plain")
    assert _refused() == "SLACK_APP_TOKEN and SLACK_APP_TOKEN_FILE are both set: set one of them"
    clean_env.delenv("SLACK_APP_TOKEN")
    (tmp_path / ".env").write_text("SLACK_APP_TOKEN=xapp-from-dot-env\n")  # wherever each is set
    assert _refused() == "SLACK_APP_TOKEN and SLACK_APP_TOKEN_FILE are both set: set one of them"


def test_the_cli_says_it_in_one_line_and_exits_2(clean_env, tmp_path, capsys):
    missing = tmp_path / "run" / "secrets" / "slack-signing-secret"
    clean_env.setenv("SLACK_BOT_TOKEN", "xoxb-plain")
    clean_env.setenv("SLACK_SIGNING_SECRET_FILE", str(missing))
    for argv in (["serve"], ["socket"], ["db", "upgrade"], ["doctor"]):
        assert main(argv) == 2
        assert capsys.readouterr().err == f"agent-bot: SLACK_SIGNING_SECRET_FILE: cannot read {missing} (No such file or directory)\n"


def test_a_bad_database_url_from_a_file_is_named_without_its_content(clean_env, tmp_path, capsys, restore_root):
    clean_env.setenv("AGENT_BOT_DATABASE_URL_FILE", str(secret_file(tmp_path, f"not a url {SECRET}\n")))
    assert main(["db", "current"]) == 2
    err = capsys.readouterr().err
    assert err == "agent-bot: AGENT_BOT_DATABASE_URL is not a SQLAlchemy URL (see README, Configuration)\n"


def test_a_secret_from_a_file_stays_masked_in_pydantic_settings_debug_log(clean_env, tmp_path, caplog):
    clean_env.setenv("PYDANTIC_SETTINGS_DEBUG", "1")
    clean_env.setenv("AGENT_API_KEY_FILE", str(secret_file(tmp_path, SECRET)))
    with caplog.at_level(logging.DEBUG, logger="pydantic_settings"):
        assert Settings().agent_api_key == SecretStr(SECRET)
    assert "_SecretFiles: {'AGENT_API_KEY': SecretStr('**********')}" in caplog.text
    assert SECRET not in caplog.text


def test_only_the_documented_variables_are_read(clean_env, tmp_path):
    # pydantic-settings would take a field's own name too; Kubernetes sets <SERVICE>_PORT for every Service
    clean_env.setenv("METRICS_PORT", "tcp://10.0.0.7:9090")
    clean_env.setenv("HOOK_PORT", "tcp://10.0.0.8:80")
    clean_env.setenv("LOG_LEVEL", "DEBUG")
    clean_env.setenv("DATABASE_URL", "postgresql://someone-else@db/app")
    (tmp_path / ".env").write_text("log_format=json\nSLACK_BOT_TOKEN=xoxb-dot-env\n")
    settings = Settings()
    assert (settings.metrics_port, settings.hook_port, settings.log_level, settings.log_format) == (None, None, "INFO", "text")
    assert settings.database_url == "sqlite:///agent-bot.db"
    assert settings.slack_bot_token == SecretStr("xoxb-dot-env")
    clean_env.setenv("AGENT_BOT_METRICS_PORT", "9090")
    assert Settings().metrics_port == 9090


@pytest.fixture
def restore_root():
    """The CLI configures the root logger; later tests need it back."""
    root = logging.getLogger()
    saved = root.handlers[:], root.level
    yield
    root.handlers[:] = saved[0]
    root.setLevel(saved[1])


def test_doctor_runs_on_secrets_read_from_files(stack, clean_env, tmp_path, capsys, restore_root):
    """The tokens, the API key, the database URL and the hook secret from files, as a mounted
    Kubernetes Secret gives them: the emulator accepts the tokens, the sandbox knows the key (a
    member's: 403, where a key it does not know answers 401; the CLI asks for the machine's
    yesterday, which the stack's sandbox, fixed on TEST_STACK_OPTIONS' today, may not have)."""
    secrets = tmp_path / "secrets"
    secrets.mkdir()
    database = f"sqlite:///{tmp_path / 'files.db'}"
    for variable, value in {
        "SLACK_BOT_TOKEN": stack.slack.bot_token,
        "SLACK_APP_TOKEN": stack.slack.app_token,
        "AGENT_API_KEY": "sandbox-member-key",
        "AGENT_BOT_DATABASE_URL": database,
        "AGENT_BOT_HOOK_SECRET": SECRET,
        "AGENT_BOT_ENCRYPTION_KEY": ENCRYPTION_KEY,
    }.items():
        clean_env.setenv(f"{variable}_FILE", str(secret_file(secrets, value + "\n", variable.lower())))
    clean_env.setenv("SLACK_API_URL", stack.slack.api_url)
    clean_env.setenv("AGENT_API_URL", stack.sandbox.url)
    assert main(["doctor", "--mode", "socket", "--manifest", str(MANIFEST)]) == 1
    out = capsys.readouterr().out
    assert out.splitlines() == [
        "ok   slack bot token: auth.test ok (team T0EMULATED, bot user U0AGENTBOT); all 18 bot scopes of manifest.yaml granted",
        "ok   slack app token (socket mode): apps.connections.open accepts SLACK_APP_TOKEN",
        f"FAIL agent api key: GET /api/v1/analytics/tokens answered 403: the key is not a manager's or owner's -> {FIX_API_KEY_ROLE}",
        f"ok   readiness endpoint: {stack.sandbox.url} answers readiness reports",
        f"ok   database: {database}: {DATABASE_CREATED_AT_START}",
        f"ok   hook secret: {HOOK_SECRET_SET}",
        f"warn roles file: {ROLES_UNSET} -> {FIX_ROLES_MISSING}",
        "ok   encryption key: 1 Fernet key; no linked key stored yet (no database file yet)",
        f"warn computer rules: {COMPUTER_RULES_NONE} -> {FIX_COMPUTER_RULES}",
        f"ok   session display: {DISPLAY_STREAM}",  # clean_env: the default display
        f"ok   analytics store: {ANALYTICS_STORE_EMPTY}",
    ]
    for value in (stack.slack.bot_token, stack.slack.app_token, "sandbox-member-key", SECRET, ENCRYPTION_KEY):
        assert value not in out
