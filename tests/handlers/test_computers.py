"""``/agent computers``, dispatched to the bot in-process (``tests/inprocess.py``): the fleet from the
sandbox, and the once-only "Retry install" click.

The sandbox's fleet (sandbox/agent_api/computers.py) has ``cmp-legacy-build`` in ``error``; a retry
makes it ``provisioning`` with a new install session, then ``active`` after half a second. The stack is
module-scoped, so exactly one test here retries it for real; the others compare install sessions
before and after to prove install-deps was *not* called.
"""

from bot.stack import DEMO_CHANNEL
from formatters.computers import RETRIED, RETRY_ACTION, already_retrying, computer_gone, retry_failed_before, status_label
from handlers.router import ActionRequest
from tests.conftest import TEST_STACK_OPTIONS, api_error_reply, block_texts, sandbox_get
from tests.inprocess import inprocess_fixture, start_inprocess
from tests.refusals import demo_refusal

RETRIED_NOW = RETRIED.format(who="<@U0MANAGER>", name="Legacy build VM", status="being set up again")

stack = inprocess_fixture()

LEGACY = "cmp-legacy-build"


def fleet(stack):
    return {c["id"]: c for c in sandbox_get(stack, "/api/v0/computers")["computers"]}


def install_step(computer):
    return next(s for s in computer["provisioningSteps"] if s["id"] == "install-deps")


def ephemeral_of(stack, reply):
    """The ephemeral message a slash command's reply became (the one a person clicks on)."""
    return [e for e in stack.slack.recorder.ephemerals() if e.response_url_id == reply.response_url_id][-1]


def click(stack, payload, ts, *, user, value=None):
    """Click the Retry button of ``payload`` (shown at ``ts``); return the click's reply, complete
    (the handler's bounded re-poll included)."""
    clicked = stack.click(RETRY_ACTION, value, user=user, channel=DEMO_CHANNEL, message_ts=ts, message=payload)
    assert clicked.status == 200
    return clicked


def notice(payload):
    """A click's notice ``payload`` as sent: ephemeral, a new message (the clicked one left as it was)."""
    return {**payload, "response_type": "ephemeral", "replace_original": False}


def test_the_list_shows_every_sandbox_computer_problems_first(stack, block_kit_validator):
    computers = list(fleet(stack).values())
    payload = block_kit_validator(stack.command("computers", user="U0MANAGER").last)
    sections = [b for b in payload["blocks"] if b["type"] == "section"]
    assert len(sections) == len(computers)
    rank = {"error": 0, "provisioning": 1}
    expected = sorted(computers, key=lambda c: rank.get(c.get("status"), 2))
    for section, computer in zip(sections, expected, strict=True):
        text = section["text"]["text"]
        assert text.startswith(f"{status_label(computer['status'])}  *{computer['name'].replace('&', '&amp;')}*")
        assert f"provider `{computer['providerType']}`" in text
        assert (f"host `{computer['hostname']}`" if computer.get("hostname") else "no hostname") in text
        assert f"user `{computer['remoteUser']}`" in text
        for step in computer["provisioningSteps"]:
            assert f"{step['name']}: {step['status']}" in text
            if step.get("error"):
                assert step["error"] in text
        button = section.get("accessory")
        assert (button or {}).get("value") == (computer["id"] if computer["status"] == "error" else None)
    assert any(c["status"] == "error" for c in computers), "the sandbox fleet documents one computer in error"


def test_bob_retries_once_the_message_is_updated_and_a_second_click_starts_nothing(stack, block_kit_validator):
    before = fleet(stack)[LEGACY]
    assert before["status"] == "error"
    reply = stack.command("computers", user="U0MANAGER")
    shown = ephemeral_of(stack, reply)

    first = click(stack, reply.last, shown.ts, user="U0MANAGER")
    update, final = first.responses  # the retry at once, then the bounded re-poll's one change
    update = block_kit_validator(update.payload)
    after = fleet(stack)[LEGACY]
    assert install_step(after)["installSessionId"] != install_step(before)["installSessionId"]
    # the clicked message is replaced (not a new message), showing the retry and the new status
    assert update["replace_original"] is True
    texts = block_texts(update)
    assert texts[1] == RETRIED_NOW
    assert any(t.startswith(f"{status_label('provisioning')}  *Legacy build VM*") for t in texts)
    assert all(b.get("accessory") is None for b in update["blocks"] if b["type"] == "section")
    assert stack.slack.recorder.messages(DEMO_CHANNEL) == []  # nothing was posted in the channel

    # the bounded re-poll showed the computer turning active (the sandbox needs half a second)
    final = final.payload
    assert final["replace_original"] is True
    assert f"{status_label('active')}  *Legacy build VM*" in "\n".join(block_texts(final))
    assert fleet(stack)[LEGACY]["status"] == "active"

    again = click(stack, reply.last, shown.ts, user="U0MANAGER")
    assert again.payloads == [notice(already_retrying(LEGACY))]
    assert install_step(fleet(stack)[LEGACY])["installSessionId"] == install_step(after)["installSessionId"]


