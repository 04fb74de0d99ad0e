"""compose.yaml: valid against the Compose Specification's JSON Schema (tests/deploy/schemas, vendored
with its license), and wired as docs/operations.md says: PostgreSQL healthy -> ``agent-bot db upgrade``
-> ``agent-bot serve``, every setting from ``.env``, only variables the bot reads."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import jsonschema
import pytest
import yaml
from sqlalchemy.engine import make_url

from bot.cli import build_parser
from tests.deploy.deploy_files import COMPOSE, IMAGE, compose_variables, env_example_variables, interpolate, setting_variables

SCHEMA = Path(__file__).parent / "schemas" / "compose-spec.json"
BOT_SERVICES = ("migrate", "bot")


@pytest.fixture(scope="module")
def validator() -> jsonschema.protocols.Validator:
    schema = json.loads(SCHEMA.read_text())
    cls = jsonschema.validators.validator_for(schema)
    cls.check_schema(schema)
    return cls(schema, format_checker=cls.FORMAT_CHECKER)


@pytest.fixture(scope="module")
def compose() -> dict:
    return yaml.safe_load(COMPOSE.read_text())  # PyYAML resolves the << merge of x-agent-bot


def errors(validator, document: dict) -> list[str]:
    return sorted(f"{'.'.join(map(str, e.absolute_path))}: {e.message}" for e in validator.iter_errors(document))


def test_compose_yaml_is_valid_against_the_compose_specification(validator, compose):
    assert errors(validator, compose) == []


@pytest.mark.parametrize(
    ("change", "where"),
    [
        (lambda c: c["services"]["bot"]["depends_on"]["migrate"].update(condition="finished"), "services.bot.depends_on"),
        (lambda c: c["services"]["bot"].update(restart_policy="always"), "services.bot"),  # a misspelt key
        (lambda c: c["services"]["db"]["healthcheck"].update(retry=12), "services.db.healthcheck"),
        (lambda c: c["services"]["bot"].update(ports="3000:3000"), "services.bot.ports"),
        (lambda c: c.update(volume={"db": {}}), ""),
    ],
)
def test_the_schema_refuses_a_broken_compose_file(validator, compose, change, where):
    broken = copy.deepcopy(compose)
    change(broken)
    assert [e.split(":")[0] for e in errors(validator, broken)] == [where]


def test_the_bot_and_its_migration_run_the_image_built_from_this_repository(compose):
    for name in BOT_SERVICES:
        service = compose["services"][name]
        assert (service["image"], service["build"], service["env_file"]) == (IMAGE, ".", ".env")


def test_the_migration_runs_db_upgrade_once_the_database_is_healthy(compose):
    migrate = compose["services"]["migrate"]
    assert migrate["command"] == ["agent-bot", "db", "upgrade"]
    args = build_parser().parse_args(migrate["command"][1:])
    assert (args.command, args.db_command) == ("db", "upgrade")
    assert migrate["depends_on"] == {"db": {"condition": "service_healthy"}}
    assert migrate["restart"] == "no"


def test_the_bot_serves_after_the_migration_on_the_published_port(compose):
    bot = compose["services"]["bot"]
    args = build_parser().parse_args(bot["command"][1:])
    assert (args.command, args.host) == ("serve", "0.0.0.0")
    assert bot["ports"] == [f"{args.port}:{args.port}"]
    assert bot["depends_on"] == {
        "db": {"condition": "service_healthy"},
        "migrate": {"condition": "service_completed_successfully"},
    }
    assert bot["environment"]["AGENT_BOT_DB_AUTO_UPGRADE"] == "false"  # the migrate service does it


def test_the_database_url_names_the_database_the_db_service_creates(compose):
    db = compose["services"]["db"]["environment"]
    text = interpolate(COMPOSE.read_text(), {"POSTGRES_PASSWORD": "pw-123"})
    url = make_url(yaml.safe_load(text)["services"]["bot"]["environment"]["AGENT_BOT_DATABASE_URL"])
    assert (url.drivername, url.username, url.password, url.host, url.port, url.database) == (
        "postgresql+psycopg",
        db["POSTGRES_USER"],
        "pw-123",
        "db",
        5432,
        db["POSTGRES_DB"],
    )
    assert db["POSTGRES_PASSWORD"] == "${POSTGRES_PASSWORD:?set POSTGRES_PASSWORD in .env}"


def test_every_variable_set_for_the_bot_is_a_setting(compose):
    for name in BOT_SERVICES:
        assert set(compose["services"][name]["environment"]) <= setting_variables(), name


def test_every_variable_compose_interpolates_is_in_env_example():
    assert compose_variables(COMPOSE.read_text()) == {"POSTGRES_PASSWORD"}
    assert compose_variables(COMPOSE.read_text()) <= set(env_example_variables())
