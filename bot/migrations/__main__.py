"""``python -m bot.migrations ARGS``: Alembic's own command line on the bot's migrations, for developers
(``revision --autogenerate -m "..."``, ``check``, ``heads``...). The database is
``AGENT_BOT_DATABASE_URL`` (:class:`bot.config.Settings`); operators use ``agent-bot db``."""

from __future__ import annotations

import sys

from alembic.config import CommandLine

from bot.config import Settings
from bot.migrations import alembic_config


def main(argv: list[str] | None = None) -> None:
    cli = CommandLine(prog="python -m bot.migrations")
    options = cli.parser.parse_args(argv)
    if not hasattr(options, "cmd"):
        cli.parser.error("too few arguments")
    cli.run_cmd(alembic_config(Settings().database_url), options)


if __name__ == "__main__":
    main(sys.argv[1:])
