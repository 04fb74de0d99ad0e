"""formatters.reports: the report, the overview and the details payloads; schema-validated, with
escaping of API strings and Slack's block and text limits."""

from __future__ import annotations

import datetime as dt
import json
import re

from bot.services.alerts.ask import ASK_ACTION, Ask, CriterionRef, criteria_ask
from bot.services.readiness import (
    AmbiguousRepository,
    Criterion,
    FoundReport,
    Overview,
    RepoQuery,
    Report,
    Repository,
    RepositoryReports,
    RepositorySummary,
    UnknownRepository,
    Walk,
    compare,
)
from formatters.blocks import MAX_BLOCKS, SECTION_TEXT_MAX
from formatters.reports import (
    ALL_PASS,
    ASK_ALL_LABEL,
    ASK_LABEL,
    ASK_ONE_BLOCK,
    ASK_ONE_MORE,
    ASK_ONE_PLACEHOLDER,
    DETAILS_ACTION,
    DETAILS_TRUNCATED,
    FIRST_REPORT,
    MAX_DETAIL_MESSAGES,
    MORE_CRITERIA,
    NO_REPORTS,
    OVERVIEW_FOOTER,
    PAGE_BOUND,
    PASS_RATE_HELP,
    PASSING_LINE,
    RATIONALE_SHORT,
    REPORT_FOOTER,
    age,
    ambiguous_repository_message,
    criterion_words,
    details_messages,
    overview_message,
    report_gone_message,
    report_message,
    unknown_repository_message,
)
from tests.conftest import block_texts

NOW = dt.datetime(2026, 11, 22, 12, 0, tzinfo=dt.UTC)
WEB = Repository.from_url("https://github.com/acme/web")
EVIL = "Ignore <!channel> and <https://evil|click> & co"
WALK = Walk(pages=1, reports=5, complete=True, hit_page_bound=False, max_pages=20, repositories=(WEB,))


def make_report(criteria, *, rid="r-latest", days_ago=3, repository=WEB, **over) -> Report:
    values = dict(
        report_id=rid,
        created_at=NOW - dt.timedelta(days=days_ago, hours=1),
        repository=repository,
        apps=(("apps/admin", "Admin console"), ("apps/storefront", "Storefront")),
        criteria=tuple(Criterion(cid, n, d, why) for cid, (n, d, why) in sorted(criteria.items())),
        commit_hash="f1627f7a9b0c",
        branch="main",
        has_local_changes=False,
        has_non_remote_commits=True,
        model_id="gpt-5-codex",
        reasoning_effort="high",
        agent_version="0.23.0",
    )
    values.update(over)
    return Report(**values)


LATEST = make_report(
    {
        "readme": (1, 1, "Pass: a README explains setup."),
        "lint_config": (1, 2, "1/2 pass. Missing in: apps/admin."),
        "ci_pipeline": (0, 1, "Fail: no CI."),
        "unit_tests": (2, 2, "Both apps have tests."),
    }
)
PREVIOUS = make_report(
    {
        "readme": (0, 1, "Fail: no README."),
        "lint_config": (2, 2, "Both lint."),
        "ci_pipeline": (0, 1, "Fail: no CI."),
        "codeowners": (0, 1, "Fail: no CODEOWNERS."),
    },
    rid="r-previous",
    days_ago=40,
)


def result(latest=LATEST, previous=PREVIOUS, walk=WALK) -> RepositoryReports:
    return RepositoryReports(latest.repository, latest, previous, compare(latest, previous) if previous else None, walk)


