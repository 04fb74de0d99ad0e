""".env.example names every setting of bot/config.py, and nothing the bot or compose.yaml does not read."""

from __future__ import annotations

from collections import Counter

from bot.config import Settings, env_names
from tests.deploy.deploy_files import COMPOSE, ENV_EXAMPLE, compose_variables, env_example_variables, setting_variables


def test_every_setting_is_in_env_example():
    assert sorted(env_names() - set(env_example_variables())) == []


def test_env_example_names_only_settings_their_file_variants_and_compose_variables():
    extra = set(env_example_variables()) - setting_variables() - compose_variables(COMPOSE.read_text())
    assert sorted(extra) == []


def test_each_variable_once():
    assert [name for name, n in Counter(env_example_variables()).items() if n > 1] == []


def test_env_example_as_it_is_loads_the_defaults(tmp_path, monkeypatch):
    """Every line is commented out: copied to .env unchanged, it sets nothing."""
    for name in setting_variables():
        monkeypatch.delenv(name, raising=False)
    (tmp_path / ".env").write_text(ENV_EXAMPLE.read_text())
    monkeypatch.chdir(tmp_path)
    assert Settings() == Settings(_env_file=None)
