"""``agent-bot doctor`` (bot/doctor.py) against the Slack emulator and the sandbox Agent API on
loopback: each check's whole line when it passes and when its fault is played."""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path

import pytest

from bot.api import AgentClient
from bot.cli import main
from bot.config import Settings
from bot.doctor import (
    ANALYTICS_STORE_EMPTY,
    COMPUTER_RULES_NONE,
    COMPUTER_RULES_OK,
    COMPUTER_RULES_REST_CAUGHT,
    COMPUTER_RULES_REST_OPEN,
    COMPUTER_RULES_UNREAD,
    DATABASE_CREATED_AT_START,
    DISPLAY_MESSAGES,
    ENCRYPTION_KEY_UNSET,
    ENCRYPTION_KEY_UNSET_PERSON,
    FIX_AGENT_SCOPE,
    FIX_API_KEY_INVALID,
    FIX_API_KEY_ROLE,
    FIX_APP_TOKEN,
    FIX_APP_TOKEN_MISSING,
    FIX_APP_URL,
    FIX_BOT_TOKEN,
    FIX_COMPUTER_RULES,
    FIX_DATABASE,
    FIX_ENCRYPTION_KEY,
    FIX_ENCRYPTION_KEY_LOST,
    FIX_ENCRYPTION_KEY_MISSING,
    FIX_ENCRYPTION_KEY_PERSON,
    FIX_OWNERS,
    FIX_ROLES,
    FIX_ROLES_MISSING,
    FIX_SCHEMA,
    FIX_SCOPES,
    FIX_SIGNING_SECRET,
    HOOK_SECRET_SET,
    HOOK_SECRET_UNSET,
    ROLES_UNSET,
    SCHEMA_UPGRADED_AT_START,
    SCOPE_FALLBACKS,
    Check,
    check_api_key,
    check_bot_token,
    check_computer_rules,
    check_database,
    check_encryption_key,
    check_hook_secret,
    check_mode_credentials,
    check_readiness,
    check_roles,
    manifest_scopes,
    report,
    run_checks,
)
from bot.slack import SlackGateway, web_client
from bot.store import Store
from sandbox.slack_emulator.web_api import GRANTED_SCOPES
from tests.conftest import TODAY

MANIFEST = Path(__file__).resolve().parents[2] / "manifest.yaml"
OWNER_KEY, MEMBER_KEY = "sandbox-owner-key", "sandbox-member-key"


def settings_of(stack, tmp_path: Path, **changes) -> Settings:
    """The stack's settings with a database of this test and ``changes`` (field names)."""
    base = stack.bot.services.settings.model_copy(update={"database_url": f"sqlite:///{tmp_path / 'doctor.db'}"})
    return base.model_copy(update=changes)


def secret(value: str):
    from pydantic import SecretStr

    return SecretStr(value)


def run(check):
    return asyncio.run(check)


async def _with_agent(settings: Settings, check):
    agent = AgentClient(base_url=settings.agent_api_url, app_url=settings.agent_app_url, api_key=settings.agent_api_key.get_secret_value())
    try:
        return await check(agent)
    finally:
        await agent.aclose()


def test_the_emulator_grants_the_manifests_bot_scopes():
    assert list(GRANTED_SCOPES) == manifest_scopes(MANIFEST)


def test_bot_token_passes_with_every_scope(stack, tmp_path):
    line = run(check_bot_token(settings_of(stack, tmp_path), MANIFEST)).line()
    assert line == "ok   slack bot token: auth.test ok (team T0EMULATED, bot user U0AGENTBOT); all 18 bot scopes of manifest.yaml granted"


def test_bot_token_fails_with_a_bad_token(stack, tmp_path):
    line = run(check_bot_token(settings_of(stack, tmp_path, slack_bot_token=secret("xoxb-not-the-token")), MANIFEST)).line()
    assert line == f"FAIL slack bot token: auth.test failed (invalid_auth) -> {FIX_BOT_TOKEN}"


def test_bot_token_names_the_missing_scopes(stack, tmp_path):
    stack.slack.web_api.scopes = tuple(s for s in GRANTED_SCOPES if s not in ("files:read", "usergroups:read"))
    try:
        line = run(check_bot_token(settings_of(stack, tmp_path), MANIFEST)).line()
    finally:
        stack.slack.web_api.scopes = GRANTED_SCOPES
    assert line == (
        "FAIL slack bot token: auth.test ok (team T0EMULATED, bot user U0AGENTBOT); "
        f"missing bot scopes: usergroups:read, files:read -> {FIX_SCOPES}"
    )


