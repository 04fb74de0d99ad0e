"""The organization and its people: one organization, ``config.users`` people, reproducible from the seed.

The same people appear in ``GET /api/v0/organization/users`` and in analytics (analytics ``user_id`` is
the organization user ``id``). IDs are ``usr_`` plus the 1-based position, zero-padded to six digits, so
ID order is list order (``/users`` and v0 user pagination walk people in ID order).

Fixed people, the same for every seed (the first ``min(users, 5)`` of the organization):

===========  ==================  =====================  ========  =====================================
id           name                email                  role      usage shape
===========  ==================  =====================  ========  =====================================
usr_000001   Alice Anderson      alice@example.com      owner     heaviest user, active almost every weekday
usr_000002   Bob Baker           bob@example.com        manager   steady user
usr_000003   Carol Chen          carol@example.com      member    steady user, also on the web client
usr_000004   Dave Diaz           dave@example.com       member    light user
usr_000005   Erin Evans          erin@example.com       member    CI automation (non-interactive-cli)
===========  ==================  =====================  ========  =====================================

The others get ``firstname.lastname@example.com`` (a numeric suffix keeps e-mails unique in large
organizations), a Pareto-distributed intensity (a few heavy users, a long tail) and a join date.
Data-quality fact: people at positions 8, 24, 40, ... (``index % 16 == 7``) have ``user_email: null`` in
analytics (an SSO login without an e-mail claim); the organization list still has their e-mail.
``metadata`` is ``{"role": owner|manager|member, "team": ...}``; ``createdAt``/``lastSignInAt`` are
ISO 8601 strings (UTC, ``Z``).
"""

from __future__ import annotations

import datetime as dt
import random
from dataclasses import dataclass
from math import gcd

from .catalog import DELEGATION_LEVELS, HOOKS, LANGUAGES, MCP_TOOLS, MODELS, SKILLS
from .seeding import rng_for

ORG_ID = "org_acme_sandbox"
ORG_CREATED = dt.date(2025, 10, 1)

TEAMS = ("platform", "web", "mobile", "data", "infra", "payments", "search", "growth")
# a word list reads best as text (a list literal would be one name a line once formatted)
FIRST_NAMES = tuple(
    """
    Aaron Abigail Adam Aisha Alex Amara Andre Anna Ben Bianca Caleb Chloe Daniel Diana Elena Eli Emma
    Ethan Fatima Felix Grace Hana Hugo Ivan Isla Jack Jade James Julia Kai Kenji Laura Leo Lina Lucas
    Maya Mateo Mia Nadia Noah Nora Omar Olivia Pablo Priya Quinn Rafael Rosa Sam Sara Sofia Tariq Theo
    Uma Victor Wen Yara Yusuf Zoe Zain
    """.split()  # noqa: SIM905
)
LAST_NAMES = tuple(
    """
    Adams Bauer Becker Brown Campbell Costa Dubois Fischer Garcia Gonzalez Gupta Hansen Hughes Ito
    Jansen Johnson Kim Kowalski Larsen Lee Lopez Martin Meyer Moreau Murphy Nakamura Nguyen Novak Okafor
    Olsen Park Patel Perez Petrov Rossi Santos Schmidt Silva Singh Smith Sato Tanaka Taylor Torres
    Walker Wang Weber Wilson Wright Yamamoto Young Zhang
    """.split()  # noqa: SIM905
)


@dataclass(frozen=True, slots=True)
class Person:
    """One organization user plus the traits that drive their generated usage."""

    index: int  # 0-based position
    id: str
    email: str
    first_name: str
    last_name: str
    role: str
    team: str
    joined: dt.date
    analytics_email: str | None
    intensity: float  # tokens/tool-call volume multiplier (Pareto, 0.3 .. 40)
    propensity: float  # probability of being active on a working day once ramped up (15 % are dormant)
    client_odds: tuple[float, float, float]  # P(terminal-ui), P(web), P(non-interactive-cli) on an active day
    delegation: str  # dominant delegation level
    primary_model: str
    languages: tuple[str, ...]
    mcp_servers: tuple[str, ...]  # server names as this person's client spells them ("GitHub" vs "github")
    skills: tuple[str, ...]
    hooks: tuple[int, ...]  # indexes into catalog.HOOKS

    @property
    def name(self) -> str:
        return f"{self.first_name} {self.last_name}"

    def to_v0(self, today: dt.date) -> dict:
        """The v0 organization-user object."""
        created = dt.datetime.combine(self.joined, dt.time(9, 0), dt.UTC) + dt.timedelta(minutes=self.index % 480)
        days_ago = 1 + (self.index * 7) % 13
        signed_in = dt.datetime.combine(today - dt.timedelta(days=days_ago), dt.time(8, 0), dt.UTC)
        signed_in += dt.timedelta(minutes=(self.index * 37) % 600)
        return {
            "id": self.id,
            "email": self.email,
            "firstName": self.first_name,
            "lastName": self.last_name,
            "createdAt": iso(created),
            "lastSignInAt": iso(max(signed_in, created)),
            "metadata": {"role": self.role, "team": self.team},
        }


def iso(moment: dt.datetime) -> str:
    """ISO 8601, UTC, second precision, ``Z`` suffix."""
    return moment.astimezone(dt.UTC).replace(microsecond=0).isoformat().replace("+00:00", "Z")


