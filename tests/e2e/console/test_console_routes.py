"""The console's JSON routes over HTTP (no browser): who sees what, where a click goes, files, forms.

The module's stack serves the console on its emulator (``conftest.console_stack``); these tests call
``/console/api/*`` as the page does and compare the answers with what the emulator recorded.
"""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from bot.stack import DEMO_CHANNEL, PEOPLE
from formatters.users import MORE_ACTION
from sandbox.slack_emulator.console import UNKNOWN_COMMAND, typed_text


@pytest.fixture(scope="module")
def routes(console_stack: Any) -> Any:
    with httpx.Client(base_url=console_stack.slack.url, timeout=30) as client:
        yield client


def state(routes: httpx.Client, person: str, view: str = DEMO_CHANNEL, **extra: str) -> dict[str, Any]:
    answer = routes.get("/console/api/state", params={"as": person, "view": view, **extra})
    assert answer.status_code == 200, answer.text
    return answer.json()


def post(routes: httpx.Client, path: str, **body: Any) -> dict[str, Any]:
    answer = routes.post(f"/console/api/{path}", json=body)
    assert answer.status_code == 200, answer.text
    return answer.json()


def test_the_page_its_files_and_its_state_are_served(routes: httpx.Client) -> None:
    page = routes.get("/console")
    assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
    assert '<script src="/console/static/console.js">' in page.text
    for name, kind in (("console.js", "text/javascript"), ("console.css", "text/css")):
        served = routes.get(f"/console/static/{name}")
        assert served.status_code == 200 and served.headers["content-type"].startswith(kind)
    assert routes.get("/console/static/../web_api.py").status_code == 404
    assert routes.get("/console/static/secret.txt").status_code == 404
    bob = state(routes, "bob")
    assert bob["me"] == PEOPLE["bob"]
    assert [c["id"] for c in bob["channels"]] == ["C0GENERAL", "C0ENG", "C0DIGEST", "C0RANDOM", "C0SECRET"]
    assert [(c["id"], c["name"], c["is_im"]) for c in bob["dms"]] == [("D0MANAGER", "agent", True)]
    assert {p["name"]: p["note"] for p in bob["people"] if not p["is_bot"]} == {
        "alice": "owner",
        "bob": "manager",
        "carol": "member",
        "dave": "guest",
    }
    assert bob["view"]["channel"]["app_is_member"] is True
    assert state(routes, "bob", "C0RANDOM")["view"]["channel"]["app_is_member"] is False


def test_unknown_people_channels_and_other_peoples_dms_are_refused(routes: httpx.Client) -> None:
    assert routes.get("/console/api/state", params={"as": "mallory"}).json() == {"ok": False, "error": "unknown person 'mallory'"}
    assert routes.get("/console/api/state", params={"as": "agent"}).status_code == 400  # the app is nobody's seat
    assert routes.get("/console/api/state", params={"as": "bob", "view": "D0MEMBER"}).status_code == 404
    assert routes.get("/console/api/state", params={"as": "bob", "view": "C0NOPE"}).status_code == 404
    assert routes.post("/console/api/send", content=b"[1]").status_code == 400
    assert routes.post("/console/api/send", json={"as": "bob", "channel": DEMO_CHANNEL, "text": "  "}).json() == {
        "ok": False,
        "error": "there is nothing to send",
    }


def test_another_slash_command_is_not_sent_to_the_app(routes: httpx.Client, console_stack: Any) -> None:
    calls = len(console_stack.slack.recorder.calls())
    answer = post(routes, "send", **{"as": "bob", "channel": DEMO_CHANNEL, "text": "/giphy cats"})
    assert answer == {"ok": True, "notice": UNKNOWN_COMMAND.format(command="/giphy")}
    assert len(console_stack.slack.recorder.calls()) == calls  # the bot heard nothing, so it called nothing


def test_an_ephemeral_reply_is_shown_to_its_person_only(routes: httpx.Client, console_stack: Any) -> None:
    recorder = console_stack.slack.recorder
    before = len(recorder.responses())
    post(routes, "send", **{"as": "bob", "channel": DEMO_CHANNEL, "text": "/agent help usage"})
    [reply] = recorder.wait_for(lambda: recorder.responses()[before:], timeout=20, what="the help reply")
    ephemeral = next(e for e in recorder.ephemerals(DEMO_CHANNEL, PEOPLE["bob"]) if e.response_url_id == reply.response_url_id)

    shown_to_bob = [m for m in state(routes, "bob")["view"]["messages"] if m["ts"] == ephemeral.ts]
    assert shown_to_bob == [
        {
            "ts": ephemeral.ts,
            "place": ephemeral.ts,
            "user": "U0AGENTBOT",
            "thread_ts": None,
            "text": reply.text,
            "blocks": reply.blocks,
            "ephemeral": True,
            "edited": False,
            "deleted": False,
            "reactions": [],
        }
    ]
    assert all(m["ts"] != ephemeral.ts for m in state(routes, "carol")["view"]["messages"])