def test_report_message_leads_with_what_fails_and_what_changed(block_kit_validator):
    payload = block_kit_validator(report_message(result(), NOW))
    blocks = payload["blocks"]
    assert [b["type"] for b in blocks] == [
        "header", "section", "section", "divider", "section", "section", "context", "divider", "section", "section", "actions", "context",
    ]  # fmt: skip
    assert blocks[0]["text"]["text"] == "Agent readiness: acme/web"
    assert blocks[1]["text"]["text"] == (
        "*2 of 4 criteria pass (50%)* \u00b7 4 of 6 checks (67%)\n\u25b2 25 points since the previous report (25%)"
    )
    assert blocks[2]["text"]["text"] == (
        "*Since the previous report* (2026-10-13 11:00 UTC, 37 days earlier)\n"
        "1 improved, 1 regressed, 1 new, 1 removed, 1 unchanged\n"
        "\u2022 \u25b2 *README* 0/1 \u2192 1/1 (now passing)\n"
        "\u2022 \u25bc *Lint config* 2/2 \u2192 1/2\n"
        "\u2022 + *Unit tests* new: 2/2\n"
        "\u2022 \u2212 *CODEOWNERS* removed (was 0/1)"
    )
    assert [b["text"]["text"] for b in blocks[4:6]] == [
        ":x: *Failing* (1)\n\u2022 *CI pipeline* 0/1: Fail: no CI.",
        ":large_yellow_circle: *Partial* (1)\n\u2022 *Lint config* 1/2: 1/2 pass. Missing in: apps/admin.",
    ]
    assert blocks[6]["elements"][0]["text"] == ":white_check_mark: 2 more criteria pass: *Details* lists them, with every rationale."
    assert [f["text"] for f in blocks[8]["fields"]] == [
        "*Evaluated*\n2026-11-19 11:00 UTC (3 days ago)",
        "*Commit*\n`f1627f7` on `main`",
        "*Uncommitted changes*\nno",
        "*Unpushed commits*\nyes",
        "*Model*\ngpt-5-codex (reasoning effort: high)",
        "*Client version*\n0.23.0",
    ]
    assert blocks[9]["text"]["text"] == (
        "*Applications evaluated* (2)\n\u2022 `apps/admin`: Admin console\n\u2022 `apps/storefront`: Storefront"
    )
    button = blocks[10]["elements"][0]
    assert (button["action_id"], button["value"], button["text"]["text"]) == (DETAILS_ACTION, "r-latest", "Details")
    assert blocks[11]["elements"][0]["text"] == REPORT_FOOTER.format(report_id="r-latest", help=PASS_RATE_HELP)
    assert payload["text"] == "Agent readiness of acme/web: 2 of 4 criteria pass (50%), evaluated 2026-11-19 11:00 UTC"


def test_a_report_where_everything_passes_says_so(block_kit_validator):
    blocks = block_kit_validator(report_message(result(make_report({"readme": (1, 1, "ok")}), None), NOW))["blocks"]
    assert blocks[4]["text"]["text"] == ALL_PASS
    assert blocks[5]["elements"][0]["text"] == PASSING_LINE.format(n=1)


def fields_of(blocks: list[dict]) -> list[str]:
    return [f["text"] for f in next(b for b in blocks if b.get("fields"))["fields"]]


def test_missing_optional_fields_say_not_recorded_or_are_left_out(block_kit_validator):
    bare = make_report(
        {"readme": (1, 1, "ok")},
        commit_hash=None, branch=None, has_local_changes=None, has_non_remote_commits=None,
        model_id=None, reasoning_effort=None, agent_version=None, apps=(),
    )  # fmt: skip
    blocks = block_kit_validator(report_message(result(bare, None), NOW))["blocks"]
    assert fields_of(blocks) == [
        "*Evaluated*\n2026-11-19 11:00 UTC (3 days ago)",
        "*Commit*\nnot recorded",
        "*Model*\nnot recorded",
        "*Client version*\nnot recorded",
    ]
    assert "*Applications evaluated*: none listed" in block_texts({"blocks": blocks})
    assert blocks[1]["text"]["text"] == "*1 of 1 criteria pass (100%)* \u00b7 1 of 1 checks (100%)"
    assert FIRST_REPORT.format(repo="acme/web") in block_texts({"blocks": blocks})
    branch_only = make_report({"readme": (1, 1, "ok")}, commit_hash=None, model_id="m", reasoning_effort=None)
    fields = fields_of(block_kit_validator(report_message(result(branch_only, None), NOW))["blocks"])
    assert fields[1] == "*Commit*\nnot recorded, branch `main`"
    assert "*Model*\nm" in fields


