"""Formatter tests of ``/agent computers``: whole blocks, Block Kit schema, escaping, cuts."""

from bot.api import Computer
from formatters.computers import (
    ALREADY_RETRYING,
    COMPUTER_GONE,
    MAX_COMPUTERS,
    NO_COMPUTERS,
    RETRY_ACTION,
    already_retrying,
    computer_gone,
    computer_list,
    retry_started,
)
from tests.api_fakes import computer_payload
from tests.conftest import block_texts

EVIL = "<!channel> <https://evil|click> & co"
EVIL_ESCAPED = "&lt;!channel&gt; &lt;https://evil|click&gt; &amp; co"

FAILED_STEPS = [
    {"id": "create-machine", "name": "Create machine", "status": "completed"},
    {"id": "install-deps", "name": "Install dependencies", "status": "failed", "error": "npm ERR!\n  <!here> broke"},
    {"id": "verify", "name": "Verify environment", "status": "pending"},
]


def computer(**over):
    return Computer.model_validate(computer_payload(**over))


def broken(**over):
    values = dict(
        id="cmp-broken",
        name="Legacy build VM",
        status="error",
        hostname=None,
        remoteUser="build",
        providerType="cloud-sandbox",
        provisioningSteps=FAILED_STEPS,
    )
    return computer(**{**values, **over})


def test_a_failed_computer_is_one_section_with_its_steps_and_a_retry_button(block_kit_validator):
    payload = block_kit_validator(computer_list([broken()]))
    assert payload["blocks"][0] == {"type": "header", "text": {"type": "plain_text", "text": "Computers", "emoji": True}}
    assert payload["blocks"][1]["elements"][0]["text"] == "1 computer: 1 in error"
    assert payload["blocks"][3] == {
        "type": "section",
        "text": {
            "type": "mrkdwn",
            "text": (
                ":red_circle: error  *Legacy build VM*\n"
                "provider `cloud-sandbox` \u00b7 no hostname \u00b7 user `build`\n"
                ":white_check_mark: Create machine: completed\n"
                ":x: Install dependencies: failed\n"
                ">npm ERR! &lt;!here&gt; broke\n"
                ":white_small_square: Verify environment: pending"
            ),
        },
        "accessory": {
            "type": "button",
            "text": {"type": "plain_text", "text": "Retry install"},
            "action_id": RETRY_ACTION,
            "value": "cmp-broken",
            "style": "primary",
        },
    }
    assert payload["text"] == "1 computer: 1 in error; in error: Legacy build VM"


def test_problems_come_first_and_only_a_failed_computer_has_a_button(block_kit_validator):
    fleet = [
        computer(id="a", name="Alpha", status="active"),
        computer(id="p", name="Provisioning one", status="provisioning"),
        broken(),
        computer(id="n", name="No status", status=None, provisioningSteps=None),
    ]
    payload = block_kit_validator(computer_list(fleet))
    sections = [b for b in payload["blocks"] if b["type"] == "section"]
    names = [s["text"]["text"].split("*")[1] for s in sections]
    assert names == ["Legacy build VM", "Provisioning one", "Alpha", "No status"]
    assert [s.get("accessory", {}).get("value") for s in sections] == ["cmp-broken", None, None, None]
    assert payload["blocks"][1]["elements"][0]["text"] == "4 computers: 1 in error, 1 provisioning, 1 active, 1 unknown"
    assert ":white_circle: unknown" in sections[3]["text"]["text"]
    assert "_no provisioning steps reported_" in sections[3]["text"]["text"]


def test_api_strings_are_escaped_everywhere(block_kit_validator):
    steps = [{"id": "x", "name": EVIL, "status": "exploded <!channel>", "error": EVIL}]
    payload = block_kit_validator(
        computer_list([broken(name=EVIL, hostname=EVIL, remoteUser=EVIL, providerType=EVIL, provisioningSteps=steps)])
    )
    text = "\n".join(block_texts(payload)) + payload["text"]
    assert "<!channel>" not in text and "<https://evil" not in text and "<!here>" not in text
    section = payload["blocks"][3]["text"]["text"]
    assert f"*{EVIL_ESCAPED}*" in section
    assert f"host `{EVIL_ESCAPED}`" in section
    assert ":grey_question: " + EVIL_ESCAPED + ": exploded &lt;!channel&gt;" in section
    assert f">{EVIL_ESCAPED}" in section


