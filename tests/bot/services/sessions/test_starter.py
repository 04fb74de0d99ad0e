"""bot.services.sessions.starter: which computer, the options of a start, the working directory."""

from __future__ import annotations

import pytest

from bot.api.models import Computer
from bot.services.sessions.starter import (
    AMBIGUOUS_COMPUTER,
    COMPUTER_HINT,
    CWD_HINT,
    CWD_MAX,
    CWD_TOO_LONG,
    NO_ACTIVE,
    NO_ACTIVE_HINT,
    NOT_ACTIVE_HINT,
    NOT_ACTIVE_OTHER_HINT,
    UNKNOWN_COMPUTER,
    check_cwd,
    resolve_computer,
    split_options,
)
from bot.user_errors import UserInputError
from formatters.sessions import one_line


def computer(id: str, name: str, status: str | None = "active") -> Computer:
    return Computer(id=id, name=name, provider_type="byom", created_at=0, status=status)


LAPTOP = computer("cmp-laptop", "Dev laptop")
CI = computer("cmp-ci", "CI sandbox")
CI_OLD = computer("cmp-ci-old", "CI sandbox (old)", "error")
GPU = computer("cmp-gpu", "GPU workstation", "provisioning")
FLEET = [LAPTOP, CI, CI_OLD, GPU]
ACTIVE_NAMES = "`Dev laptop`, `CI sandbox`"


def refusal(computers: list[Computer], wanted: str | None, last_used: str | None = None) -> tuple[str, str]:
    with pytest.raises(UserInputError) as raised:
        resolve_computer(computers, wanted, last_used, one_line=one_line)
    return raised.value.message, raised.value.hint


# ---------------------------------------------------------------------- resolve_computer, named


def test_a_computer_is_found_by_its_id():
    assert resolve_computer(FLEET, "cmp-ci", None, one_line=one_line) is CI


def test_a_computer_is_found_by_its_name_in_any_case_before_a_prefix():
    # "ci sandbox" is also a prefix of "CI sandbox (old)": the exact name wins
    assert resolve_computer(FLEET, "ci SANDBOX", None, one_line=one_line) is CI


def test_a_unique_prefix_of_a_name_finds_the_computer():
    assert resolve_computer(FLEET, "dev", None, one_line=one_line) is LAPTOP


def test_an_ambiguous_prefix_is_refused_naming_the_candidates():
    assert refusal(FLEET, "ci") == (
        AMBIGUOUS_COMPUTER.format(name="ci", names="`CI sandbox`, `CI sandbox (old)`"),
        COMPUTER_HINT.format(names=ACTIVE_NAMES),
    )


def test_an_unknown_computer_is_refused_naming_the_active_ones():
    assert refusal(FLEET, "nope") == (UNKNOWN_COMPUTER.format(name="nope"), COMPUTER_HINT.format(names=ACTIVE_NAMES))


def test_an_unknown_computer_when_none_is_active_says_none():
    assert refusal([GPU], "nope") == (UNKNOWN_COMPUTER.format(name="nope"), COMPUTER_HINT.format(names="none"))


@pytest.mark.parametrize(
    ("status", "shown", "hint"),
    [
        (
            "provisioning",
            "The computer *Build box* is still being set up, so it cannot run a session now.",
            NOT_ACTIVE_HINT["provisioning"],
        ),
        ("error", "The computer *Build box* is in error, so it cannot run a session now.", NOT_ACTIVE_HINT["error"]),
        ("stopped", "The computer *Build box* is in the state `stopped`, so it cannot run a session now.", NOT_ACTIVE_OTHER_HINT),
        (None, "The computer *Build box* is in an unknown state, so it cannot run a session now.", NOT_ACTIVE_OTHER_HINT),
    ],
)
def test_a_named_computer_that_is_not_active_is_refused_with_its_status_and_what_to_do(status, shown, hint):
    box = computer("cmp-box", "Build box", status)
    assert refusal([box, LAPTOP], "build box") == (shown, hint)  # #29: a sentence a person would write


def test_a_named_computer_wins_over_the_last_used_one():
    assert resolve_computer(FLEET, "CI sandbox", LAPTOP.id, one_line=one_line) is CI


# ---------------------------------------------------------------------- resolve_computer, not named


def test_the_last_used_computer_is_taken_while_it_is_active():
    assert resolve_computer(FLEET, None, CI.id, one_line=one_line) is CI


def test_a_last_used_computer_that_is_not_active_any_more_is_passed_over():
    assert resolve_computer([CI_OLD, LAPTOP], None, CI_OLD.id, one_line=one_line) is LAPTOP


def test_the_only_active_computer_is_taken():
    assert resolve_computer([LAPTOP, GPU, CI_OLD], None, None, one_line=one_line) is LAPTOP


def test_several_active_computers_are_listed_to_choose_from():
    assert resolve_computer(FLEET, None, "cmp-gone", one_line=one_line) == [LAPTOP, CI]


@pytest.mark.parametrize("computers", [[], [GPU, CI_OLD]])
def test_no_active_computer_is_refused_with_what_to_do(computers):
    assert refusal(computers, None, GPU.id) == (NO_ACTIVE, NO_ACTIVE_HINT)


# ---------------------------------------------------------------------- split_options


@pytest.mark.parametrize(
    ("text", "prompt", "options"),
    [
        ("fix the flaky login test", "fix the flaky login test", {}),
        ("computer=ci cwd=~/src/web run the linter", "run the linter", {"computer": "ci", "cwd": "~/src/web"}),
        ("run the linter computer=ci", "run the linter", {"computer": "ci"}),
        ("run computer=ci the linter", "run  the linter", {"computer": "ci"}),
        ('computer="CI sandbox" model=fast go', "go", {"computer": "CI sandbox", "model": "fast"}),
        ("computer=\u201cDev laptop\u201d go", "go", {"computer": "Dev laptop"}),
        ("COMPUTER=ci Model=fast go", "go", {"computer": "ci", "model": "fast"}),
        ("computer=ci first line\nsecond line\n\nthird", "first line\nsecond line\n\nthird", {"computer": "ci"}),
        ("explain x=1 and mycwd=/tmp", "explain x=1 and mycwd=/tmp", {}),
        ("computer=ci", "", {"computer": "ci"}),
    ],
)
def test_split_options_takes_the_three_options_out_anywhere_and_keeps_the_prompt(text, prompt, options):
    assert split_options(text) == (prompt, options)


def test_a_repeated_option_keeps_the_last_value():
    assert split_options("computer=a computer=b go") == ("go", {"computer": "b"})


# ---------------------------------------------------------------------- check_cwd


@pytest.mark.parametrize("cwd", [None, "~", "~/src/web", "x" * CWD_MAX])
def test_a_working_directory_of_1_to_4096_characters_is_kept(cwd):
    assert check_cwd(cwd) == cwd


@pytest.mark.parametrize("cwd", ["", "x" * (CWD_MAX + 1)])
def test_an_empty_or_too_long_working_directory_is_refused(cwd):
    with pytest.raises(UserInputError) as raised:
        check_cwd(cwd)
    assert (raised.value.message, raised.value.hint) == (CWD_TOO_LONG, CWD_HINT)