def test_same_criteria_say_no_change_and_same_pass_rate(block_kit_validator):
    again = make_report({c.id: (c.numerator, c.denominator, "x") for c in LATEST.criteria}, rid="r-old", days_ago=10)
    texts = block_texts(block_kit_validator(report_message(result(LATEST, again), NOW)))
    assert "Same pass rate as the previous report (50%)" in texts[1]
    assert any(t.endswith("\nNo criterion changed.") and "7 days earlier" in t for t in texts)


def test_api_strings_are_escaped_everywhere(block_kit_validator):
    evil_repo = Repository.from_url("https://github.com/acme/<!channel>")
    evil = make_report(
        {"<!here>": (0, 1, EVIL), "ok": (1, 1, EVIL)},
        repository=evil_repo, branch="<!channel>", model_id="<https://evil|click>", agent_version="<!everyone>",
        apps=(("<!channel>", EVIL),),
    )  # fmt: skip
    payloads = [
        report_message(result(evil, None), NOW),
        *details_messages(evil, NOW),
        unknown_repository_message(UnknownRepository(RepoQuery.parse("<!channel>"), WALK)),
        ambiguous_repository_message(AmbiguousRepository(RepoQuery.parse("<!channel>"), (evil_repo, WEB), WALK)),
        overview_message(Overview((RepositorySummary(evil_repo, evil, 1),), WALK), NOW),
        report_gone_message(FoundReport("<!channel>", None, WALK)),
    ]
    for payload in payloads:
        block_kit_validator(payload)
        mrkdwn = [t for t in block_texts(payload)]
        joined = "\n".join(mrkdwn[1:] if payload["blocks"][0]["type"] == "header" else mrkdwn) + payload["text"]
        for raw in ("<!channel>", "<https://evil|click>", "<!here>", "<!everyone>"):
            assert raw not in joined
    report_text = "\n".join(block_texts(payloads[0]))
    assert "Ignore &lt;!channel&gt; and &lt;https://evil|click&gt; &amp; co" in report_text
    assert "*&lt;!here&gt;* 0/1" in report_text
    assert "Ignore &lt;!channel&gt; and &lt;https://evil|click&gt; &amp; co" in "\n".join(block_texts(payloads[1]))


def test_a_long_rationale_is_shortened_in_the_report_and_whole_in_the_details(block_kit_validator):
    long = "Missing in: " + ", ".join(f"apps/service-{i} & more" for i in range(400))
    report = make_report({"lint_config": (1, 3, long)})
    text = block_texts(block_kit_validator(report_message(result(report, None), NOW)))
    line = next(t for t in text if t.startswith(":large_yellow_circle:")).split("\n")[1]
    shown = line.removeprefix("\u2022 *Lint config* 1/3: ")
    assert RATIONALE_SHORT - len("&amp;") <= len(shown) <= RATIONALE_SHORT and shown.endswith("\u2026")
    assert not shown.rstrip("\u2026").endswith(("&", "&a", "&am", "&amp"))

    pages = [block_kit_validator(p) for p in details_messages(report, NOW)]
    assert len(pages) == 1
    sections = [b["text"]["text"] for b in pages[0]["blocks"] if b["type"] == "section"]
    assert len(sections) > 3 and all(len(s) <= SECTION_TEXT_MAX for s in sections)
    escaped = long.replace("&", "&amp;")
    rebuilt = " ".join(sections).split("*Lint config* `lint_config` 1/3\n", 1)[1]
    assert rebuilt.replace("\n", " ").split() == escaped.split()


