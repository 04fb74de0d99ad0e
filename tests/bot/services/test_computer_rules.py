"""The roles file's ``computers:`` rules (bot.roles) and who may start sessions on which computer
(bot.services.computer_rules): parsing, validation, matching, refusals."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from bot.identity import Identity
from bot.roles import ComputerRule, ResolvedUser, Role, RoleResolver, RolesConfigError, RolesFile, who_kind
from bot.services.computer_rules import (
    CHANNEL_WORDS,
    COMPUTER_ACTION,
    COMPUTER_NOBODY,
    COMPUTER_ONLY,
    ComputerRefused,
    ComputerRules,
    who_words,
)
from tests.bot.test_roles import FakeSlack


@dataclass(frozen=True)
class Box:
    id: str
    name: str


ALICE_BOX = Box("cmp-dev-laptop", "Alice's dev box")
CI = Box("cmp-ci-sandbox", "CI sandbox")
CI_2 = Box("ci-runner-2", "Runner two")
GPU = Box("cmp-gpu-box", "GPU workstation")
LEGACY = Box("cmp-legacy-build", "Legacy build VM")

ALICE = ResolvedUser("U0OWNER", "Alice@Example.com", Role.owner, "roles file")
BOB = ResolvedUser("U0MANAGER", "bob@example.com", Role.manager, "roles file")
CAROL = ResolvedUser("U0MEMBER", "carol@example.com", Role.member, "organization user")
DAVE = ResolvedUser("U0GUEST", None, Role.guest, "no e-mail from Slack")

YAML = """
roles:
  owners: [alice@example.com]
computers:
  "alice's DEV box": [alice@example.com]
  ci-*: [members]
  "cmp-gpu-*": ["@ml-team", U0GUEST, "#c0ml"]
  "cmp-legacy-build": []
