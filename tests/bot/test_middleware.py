"""Keys the global middleware reads from a delivery: de-duplication key and the requesting user."""

from bot.middleware import delivery_key, request_user


def test_every_interactive_delivery_has_its_own_dedupe_key():
    assert delivery_key({"type": "event_callback", "event_id": "Ev1"}) == "event:Ev1"
    assert delivery_key({"command": "/agent", "trigger_id": "T1"}) == "command:T1"
    assert delivery_key({"type": "block_actions", "trigger_id": "T2"}) == "action:T2"
    assert delivery_key({"type": "view_submission", "trigger_id": "T3", "view": {"callback_id": "limits.reject"}}) == "view:T3"
    assert delivery_key({"type": "view_submission"}) is None


def test_the_user_of_a_view_submission_is_the_submitter():
    assert request_user({"type": "view_submission", "user": {"id": "U0OWNER"}}) == "U0OWNER"