def test_bot_token_without_assistant_write_warns_what_falls_back(stack, tmp_path):
    # the bot works without it (the Messages tab's prompts come as a message): a warning, not a failure
    stack.slack.web_api.scopes = tuple(s for s in GRANTED_SCOPES if s != "assistant:write")
    try:
        line = run(check_bot_token(settings_of(stack, tmp_path), MANIFEST)).line()
    finally:
        stack.slack.web_api.scopes = GRANTED_SCOPES
    assert line == (
        "warn slack bot token: auth.test ok (team T0EMULATED, bot user U0AGENTBOT); missing bot scopes: "
        f"assistant:write ({SCOPE_FALLBACKS['assistant:write']}) -> {FIX_AGENT_SCOPE}"
    )


def test_bot_token_fails_when_a_needed_scope_is_missing_beside_assistant_write(stack, tmp_path):
    stack.slack.web_api.scopes = tuple(s for s in GRANTED_SCOPES if s not in ("assistant:write", "chat:write"))
    try:
        line = run(check_bot_token(settings_of(stack, tmp_path), MANIFEST)).line()
    finally:
        stack.slack.web_api.scopes = GRANTED_SCOPES
    assert line == (
        "FAIL slack bot token: auth.test ok (team T0EMULATED, bot user U0AGENTBOT); missing bot scopes: "
        f"chat:write, assistant:write ({SCOPE_FALLBACKS['assistant:write']}) -> {FIX_SCOPES}"
    )


def test_signing_secret_in_http_mode(stack, tmp_path):
    assert run(check_mode_credentials(settings_of(stack, tmp_path), "http")).line() == (
        "ok   slack signing secret (http mode): SLACK_SIGNING_SECRET is set "
        "(Slack cannot test it: a wrong one shows as 401s on POST /slack/events)"
    )
    assert run(check_mode_credentials(settings_of(stack, tmp_path, slack_signing_secret=None), "http")).line() == (
        "FAIL slack signing secret (http mode): SLACK_SIGNING_SECRET is not set: every request from Slack would be refused "
        f"-> {FIX_SIGNING_SECRET}"
    )


def test_app_token_in_socket_mode(stack, tmp_path):
    good = settings_of(stack, tmp_path, slack_app_token=secret(stack.slack.app_token))
    assert (
        run(check_mode_credentials(good, "socket")).line()
        == "ok   slack app token (socket mode): apps.connections.open accepts SLACK_APP_TOKEN"
    )
    wrong = settings_of(stack, tmp_path, slack_app_token=secret("xapp-1-A0OTHER-1-not-it"))
    assert run(check_mode_credentials(wrong, "socket")).line() == (
        f"FAIL slack app token (socket mode): apps.connections.open failed (invalid_auth) -> {FIX_APP_TOKEN}"
    )
    unset = settings_of(stack, tmp_path, slack_app_token=None)
    assert (
        run(check_mode_credentials(unset, "socket")).line()
        == f"FAIL slack app token (socket mode): SLACK_APP_TOKEN is not set -> {FIX_APP_TOKEN_MISSING}"
    )


@pytest.mark.parametrize(
    ("key", "expected"),
    [
        (OWNER_KEY, "ok   agent api key: the key reads analytics (a manager's or owner's key)"),
        (
            MEMBER_KEY,
            f"FAIL agent api key: GET /api/v1/analytics/tokens answered 403: the key is not a manager's or owner's -> {FIX_API_KEY_ROLE}",
        ),
        ("not-a-key", f"FAIL agent api key: GET /api/v1/analytics/tokens answered 401: the key is not valid -> {FIX_API_KEY_INVALID}"),
    ],
)
def test_agent_api_key(stack, tmp_path, key, expected):
    settings = settings_of(stack, tmp_path, agent_api_key=secret(key))
    assert run(_with_agent(settings, lambda agent: check_api_key(settings, agent, TODAY))).line() == expected


def test_readiness_endpoint(stack, tmp_path):
    good = settings_of(stack, tmp_path)
    assert run(_with_agent(good, lambda agent: check_readiness(good, agent))).line() == (
        f"ok   readiness endpoint: {stack.sandbox.url} answers readiness reports"
    )
    wrong = settings_of(stack, tmp_path, agent_app_url=stack.slack.url)  # a host without the endpoint
    assert run(_with_agent(wrong, lambda agent: check_readiness(wrong, agent))).line() == (
        f"FAIL readiness endpoint: {stack.slack.url} has no readiness reports endpoint (404) -> {FIX_APP_URL}"
    )


