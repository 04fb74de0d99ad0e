"""Generated usage analytics: who was active each day and what they did, computed lazily from the seed.

Shape of the data (one organization, see :mod:`sandbox.agent_api.people`):

* Days run from 2026-01-14 (:data:`FIRST_DAY`) to the sandbox's yesterday. Every figure depends only on
  the seed, the organization and the day, never on ``today`` or on which request asked first.
* Activity: on a day, person *p* is active with probability ``propensity x ramp x rhythm``: the ramp grows
  from 35 % to 100 % over the 90 days after ``max(joined, FIRST_DAY)`` (adoption), weekends drop to 12 %
  (45 % for CI-automation people). The active set of a day is a bitmask (one bit per person, cached for
  every day asked: 10,000 people cost 1.25 KB a day), so weekly/monthly active users are real unions
  (bitwise OR) over the trailing 7/30 days, clipped at FIRST_DAY, and DAU <= WAU <= MAU always holds.
* Per active (day, person), one :class:`UserDay` in two stages. Activity figures (clients used, delegation
  level, sessions, messages, tool-call count, token volume) come from one RNG stream per day, so a whole
  day costs a few milliseconds even for 10,000 people; a person on two clients counts once in DAU and
  once in each client's breakdown. The breakdowns (:class:`Detail`: tool calls split over built-in and
  MCP tools named ``mcp__<server>__<tool>``, where some clients spell the server "GitHub" and others
  "github"; rare tool names with parsing artefacts, about 0.006 % of calls; skills, slash commands,
  hooks, files by extension and language, git commits/PRs, tokens per model of both tiers) come from an
  RNG seeded with ``blake2b(seed, day, person)`` and are drawn only when a row needs them.
* Whole days (:class:`DayData`: the day's UserDays and rows) live in a bounded LRU (``200,000 // users``
  days, at least 4); nothing is materialised days x users up front.
* Answers are served from each day's rows already encoded as JSON (:class:`EncodedDay`: every
  endpoint's row or grouped rows, and every active person's ``/users`` row), built in one pass the
  first time any endpoint asks for the day and kept in an LRU bounded by bytes
  (:data:`ENCODED_CACHE_BYTES`; about 5 MB a day at 10,000 people). A 30-day ``/tokens`` answer at
  10,000 people is then a join of 30 cached byte strings instead of 8-14 s of generation, so
  benchmarks measure the client, not the sandbox.

* A day can be made to surge (``POST /_sandbox/usage``, :class:`Surge`, :meth:`Dataset.surge`): one person
  uses many times their usual tokens, and maybe a model, MCP server or client nobody used before; the
  rest of the day stays as the seed made it.

Token figures, and the billable formula (spec: "input plus output tokens, with cache discounts
applied")::

    billable_tokens = input_tokens + output_tokens + cache_read_tokens / 10 + cache_write_tokens * 5 / 4

``input_tokens`` are uncached input tokens. Cache reads are generated as multiples of 10 and cache
writes as multiples of 4, so the formula is exact in integers at every level (per model, per person,
per day), and every sum (by_user, by_model, grouped rows, ``/users`` pages) adds up to the day's total.

Choices where the spec says "not shown": the items of ``by_user[].by_model`` have the same members as
the day's ``by_model`` items; ``autonomy_ratio_avg`` is the mean of the active people's ratios (p50/p90
the nearest-rank percentiles); ``tool_autonomy_level_ratio`` is the share of the day's tool calls made
under each delegation level (``spec`` counts as ``auto_medium``); file extensions carry their dot
(``.py``); slash-command names carry their slash (``/compact``); a day with nobody active still has a row
(zeros); grouped rows are ordered by date, then measure descending, then key.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
import random
import statistics
from bisect import bisect_left, bisect_right
from collections import Counter, OrderedDict
from dataclasses import dataclass, field

from .catalog import (
    ARTEFACT_TOOL_NAMES,
    BUILTIN_TOOLS,
    CLIENTS,
    DELEGATION_LEVELS,
    DOC_EXTENSIONS,
    EXTENSION_LANGUAGE,
    HOOKS,
    LANGUAGE_EXTENSIONS,
    MCP_TOOLS,
    MODELS,
    SLASH_COMMANDS,
    mcp_server,
)
from .people import Person
from .seeding import rng_for

FIRST_DAY = dt.date(2026, 1, 14)
ARTEFACT_RATE = 0.00006  # share of tool calls recorded under a garbled name
AUTONOMY_RANGES = {
    "auto-high": (6.0, 14.0),
    "auto-medium": (3.0, 7.0),
    "auto-low": (1.5, 3.5),
    "spec": (2.5, 6.0),
    "manual": (0.5, 1.5),
}
AUTONOMY_BUCKETS = {
    "auto-high": "auto_high",
    "auto-medium": "auto_medium",
    "spec": "auto_medium",
    "auto-low": "auto_low",
    "manual": "manual",
}
DAY_CACHE_USER_DAYS = 200_000
ENCODED_CACHE_BYTES = 1 << 30
"""Bytes of encoded day rows kept (LRU by day): about 200 days at 10,000 people."""
ROW_KINDS = ("tokens", "tokens:model", "tools", "tools:tool_name", "activity", "activity:client", "productivity")
"""Keys of :attr:`EncodedDay.rows`: an endpoint, or ``endpoint:group_by``."""


NEW_MODEL_TIER = "thinking"
"""The tier of a model that is not in the catalog (a surge's new model, :class:`Surge`)."""


def tier_of(model_id: str) -> str:
    """The tier of a catalog model, :data:`NEW_MODEL_TIER` for any other."""
    entry = MODELS.get(model_id)
    return entry[0] if entry else NEW_MODEL_TIER


def apportion(total: int, weights: dict[str, float]) -> dict[str, int]:
    """Split ``total`` over ``weights`` (largest remainder); keys with a zero share are left out."""
    weight_sum = sum(weights.values())
    if total <= 0 or weight_sum <= 0:
        return {}
    exact = {key: total * w / weight_sum for key, w in weights.items()}
    shares = {key: int(x) for key, x in exact.items()}
    leftover = total - sum(shares.values())
    for key in sorted(exact, key=lambda k: exact[k] - shares[k], reverse=True)[:leftover]:
        shares[key] += 1
    return {key: n for key, n in shares.items() if n}


@dataclass(frozen=True, slots=True)
class ModelUse:
    """Tokens of one person on one model on one day."""

    model_id: str
    input_tokens: int
    output_tokens: int
    cache_read_tokens: int  # multiple of 10
    cache_write_tokens: int  # multiple of 4

    @property
    def tier(self) -> str:
        return tier_of(self.model_id)

    @property
    def billable_tokens(self) -> int:
        return self.input_tokens + self.output_tokens + self.cache_read_tokens // 10 + self.cache_write_tokens * 5 // 4


@dataclass(frozen=True, slots=True)
class Detail:
    """The breakdowns of a :class:`UserDay`, drawn only when a row needs them."""

    tools: dict[str, int]
    models: tuple[ModelUse, ...]
    skills: dict[str, int]
    slash: dict[str, int]
    hooks: dict[int, int]
    extensions: dict[str, int]
    files_created: int
    files_edited: int
    git_commits: int
    git_prs: int


@dataclass(slots=True)
class UserDay:
    """What one active person did on one day: the activity figures, and :attr:`detail` on demand."""

    seed: int
    person: Person
    date: dt.date
    clients: tuple[str, ...]
    delegation: str
    sessions: int
    user_messages: int
    assistant_messages: int
    tool_calls: int
    scale: float  # the day's volume multiplier (tokens)
    _detail: Detail | None = None

    @property
    def detail(self) -> Detail:
        if self._detail is None:
            self._detail = generate_detail(self)
        return self._detail

    @property
    def mcp_calls(self) -> int:
        return sum(n for name, n in self.detail.tools.items() if mcp_server(name))

    @property
    def billable_tokens(self) -> int:
        return sum(m.billable_tokens for m in self.detail.models)

    @property
    def primary(self) -> ModelUse:
        return max(self.detail.models, key=lambda m: (m.billable_tokens, m.model_id))

    @property
    def autonomy_ratio(self) -> float:
        return round(self.tool_calls / self.user_messages, 2)

    def languages(self) -> Counter:
        counts: Counter = Counter()
        for ext, n in self.detail.extensions.items():
            counts[EXTENSION_LANGUAGE[ext]] += n
        return counts

    def user_row(self) -> dict:
        """The ``/users`` row."""
        detail, primary = self.detail, self.primary
        return {
            "user_id": self.person.id,
            "user_email": self.person.analytics_email,
            "date": self.date.isoformat(),
            "tool_calls": self.tool_calls,
            "billable_tokens": self.billable_tokens,
            "primary_model": primary.model_id,
            "primary_model_tier": primary.tier,
            "files_created": detail.files_created,
            "files_edited": detail.files_edited,
            "git_commits": detail.git_commits,
            "git_prs_created": detail.git_prs,
            "mcp_calls": self.mcp_calls,
            "skill_calls": sum(detail.skills.values()),
            "slash_commands": sum(detail.slash.values()),
            "hooks": sum(detail.hooks.values()),
            "sessions": self.sessions,
            "messages": self.user_messages + self.assistant_messages,
            "user_messages": self.user_messages,
            "assistant_messages": self.assistant_messages,
            "autonomy_ratio": self.autonomy_ratio,
            "delegation_level": self.delegation,
            "languages": _ranked_keys(self.languages()),
        }


def generate_activity(seed: int, people: list[Person], day: dt.date, active: list[int]) -> list[UserDay]:
    """The activity figures of the day's ``active`` people (index order), from one RNG stream per day."""
    rng = rng_for(seed, "activity", day.toordinal())
    weekend = day.weekday() >= 5
    user_days = []
    for index in active:
        person = people[index]
        clients = tuple(c for c, odds in zip(CLIENTS, person.client_odds, strict=True) if rng.random() < odds)
        delegation = person.delegation if rng.random() < 0.85 else rng.choice(DELEGATION_LEVELS)
        scale = person.intensity * rng.lognormvariate(0.0, 0.45) * (0.6 if weekend else 1.0)
        sessions = max(1, round(scale**0.6 * rng.uniform(0.6, 1.4)))
        user_messages = sessions * rng.randint(2, 9)
        user_days.append(
            UserDay(
                seed=seed,
                person=person,
                date=day,
                clients=clients or (max(zip(person.client_odds, CLIENTS, strict=True))[1],),
                delegation=delegation,
                sessions=sessions,
                user_messages=user_messages,
                assistant_messages=user_messages + rng.randint(0, user_messages),
                tool_calls=round(user_messages * rng.uniform(*AUTONOMY_RANGES[delegation])),
                scale=scale,
            )
        )
    return user_days


def generate_detail(ud: UserDay) -> Detail:
    """The breakdowns of one (day, person); an RNG of its own, so any row can be drawn alone."""
    rng = rng_for(ud.seed, "detail", ud.date.toordinal(), ud.person.index)
    person = ud.person
    tools = apportion(ud.tool_calls, _tool_weights(person, rng))
    if tools and rng.random() < ud.tool_calls * ARTEFACT_RATE:
        top = max(tools, key=tools.get)
        tools[top] -= 1
        tools[rng.choice(ARTEFACT_TOOL_NAMES)] = 1
        tools = {name: n for name, n in tools.items() if n}
    slash_names, slash_weights = zip(*SLASH_COMMANDS, strict=True)
    slash_count = int(ud.sessions * rng.uniform(0, 1.5))
    edits = tools.get("Edit", 0) + tools.get("MultiEdit", 0)
    files_edited = round(edits * rng.uniform(0.4, 0.8))
    files_created = round(tools.get("Write", 0) * rng.uniform(0.6, 1.0))
    git_commits = round((files_created + files_edited) / rng.uniform(4, 12))
    return Detail(
        tools=tools,
        models=_model_uses(person, ud.scale, rng),
        skills={s: n for s in person.skills if (n := int(rng.expovariate(1.0) * 0.4 * ud.sessions))},
        slash=dict(Counter(rng.choices(slash_names, slash_weights, k=slash_count))),
        hooks={h: n for h in person.hooks if (n := _hook_count(h, tools, ud, rng))},
        extensions=apportion(files_created + files_edited, _extension_weights(person, rng)),
        files_created=files_created,
        files_edited=files_edited,
        git_commits=git_commits,
        git_prs=round(git_commits * rng.uniform(0.1, 0.4)),
    )


@dataclass(frozen=True, slots=True)
class Surge:
    """A made-up day of one person (``POST /_sandbox/usage``, :meth:`Dataset.surge`): person ``person``
    (index) is active that day, with ``factor`` times the token volume the seed gives them; ``model``
    (any id; one outside the catalog has tier :data:`NEW_MODEL_TIER`) is used for about a third as
    many tokens as their primary model; ``mcp_server`` gets :data:`SURGE_MCP_CALLS` calls
    (``mcp__<server>__query``); ``client`` is one more client they used (may be outside
    :data:`~sandbox.agent_api.catalog.CLIENTS`)."""

    person: int
    factor: float
    model: str | None = None
    mcp_server: str | None = None
    client: str | None = None


SURGE_MCP_CALLS = 25


def apply_surge(ud: UserDay, surge: Surge) -> None:
    """Make ``ud`` the surged day ``surge`` describes (in place; its detail is drawn now)."""
    ud.scale *= surge.factor
    if surge.client and surge.client not in ud.clients:
        ud.clients = (*ud.clients, surge.client)
    detail = generate_detail(ud)
    models = detail.models
    if surge.model and all(use.model_id != surge.model for use in models):
        top = max(models, key=lambda m: (m.billable_tokens, m.model_id))
        extra = ModelUse(
            surge.model, top.input_tokens // 2, top.output_tokens // 2, top.cache_read_tokens // 20 * 10, top.cache_write_tokens // 8 * 4
        )
        models = (*models, extra)
    tools = dict(detail.tools)
    if surge.mcp_server:
        name = f"mcp__{surge.mcp_server}__query"
        tools[name] = tools.get(name, 0) + SURGE_MCP_CALLS
        ud.tool_calls += SURGE_MCP_CALLS
    ud._detail = dataclasses.replace(detail, models=models, tools=tools)


def _tool_weights(person: Person, rng: random.Random) -> dict[str, float]:
    weights = {name: w * rng.uniform(0.5, 1.5) for name, w in BUILTIN_TOOLS}
    for server in person.mcp_servers:
        for tool in MCP_TOOLS[server.lower()]:
            weights[f"mcp__{server}__{tool}"] = rng.uniform(0.3, 2.0)
    return weights


def _hook_count(hook: int, tools: dict[str, int], ud: UserDay, rng: random.Random) -> int:
    event = HOOKS[hook][0]
    if event == "PreToolUse":
        return tools.get("Bash", 0)
    if event == "PostToolUse":
        return tools.get("Edit", 0) + tools.get("Write", 0)
    if event == "Stop":
        return ud.user_messages
    if event == "Notification":
        return rng.randint(0, ud.user_messages // 2)
    return ud.sessions


def _extension_weights(person: Person, rng: random.Random) -> dict[str, float]:
    weights = {ext: weight * rng.uniform(0.3, 1.0) for ext, _, weight in DOC_EXTENSIONS}
    for language in person.languages:
        exts = LANGUAGE_EXTENSIONS[language]
        for ext in exts:
            weights[ext] = 8.0 / len(exts) * rng.uniform(0.5, 1.5)
    return weights


def _model_uses(person: Person, scale: float, rng: random.Random) -> tuple[ModelUse, ...]:
    others = [m for m in MODELS if m != person.primary_model]
    extra = rng.sample(others, rng.choices((0, 1, 2), (55, 35, 10))[0])
    primary_share = rng.uniform(0.65, 0.95) if extra else 1.0
    shares = {person.primary_model: primary_share}
    for model in extra:
        shares[model] = (1.0 - primary_share) / len(extra)
    volume = scale * 2_000_000 * rng.uniform(0.7, 1.3)
    uses = []
    for model, share in shares.items():
        tokens = volume * share
        output_rate = 0.03 if MODELS[model][0] == "thinking" else 0.015
        uses.append(
            ModelUse(
                model_id=model,
                input_tokens=int(tokens * 0.06),
                output_tokens=int(tokens * output_rate),
                cache_read_tokens=10 * int(tokens * 0.085),
                cache_write_tokens=4 * int(tokens * 0.075 / 4),
            )
        )
    return tuple(uses)


def _ranked_keys(counts: dict[str, int]) -> list[str]:
    return [key for key, _ in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))]