def test_a_long_error_is_cut():
    payload = computer_list([broken(provisioningSteps=[{"id": "i", "name": "Install", "status": "failed", "error": "x" * 5000}])])
    error_line = payload["blocks"][3]["text"]["text"].splitlines()[-1]
    assert error_line.endswith("\u2026") and len(error_line) <= 301


def test_a_long_fleet_is_cut_with_and_n_more(block_kit_validator):
    fleet = [computer(id=f"c{i}", name=f"Box {i}", status="active") for i in range(MAX_COMPUTERS + 7)]
    fleet.append(broken())
    payload = block_kit_validator(computer_list(fleet))
    sections = [b for b in payload["blocks"] if b["type"] == "section"]
    assert len(sections) == MAX_COMPUTERS
    assert sections[0]["text"]["text"].startswith(":red_circle: error  *Legacy build VM*")
    assert payload["blocks"][-1] == {
        "type": "context",
        "elements": [{"type": "mrkdwn", "text": "and 8 more computers not shown"}],
    }
    assert payload["blocks"][1]["elements"][0]["text"] == f"{MAX_COMPUTERS + 8} computers: 1 in error, {MAX_COMPUTERS + 7} active"


def test_many_steps_are_cut():
    steps = [{"id": f"s{i}", "name": f"Step {i}", "status": "completed"} for i in range(12)]
    text = computer_list([computer(provisioningSteps=steps)])["blocks"][3]["text"]["text"]
    assert text.endswith("_and 4 more steps_")


def test_no_computers(block_kit_validator):
    payload = block_kit_validator(computer_list([]))
    assert payload["text"] == NO_COMPUTERS
    assert block_texts(payload)[1] == NO_COMPUTERS


def test_retry_started_shows_the_reread_fleet_with_a_notice(block_kit_validator):
    started = broken(status="provisioning")
    fleet = [computer(id="a", name="Alpha", status="active"), broken()]  # re-read before the API caught up
    payload = block_kit_validator(retry_started(started, "U0MANAGER", fleet))
    assert payload["blocks"][1]["text"]["text"] == (
        ":arrows_counterclockwise: <@U0MANAGER> retried the dependency install of *Legacy build VM*: it is being set up again."
    )
    sections = [b for b in payload["blocks"] if b["type"] == "section"][1:]
    assert [s["text"]["text"].split("*")[1] for s in sections] == ["Legacy build VM", "Alpha"]
    assert all("accessory" not in s for s in sections)
    assert sections[0]["text"]["text"].startswith(":hourglass_flowing_sand: provisioning  *Legacy build VM*")


def test_retry_started_without_the_fleet_shows_the_computer_and_says_why(block_kit_validator):
    payload = block_kit_validator(
        retry_started(broken(status="provisioning", name=EVIL), "not-a-user-id", None, problem="The Agent platform had an internal error.")
    )
    texts = block_texts(payload)
    assert texts[1].startswith(f":arrows_counterclockwise: someone retried the dependency install of *{EVIL_ESCAPED}*")
    assert texts[-1].startswith("The rest of the fleet could not be read (The Agent platform had an internal error.)")
    assert "<!channel>" not in payload["text"]


def test_click_notices(block_kit_validator):
    busy = block_kit_validator(already_retrying("cmp-<!channel>"))
    assert busy["blocks"][0]["text"]["text"] == ":hourglass_flowing_sand: " + ALREADY_RETRYING.format(computer_id="cmp-&lt;!channel&gt;")
    gone = block_kit_validator(computer_gone("cmp-x"))
    assert gone["blocks"][0]["text"]["text"] == ":warning: " + COMPUTER_GONE.format(computer_id="cmp-x")