def test_database(tmp_path):
    url = f"sqlite:///{tmp_path / 'bot.db'}"
    fresh = Settings(database_url=url)  # no file yet: start-up creates it, the doctor does not
    assert check_database(fresh).line() == f"ok   database: {url}: {DATABASE_CREATED_AT_START}"
    assert not (tmp_path / "bot.db").exists()
    (tmp_path / "bot.db").touch()  # an empty database: its schema is behind
    assert check_database(fresh).line() == f"ok   database: {url}: {SCHEMA_UPGRADED_AT_START}"  # SQLite: start-up upgrades it
    assert check_database(fresh).line() == f"ok   database: {url}: {SCHEMA_UPGRADED_AT_START}"  # the doctor changed nothing
    manual = Settings(database_url=url, db_auto_upgrade=False)
    behind = check_database(manual).line()
    assert behind.startswith(f"FAIL database: {url}: ") and behind.endswith(f" -> {FIX_SCHEMA}")
    Store(url).close()  # what start-up does: upgrade
    assert check_database(manual).line() == f"ok   database: {url} is reachable and writable"
    missing_dir = tmp_path / "no-such-dir" / "bot.db"
    assert check_database(Settings(database_url=f"sqlite:///{missing_dir}")).line() == (
        f"FAIL database: sqlite:///{missing_dir}: cannot open the SQLite database file: check the path in "
        f"AGENT_BOT_DATABASE_URL and that its folder exists -> {FIX_DATABASE}"
    )


def test_database_check_creates_no_file(tmp_path, monkeypatch):
    monkeypatch.delenv("AGENT_BOT_DATABASE_URL", raising=False)
    monkeypatch.chdir(tmp_path)  # the default URL, sqlite:///agent-bot.db, is relative to here
    settings = Settings(_env_file=None)
    assert settings.database_url == "sqlite:///agent-bot.db"
    assert check_database(settings).line() == f"ok   database: sqlite:///agent-bot.db: {DATABASE_CREATED_AT_START}"
    keyed = settings.model_copy(update={"encryption_key": secret("a0Y5a2p4cG9tQ1pDZ0x3cmJtTnVsYnJhcW1kRWVaQ2s=")})
    assert check_encryption_key(keyed).line() == "ok   encryption key: 1 Fernet key; no linked key stored yet (no database file yet)"
    assert list(tmp_path.iterdir()) == []


def test_database_url_password_is_never_printed():
    line = check_database(Settings(database_url="postgresql+psycopg://bot:hunter2secret@127.0.0.1:1/agent")).line()
    assert line.startswith("FAIL database: postgresql+psycopg://bot:***@127.0.0.1:1/agent: ")
    assert "hunter2secret" not in line


def test_hook_secret_set_or_not():
    assert check_hook_secret(Settings(hook_secret=secret("s3cret-s3cret"))).line() == f"ok   hook secret: {HOOK_SECRET_SET}"
    assert check_hook_secret(Settings()).line() == f"ok   hook secret: {HOOK_SECRET_UNSET}"


def _roles(tmp_path: Path, text: str) -> str:
    path = tmp_path / "roles.yaml"
    path.write_text(text)
    return str(path)


def _check_roles(stack, settings: Settings) -> Check:
    async def go() -> Check:
        return await check_roles(settings, SlackGateway(web_client(stack.slack.bot_token, stack.slack.api_url)))

    return run(go())


def test_roles_file_owners_found(stack, tmp_path):
    path = _roles(tmp_path, 'roles:\n  owners: ["alice@example.com"]\n  managers: ["U0MANAGER"]\n')
    assert _check_roles(stack, settings_of(stack, tmp_path, config_file=path)).line() == (
        f"ok   roles file: {path} parsed; all 1 owner(s) found in Slack"
    )


def test_roles_file_owner_not_in_slack(stack, tmp_path):
    path = _roles(tmp_path, 'roles:\n  owners: ["alice@example.com", "nobody@example.com", "U0NOBODY"]\n')
    assert _check_roles(stack, settings_of(stack, tmp_path, config_file=path)).line() == (
        f"FAIL roles file: {path}: owners not found in Slack: nobody@example.com, U0NOBODY -> {FIX_OWNERS}"
    )


