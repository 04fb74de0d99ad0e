"""``/agent computers`` end to end: the fleet from the sandbox, and the once-only "Retry install" click.

The sandbox's fleet (sandbox/agent_api/computers.py) has ``cmp-legacy-build`` in ``error``; a retry
makes it ``provisioning`` with a new install session, then ``active`` after half a second. The stack is
module-scoped, so exactly one test here retries it for real; the others compare install sessions
before and after to prove install-deps was *not* called.
"""

import time

from bot.demo import DEMO_CHANNEL
from formatters.computers import ALREADY_RETRYING, COMPUTER_GONE, RETRY_ACTION, RETRY_FAILED_BEFORE, status_label
from formatters.notices import REFUSED
from handlers.router import ActionRequest
from tests.conftest import TODAY, block_texts, sandbox_get

LEGACY = "cmp-legacy-build"


def fleet(stack):
    return {c["id"]: c for c in sandbox_get(stack, "/api/v0/computers")["computers"]}


def install_step(computer):
    return next(s for s in computer["provisioningSteps"] if s["id"] == "install-deps")


def ephemeral_of(stack, reply):
    """The ephemeral message a slash command's reply became (the one a person clicks on)."""
    return stack.slack.recorder.wait_for(
        lambda: [e for e in stack.slack.recorder.ephemerals() if e.response_url_id == reply.response_url_id],
        what="the ephemeral reply",
    )[-1]


def click(stack, payload, ts, *, user, value=None):
    """Click the Retry button of ``payload`` (shown at ``ts``); return the click's response_url id."""
    message = {"type": "message", "ts": ts, "text": payload["text"], "blocks": payload["blocks"]}
    sent = stack.client.send_block_action(RETRY_ACTION, value, user_id=user, channel_id=DEMO_CHANNEL, message_ts=ts, message=message)
    assert sent.status_code == 200
    return sent.response_url_id


def responses(stack, response_url_id, count=1, timeout=10.0):
    return stack.slack.recorder.wait_for(
        lambda: (r := stack.slack.recorder.responses(response_url_id)) and len(r) >= count and r,
        timeout=timeout,
        what=f"{count} response(s) to the click",
    )


def test_the_list_shows_every_sandbox_computer_problems_first(stack, block_kit_validator):
    computers = list(fleet(stack).values())
    payload = block_kit_validator(stack.command("computers", user="U0MEMBER").last)
    sections = [b for b in payload["blocks"] if b["type"] == "section"]
    assert len(sections) == len(computers)
    rank = {"error": 0, "provisioning": 1}
    expected = sorted(computers, key=lambda c: rank.get(c.get("status"), 2))
    for section, computer in zip(sections, expected):
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
    update = block_kit_validator(responses(stack, first)[0].payload)
    after = fleet(stack)[LEGACY]
    assert after["status"] in ("provisioning", "active")
    assert install_step(after)["installSessionId"] != install_step(before)["installSessionId"]
    # the clicked message is replaced (not a new message), showing the retry and the new status
    assert update["replace_original"] is True
    texts = block_texts(update)
    assert texts[1] == ":arrows_counterclockwise: <@U0MANAGER> retried the dependency install of *Legacy build VM*: now provisioning."
    assert any(t.startswith(f"{status_label('provisioning')}  *Legacy build VM*") for t in texts)
    assert all(b.get("accessory") is None for b in update["blocks"] if b["type"] == "section")
    assert stack.slack.recorder.messages(DEMO_CHANNEL) == []  # nothing was posted in the channel

    again = click(stack, reply.last, shown.ts, user="U0MANAGER")
    [notice] = responses(stack, again)
    assert notice.payload["replace_original"] is False and notice.response_type == "ephemeral"
    assert ALREADY_RETRYING.format(computer_id=LEGACY) in notice.text
    assert install_step(fleet(stack)[LEGACY])["installSessionId"] == install_step(after)["installSessionId"]

    # the bounded re-poll shows the computer turning active (the sandbox needs half a second)
    final = responses(stack, first, count=2)[-1].payload
    assert final["replace_original"] is True
    assert f"{status_label('active')}  *Legacy build VM*" in "\n".join(block_texts(final))
    assert fleet(stack)[LEGACY]["status"] == "active"
    assert install_step(fleet(stack)[LEGACY])["installSessionId"] == install_step(after)["installSessionId"]


def test_a_member_clicking_retry_is_refused_and_install_deps_is_never_called(stack, caplog):
    session = install_step(fleet(stack)[LEGACY]).get("installSessionId")
    reply = stack.command("computers", user="U0MEMBER")
    payload = reply.last
    button = {"type": "button", "action_id": RETRY_ACTION, "value": LEGACY, "text": {"type": "plain_text", "text": "Retry install"}}
    payload = {**payload, "blocks": [*payload["blocks"], {"type": "actions", "elements": [button]}]}
    sent = click(stack, payload, ephemeral_of(stack, reply).ts, user="U0MEMBER")
    [refusal] = responses(stack, sent)
    assert refusal.text == REFUSED.format(command=RETRY_ACTION, needed="*manager*", role="*member*").replace("**", "*")
    time.sleep(0.3)
    assert install_step(fleet(stack)[LEGACY]).get("installSessionId") == session
    assert any(f"refused {RETRY_ACTION} to U0MEMBER" in r.getMessage() for r in caplog.records)


