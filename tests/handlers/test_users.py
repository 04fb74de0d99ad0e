"""``/agent users [query]``, dispatched to the bot in-process (``tests/inprocess.py``): matches computed
from the sandbox's organization users, the "More" button walked to the end, the role check and an
API failure."""

import json

from formatters.users import END, MORE_ACTION, NO_MATCH, POSITION, sign_in
from handlers.users import SPEC, STALE_BUTTON, STALE_BUTTON_HINT
from tests.conftest import TODAY, api_error_reply, block_texts, error_reply, sandbox_get
from tests.inprocess import inprocess_fixture
from tests.refusals import demo_refusal

stack = inprocess_fixture()


def everyone(stack):
    """Every organization user, read page by page from the sandbox (the test's own view)."""
    users, cursor = [], None
    while True:
        page = sandbox_get(stack, "/api/v0/organization/users", limit="100", **({"cursor": cursor} if cursor else {}))
        users += page["users"]
        if not page["pagination"]["hasMore"]:
            return users
        cursor = page["pagination"]["nextCursor"]


def shown_emails(payload):
    """The e-mails of the users a screen shows, in order."""
    return [b["text"]["text"].split("*  ", 1)[1].split("\n")[0] for b in payload["blocks"] if b["type"] == "section"]


def more_button(payload):
    for block in payload["blocks"]:
        if block["type"] == "actions":
            return next(e for e in block["elements"] if e["action_id"] == MORE_ACTION)
    return None


def click_more(stack, payload, *, user="U0MANAGER"):
    """Click More on ``payload`` (an ephemeral screen) and return the reply to the click."""
    clicked = stack.click(MORE_ACTION, user=user, message=payload)
    assert clicked.status == 200
    [reply] = clicked.responses
    return reply


def test_a_query_shows_the_matching_users_with_their_sign_in(stack, block_kit_validator):
    users = everyone(stack)
    for query in ("alice", "ANDERSON", "@example.com"):
        expected = [
            u for u in users if any(query.lower() in (v or "").lower() for v in (u.get("firstName"), u.get("lastName"), u["email"]))
        ]
        assert expected
        screens, payload = [], block_kit_validator(stack.command(f"users {query}", user="U0MANAGER").last)
        while True:
            screens += shown_emails(payload)
            if more_button(payload) is None:
                break
            payload = block_kit_validator(click_more(stack, payload).payload)
        assert screens == [u["email"] for u in expected], query
    alice = next(u for u in users if u["email"] == "alice@example.com")
    payload = stack.command("users alice").last
    section = next(b["text"]["text"] for b in payload["blocks"] if b["type"] == "section")
    assert section == (
        f"*{alice['firstName']} {alice['lastName']}*  {alice['email']}\n"
        f"Last sign-in: {sign_in(alice['lastSignInAt'], TODAY)} \u00b7 Joined: {alice['createdAt'][:10]}"
    )


def test_without_a_query_more_walks_every_user_once_to_the_end(stack, block_kit_validator):
    users = everyone(stack)
    assert len(users) == 40
    reply = stack.command("users", user="U0OWNER")
    payload = block_kit_validator(reply.last)
    seen, clicks = shown_emails(payload), 0
    while (button := more_button(payload)) is not None:
        assert len(button["value"]) <= 2000 and json.loads(button["value"])["query"] is None
        response = click_more(stack, payload, user="U0OWNER")
        assert response.replace_original
        payload = block_kit_validator(response.payload)
        seen += shown_emails(payload)
        clicks += 1
    assert seen == [u["email"] for u in users]
    assert clicks == 1  # 40 users, 20 a screen
    assert block_texts(payload)[-1] == POSITION.format(label="Users", first=21, last=40) + " \u00b7 " + END.format(total=40, noun="users")


def test_no_match_says_so(stack, block_kit_validator):
    payload = block_kit_validator(stack.command("users zz-nobody-zz").last)
    assert block_texts(payload)[1] == NO_MATCH.format(query="zz-nobody-zz")
    assert more_button(payload) is None


def test_members_are_refused_the_list_and_the_more_button(stack):
    reply = stack.command("users", user="U0MEMBER")
    assert reply.ack == demo_refusal("users", "U0MEMBER") and reply.responses == []
    page = stack.command("users", user="U0MANAGER").last
    refusal = click_more(stack, page, user="U0MEMBER")
    assert refusal.payload == {**demo_refusal(MORE_ACTION, "U0MEMBER"), "response_type": "ephemeral", "replace_original": False}


def test_api_failure_gives_a_clear_message_and_leaves_the_screen(stack, faults):
    page = stack.command("users").last
    faults(error_rate=1.0)
    failed = stack.command("users alice")
    assert failed.status == 200 and failed.payloads == [api_error_reply("server")]
    response = click_more(stack, page)
    assert response.payload == {**api_error_reply("server"), "replace_original": False}


def test_a_more_button_that_cannot_be_read_and_options_get_clear_messages(stack):
    button = {"type": "button", "action_id": MORE_ACTION, "value": "{not json", "text": {"type": "plain_text", "text": "More"}}
    reply = click_more(stack, {"text": "users", "blocks": [{"type": "actions", "elements": [button]}]})
    assert reply.payload == {**error_reply(STALE_BUTTON, STALE_BUTTON_HINT), "replace_original": False}
    assert stack.command("users team=web").payloads == [error_reply("I don't understand `team=web`.", f"Usage: `{SPEC.usage}`")]