"""


def load(tmp_path, text: str) -> RolesFile:
    path = tmp_path / "roles.yaml"
    path.write_text(text)
    return RolesFile.load(path)


def rules_of(roles: RolesFile, groups=None) -> ComputerRules:
    slack = FakeSlack({}, groups=groups or {})

    async def org_emails():
        return set()

    resolver = RoleResolver(roles, identity=Identity(slack), slack=slack, organization_emails=org_emails)
    return ComputerRules.from_roles(roles, resolver)


def test_the_section_parses_in_file_order_with_channels_normalized(tmp_path):
    roles = load(tmp_path, YAML)
    assert roles.computers == (
        ComputerRule(pattern="alice's DEV box", who=("alice@example.com",)),
        ComputerRule(pattern="ci-*", who=("members",)),
        ComputerRule(pattern="cmp-gpu-*", who=("@ml-team", "U0GUEST", "C0ML")),
        ComputerRule(pattern="cmp-legacy-build", who=()),
    )
    assert RolesFile.model_validate({"computers": {"x": "owners", "y": None}}).computers == (
        ComputerRule(pattern="x", who=("owners",)),
        ComputerRule(pattern="y", who=()),
    )
    assert RolesFile().computers == () and RolesFile.model_validate({"computers": None}).computers == ()


def test_every_kind_of_entry_is_told_apart():
    kinds = {e: who_kind(e) for e in ("members", "Managers", "owner", "@ml-team", "a.b@c.io", "#C0ML", "#g0priv", "C0ENG", "U0BOB", "W0X")}
    assert kinds == {
        "members": "role",
        "Managers": "role",
        "owner": "role",
        "@ml-team": "group",
        "a.b@c.io": "email",
        "#C0ML": "channel",
        "#g0priv": "channel",
        "C0ENG": "channel",
        "U0BOB": "user",
        "W0X": "user",
    }


@pytest.mark.parametrize(
    ("section", "named"),
    [
        ("  box: [bob]\n", "computers: 'box': 'bob' is not an e-mail"),
        ("  box: [wizards]\n", "computers: 'box': 'wizards' is not"),
        ("  box: [u0lower]\n", "computers: 'box': 'u0lower' is not"),
        ('  box: [""]\n', "computers: 'box': '' is not"),
        ("  box: {a: b}\n", "computers: 'box' must list who may use it"),
        ('  "": [members]\n', "computers: a pattern is empty"),
        ("  Box: [members]\n  box: [owners]\n", "computers: 'box' repeats 'Box'"),
        ('  "*": [members]\n  late: [owners]\n', "computers: 'late' comes after '*'"),
    ],
)
def test_a_bad_section_is_a_roles_config_error_naming_the_entry(tmp_path, section, named):
    with pytest.raises(RolesConfigError, match=named.replace("*", r"\*").replace("(", r"\(")):
        load(tmp_path, "computers:\n" + section)
    with pytest.raises(RolesConfigError, match="computers must map"):
        load(tmp_path, "computers: [a, b]\n")


def test_globs_and_names_match_case_insensitively_on_the_name_or_the_id(tmp_path):
    rules = rules_of(load(tmp_path, YAML))
    assert rules.rule_for(ALICE_BOX) == rules.rules[0]  # the name, other case
    assert rules.rule_for(CI_2) == rules.rules[1]  # the glob on the id
    assert rules.rule_for(Box("x", "CI-nightly")) == rules.rules[1]  # the glob on the name
    assert rules.rule_for(CI) is None  # "CI sandbox" has no dash: no rule
    assert rules.rule_for(GPU) == rules.rules[2]
    literal = ComputerRules(RolesFile.model_validate({"computers": {"Box [1]?": ["owners"]}}).computers)
    assert literal.rule_for(Box("b1", "box [1]?")) is not None and literal.rule_for(Box("b1", "box 1")) is None


async def test_emails_ids_roles_groups_and_channels_decide(tmp_path):
    rules = rules_of(load(tmp_path, YAML), groups={"ml-team": ("S1", ["U0MEMBER"])})
    assert await rules.check(ALICE, "C0ENG", ALICE_BOX) is None  # her e-mail, any case
    assert [await rules.allows(p, "C0ENG", ALICE_BOX) for p in (BOB, CAROL, DAVE)] == [False, False, False]
    assert [await rules.allows(p, "C0ENG", CI_2) for p in (ALICE, BOB, CAROL, DAVE)] == [True, True, True, False]  # members and above
    assert await rules.allows(CAROL, "C0ENG", GPU)  # in @ml-team
    assert await rules.allows(DAVE, "D0DM", GPU)  # his user ID
    assert await rules.allows(BOB, "C0ML", GPU)  # started in #C0ML
    assert not await rules.allows(BOB, "C0ENG", GPU) and not await rules.allows(BOB, None, GPU)
    assert not await rules.allows(ALICE, "C0ENG", LEGACY)  # an empty rule: nobody, owners too
    assert await rules.allows(DAVE, "C0ENG", CI)  # no rule matches: allowed (the role check decides who starts at all)


async def test_the_first_matching_pattern_decides_and_a_catch_all_decides_the_rest():
    rules = ComputerRules(
        RolesFile.model_validate({"computers": {"cmp-ci-*": ["owners"], "cmp-*": ["members"], "*": ["managers"]}}).computers
    )
    assert not await rules.allows(BOB, None, CI)  # the first pattern, though the second would allow
    assert await rules.allows(CAROL, None, GPU)
    assert not await rules.allows(CAROL, None, Box("other", "Other"))  # the catch-all
    assert await rules.allows(BOB, None, Box("other", "Other"))


async def test_without_rules_everyone_may_use_every_computer():
    rules = ComputerRules(())
    assert not rules.configured
    assert [await rules.allows(p, None, c) for p in (CAROL, DAVE) for c in (ALICE_BOX, GPU)] == [True] * 4
    assert await rules.usable(DAVE, None, [ALICE_BOX, CI]) == [ALICE_BOX, CI]


async def test_a_refusal_names_the_computer_and_who_may_use_it(tmp_path):
    rules = rules_of(load(tmp_path, YAML))
    assert await rules.check(BOB, "C0ENG", ALICE_BOX) == ComputerRefused(
        action=COMPUTER_ACTION.format(name="Alice's dev box"),
        reason=COMPUTER_ONLY.format(who="alice@example.com"),
        computer_id="cmp-dev-laptop",
        computer_name="Alice's dev box",
        pattern="alice's DEV box",
        allowed=("alice@example.com",),
    )
    gpu = await rules.check(BOB, "C0ENG", GPU)
    assert gpu is not None and gpu.reason == COMPUTER_ONLY.format(
        who=f"members of @ml-team, U0GUEST or {CHANNEL_WORDS.format(channel='C0ML')}"
    )
    assert gpu.who_can_help == ("U0GUEST", "@ml-team") and gpu.needs is None
    ci = await rules.check(DAVE, None, CI_2)
    assert ci is not None and (ci.reason, ci.needs) == (COMPUTER_ONLY.format(who="members, managers and owners"), "member")
    legacy = await rules.check(ALICE, None, LEGACY)
    assert legacy is not None and legacy.reason == COMPUTER_NOBODY and legacy.allowed == ()
    assert who_words(ComputerRule(pattern="x", who=("owners", "guests", "owner"))) == "owners or everyone"


async def test_usable_keeps_the_computers_a_person_may_use_in_their_order(tmp_path):
    rules = rules_of(load(tmp_path, YAML))
    boxes = [ALICE_BOX, CI, CI_2, GPU, LEGACY]
    assert await rules.usable(ALICE, "C0ENG", boxes) == [ALICE_BOX, CI, CI_2]
    assert await rules.usable(BOB, "C0ML", boxes) == [CI, CI_2, GPU]
    assert await rules.usable(DAVE, "C0ENG", boxes) == [CI, GPU]