def test_roles_file_unparsable_or_unset(stack, tmp_path):
    path = _roles(tmp_path, "roles: [not, a, mapping\n")
    assert _check_roles(stack, settings_of(stack, tmp_path, config_file=path)).line() == (
        f"FAIL roles file: {path} cannot be used (ParserError) -> {FIX_ROLES}"
    )
    assert (
        _check_roles(stack, settings_of(stack, tmp_path, config_file=None)).line()
        == f"warn roles file: {ROLES_UNSET} -> {FIX_ROLES_MISSING}"
    )


def test_computer_rules_warn_when_there_are_none(stack, tmp_path):
    def line(text: str | None) -> str:
        return check_computer_rules(settings_of(stack, tmp_path, config_file=text and _roles(tmp_path, text))).line()

    warning = f"warn computer rules: {COMPUTER_RULES_NONE} -> {FIX_COMPUTER_RULES}"
    assert line(None) == warning
    assert line('roles:\n  owners: ["alice@example.com"]\n') == warning
    assert line("computers:\n  box: [nobody-knows]\n") == f"warn computer rules: {COMPUTER_RULES_UNREAD} -> {FIX_ROLES}"
    assert line("computers:\n  alice-devbox: [alice@example.com]\n  ci-*: [members]\n") == (
        "ok   computer rules: " + COMPUTER_RULES_OK.format(count=2, patterns="alice-devbox, ci-*", rest=COMPUTER_RULES_REST_OPEN)
    )
    assert line('computers:\n  ci-*: [members]\n  "*": [owners]\n') == (
        "ok   computer rules: " + COMPUTER_RULES_OK.format(count=2, patterns="ci-*, *", rest=COMPUTER_RULES_REST_CAUGHT)
    )


def test_all_checks_pass_on_a_good_deployment_and_exit_0(stack, tmp_path):
    checks = run(run_checks(settings_of(stack, tmp_path), mode="http", manifest=MANIFEST, today=lambda: TODAY))
    text, status = report(checks)
    assert [c.status for c in checks] == ["ok"] * 11, text  # the demo's roles file has computer rules
    assert status == 0


@pytest.fixture
def restore_root():
    """The CLI configures the root logger (level CRITICAL for the doctor); later tests need it back."""
    root = logging.getLogger()
    saved = root.handlers[:], root.level
    yield
    root.handlers[:] = saved[0]
    root.setLevel(saved[1])


def test_the_cli_prints_one_line_per_check_and_exits_1_when_one_fails(stack, tmp_path, monkeypatch, capsys, restore_root):
    env = {
        "SLACK_BOT_TOKEN": stack.slack.bot_token,
        "SLACK_API_URL": stack.slack.api_url,
        "AGENT_API_URL": stack.sandbox.url,
        "AGENT_API_KEY": MEMBER_KEY,  # a member's key: analytics answer 403
        "AGENT_BOT_DATABASE_URL": f"sqlite:///{tmp_path / 'cli.db'}",
    }
    for name in (
        "SLACK_SIGNING_SECRET",
        "SLACK_APP_TOKEN",
        "AGENT_APP_URL",
        "AGENT_BOT_CONFIG",
        "AGENT_BOT_HOOK_SECRET",
        "AGENT_BOT_ENCRYPTION_KEY",
    ):
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    monkeypatch.chdir(tmp_path)  # no .env, and manifest.yaml from --manifest
    assert main(["doctor", "--mode", "socket", "--manifest", str(MANIFEST)]) == 1
    lines = capsys.readouterr().out.splitlines()
    assert lines == [
        "ok   slack bot token: auth.test ok (team T0EMULATED, bot user U0AGENTBOT); all 18 bot scopes of manifest.yaml granted",
        f"FAIL slack app token (socket mode): SLACK_APP_TOKEN is not set -> {FIX_APP_TOKEN_MISSING}",
        f"FAIL agent api key: GET /api/v1/analytics/tokens answered 403: the key is not a manager's or owner's -> {FIX_API_KEY_ROLE}",
        f"ok   readiness endpoint: {stack.sandbox.url} answers readiness reports",
        f"ok   database: sqlite:///{tmp_path / 'cli.db'}: {DATABASE_CREATED_AT_START}",
        f"ok   hook secret: {HOOK_SECRET_UNSET}",
        f"warn roles file: {ROLES_UNSET} -> {FIX_ROLES_MISSING}",
        f"FAIL encryption key: {ENCRYPTION_KEY_UNSET_PERSON} -> {FIX_ENCRYPTION_KEY_PERSON}",
        f"warn computer rules: {COMPUTER_RULES_NONE} -> {FIX_COMPUTER_RULES}",
        f"ok   session display: {DISPLAY_MESSAGES}",  # the suite pins the messages display (tests/conftest.py)
        f"ok   analytics store: {ANALYTICS_STORE_EMPTY}",
    ]
    assert MEMBER_KEY not in "\n".join(lines) and stack.slack.bot_token not in "\n".join(lines)