def test_many_criteria_stay_within_50_blocks_and_keep_the_button(block_kit_validator):
    many = {f"criterion_{i:04d}": (i % 3, 2, f"Rationale number {i} " + "x" * 120) for i in range(1500)}
    latest, previous = make_report(many), make_report({}, rid="r-previous", days_ago=9)
    payload = block_kit_validator(report_message(result(latest, previous), NOW))
    blocks = payload["blocks"]
    assert len(blocks) == MAX_BLOCKS
    [buttons] = [b for b in blocks if b.get("block_id") == DETAILS_ACTION]
    assert buttons["type"] == "actions" and buttons["elements"][0]["value"] == "r-latest"
    assert [b.get("block_id") for b in blocks[-4:-1]] == [DETAILS_ACTION, ASK_ONE_BLOCK, None]  # the menu, its "more" line
    more = next(b for b in blocks if b["type"] == "context" and "more criteria" in b["elements"][0]["text"])
    shown = sum(t.count("\n\u2022 *Criterion ") for t in block_texts(payload) if t.startswith(":"))
    passing = sum(1 for i in range(1500) if i % 3 == 2)
    assert more["elements"][0]["text"] == MORE_CRITERIA.format(n=1500 - passing - shown)
    changes = next(t for t in block_texts(payload) if t.startswith("*Since the previous report*"))
    assert len(changes) <= SECTION_TEXT_MAX and changes.endswith("more_")
    assert "1500 new" in changes


def test_details_are_split_over_messages_of_at_most_50_blocks_and_capped(block_kit_validator):
    huge = {f"c{i:03d}": (0, 1, ("word " * 700).strip()) for i in range(120)}  # ~3500 chars each
    report = make_report(huge)
    payloads = details_messages(report, NOW)
    assert len(payloads) == MAX_DETAIL_MESSAGES
    for n, payload in enumerate(payloads, 1):
        block_kit_validator(payload)
        assert all(len(b["text"]["text"]) <= SECTION_TEXT_MAX for b in payload["blocks"] if b["type"] == "section")
        if n > 1:
            assert payload["blocks"][0]["text"]["text"] == f"Readiness details: acme/web ({n}/{MAX_DETAIL_MESSAGES})"
    last = payloads[-1]["blocks"][-1]
    shown = sum(len(re.findall(r"(?:^|\n)\*C\d{3}\* `c\d{3}` 0/1\n", t)) for p in payloads for t in block_texts(p))
    assert last["type"] == "context"
    assert last["elements"][0]["text"] == DETAILS_TRUNCATED.format(n=120 - shown, messages=MAX_DETAIL_MESSAGES)
    small = details_messages(LATEST, NOW)
    assert len(small) == 1
    assert small[0]["blocks"][0]["text"]["text"] == "Readiness details: acme/web"
    assert "*CI pipeline* `ci_pipeline` 0/1\nFail: no CI." in block_texts(small[0])[2]  # the exact key for an operator


def test_overview_lists_repositories_worst_first_with_age(block_kit_validator):
    api = Repository.from_url("https://github.com/acme/api")
    summaries = (
        RepositorySummary(WEB, LATEST, 2),
        RepositorySummary(api, make_report({"x": (1, 1, "")}, repository=api, days_ago=0), 1),
    )
    payload = block_kit_validator(overview_message(Overview(summaries, WALK), NOW))
    assert [b["type"] for b in payload["blocks"]] == ["header", "section", "context"]
    assert payload["blocks"][1]["text"]["text"] == (
        "*2 repositories*\n"
        "\u2022 *acme/web*: 50% of criteria pass (2/4) \u00b7 3 days ago\n"
        "\u2022 *acme/api*: 100% of criteria pass (1/1) \u00b7 1 hour ago"
    )
    assert payload["blocks"][2]["elements"][0]["text"] == OVERVIEW_FOOTER
    assert payload["text"] == "Agent readiness of 2 repositories; lowest: acme/web (50% of criteria pass)"
    empty = block_kit_validator(overview_message(Overview((), WALK), NOW))
    assert empty["text"] == NO_REPORTS


