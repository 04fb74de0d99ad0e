"""What the alert handlers' tests share (tests/handlers/test_alerts*.py): a stack with no alert
subscription, event or state left by an earlier test, whole replies, the subscriptions."""

from __future__ import annotations

from typing import Any

from sqlalchemy import delete

from bot.services.alerts import alert_events, alert_state, alert_subscriptions


def without_alerts(running: Any) -> Any:
    """``running`` (a module's in-process stack) with the emulator's record emptied and no alert rows."""
    running.slack.reset()
    with running.bot.services.store.engine.begin() as conn:
        for table in (alert_events, alert_subscriptions, alert_state):
            conn.execute(delete(table))
    return running


def whole(reply: Any) -> dict[str, Any]:
    """The last reply's ``text`` and ``blocks``: compared whole."""
    return {"text": reply.last["text"], "blocks": reply.last["blocks"]}


def subs(stack: Any) -> Any:
    """Every alert subscription in the stack's store."""
    return stack.run(stack.bot.services.alerts.repo.subscriptions())