def user_id(index: int) -> str:
    return f"usr_{index + 1:06d}"


#: The fixed people's traits (everything but index, id, joined and analytics_email).
# fmt: off
FIXED_PEOPLE = (
    dict(first_name="Alice", last_name="Anderson", email="alice@example.com", role="owner", team="platform",
         intensity=40.0, propensity=0.97, client_odds=(0.95, 0.3, 0.4), delegation="auto-high",
         primary_model="claude-sonnet-4-5", languages=("Python", "Go", "Shell"),
         mcp_servers=("github", "linear", "sentry"), skills=("code-review", "pdf"), hooks=(0, 1, 2)),
    dict(first_name="Bob", last_name="Baker", email="bob@example.com", role="manager", team="web",
         intensity=8.0, propensity=0.9, client_odds=(0.9, 0.2, 0.0), delegation="auto-medium",
         primary_model="gpt-5-codex", languages=("TypeScript", "JavaScript"),
         mcp_servers=("GitHub", "figma"), skills=("frontend-design",), hooks=(1,)),
    dict(first_name="Carol", last_name="Chen", email="carol@example.com", role="member", team="data",
         intensity=5.0, propensity=0.85, client_odds=(0.7, 0.8, 0.0), delegation="spec",
         primary_model="claude-opus-4-1", languages=("Python", "SQL"),
         mcp_servers=("postgres", "github"), skills=("xlsx",), hooks=(2, 3)),
    dict(first_name="Dave", last_name="Diaz", email="dave@example.com", role="member", team="mobile",
         intensity=1.5, propensity=0.6, client_odds=(1.0, 0.0, 0.0), delegation="manual",
         primary_model="claude-haiku-4-5", languages=("Kotlin", "Java"),
         mcp_servers=(), skills=(), hooks=()),
    dict(first_name="Erin", last_name="Evans", email="erin@example.com", role="member", team="infra",
         intensity=6.0, propensity=0.9, client_odds=(0.2, 0.0, 1.0), delegation="auto-high",
         primary_model="gpt-5-mini", languages=("Go", "Shell"),
         mcp_servers=("github",), skills=(), hooks=(4,)),
)
# fmt: on


def generate_people(seed: int, count: int) -> list[Person]:
    """The organization's people, in ID order; O(count), cheap even for 10,000."""
    rng = rng_for(seed, "people")
    combos = len(FIRST_NAMES) * len(LAST_NAMES)
    stride = _coprime_stride(combos, 1 + rng.randrange(combos - 1))
    offset = rng.randrange(combos)
    people: list[Person] = []
    for index in range(count):
        if index < len(FIXED_PEOPLE):
            traits = FIXED_PEOPLE[index]
            joined = ORG_CREATED + dt.timedelta(days=index * 3)
        else:
            combo = (offset + index * stride) % combos
            traits = _random_traits(rng, FIRST_NAMES[combo // len(LAST_NAMES)], LAST_NAMES[combo % len(LAST_NAMES)])
            lap = index // combos  # a second lap through the name combinations gets a numeric suffix
            traits["email"] = traits["email"].replace("@", f"{lap + 1}@") if lap else traits["email"]
            joined = ORG_CREATED + dt.timedelta(days=int(rng.triangular(0, 200, 60)))
        people.append(
            Person(
                index=index,
                id=user_id(index),
                joined=joined,
                analytics_email=None if index % 16 == 7 else traits["email"],
                **traits,
            )
        )
    return people


def _random_traits(rng: random.Random, first: str, last: str) -> dict:
    automation = rng.random() < 0.12
    servers = rng.sample(list(MCP_TOOLS), rng.choice((0, 0, 1, 1, 2, 3)))
    return dict(
        first_name=first,
        last_name=last,
        email=f"{first.lower()}.{last.lower()}@example.com",
        role="manager" if rng.random() < 0.08 else "member",
        team=rng.choice(TEAMS),
        intensity=min(40.0, 0.3 * rng.paretovariate(1.3)),
        # 15 % are dormant: signed up, rarely use the agent
        propensity=rng.uniform(0.005, 0.04) if rng.random() < 0.15 else rng.uniform(0.15, 0.95),
        client_odds=(
            rng.uniform(0.6, 1.0),
            rng.uniform(0.0, 0.5) if rng.random() < 0.4 else 0.0,
            rng.uniform(0.5, 1.0) if automation else rng.uniform(0.0, 0.15),
        ),
        delegation=rng.choices(DELEGATION_LEVELS, weights=(25, 35, 20, 10, 10))[0],
        primary_model=rng.choices(list(MODELS), weights=[w for _, w in MODELS.values()])[0],
        languages=tuple(rng.sample(LANGUAGES, rng.choice((1, 1, 2, 2, 3)))),
        # Data-quality fact: some clients report the GitHub server as "GitHub".
        mcp_servers=tuple("GitHub" if s == "github" and rng.random() < 0.3 else s for s in servers),
        skills=tuple(rng.sample(SKILLS, rng.choice((0, 0, 1, 2)))),
        hooks=tuple(sorted(rng.sample(range(len(HOOKS)), rng.choice((0, 0, 0, 1, 2))))),
    )


def _coprime_stride(modulus: int, candidate: int) -> int:
    """The first number >= candidate coprime with modulus (a full-cycle step through name combinations)."""
    while gcd(candidate, modulus) != 1:
        candidate += 1
    return candidate