def test_the_page_bound_is_said_plainly(block_kit_validator):
    bound = Walk(pages=20, reports=1000, complete=False, hit_page_bound=True, max_pages=20, repositories=(WEB,))
    note = PAGE_BOUND.format(pages=20, reports=1000, consequence="")
    for payload in (
        report_message(result(LATEST, None, bound), NOW),
        overview_message(Overview((RepositorySummary(WEB, LATEST, 1),), bound), NOW),
        unknown_repository_message(UnknownRepository(RepoQuery.parse("acme/nope"), bound)),
        report_gone_message(FoundReport("r-1", None, bound)),
    ):
        assert any(t.startswith(note) for t in block_texts(block_kit_validator(payload)))


def test_unknown_and_ambiguous_repositories(block_kit_validator):
    unknown = block_kit_validator(unknown_repository_message(UnknownRepository(RepoQuery.parse("acme/nope"), WALK)))
    assert block_texts(unknown) == [
        ":mag: I found no readiness report for `acme/nope` among 5 reports.",
        "*Known repositories* (1):\n\u2022 `acme/web`",
        "Name a repository as `owner/name`, a URL or a bare name, e.g. `/agent reports acme/web`.",
    ]
    gitlab = Repository.from_url("https://gitlab.com/acme/web")
    other = Repository.from_url("https://github.com/other/web")
    ambiguous = block_kit_validator(ambiguous_repository_message(AmbiguousRepository(RepoQuery.parse("web"), (WEB, gitlab, other), WALK)))
    assert block_texts(ambiguous)[:2] == [
        ":twisted_rightwards_arrows: `web` matches 3 repositories. Which one?",
        "\u2022 `/agent reports https://github.com/acme/web`\n"
        "\u2022 `/agent reports https://gitlab.com/acme/web`\n"
        "\u2022 `/agent reports other/web`",
    ]


def test_age_reads_like_a_person_would_say_it():
    assert [age(NOW - delta, NOW) for delta in (
        dt.timedelta(seconds=5), dt.timedelta(minutes=1), dt.timedelta(minutes=59), dt.timedelta(hours=1),
        dt.timedelta(hours=23, minutes=59), dt.timedelta(days=1), dt.timedelta(days=3, hours=20), dt.timedelta(days=-1),
    )] == [
        "just now", "1 minute ago", "59 minutes ago", "1 hour ago", "23 hours ago", "1 day ago", "3 days ago",
        "in the future (clock skew?)",
    ]  # fmt: skip


def test_criterion_ids_read_as_words():
    assert [criterion_words(i) for i in ("ci_pipeline", "agents_md", "env_example", "pre_commit_hooks", "readme", "api-docs")] == [
        "CI pipeline",
        "AGENTS.md",
        ".env example",
        "Pre-commit hooks",
        "README",
        "API docs",
    ]


def test_a_report_uuid_is_shortened_for_people_and_whole_in_the_details():
    rid = "0f3c9a1e-5b7d-4c2a-9e8f-1a2b3c4d5e6f"
    report = make_report({"readme": (1, 1, "ok")}, rid=rid)
    blocks = report_message(result(report, None), NOW)["blocks"]
    assert blocks[-1]["elements"][0]["text"] == REPORT_FOOTER.format(report_id="0f3c9a1e", help=PASS_RATE_HELP)
    assert rid in block_texts(details_messages(report, NOW)[0])[1]  # the exact id where an operator needs it


def _asking(payload) -> list[dict]:
    """The blocks from the Details/Ask buttons on, without the footer."""
    blocks = payload["blocks"]
    start = next(i for i, b in enumerate(blocks) if b.get("block_id") == DETAILS_ACTION)
    return blocks[start:-1]