def test_encryption_key_unset_malformed_or_not_decrypting_the_stored_keys(tmp_path):
    """Each line, and never a key: the check decrypts every stored linked key, and counts those that
    still wait for re-encryption with the first key of a rotation."""
    import datetime as dt

    from cryptography.fernet import Fernet

    from bot.services.accounts import LinkedAccounts, key_ring

    old, new = Fernet.generate_key().decode(), Fernet.generate_key().decode()
    url = f"sqlite:///{tmp_path / 'keys.db'}"
    assert (
        check_encryption_key(Settings(database_url=url, sessions_as="bot")).line()
        == f"warn encryption key: {ENCRYPTION_KEY_UNSET} -> {FIX_ENCRYPTION_KEY_MISSING}"
    )
    assert (  # the default, person: without a key nobody can start a session
        check_encryption_key(Settings(database_url=url)).line()
        == f"FAIL encryption key: {ENCRYPTION_KEY_UNSET_PERSON} -> {FIX_ENCRYPTION_KEY_PERSON}"
    )
    malformed = check_encryption_key(Settings(database_url=url, encryption_key=secret(f"{new},not-a-key"))).line()
    assert malformed == (
        "FAIL encryption key: key 2 of 2 is not a Fernet key (32 bytes, URL-safe base64: 44 characters); "
        f"make one with Fernet.generate_key() -> {FIX_ENCRYPTION_KEY}"
    )
    assert check_encryption_key(Settings(database_url=url, encryption_key=secret(old))).line() == (
        "ok   encryption key: 1 Fernet key; no linked key stored yet (no database file yet)"
    )
    (tmp_path / "keys.db").touch()  # an empty database: its schema is behind
    assert check_encryption_key(Settings(database_url=url, encryption_key=secret(old))).line() == (
        "ok   encryption key: 1 Fernet key; no linked key stored yet (the database schema is behind this version)"
    )
    store = Store(url)  # start-up: the schema at head
    ring = key_ring(secret(old))
    for user in ("U1", "U2"):
        asyncio.run(
            LinkedAccounts(store).put(
                "T1",
                user,
                key_token=ring.encrypt(secret(f"key-of-{user}-0123456789")),
                fingerprint="6789",
                linked_at=dt.datetime.now(dt.UTC),
            )
        )
    store.close()
    lines = [check_encryption_key(Settings(database_url=url, encryption_key=secret(keys))).line() for keys in (old, f"{new},{old}", new)]
    assert lines == [
        "ok   encryption key: 1 Fernet key; decrypts all 2 stored linked keys",
        "ok   encryption key: 2 Fernet keys (the first encrypts); decrypts all 2 stored linked keys; 2 still encrypted with an older key "
        "(re-encrypted when next used)",
        f"FAIL encryption key: 1 Fernet key; 2 of 2 stored linked keys cannot be decrypted -> {FIX_ENCRYPTION_KEY_LOST}",
    ]
    assert not any(key in "\n".join([*lines, malformed]) for key in (old, new))


def test_session_display_says_the_setting_and_where_slack_refused_streaming(tmp_path):
    import datetime as dt

    from bot.doctor import DISPLAY_REFUSED, DISPLAY_STREAM, FIX_DISPLAY_REFUSED, check_session_display
    from bot.services.sessions.stream_store import StreamSupport

    url = f"sqlite:///{tmp_path / 'display.db'}"
    assert (
        check_session_display(Settings(database_url=url, session_display="messages")).line() == f"ok   session display: {DISPLAY_MESSAGES}"
    )
    assert check_session_display(Settings(database_url=url, session_display="stream")).line() == f"ok   session display: {DISPLAY_STREAM}"
    store = Store(url)
    assert run(StreamSupport(store).refuse("workspace:T0EMULATED", "feature_not_enabled", dt.datetime(2026, 11, 28, tzinfo=dt.UTC)))
    store.close()
    refused = DISPLAY_REFUSED.format(where="workspace T0EMULATED (feature_not_enabled)")
    line = check_session_display(Settings(database_url=url, session_display="stream")).line()
    assert line == f"warn session display: {refused} -> {FIX_DISPLAY_REFUSED}"