def _fabricated(computer_id):
    button = {"type": "button", "action_id": RETRY_ACTION, "value": computer_id, "text": {"type": "plain_text", "text": "Retry install"}}
    return {"text": "Computers", "blocks": [{"type": "actions", "elements": [button]}]}


def test_a_computer_that_is_gone_gets_a_clear_message(stack):
    sent = click(stack, _fabricated("cmp-removed"), stack.slack.recorder.next_ts(), user="U0MANAGER")
    [notice] = responses(stack, sent)
    assert notice.payload["replace_original"] is False
    assert notice.text.startswith(COMPUTER_GONE.format(computer_id="cmp-removed"))


def test_api_failures_end_in_a_clear_message_and_spend_the_button(stack, faults):
    session = install_step(fleet(stack)[LEGACY]).get("installSessionId")
    faults(error_rate=1.0)
    listing = stack.command("computers", user="U0MEMBER")
    assert listing.status == 200 and listing.last["text"].startswith("The Agent platform had an internal error.")
    assert len(listing.payloads) == 1

    ts = stack.slack.recorder.next_ts()
    first = click(stack, _fabricated(LEGACY), ts, user="U0MANAGER")
    [failure] = responses(stack, first)
    assert failure.text.startswith("The Agent platform had an internal error.")
    assert failure.payload["replace_original"] is False
    faults(error_rate=0.0)
    second = click(stack, _fabricated(LEGACY), ts, user="U0MANAGER")
    [spent] = responses(stack, second)
    assert RETRY_FAILED_BEFORE.format(computer_id=LEGACY) in spent.text
    assert install_step(fleet(stack)[LEGACY]).get("installSessionId") == session


def test_a_channel_message_is_edited_in_place():
    """When the list is a real channel message (here posted by the bot's own token), the click's
    ``replace_original`` edits that message; a fresh stack, so the computer is in error again."""
    from bot.api import RetryPolicy
    from bot.demo import running_stack

    with running_stack(today=TODAY, retry=RetryPolicy(max_attempts=2, base_delay=0.01, max_delay=0.05)) as fresh:
        payload = fresh.command("computers", user="U0MANAGER").last
        posted = fresh.slack.web_client().chat_postMessage(channel=DEMO_CHANNEL, text=payload["text"], blocks=payload["blocks"])
        sent = fresh.client.send_block_action(RETRY_ACTION, user_id="U0MANAGER", channel_id=DEMO_CHANNEL, message_ts=posted["ts"])
        assert sent.status_code == 200
        [edit] = fresh.slack.recorder.wait_for(lambda: fresh.slack.recorder.updates(DEMO_CHANNEL, posted["ts"]), what="the edit")
        assert edit.source == "response_url"
        assert "retried the dependency install of *Legacy build VM*" in edit.after.blocks[1]["text"]["text"]
        assert len(fresh.slack.recorder.messages(DEMO_CHANNEL)) == 1


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

    from tests.api_fakes import RecordingTransport, fake_client

    transport = RecordingTransport(responses=answers)
    return types.SimpleNamespace(agent=fake_client(transport), store=FakeStore()), transport


def _body(value=LEGACY, ts="1.000001"):
    return {"type": "block_actions", "user": {"id": "U0MANAGER"}, "container": {"message_ts": ts}, "actions": [{"action_id": RETRY_ACTION, "value": value}]}


def _computer(status):
    from tests.api_fakes import computer_payload

    return computer_payload(id=LEGACY, name="Legacy build VM", status=status)


async def test_the_re_poll_is_bounded_and_only_updates_on_a_change():
    from tests.api_fakes import SleepRecorder, json_response
    from handlers.computers import POLL_DELAYS, retry_install

    listing = lambda status: json_response({"computers": [_computer(status)]})  # noqa: E731
    answers = [json_response(_computer("provisioning"), 202), *(listing("provisioning") for _ in range(1 + len(POLL_DELAYS)))]
    services, transport = _services(answers)
    respond, sleep = Responder(), SleepRecorder()
    await retry_install(ActionRequest.of(_body(), respond, {}, services), sleep=sleep)
    assert sleep.delays == list(POLL_DELAYS)
    assert [r.method for r in transport.requests] == ["POST", "GET", "GET", "GET"]
    assert len(respond.sent) == 1 and respond.sent[0]["replace_original"] is True


async def test_when_the_fleet_cannot_be_re_read_the_retried_computer_is_shown_alone():
    from tests.api_fakes import SleepRecorder, json_response
    from handlers.computers import retry_install

    services, _ = _services([json_response(_computer("provisioning"), 202), json_response({"oops": 1}, 503)])
    respond = Responder()
    await retry_install(ActionRequest.of(_body(), respond, {}, services), sleep=SleepRecorder())
    [shown] = respond.sent
    assert shown["replace_original"] is True
    assert block_texts(shown)[-1].startswith("The rest of the fleet could not be read (The Agent platform had an internal error.)")