def test_a_click_on_an_ephemeral_that_replaces_it_shows_the_new_one_in_its_place(routes: httpx.Client, console_stack: Any) -> None:
    recorder = console_stack.slack.recorder
    before = len(recorder.responses())
    post(routes, "send", **{"as": "bob", "channel": DEMO_CHANNEL, "text": "/agent users"})
    [first] = recorder.wait_for(lambda: recorder.responses()[before:], timeout=20, what="the users reply")
    listed = next(e for e in recorder.ephemerals(DEMO_CHANNEL, PEOPLE["bob"]) if e.response_url_id == first.response_url_id)
    button = next(
        element for block in listed.blocks or [] for element in block.get("elements") or [] if element.get("action_id") == MORE_ACTION
    )

    clicked = post(
        routes,
        "click",
        **{"as": "bob", "channel": DEMO_CHANNEL, "ts": listed.ts, "ephemeral": True, "action_id": MORE_ACTION, "value": button["value"]},
    )

    assert clicked == {"ok": True}
    [more] = recorder.wait_for(lambda: [r for r in recorder.responses()[before:] if r.origin_kind == "block_actions"], timeout=20)
    assert more.replace_original
    replacing = next(e for e in recorder.ephemerals(DEMO_CHANNEL, PEOPLE["bob"]) if e.response_url_id == more.response_url_id)
    assert replacing.replaces == listed.ts
    in_place = [m for m in state(routes, "bob")["view"]["messages"] if m.get("place") == listed.ts]
    assert [(m["ts"], m["blocks"]) for m in in_place] == [(replacing.ts, more.blocks)]
    assert all(m.get("ts") != listed.ts for m in state(routes, "bob")["view"]["messages"])


def test_a_chart_the_app_uploaded_is_served_to_the_page(routes: httpx.Client, console_stack: Any) -> None:
    recorder = console_stack.slack.recorder
    post(routes, "send", **{"as": "bob", "channel": DEMO_CHANNEL, "text": "/agent usage 30d chart"})
    recorder.wait_for(lambda: recorder.files("D0MANAGER"), timeout=30, what="the chart in bob's DM")
    [uploaded] = recorder.files("D0MANAGER")

    dm = state(routes, "bob", "D0MANAGER")["view"]["messages"]

    [shared] = [file for message in dm for file in message.get("files") or []]
    assert shared == {
        "id": uploaded.id,
        "name": uploaded.filename,
        "title": uploaded.title,
        "mimetype": "image/png",
        "url": f"/console/files/{uploaded.id}",
    }
    served = routes.get(shared["url"])
    assert served.status_code == 200 and served.headers["content-type"] == "image/png"
    assert served.content == uploaded.content and served.content.startswith(b"\x89PNG")
    assert routes.get("/console/files/F99999999").status_code == 404


def test_a_form_is_open_for_the_person_who_asked_for_it_only(routes: httpx.Client, console_stack: Any) -> None:
    recorder = console_stack.slack.recorder
    opened = len(recorder.modals())
    post(routes, "send", **{"as": "carol", "channel": DEMO_CHANNEL, "text": "/agent session start"})
    recorder.wait_for(lambda: recorder.modals()[opened:], timeout=20, what="the form")
    modal = state(routes, "carol")["modal"]
    assert modal is not None and modal["view"]["callback_id"] == recorder.modals()[-1].callback_id
    assert state(routes, "bob")["modal"] is None

    refused = routes.post("/console/api/submit", json={"as": "bob", "view_id": modal["view_id"], "values": {}})
    assert refused.status_code == 409

    closed = post(routes, "close", **{"as": "carol", "view_id": modal["view_id"]})
    assert closed == {"ok": True}
    assert state(routes, "carol")["modal"] is None


def test_an_unchanged_state_is_answered_in_a_word(routes: httpx.Client) -> None:
    first = state(routes, "dave", "C0RANDOM")
    again = state(routes, "dave", "C0RANDOM", since=first["version"])
    assert again == {"ok": True, "version": first["version"], "unchanged": True}


def test_what_people_type_reaches_the_app_escaped_with_mentions_as_slack_sends_them(console_stack: Any) -> None:
    directory = console_stack.slack.directory
    assert typed_text("<b>ask @bob</b> in #engineering & @nobody", directory) == (
        "&lt;b&gt;ask <@U0MANAGER>&lt;/b&gt; in <#C0ENG|engineering> &amp; @nobody"
    )