def _ranked(counts: dict, key: str, measure: str) -> list[dict]:
    return [{key: k, measure: n} for k, n in sorted(counts.items(), key=lambda kv: (-kv[1], str(kv[0])))]


def _percentile(sorted_values: list[float], percent: int) -> float:
    """Nearest-rank percentile of an ascending list (0 for an empty list)."""
    if not sorted_values:
        return 0.0
    rank = max(1, -(-percent * len(sorted_values) // 100))
    return sorted_values[rank - 1]


def _ratio(numerator: float, denominator: float, digits: int = 2) -> float:
    return round(numerator / denominator, digits) if denominator else 0.0


@dataclass
class DayData:
    """One day: every active person's :class:`UserDay` and the day's analytics rows (built on demand)."""

    date: dt.date
    user_days: list[UserDay]
    weekly_active_users: int
    monthly_active_users: int
    _rows: dict[str, dict] = field(default_factory=dict, repr=False)

    def user_day(self, index: int) -> UserDay:
        """The UserDay of active person ``index`` (user_days is in index order)."""
        return self.user_days[bisect_left(self.user_days, index, key=lambda ud: ud.person.index)]

    def _memo(self, name: str, build) -> dict:
        if name not in self._rows:
            self._rows[name] = build()
        return self._rows[name]

    # -- /tokens -------------------------------------------------------------------------------
    def tokens_row(self) -> dict:
        return self._memo("tokens", self._tokens_row)

    def _tokens_row(self) -> dict:
        per_model: dict[str, list[int]] = {}
        cache_read = cache_write = 0
        by_user = []
        for ud in self.user_days:
            for use in ud.detail.models:
                sums = per_model.setdefault(use.model_id, [0, 0, 0])
                sums[0] += use.billable_tokens
                sums[1] += use.input_tokens
                sums[2] += use.output_tokens
                cache_read += use.cache_read_tokens
                cache_write += use.cache_write_tokens
            by_user.append(
                {
                    "user_id": ud.person.id,
                    "user_email": ud.person.analytics_email,
                    "billable_tokens": ud.billable_tokens,
                    "by_model": [_model_item(u.model_id, u.billable_tokens, u.input_tokens, u.output_tokens) for u in ud.detail.models],
                }
            )
        by_model = [_model_item(m, *sums) for m, sums in sorted(per_model.items(), key=lambda kv: (-kv[1][0], kv[0]))]
        return {
            "date": self.date.isoformat(),
            "billable_tokens": sum(item["billable_tokens"] for item in by_model),
            "input_tokens": sum(item["input_tokens"] for item in by_model),
            "output_tokens": sum(item["output_tokens"] for item in by_model),
            "cache_read_tokens": cache_read,
            "cache_write_tokens": cache_write,
            "by_model": by_model,
            "by_user": sorted(by_user, key=lambda u: (-u["billable_tokens"], u["user_id"])),
        }

    def tokens_by_model(self) -> list[dict]:
        return [
            {
                "date": self.date.isoformat(),
                "group_key": item["model_id"],
                "billable_tokens": item["billable_tokens"],
                "input_tokens": item["input_tokens"],
                "output_tokens": item["output_tokens"],
            }
            for item in self.tokens_row()["by_model"]
        ]

    # -- /tools --------------------------------------------------------------------------------
    def tools_row(self) -> dict:
        return self._memo("tools", self._tools_row)

    def _tools_row(self) -> dict:
        tools, skills, slash, hooks, servers = Counter(), Counter(), Counter(), Counter(), Counter()
        levels = dict.fromkeys(("auto_high", "auto_medium", "auto_low", "manual"), 0)
        sessions = user_messages = 0
        for ud in self.user_days:
            tools.update(ud.detail.tools)
            skills.update(ud.detail.skills)
            slash.update(ud.detail.slash)
            hooks.update(ud.detail.hooks)
            levels[AUTONOMY_BUCKETS[ud.delegation]] += ud.tool_calls
            sessions += ud.sessions
            user_messages += ud.user_messages
        for name, n in tools.items():
            if server := mcp_server(name):
                servers[server] += n
        tool_calls = sum(tools.values())
        ratios = sorted(ud.autonomy_ratio for ud in self.user_days)
        return {
            "date": self.date.isoformat(),
            "tool_calls": tool_calls,
            "by_tool": _ranked(tools, "tool", "invocations"),
            "mcp_users_with_mcp": sum(1 for ud in self.user_days if ud.mcp_calls),
            "mcp_by_server": _ranked(servers, "server", "invocations"),
            "skills_invocations": sum(skills.values()),
            "skills_by_name": _ranked(skills, "name", "count"),
            "slash_commands_invocations": sum(slash.values()),
            "slash_commands_by_name": _ranked(slash, "name", "count"),
            "hooks_invocations": sum(hooks.values()),
            "hooks_by_event": [
                {"event": HOOKS[h][0], "matcher": HOOKS[h][1], "command": HOOKS[h][2], "count": n}
                for h, n in sorted(hooks.items(), key=lambda kv: (-kv[1], kv[0]))
            ],
            "web_users": sum(1 for ud in self.user_days if "web" in ud.clients),
            "autonomy_ratio_avg": round(statistics.fmean(ratios), 2) if ratios else 0.0,
            "autonomy_ratio_p50": _percentile(ratios, 50),
            "autonomy_ratio_p90": _percentile(ratios, 90),
            "tool_calls_per_session_avg": _ratio(tool_calls, sessions),
            "user_turns_per_session_avg": _ratio(user_messages, sessions),
            "tool_autonomy_level_ratio": {k: _ratio(n, tool_calls, 4) for k, n in levels.items()},
        }

    def tools_by_tool_name(self) -> list[dict]:
        return [
            {"date": self.date.isoformat(), "group_key": item["tool"], "tool_calls": item["invocations"]}
            for item in self.tools_row()["by_tool"]
        ]

    # -- /activity -----------------------------------------------------------------------------
    def activity_row(self) -> dict:
        return self._memo("activity", self._activity_row)

    def _activity_row(self) -> dict:
        by_client = dict.fromkeys(CLIENTS, 0)
        for ud in self.user_days:
            for client in ud.clients:
                by_client[client] = by_client.get(client, 0) + 1  # a surge's client may be new
        user_messages = sum(ud.user_messages for ud in self.user_days)
        return {
            "date": self.date.isoformat(),
            "daily_active_users": len(self.user_days),
            "weekly_active_users": self.weekly_active_users,
            "monthly_active_users": self.monthly_active_users,
            "daily_active_users_by_client": by_client,
            "sessions": sum(ud.sessions for ud in self.user_days),
            "messages": user_messages + sum(ud.assistant_messages for ud in self.user_days),
            "user_messages": user_messages,
        }

    def activity_by_client(self) -> list[dict]:
        by_client = self.activity_row()["daily_active_users_by_client"]
        return [
            {"date": self.date.isoformat(), "group_key": client, "daily_active_users": n}
            for client, n in sorted(by_client.items(), key=lambda kv: (-kv[1], kv[0]))
        ]

    # -- /productivity -------------------------------------------------------------------------
    def productivity_row(self) -> dict:
        return self._memo("productivity", self._productivity_row)

    def _productivity_row(self) -> dict:
        extensions, languages = Counter(), Counter()
        for ud in self.user_days:
            extensions.update(ud.detail.extensions)
            languages.update(ud.languages())
        return {
            "date": self.date.isoformat(),
            "files_created": sum(ud.detail.files_created for ud in self.user_days),
            "files_edited": sum(ud.detail.files_edited for ud in self.user_days),
            "by_extension": _ranked(extensions, "extension", "count"),
            "by_language": _ranked(languages, "language", "count"),
            "git_commits": sum(ud.detail.git_commits for ud in self.user_days),
            "git_prs_created": sum(ud.detail.git_prs for ud in self.user_days),
        }


def _model_item(model_id: str, billable: int, input_tokens: int, output_tokens: int) -> dict:
    return {
        "model_id": model_id,
        "model_tier": tier_of(model_id),
        "billable_tokens": billable,
        "input_tokens": input_tokens,
        "output_tokens": output_tokens,
    }


def _encode(value: object) -> bytes:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode()


@dataclass
class EncodedDay:
    """One day's answers as JSON fragments: ``rows[kind]`` is the ungrouped row or the grouped rows
    joined by commas (``b""`` for none); ``users[index]`` is person ``index``'s ``/users`` row."""

    rows: dict[str, bytes]
    users: dict[int, bytes]

    @property
    def size(self) -> int:
        return sum(map(len, self.rows.values())) + sum(map(len, self.users.values()))

    @classmethod
    def of(cls, data: DayData) -> EncodedDay:
        grouped = {
            "tokens:model": data.tokens_by_model,
            "tools:tool_name": data.tools_by_tool_name,
            "activity:client": data.activity_by_client,
        }
        rows = {
            "tokens": _encode(data.tokens_row()),
            "tools": _encode(data.tools_row()),
            "activity": _encode(data.activity_row()),
            "productivity": _encode(data.productivity_row()),
        }
        rows |= {kind: b",".join(map(_encode, build())) for kind, build in grouped.items()}
        users = {ud.person.index: _encode(ud.user_row()) for ud in data.user_days}
        return cls(rows, users)


def _bit_indices(mask: int) -> list[int]:
    return [i for i, bit in enumerate(bin(mask)[:1:-1]) if bit == "1"]


class Dataset:
    """Lazily generated analytics of ``people`` for the given seed (see the module docstring)."""

    def __init__(self, seed: int, people: list[Person]) -> None:
        self.seed = seed
        self.people = people
        self._ids = [p.id for p in people]
        # per person: (joined ordinal, adoption-ramp start ordinal, propensity, weekend factor)
        self._odds = [
            (
                p.joined.toordinal(),
                max(p.joined, FIRST_DAY).toordinal(),
                p.propensity,
                0.45 if p.client_odds[2] >= 0.5 else 0.12,
            )
            for p in people
        ]
        self._masks: dict[dt.date, int] = {}
        self._days: OrderedDict[dt.date, DayData] = OrderedDict()
        self.day_cache_size = max(4, DAY_CACHE_USER_DAYS // len(people))
        self._encoded: OrderedDict[dt.date, EncodedDay] = OrderedDict()
        self._encoded_bytes = 0
        self.encoded_cache_bytes = ENCODED_CACHE_BYTES
        self.surges: dict[dt.date, Surge] = {}
        self._seed_masks: dict[dt.date, int] = {}  # a surged day's active set as the seed drew it

    # -- active sets -------------------------------------------------------------------------------
    def active_mask(self, day: dt.date) -> int:
        """Bit i set when person i was active on ``day`` (0 before FIRST_DAY); cached for every day."""
        if day < FIRST_DAY:
            return 0
        mask = self._masks.get(day)
        if mask is None:
            draw = rng_for(self.seed, "active", day.toordinal()).random
            ordinal, weekend = day.toordinal(), day.weekday() >= 5
            bits = bytearray((len(self.people) + 7) // 8)
            for index, (joined, ramp_start, propensity, weekend_factor) in enumerate(self._odds):
                odds = propensity * min(1.0, 0.35 + 0.65 * (ordinal - ramp_start) / 90)
                if draw() < (odds * weekend_factor if weekend else odds) and ordinal >= joined:
                    bits[index >> 3] |= 1 << (index & 7)
            mask = self._masks[day] = int.from_bytes(bits, "little")
        return mask

    def active_count(self, day: dt.date, window: int = 1) -> int:
        """People active on at least one of the ``window`` days ending with ``day``."""
        mask = 0
        for back in range(window):
            mask |= self.active_mask(day - dt.timedelta(days=back))
        return mask.bit_count()

    # -- days ----------------------------------------------------------------------------------------
    def _build(self, day: dt.date) -> DayData:
        """The day's data from the seed, with the day's :class:`Surge` applied. The surged person's
        activity, when the seed left them out that day, is drawn on its own, so nobody else's
        figures change."""
        surge = self.surges.get(day)
        if surge is None:
            user_days = generate_activity(self.seed, self.people, day, _bit_indices(self.active_mask(day)))
        else:
            seed_mask = self._seed_masks[day]
            user_days = generate_activity(self.seed, self.people, day, _bit_indices(seed_mask))
            if seed_mask >> surge.person & 1:
                surged = next(ud for ud in user_days if ud.person.index == surge.person)
            else:
                [surged] = generate_activity(self.seed, self.people, day, [surge.person])
                user_days = sorted([*user_days, surged], key=lambda ud: ud.person.index)
            apply_surge(surged, surge)
        return DayData(
            date=day,
            user_days=user_days,
            weekly_active_users=self.active_count(day, 7),
            monthly_active_users=self.active_count(day, 30),
        )

    def surge(self, day: dt.date, surge: Surge) -> None:
        """Make ``day`` the day ``surge`` describes from now on (replacing an earlier surge of that
        day); the day's cached rows are dropped. Other days are untouched, but the surged person
        counts as active in the weekly and monthly active users of ``day``."""
        seed_mask = self._seed_masks.setdefault(day, self.active_mask(day))
        self.surges[day] = surge
        self._masks[day] = seed_mask | 1 << surge.person
        self._days.pop(day, None)
        dropped = self._encoded.pop(day, None)
        if dropped is not None:
            self._encoded_bytes -= dropped.size

    def day(self, day: dt.date) -> DayData:
        """The day's data (LRU-cached); breakdowns are drawn when a row first needs them."""
        cached = self._days.get(day)
        if cached is not None:
            self._days.move_to_end(day)
            return cached
        data = self._build(day)
        self._days[day] = data
        while len(self._days) > self.day_cache_size:
            self._days.popitem(last=False)
        return data

    def encoded(self, day: dt.date) -> EncodedDay:
        """The day's answers as JSON fragments (LRU by bytes, see the module docstring)."""
        cached = self._encoded.get(day)
        if cached is not None:
            self._encoded.move_to_end(day)
            return cached
        data = self._days.get(day)
        if data is None:  # built for the encoding only, not kept in the DayData LRU as well
            data = self._build(day)
        encoded = self._encoded[day] = EncodedDay.of(data)
        self._encoded_bytes += encoded.size
        while self._encoded_bytes > self.encoded_cache_bytes and len(self._encoded) > 1:
            _, dropped = self._encoded.popitem(last=False)
            self._encoded_bytes -= dropped.size
        return encoded

    def encoded_rows(self, kind: str, start: dt.date, end: dt.date) -> bytes:
        """The ``data`` array of an endpoint's answer for ``start..end`` (``kind``: :data:`ROW_KINDS`)."""
        parts = (self.encoded(start + dt.timedelta(days=n)).rows[kind] for n in range((end - start).days + 1))
        return b"[" + b",".join(part for part in parts if part) + b"]"

    def encoded_user_rows(self, start: dt.date, end: dt.date, limit: int, cursor: str | None) -> tuple[bytes, str | None]:
        """:meth:`user_rows` as the encoded ``data`` array (same rows, same order, same cursor)."""
        days = [start + dt.timedelta(days=n) for n in range((end - start).days + 1)]
        union = 0
        for day in days:
            union |= self.active_mask(day)
        first = bisect_right(self._ids, cursor) if cursor is not None else 0
        candidates = _bit_indices(union >> first << first)
        page = candidates[:limit]
        encoded = [self.encoded(day).users for day in days]
        rows = [users[index] for index in page for users in encoded if index in users]
        more = len(candidates) > limit
        return b"[" + b",".join(rows) + b"]", (self.people[page[-1]].id if more else None)

    # -- /users ----------------------------------------------------------------------------------------
    def user_rows(self, start: dt.date, end: dt.date, limit: int, cursor: str | None) -> tuple[list[dict], str | None]:
        """One ``/users`` page: every row (one per active day) of the next ``limit`` people after ``cursor``.

        People are walked in ID order; a person with no active day in the range is skipped. Returns the
        rows (by user ID, then date) and the next cursor (the page's last user ID), or None at the end.
        """
        days = [start + dt.timedelta(days=n) for n in range((end - start).days + 1)]
        union = 0
        for day in days:
            union |= self.active_mask(day)
        first = bisect_right(self._ids, cursor) if cursor is not None else 0
        candidates = _bit_indices(union >> first << first)
        page = candidates[:limit]
        rows_by_person: dict[int, list[dict]] = {index: [] for index in page}
        for day in days:  # each day once: a long range may not fit the day cache
            mask = self.active_mask(day)
            members = [index for index in page if mask >> index & 1]
            data = self.day(day) if members else None
            for index in members:
                rows_by_person[index].append(data.user_day(index).user_row())
        rows = [row for index in page for row in rows_by_person[index]]
        more = len(candidates) > limit
        return rows, (self.people[page[-1]].id if more else None)
