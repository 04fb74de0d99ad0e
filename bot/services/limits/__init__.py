"""Per-user credit limits: the request store and its state machine (:mod:`.store`)."""

from bot.services.limits.store import *  # noqa: F401,F403