def test_a_member_clicking_retry_is_refused_and_install_deps_is_never_called(stack, caplog):
    session = install_step(fleet(stack)[LEGACY]).get("installSessionId")
    reply = stack.command("computers", user="U0MEMBER")
    payload = reply.last
    button = {"type": "button", "action_id": RETRY_ACTION, "value": LEGACY, "text": {"type": "plain_text", "text": "Retry install"}}
    payload = {**payload, "blocks": [*payload["blocks"], {"type": "actions", "elements": [button]}]}
    refused = click(stack, payload, ephemeral_of(stack, reply).ts, user="U0MEMBER")
    assert refused.payloads == [notice(demo_refusal(RETRY_ACTION, "U0MEMBER"))]
    # every task the click started has ended: install-deps was never called
    assert install_step(fleet(stack)[LEGACY]).get("installSessionId") == session
    assert any(f"refused {RETRY_ACTION} to U0MEMBER" in r.getMessage() for r in caplog.records)


def _fabricated(computer_id):
    button = {"type": "button", "action_id": RETRY_ACTION, "value": computer_id, "text": {"type": "plain_text", "text": "Retry install"}}
    return {"text": "Computers", "blocks": [{"type": "actions", "elements": [button]}]}


def test_a_computer_that_is_gone_gets_a_clear_message(stack):
    clicked = click(stack, _fabricated("cmp-removed"), stack.slack.recorder.next_ts(), user="U0MANAGER")
    assert clicked.payloads == [notice(computer_gone("cmp-removed"))]


def test_api_failures_end_in_a_clear_message_and_spend_the_button(stack, faults):
    session = install_step(fleet(stack)[LEGACY]).get("installSessionId")
    faults(error_rate=1.0)
    listing = stack.command("computers", user="U0MEMBER")
    assert listing.status == 200 and listing.payloads == [api_error_reply("server")]

    ts = stack.slack.recorder.next_ts()
    first = click(stack, _fabricated(LEGACY), ts, user="U0MANAGER")
    assert first.payloads == [notice(api_error_reply("server"))]
    faults(error_rate=0.0)
    second = click(stack, _fabricated(LEGACY), ts, user="U0MANAGER")
    assert second.payloads == [notice(retry_failed_before(LEGACY))]
    assert install_step(fleet(stack)[LEGACY]).get("installSessionId") == session


def test_a_channel_message_is_edited_in_place():
    """When the list is a real channel message (here posted by the bot's own token), the click's
    ``replace_original`` edits that message; a fresh stack, so the computer is in error again."""
    fresh = start_inprocess(**TEST_STACK_OPTIONS)
    try:
        payload = fresh.command("computers", user="U0MANAGER").last
        posted = fresh.slack.web_client().chat_postMessage(channel=DEMO_CHANNEL, text=payload["text"], blocks=payload["blocks"])
        assert fresh.click(RETRY_ACTION, user="U0MANAGER", channel=DEMO_CHANNEL, message_ts=posted["ts"]).status == 200
        edit = fresh.slack.recorder.updates(DEMO_CHANNEL, posted["ts"])[0]
        assert edit.source == "response_url"
        assert edit.after.blocks[1]["text"]["text"] == RETRIED_NOW
        assert len(fresh.slack.recorder.messages(DEMO_CHANNEL)) == 1
    finally:
        fresh.close()


# ---- the click's logic on fakes: store, respond and an API transport (no stack) --------------------


class FakeStore:
    def __init__(self):
        self.keys = set()

    async def claim(self, key):
        if key in self.keys:
            return False
        self.keys.add(key)
        return True

    async def was_claimed(self, key):
        return key in self.keys


class Responder:
    def __init__(self):
        self.sent = []

    async def __call__(self, **payload):
        self.sent.append(payload)


def _services(answers):
    import types

    from bot.services.computers import ComputersService
    from tests.api_fakes import RecordingTransport, fake_client

    transport = RecordingTransport(responses=answers)
    agent, store = fake_client(transport), FakeStore()
    return types.SimpleNamespace(agent=agent, store=store, computers=ComputersService(agent=agent, store=store)), transport


def _body(value=LEGACY, ts="1.000001"):
    return {
        "type": "block_actions",
        "user": {"id": "U0MANAGER"},
        "container": {"message_ts": ts},
        "actions": [{"action_id": RETRY_ACTION, "value": value}],
    }


def _computer(status):
    from tests.api_fakes import computer_payload

    return computer_payload(id=LEGACY, name="Legacy build VM", status=status)


async def test_the_re_poll_is_bounded_and_only_updates_on_a_change():
    from bot.services.computers import POLL_DELAYS
    from handlers.computers import retry_install
    from tests.api_fakes import SleepRecorder, json_response

    listing = lambda status: json_response({"computers": [_computer(status)]})  # noqa: E731
    answers = [json_response(_computer("provisioning"), 202), *(listing("provisioning") for _ in range(1 + len(POLL_DELAYS)))]
    services, transport = _services(answers)
    respond, sleep = Responder(), SleepRecorder()
    await retry_install(ActionRequest.of(_body(), respond, {}, services), sleep=sleep)
    assert sleep.delays == list(POLL_DELAYS)
    assert [r.method for r in transport.requests] == ["POST", "GET", "GET", "GET"]
    assert len(respond.sent) == 1 and respond.sent[0]["replace_original"] is True


async def test_when_the_fleet_cannot_be_re_read_the_retried_computer_is_shown_alone():
    from handlers.computers import retry_install
    from tests.api_fakes import SleepRecorder, json_response

    services, _ = _services([json_response(_computer("provisioning"), 202), json_response({"oops": 1}, 503)])
    respond = Responder()
    await retry_install(ActionRequest.of(_body(), respond, {}, services), sleep=SleepRecorder())
    [shown] = respond.sent
    assert shown["replace_original"] is True
    assert block_texts(shown)[-1].startswith("The rest of the fleet could not be read (The Agent platform had an internal error.)")
