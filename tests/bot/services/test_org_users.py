"""``bot.services.org_users``: matching, the screen walk along the v0 cursor, and the More button value."""

import json

import pytest

from bot.api import MalformedResponseError, OrganizationUser
from bot.services.org_users import (
    MAX_PAGES_PER_SCREEN,
    QUERY_PAGE_SIZE,
    SCREEN,
    Position,
    decode_more,
    encode_more,
    fetch_screen,
    matches,
)
from tests.api_fakes import RecordingTransport, fake_client, json_response, org_user_payload


def people(n):
    return [
        org_user_payload(id=f"u{i:03d}", firstName=f"Name{i:03d}", lastName="Odd" if i % 7 else "Seven", email=f"p{i}@example.com")
        for i in range(n)
    ]


def api(users):
    """A transport paging ``users`` like the spec: cursor = the last id of the previous page."""

    def handler(request):
        limit = int(request.url.params["limit"])
        cursor = request.url.params.get("cursor")
        start = 0 if cursor is None else [u["id"] for u in users].index(cursor) + 1
        page = users[start : start + limit]
        more = start + limit < len(users)
        return json_response({"users": page, "pagination": {"hasMore": more, "nextCursor": page[-1]["id"] if more else None}})

    return RecordingTransport(handler)


def ids(screen):
    return [u.id for u in screen.users]


@pytest.mark.parametrize(
    ("query", "hit"),
    [(None, True), ("ada", True), ("LOVE", True), ("ada love", True), ("@EXAMPLE.com", True), ("grace", False)],
)
def test_matches_first_last_full_name_or_email_in_any_case(query, hit):
    assert matches(OrganizationUser.model_validate(org_user_payload()), query) is hit


async def test_without_a_query_each_screen_is_one_api_page_and_the_walk_ends():
    everyone = people(45)
    transport = api(everyone)
    agent = fake_client(transport)
    seen, position, screens = [], Position(), 0
    while position is not None:
        screen = await fetch_screen(agent, position)
        assert screen.start == len(seen)
        seen += ids(screen)
        position, screens = screen.next, screens + 1
    assert seen == [u["id"] for u in everyone]
    assert screens == 3 and len(transport.requests) == 3
    assert {r.url.params["limit"] for r in transport.requests} == {str(SCREEN)}


async def test_a_query_walks_pages_and_resumes_mid_page():
    everyone = people(450)
    sevens = [u["id"] for u in everyone if u["lastName"] == "Seven"]  # 65 of them
    transport = api(everyone)
    agent = fake_client(transport)
    first = await fetch_screen(agent, Position("seven"))
    assert ids(first) == sevens[:SCREEN]
    assert first.next == Position("seven", "u099", 34, SCREEN)  # the 20th match, u133, is inside page two
    assert transport.requests[0].url.params["limit"] == str(QUERY_PAGE_SIZE)
    seen = ids(first)
    position = first.next
    while position is not None:
        screen = await fetch_screen(agent, position)
        seen += ids(screen)
        position = screen.next
    assert seen == sevens


async def test_a_rare_match_stops_at_the_page_bound_and_says_where_to_go_on():
    everyone = people(1000)
    transport = api(everyone)
    screen = await fetch_screen(fake_client(transport), Position("name0"))  # only u000..u099
    assert len(screen.users) == SCREEN and not screen.bounded
    nothing = await fetch_screen(fake_client(api(everyone)), Position("nobody"))
    assert nothing.users == [] and nothing.bounded
    assert nothing.scanned == MAX_PAGES_PER_SCREEN * QUERY_PAGE_SIZE
    assert nothing.next == Position("nobody", everyone[499]["id"], 0, 0)


async def test_more_without_a_cursor_is_malformed():
    transport = RecordingTransport(responses=[json_response({"users": people(2), "pagination": {"hasMore": True}})])
    with pytest.raises(MalformedResponseError):
        await fetch_screen(fake_client(transport), Position())


def test_button_value_round_trip_and_bad_values():
    position = Position("ada", "abc", 3, 40)
    assert decode_more(encode_more(position)) == position
    assert encode_more(Position(None, "x" * 2000)) is None
    for bad in (
        None,
        "",
        "[]",
        "{",
        json.dumps({"cursor": 5}),
        json.dumps({"skip": -1}),
        json.dumps({"start": True}),
        json.dumps({"query": "q" * 101}),
    ):
        with pytest.raises(ValueError):
            decode_more(bad)
