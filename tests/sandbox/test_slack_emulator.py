"""The Slack emulator's Web API, upload URLs and response URLs, driven by slack_sdk's real clients."""

from __future__ import annotations

import asyncio
import re

import httpx
import pytest
from slack_sdk import WebClient
from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient

from sandbox.slack_emulator import (
    LIFETIME_SECONDS,
    MAX_USES,
    ResponseUrlOrigin,
    SlackEmulator,
    WaitTimeout,
    default_directory,
)
from sandbox.slack_emulator.limits import MAX_MESSAGE_BLOCKS


class FakeClock:
    """Monotonic seconds that only move when told to."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


@pytest.fixture(scope="module")
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture(scope="module")
def running_slack(clock: FakeClock):
    with SlackEmulator(clock=clock) as emulator:
        yield emulator


@pytest.fixture
def slack(running_slack: SlackEmulator) -> SlackEmulator:
    running_slack.reset()
    return running_slack


@pytest.fixture
def web(slack: SlackEmulator) -> WebClient:
    return slack.web_client()


@pytest.fixture
def aweb(slack: SlackEmulator) -> AsyncWebClient:
    return slack.async_web_client()


def error_of(call) -> str:
    with pytest.raises(SlackApiError) as raised:
        call()
    return raised.value.response["error"]


async def async_error_of(awaitable) -> str:
    with pytest.raises(SlackApiError) as raised:
        await awaitable
    return raised.value.response["error"]


# --------------------------------------------------------------------- auth and directory


def test_auth_test_reports_the_bot_identity(web: WebClient) -> None:
    assert web.auth_test().data == {
        "ok": True,
        "url": "https://emulated-org.slack.com/",
        "team": "Emulated Org",
        "user": "agent",
        "team_id": "T0EMULATED",
        "user_id": "U0AGENTBOT",
        "bot_id": "B0AGENTBOT",
        "is_enterprise_install": False,
    }


def test_bots_info_gives_the_app_id_of_the_bot(web: WebClient) -> None:
    assert web.bots_info(bot="B0AGENTBOT").data == {
        "ok": True,
        "bot": {
            "id": "B0AGENTBOT",
            "deleted": False,
            "name": "agent",
            "updated": 0,
            "app_id": "A0AGENTBOT",
            "user_id": "U0AGENTBOT",
            "icons": {},
        },
    }
    assert error_of(lambda: web.bots_info(bot="B0SOMEONE")) == "bot_not_found"


def test_a_wrong_or_missing_token_is_refused(slack: SlackEmulator) -> None:
    assert error_of(WebClient(token="xoxb-wrong", base_url=slack.api_url).auth_test) == "invalid_auth"
    assert httpx.post(slack.api_url + "auth.test").json() == {"ok": False, "error": "not_authed"}
    assert [call.response["error"] for call in slack.recorder.calls("auth.test")] == [
        "invalid_auth",
        "not_authed",
    ]


def test_a_token_argument_is_accepted_like_the_header(slack: SlackEmulator) -> None:
    answer = httpx.post(slack.api_url + "auth.test", data={"token": slack.bot_token}).json()
    assert answer["ok"] is True


def test_a_malformed_json_body_is_an_error_not_a_crash(slack: SlackEmulator) -> None:
    answer = httpx.post(
        slack.api_url + "chat.postMessage",
        content=b"{not json",
        headers={"Authorization": f"Bearer {slack.bot_token}", "Content-Type": "application/json"},
    )
    assert (answer.status_code, answer.json()) == (200, {"ok": False, "error": "invalid_json"})


def test_unknown_methods_answer_unknown_method(web: WebClient) -> None:
    assert error_of(lambda: web.api_call("chat.meMessage", params={"channel": "C0GENERAL"})) == "unknown_method"


async def test_users_info_returns_email_bot_flag_name_and_tz(aweb: AsyncWebClient) -> None:
    user = (await aweb.users_info(user="U0MANAGER"))["user"]
    assert (user["id"], user["name"], user["real_name"], user["tz"], user["is_bot"]) == (
        "U0MANAGER",
        "bob",
        "Bob Manager",
        "UTC",
        False,
    )
    assert user["profile"]["email"] == "bob@example.com"
    bot = (await aweb.users_info(user="U0AGENTBOT"))["user"]
    assert bot["is_bot"] is True and "email" not in bot["profile"]
    assert await async_error_of(aweb.users_info(user="U0NOBODY")) == "user_not_found"


async def test_users_lookup_by_email_ignores_case_and_reports_unknown_emails(aweb: AsyncWebClient) -> None:
    assert (await aweb.users_lookupByEmail(email="Carol@Example.com"))["user"]["id"] == "U0MEMBER"
    assert await async_error_of(aweb.users_lookupByEmail(email="eve@example.com")) == "users_not_found"


async def test_user_groups_are_listed_with_handles_and_members(aweb: AsyncWebClient) -> None:
    groups = (await aweb.usergroups_list(include_users=True))["usergroups"]
    assert [(g["id"], g["handle"], g["users"]) for g in groups] == [
        ("S0OWNERS", "platform-owners", ["U0OWNER"]),
        ("S0MANAGERS", "eng-managers", ["U0MANAGER"]),
    ]
    assert "users" not in (await aweb.usergroups_list())["usergroups"][0]
    assert (await aweb.usergroups_users_list(usergroup="S0MANAGERS"))["users"] == ["U0MANAGER"]
    assert await async_error_of(aweb.usergroups_users_list(usergroup="S0NONE")) == "no_such_subteam"


async def test_conversations_info_knows_channels_and_dms(aweb: AsyncWebClient) -> None:
    general = (await aweb.conversations_info(channel="C0GENERAL"))["channel"]
    assert (general["name"], general["is_channel"], general["is_im"]) == ("general", True, False)
    dm = (await aweb.conversations_info(channel="D0MEMBER"))["channel"]
    assert (dm["is_im"], dm["user"]) == (True, "U0MEMBER")
    assert await async_error_of(aweb.conversations_info(channel="C0NONE")) == "channel_not_found"


def test_the_directory_is_replaceable() -> None:
    directory = default_directory(users=[], user_groups=[], channels=[])
    assert [user.id for user in directory.users] == ["U0AGENTBOT"]
    assert directory.user_by_email("alice@example.com") is None
    assert default_directory().user_by_name("bob").email == "bob@example.com"


def test_missing_arguments_are_invalid_arguments_with_the_field_named(web: WebClient) -> None:
    with pytest.raises(SlackApiError) as raised:
        web.api_call("users.info", params={})
    assert raised.value.response.data == {
        "ok": False,
        "error": "invalid_arguments",
        "response_metadata": {"messages": ["[ERROR] missing required field: user"]},
    }


# --------------------------------------------------------------------- chat


async def test_post_message_records_messages_by_channel_and_thread(slack: SlackEmulator, aweb: AsyncWebClient) -> None:
    parent = await aweb.chat_postMessage(channel="C0GENERAL", text="Session started")
    reply = await aweb.chat_postMessage(channel="C0GENERAL", text="Step 1", thread_ts=parent["ts"])
    await aweb.chat_postMessage(channel="C0ENG", text="elsewhere")

    assert (parent["channel"], parent["message"]["bot_id"]) == ("C0GENERAL", "B0AGENTBOT")
    assert float(reply["ts"]) > float(parent["ts"])
    thread = slack.recorder.messages("C0GENERAL", thread_ts=parent["ts"])
    assert [(m.text, m.thread_ts, m.user) for m in thread] == [
        ("Session started", None, "U0AGENTBOT"),
        ("Step 1", parent["ts"], "U0AGENTBOT"),
    ]
    assert [m.text for m in slack.recorder.messages()] == ["Session started", "Step 1", "elsewhere"]
    assert slack.recorder.calls("chat.postMessage")[1].args == {
        "channel": "C0GENERAL",
        "text": "Step 1",
        "thread_ts": parent["ts"],
    }


def test_post_message_to_a_user_id_lands_in_their_dm(slack: SlackEmulator, web: WebClient) -> None:
    assert web.chat_postMessage(channel="U0OWNER", text="hello")["channel"] == "D0OWNER"
    assert [m.text for m in slack.recorder.messages("D0OWNER")] == ["hello"]


@pytest.mark.parametrize(
    ("args", "error"),
    [
        ({"text": "no channel"}, "channel_not_found"),
        ({"channel": "C0NONE", "text": "x"}, "channel_not_found"),
        ({"channel": "C0GENERAL"}, "no_text"),
        ({"channel": "C0GENERAL", "text": "x" * 40_001}, "msg_too_long"),
    ],
)
def test_post_message_errors(web: WebClient, args: dict, error: str) -> None:
    assert error_of(lambda: web.api_call("chat.postMessage", json=args)) == error


def test_post_message_enforces_block_kit_limits(web: WebClient) -> None:
    divider = {"type": "divider"}
    long_section = {"type": "section", "text": {"type": "mrkdwn", "text": "x" * 3001}}
    with pytest.raises(SlackApiError) as raised:
        web.chat_postMessage(channel="C0GENERAL", text="t", blocks=[divider] * MAX_MESSAGE_BLOCKS + [long_section])
    assert raised.value.response["error"] == "invalid_blocks"
    assert raised.value.response["response_metadata"]["messages"] == [
        "[ERROR] no more than 50 items allowed [json-pointer:/blocks]",
        "[ERROR] must be less than 3001 characters [json-pointer:/blocks/50/text/text]",
    ]


async def test_ephemeral_update_and_delete_are_recorded(slack: SlackEmulator, aweb: AsyncWebClient) -> None:
    ephemeral = await aweb.chat_postEphemeral(channel="C0GENERAL", user="U0GUEST", text="only you")
    posted = await aweb.chat_postMessage(channel="C0GENERAL", text="Pending")
    updated = await aweb.chat_update(channel="C0GENERAL", ts=posted["ts"], text="Approved")
    await aweb.chat_delete(channel="C0GENERAL", ts=posted["ts"])

    [only_you] = slack.recorder.ephemerals(user="U0GUEST")
    assert (only_you.channel, only_you.text, only_you.ts) == (
        "C0GENERAL",
        "only you",
        ephemeral["message_ts"],
    )
    assert updated["message"]["text"] == "Approved"
    [update] = slack.recorder.updates("C0GENERAL", posted["ts"])
    assert (update.before.text, update.after.text, update.after.edited) == ("Pending", "Approved", True)
    assert slack.recorder.messages("C0GENERAL") == []
    assert slack.recorder.message("C0GENERAL", posted["ts"]).deleted
    assert await async_error_of(aweb.chat_update(channel="C0GENERAL", ts=posted["ts"], text="x")) == "message_not_found"
    assert await async_error_of(aweb.chat_delete(channel="C0GENERAL", ts="1.000001")) == "message_not_found"
    assert await async_error_of(aweb.chat_postEphemeral(channel="C0GENERAL", user="U0X", text="x")) == "user_not_found"


def test_post_message_rate_limit_answers_429_with_retry_after(clock: FakeClock) -> None:
    with SlackEmulator(clock=clock, post_message_rate_limit=2) as slack:
        web = slack.web_client()
        web.chat_postMessage(channel="C0GENERAL", text="1")
        web.chat_postMessage(channel="C0GENERAL", text="2")
        web.chat_postMessage(channel="C0ENG", text="other channel")
        with pytest.raises(SlackApiError) as raised:
            web.chat_postMessage(channel="C0GENERAL", text="3")
        assert raised.value.response.status_code == 429
        assert raised.value.response.headers["Retry-After"] == "1"
        assert raised.value.response["error"] == "ratelimited"
        clock.advance(1.0)
        web.chat_postMessage(channel="C0GENERAL", text="3")
        assert [m.text for m in slack.recorder.messages("C0GENERAL")] == ["1", "2", "3"]
        assert [c.status for c in slack.recorder.calls("chat.postMessage")] == [200, 200, 200, 429, 200]


# --------------------------------------------------------------------- files and views


def test_files_upload_v2_records_bytes_title_channel_thread_and_comment(slack: SlackEmulator, web: WebClient) -> None:
    parent = web.chat_postMessage(channel="C0DIGEST", text="Daily digest")
    answer = web.files_upload_v2(
        channel="C0DIGEST",
        content=b"\x89PNG...",
        filename="usage.png",
        title="Usage, last 7 days",
        initial_comment="Chart attached",
        thread_ts=parent["ts"],
    )

    [file] = slack.recorder.files("C0DIGEST")
    assert (file.id, file.content, file.title, file.thread_ts, file.initial_comment) == (
        answer["file"]["id"],
        b"\x89PNG...",
        "Usage, last 7 days",
        parent["ts"],
        "Chart attached",
    )
    upload_url = slack.recorder.calls("files.getUploadURLExternal")[0].response["upload_url"]
    assert upload_url == f"{slack.url}/upload/{file.id}"
    [share] = [m for m in slack.recorder.messages("C0DIGEST", parent["ts"]) if m.files]
    assert (share.text, share.files[0]["title"]) == ("Chart attached", "Usage, last 7 days")


async def test_async_files_upload_v2_works_too(slack: SlackEmulator, aweb: AsyncWebClient) -> None:
    await aweb.files_upload_v2(channel="C0ENG", content="a,b\n1,2\n", filename="report.csv")
    [file] = slack.recorder.files()
    assert (file.filename, file.content, file.title, file.channel) == (
        "report.csv",
        b"a,b\n1,2\n",
        "report.csv",
        "C0ENG",
    )


def test_the_upload_url_accepts_multipart_and_complete_checks_the_upload(slack: SlackEmulator, web: WebClient) -> None:
    ticket = web.files_getUploadURLExternal(filename="notes.txt", length=5)
    assert error_of(lambda: web.files_completeUploadExternal(files=[{"id": ticket["file_id"]}])) == "file_not_found"
    assert httpx.post(ticket["upload_url"], files={"file": ("notes.txt", b"hello")}).text == "OK - 5"
    web.files_completeUploadExternal(files=[{"id": ticket["file_id"], "title": "Notes"}])
    [file] = slack.recorder.files()
    assert (file.content, file.title, file.channel) == (b"hello", "Notes", None)
    assert httpx.post(f"{slack.url}/upload/F404", content=b"x").status_code == 404


async def test_views_publish_records_the_home_tab(slack: SlackEmulator, aweb: AsyncWebClient) -> None:
    view = {"type": "home", "blocks": [{"type": "section", "text": {"type": "mrkdwn", "text": "Hi"}}]}
    answer = await aweb.views_publish(user_id="U0MEMBER", view=view)
    [published] = slack.recorder.views("U0MEMBER")
    assert (published.view, published.view_id) == (view, answer["view"]["id"])
    assert await async_error_of(aweb.views_publish(user_id="U0NOBODY", view=view)) == "user_not_found"


# --------------------------------------------------------------------- response URLs


def post_response(slack: SlackEmulator, response_url_id: str, payload: dict) -> httpx.Response:
    return httpx.post(slack.response_url(response_url_id), json=payload)


def test_a_response_url_works_five_times_then_answers_404_used_url(slack: SlackEmulator) -> None:
    response_url_id, _ = slack.issue_response_url(ResponseUrlOrigin("slash_command", "C0GENERAL", "U0MEMBER"))
    answers = [post_response(slack, response_url_id, {"text": f"reply {n}"}) for n in range(1, MAX_USES + 2)]

    assert [(a.status_code, a.json()) for a in answers] == [(200, {"ok": True})] * 5 + [(404, {"ok": False, "error": "used_url"})]
    assert [(r.text, r.use) for r in slack.recorder.responses(response_url_id)] == [(f"reply {n}", n) for n in range(1, 6)]
    assert [e.text for e in slack.recorder.ephemerals("C0GENERAL", "U0MEMBER")] == [f"reply {n}" for n in range(1, 6)]


def test_a_response_url_expires_after_thirty_minutes(slack: SlackEmulator, clock: FakeClock) -> None:
    response_url_id, _ = slack.issue_response_url(ResponseUrlOrigin("slash_command", "C0GENERAL", "U0MEMBER"))
    clock.advance(LIFETIME_SECONDS)
    assert post_response(slack, response_url_id, {"text": "just in time"}).status_code == 200
    clock.advance(1)
    late = post_response(slack, response_url_id, {"text": "too late"})
    assert (late.status_code, late.json()) == (404, {"ok": False, "error": "expired_url"})
    assert post_response(slack, "R999999", {"text": "x"}).json() == {"ok": False, "error": "no_service"}


def test_a_bad_reply_is_refused_and_does_not_count_as_a_use(slack: SlackEmulator) -> None:
    response_url_id, _ = slack.issue_response_url(ResponseUrlOrigin("slash_command", "C0GENERAL", "U0MEMBER"))
    assert httpx.post(slack.response_url(response_url_id), content=b"not json").status_code == 400
    assert post_response(slack, response_url_id, {"blocks": []}).json() == {"ok": False, "error": "no_text"}
    assert slack.response_urls.uses(response_url_id) == 0


def test_response_types_replace_and_delete_act_on_the_conversation(slack: SlackEmulator, web: WebClient) -> None:
    parent = web.chat_postMessage(channel="C0ENG", text="Approve 500 credits?")
    clicked = ResponseUrlOrigin("block_actions", "C0ENG", "U0MANAGER", message_ts=parent["ts"])
    replace_id, _ = slack.issue_response_url(clicked)
    post_response(slack, replace_id, {"replace_original": True, "text": "Approved by bob"})
    post_response(slack, replace_id, {"response_type": "in_channel", "text": "Limit raised", "thread_ts": parent["ts"]})

    thread = slack.recorder.messages("C0ENG", parent["ts"])
    assert [(m.text, m.source, m.thread_ts) for m in thread] == [
        ("Approved by bob", "chat.postMessage", None),
        ("Limit raised", "response_url", parent["ts"]),
    ]
    assert slack.recorder.updates("C0ENG", parent["ts"])[0].source == "response_url"
    assert [r.response_type for r in slack.recorder.responses(replace_id)] == ["ephemeral", "in_channel"]

    post_response(slack, replace_id, {"delete_original": True})
    assert [m.text for m in slack.recorder.messages("C0ENG")] == ["Limit raised"]


# --------------------------------------------------------------------- waiting


def test_wait_for_returns_the_first_truthy_value_or_times_out(slack: SlackEmulator, web: WebClient) -> None:
    web.chat_postMessage(channel="C0GENERAL", text="here")
    [message] = slack.recorder.wait_for(lambda: slack.recorder.messages("C0GENERAL"), timeout=1)
    assert message.text == "here"
    with pytest.raises(WaitTimeout, match=re.escape("chat.postMessage -> 200 ok")):
        slack.recorder.wait_for(lambda: slack.recorder.messages("C0ENG"), timeout=0.05)


async def test_wait_for_async_yields_to_the_event_loop(slack: SlackEmulator, aweb: AsyncWebClient) -> None:
    task = asyncio.create_task(aweb.chat_postMessage(channel="C0ENG", text="async"))
    [message] = await slack.recorder.wait_for_async(lambda: slack.recorder.messages("C0ENG"), timeout=2)
    await task
    assert message.text == "async"