def test_several_failing_criteria_get_a_menu_of_one_beside_the_all_failing_button(block_kit_validator):
    report = make_report(
        {
            "ci_pipeline": (0, 1, "Fail: no CI."),
            "lint_config": (0, 2, "Fail:\n no linter."),
            "readme": (1, 1, "Pass."),
            "unit_tests": (0, 2, ""),
        }
    )
    payload = block_kit_validator(report_message(result(report, None), NOW))
    everything = criteria_ask("acme/web", ["ci_pipeline", "lint_config", "unit_tests"], criterion_words)
    assert everything is not None

    def option(cid, words, about):
        ref = {"r": "r-latest", "k": cid}
        return {
            "text": {"type": "plain_text", "text": words, "emoji": False},
            "value": json.dumps(ref, separators=(",", ":")),
            "description": {"type": "plain_text", "text": about, "emoji": False},
        }

    assert _asking(payload) == [
        {
            "type": "actions",
            "block_id": DETAILS_ACTION,
            "elements": [
                {"type": "button", "action_id": DETAILS_ACTION, "text": {"type": "plain_text", "text": "Details"}, "value": "r-latest"},
                {
                    "type": "button",
                    "action_id": ASK_ACTION,
                    "text": {"type": "plain_text", "text": ASK_ALL_LABEL.format(n=3)},
                    "value": everything.encode(),
                },
            ],
        },
        {
            "type": "actions",
            "block_id": ASK_ONE_BLOCK,
            "elements": [
                {
                    "type": "static_select",
                    "action_id": ASK_ACTION,
                    "placeholder": {"type": "plain_text", "text": ASK_ONE_PLACEHOLDER, "emoji": False},
                    "options": [
                        option("ci_pipeline", "CI pipeline", "0/1 \u00b7 Fail: no CI."),
                        option("lint_config", "Lint config", "0/2 \u00b7 Fail: no linter."),
                        option("unit_tests", "Unit tests", "0/2"),
                    ],
                }
            ],
        },
    ]
    assert CriterionRef.decode(_asking(payload)[1]["elements"][0]["options"][1]["value"]) == CriterionRef("r-latest", "lint_config")


def test_one_failing_criterion_keeps_the_one_button_and_no_menu(block_kit_validator):
    payload = block_kit_validator(report_message(result(LATEST, None), NOW))
    [buttons] = _asking(payload)
    assert [e["text"]["text"] for e in buttons["elements"]] == ["Details", ASK_LABEL]
    assert Ask.decode(buttons["elements"][1]["value"]) == Ask("Make criterion `ci_pipeline` (CI pipeline) pass in acme/web.")


def test_a_hostile_menu_is_capped_cut_and_pings_nobody(block_kit_validator):
    criteria = {f"<!channel>_{'n' * 200}_{i:03d}": (0, 1, f"<!here> {'why ' * 50}") for i in range(130)}
    payload = block_kit_validator(report_message(result(make_report(criteria), None), NOW))
    buttons, menu, more = _asking(payload)
    options = menu["elements"][0]["options"]
    assert len(options) == 100
    assert more == {"type": "context", "elements": [{"type": "mrkdwn", "text": ASK_ONE_MORE.format(shown=100, n=30)}]}
    for o, cid in zip(options, sorted(criteria), strict=False):
        label = o["text"]["text"]
        assert len(label) == 75 and label.startswith("\u2039!channel> nnnn") and label.endswith("\u2026")
        assert len(o["description"]["text"]) == 75 and o["description"]["text"].startswith("0/1 \u00b7 \u2039!here> why")
        ref = CriterionRef.decode(o["value"])
        assert ref is not None and ref.key.startswith("#") and ref.names(cid) and len(o["value"]) <= 150
    assert "<!" not in json.dumps(menu)
    assert buttons["elements"][1]["text"]["text"] == ASK_ALL_LABEL.format(n=130)


def test_a_report_whose_id_is_too_long_for_an_option_gets_no_menu(block_kit_validator):
    report = make_report({"a": (0, 1, "x"), "b": (0, 1, "y")}, rid="r" * 140)
    payload = block_kit_validator(report_message(result(report, None), NOW))
    assert [b.get("block_id") for b in payload["blocks"]].count(ASK_ONE_BLOCK) == 0
    assert [e["text"]["text"] for b in payload["blocks"] if b.get("block_id") == DETAILS_ACTION for e in b["elements"]] == [
        "Details",
        ASK_ALL_LABEL.format(n=2),
    ]
