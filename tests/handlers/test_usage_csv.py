"""``/agent usage <period> [by <dimension>] csv`` (issue #30): the table as a CSV file in the asker's
DM, compared whole with what the sandbox's own answers give; formula cells neutralised."""

from __future__ import annotations

import csv
import datetime as dt
import io

from bot.services.periods import Period
from bot.services.usage import DAY_COLUMNS, UsageTable
from formatters.blocks import message, section
from formatters.usage import usage_csv
from handlers.usage import CSV_COMMENT, CSV_OF_ORGANIZATION, CSV_SENT
from tests.conftest import error_reply, sandbox_get
from tests.inprocess import inprocess_fixture

stack = inprocess_fixture()


def _expected(rows: list[list[str]]) -> bytes:
    out = io.StringIO()
    csv.writer(out, lineterminator="\r\n").writerows(rows)
    return ("\ufeff" + out.getvalue()).encode()


def _number(value) -> str:
    if value is None:
        return ""
    return str(int(value)) if float(value).is_integer() else repr(value)


def test_usage_7d_csv_sends_one_row_per_day_with_every_figure(stack):
    reply = stack.command("usage 7d csv", user="U0MANAGER")
    summary, sent = reply.payloads
    assert summary["blocks"][0]["text"]["text"] == "Agent usage: 2026-11-15 \u2013 2026-11-21 (7 days)"
    assert sent == {**message([section(CSV_SENT)], CSV_SENT), "response_type": "ephemeral"}
    table = stack.slack.recorder.files("D0MANAGER")[-1]
    assert table.filename == "agent-usage-2026-11-15-2026-11-21.csv"
    assert table.initial_comment == CSV_COMMENT.format(title="Agent usage per day, 2026-11-15 \u2013 2026-11-21 (7 days)", row="day")
    answers = {
        endpoint: {
            row["date"]: row
            for row in sandbox_get(stack, f"/api/v1/analytics/{endpoint}", startDate="2026-11-15", endDate="2026-11-21")["data"]
        }
        for endpoint in ("tokens", "activity", "tools", "productivity")
    }
    rows = [["date", *(name for _, name in DAY_COLUMNS)]]
    for n in range(7):
        day = (dt.date(2026, 11, 15) + dt.timedelta(days=n)).isoformat()
        rows.append([day, *(_number(answers[endpoint][day].get(name)) for endpoint, name in DAY_COLUMNS)])
    assert table.content == _expected(rows)


def test_usage_30d_by_model_csv_sends_every_model_with_its_share(stack):
    stack.command("usage 30d by model csv", user="U0MANAGER")
    table = stack.slack.recorder.files("D0MANAGER")[-1]
    assert table.filename == "agent-usage-by-model-2026-10-23-2026-11-21.csv"
    grouped = sandbox_get(stack, "/api/v1/analytics/tokens", startDate="2026-10-23", endDate="2026-11-21", group_by="model")["data"]
    sums: dict[str, float] = {}
    for row in grouped:
        sums[row["group_key"]] = sums.get(row["group_key"], 0.0) + row["billable_tokens"]
    total = sum(sums.values())
    ranked = sorted(sums.items(), key=lambda kv: (-kv[1], kv[0]))
    rows = [["model", "billable_tokens", "share"], *([name, _number(value), _number(round(value / total, 6))] for name, value in ranked)]
    assert table.content == _expected(rows)


def test_a_csv_of_one_person_is_refused_clearly(stack):
    reply = stack.command("usage me 7d csv", user="U0MANAGER")
    assert reply.payloads == [error_reply(CSV_OF_ORGANIZATION, "Example: `/agent usage 30d by user csv`.")]


def test_cells_a_spreadsheet_would_run_as_formulas_are_neutralised():
    period = Period(dt.date(2026, 11, 1), dt.date(2026, 11, 1))
    names = ['=HYPERLINK("http://x")', "+1+1", "-2", "@SUM(A1)", "\tTAB", "\rCR", 'plain, "quoted"\nline', "-", 5]
    table = UsageTable(
        period, "user", ("user", "billable_tokens", "share"), [(name, 12.0, 0.5) for name in names[:-1]] + [("ok", -3, None)]
    )
    assert (
        usage_csv(table)
        == (
            "\ufeffuser,billable_tokens,share\r\n"
            '"\'=HYPERLINK(""http://x"")",12,0.5\r\n'
            "'+1+1,12,0.5\r\n"
            "'-2,12,0.5\r\n"
            "'@SUM(A1),12,0.5\r\n"
            "'\tTAB,12,0.5\r\n"
            '"\'\rCR",12,0.5\r\n'
            '"plain, ""quoted""\nline",12,0.5\r\n'
            "'-,12,0.5\r\n"
            "ok,-3,\r\n"
        ).encode()
    )
