"""Agent-readiness reports: several evaluations of six repositories, reproducible from (seed, today).

Repositories (fixed): ``https://github.com/acme/<name>`` for web, api, mobile, infra, data-pipeline and
billing. **repoId** (spec: "filters by repository ID", the ID is not otherwise shown) is the
repository's ``owner/name`` slug, e.g. ``acme/web``, i.e. the path of ``repoUrl``; matching is
case-insensitive and the full ``repoUrl`` is accepted too. An unknown repoId gives an empty list.

Each repository has 3-5 reports (count from the seed) created 1-200 days before ``today`` (``createdAt``
in Unix ms), scores improving over time. ``report`` maps 16 criterion IDs (:data:`CRITERIA`) to
``{numerator, denominator, rationale}``: repository-wide criteria have denominator 1, per-application
criteria have one unit per entry of ``apps``. Optional members vary: every repository's oldest report
lacks ``modelUsed`` and ``agentVersion``, and one in four lacks ``commitHash``/``branch``/``has*``.

Listing (sandbox choices where the spec is silent): newest first (ties by reportId); ``limit`` default
20, no maximum; ``startAfter`` must be a reportId of the (filtered) list, else 400.

:func:`new_report` makes one more report of a repository now (``POST /_sandbox/readiness``), from its
latest listed report with chosen criteria results or pass rate; by default the first passing criterion
fails, so the pass rate drops and one criterion is newly failing.
"""

from __future__ import annotations

import datetime as dt
import re
import uuid
from typing import Any

from .seeding import rng_for

REPO_PREFIX = "https://github.com/"
#: slug -> {application path: description}
REPOSITORIES = {
    "acme/web": {
        "apps/storefront": "Next.js storefront",
        "apps/admin": "Internal admin console",
        "packages/ui": "Shared React component library",
    },
    "acme/api": {".": "Python (FastAPI) public API service"},
    "acme/mobile": {"ios": "Swift iOS app", "android": "Kotlin Android app"},
    "acme/infra": {"terraform": "Terraform modules", "k8s": "Kubernetes manifests and Helm charts"},
    "acme/data-pipeline": {
        "ingest": "Event ingestion workers (Go)",
        "transform": "dbt models",
        "airflow": "Airflow DAGs",
    },
    "acme/billing": {".": "Go billing service"},
}
#: criterion ID -> (per application?, what passing means)
CRITERIA = {
    "readme": (False, "a README explains setup, test and run commands"),
    "agents_md": (False, "an AGENTS.md gives the agent build and test instructions"),
    "ci_pipeline": (False, "CI runs build, lint and tests on every pull request"),
    "codeowners": (False, "a CODEOWNERS file assigns reviewers"),
    "pre_commit_hooks": (False, "pre-commit hooks run formatters and linters locally"),
    "security_scanning": (False, "dependency and secret scanning run in CI"),
    "lint_config": (True, "a linter is configured"),
    "formatter": (True, "a code formatter is configured"),
    "type_checking": (True, "static type checking is enabled"),
    "unit_tests": (True, "unit tests exist and run with one command"),
    "integration_tests": (True, "integration tests cover the main flows"),
    "test_coverage": (True, "coverage is measured with a threshold"),
    "dev_environment": (True, "a reproducible dev environment (devcontainer, Nix or Docker) exists"),
    "dependency_lockfile": (True, "dependencies are pinned by a lockfile"),
    "env_example": (True, "an example environment file documents required variables"),
    "build_script": (True, "the build runs with one documented command"),
}
MODELS = (
    ("claude-sonnet-4-5", "medium"),
    ("gpt-5-codex", "high"),
    ("claude-opus-4-1", "high"),
    ("gpt-5-mini", "low"),
)
AGENT_VERSIONS = ("0.19.2", "0.20.0", "0.21.1", "0.22.3", "0.23.0")


def repo_slug(repo_url: str) -> str:
    return repo_url.removeprefix(REPO_PREFIX).lower()


def matches_repo(report: dict, repo_id: str) -> bool:
    wanted = repo_id.strip().rstrip("/").lower()
    return wanted in (repo_slug(report["repoUrl"]), report["repoUrl"].lower())


def generate_reports(seed: int, today: dt.date) -> list[dict]:
    """All reports, newest first."""
    midnight = int(dt.datetime.combine(today, dt.time(), dt.UTC).timestamp() * 1000)
    reports = []
    for slug, apps in REPOSITORIES.items():
        rng = rng_for(seed, "reports", slug)
        count = rng.randint(3, 5)
        ages = sorted(rng.sample(range(1, 200), count), reverse=True)
        base = {criterion: rng.uniform(0.15, 0.8) for criterion in CRITERIA}
        for n, age in enumerate(ages):
            created = midnight - age * 86_400_000 + rng.randrange(8 * 3_600_000, 19 * 3_600_000)
            progress = n / max(1, count - 1)
            report = {
                "reportId": str(uuid.UUID(int=rng.getrandbits(128), version=4)),
                "createdAt": created,
                "repoUrl": REPO_PREFIX + slug,
                "apps": {path: {"description": text} for path, text in apps.items()},
                "report": {c: _evaluate(c, apps, min(1.0, p + 0.35 * progress), rng) for c, p in base.items()},
            }
            if rng.random() >= 0.25:
                report.update(
                    commitHash=f"{rng.getrandbits(160):040x}",
                    branch=rng.choice(("main", "main", "develop")),
                    hasLocalChanges=rng.random() < 0.2,
                    hasNonRemoteCommits=rng.random() < 0.1,
                )
            if n:
                model, effort = rng.choice(MODELS)
                report.update(
                    modelUsed={"id": model, "reasoningEffort": effort},
                    agentVersion=AGENT_VERSIONS[min(len(AGENT_VERSIONS) - 1, n + rng.randint(0, 1))],
                )
            reports.append(report)
    reports.sort(key=lambda r: (-r["createdAt"], r["reportId"]))
    return reports


def _evaluate(criterion: str, apps: dict, pass_rate: float, rng) -> dict:
    per_app, meaning = CRITERIA[criterion]
    units = list(apps) if per_app else ["the repository"]
    failing = [unit for unit in units if rng.random() >= pass_rate]
    numerator = len(units) - len(failing)
    if not failing:
        rationale = f"Pass: {meaning} ({numerator}/{len(units)})."
    elif per_app:
        rationale = f"{numerator}/{len(units)} applications pass: {meaning}. Missing in: {', '.join(failing)}."
    else:
        rationale = f"Fail: not found; expected that {meaning}."
    return {"numerator": numerator, "denominator": len(units), "rationale": rationale}


# ---- new reports (POST /_sandbox/readiness) -----------------------------------------------------------

_SLUG = re.compile(r"^[A-Za-z0-9_.-]{1,100}/[A-Za-z0-9_.-]{1,100}$")
NEW_REPOSITORY_APPS = {".": {"description": "Repository root"}}
"""The applications of a repository that had no report before."""
MADE_HERE = "Set by POST /_sandbox/readiness."


def _result(value: Any, base: dict | None, name: str) -> dict:
    """One criterion's evaluation from ``true`` (passes), ``false`` (fails) or ``{numerator, denominator[, rationale]}``."""
    denominator = max(1, base["denominator"]) if base else 1
    meaning = CRITERIA.get(name, (False, "the check passes"))[1]
    if value is True:
        return {"numerator": denominator, "denominator": denominator, "rationale": f"Pass: {meaning}. {MADE_HERE}"}
    if value is False:
        return {"numerator": 0, "denominator": denominator, "rationale": f"Fail: expected that {meaning}. {MADE_HERE}"}
    if not isinstance(value, dict):
        raise ValueError(f"criteria.{name} must be true, false or {{numerator, denominator, rationale}}")
    numerator, denominator = value.get("numerator"), value.get("denominator", denominator)
    numbers = all(isinstance(n, int | float) and not isinstance(n, bool) for n in (numerator, denominator))
    if not numbers or denominator < 1 or not 0 <= numerator <= denominator:
        raise ValueError(f"criteria.{name} needs numbers 0 <= numerator <= denominator and denominator >= 1")
    rationale = value.get("rationale", MADE_HERE)
    if not isinstance(rationale, str):
        raise ValueError(f"criteria.{name}.rationale must be a string")
    return {"numerator": numerator, "denominator": denominator, "rationale": rationale}


def _passes(evaluation: dict) -> bool:
    return evaluation["numerator"] >= evaluation["denominator"]


def new_report(
    listed: list[dict],
    *,
    repo: str,
    criteria: dict[str, Any] | None,
    pass_rate: float | None,
    created_at: int,
    report_id: str,
    rng,
) -> dict:
    """A new report of ``repo`` (``owner/name`` or a URL), created at ``created_at`` (Unix ms).

    Starts from the repository's latest report in ``listed`` (newest first), or, for a repository
    with none, from every criterion of :data:`CRITERIA` passing on one application. ``criteria``
    (criterion ID -> ``true``, ``false`` or ``{numerator, denominator, rationale}``) sets results,
    adding criteria the base lacks; ``pass_rate`` (percent, 0-100) then makes the other criteria pass
    or fail, in ID order, until the share of passing criteria is the nearest to it. Neither: the first
    passing criterion (by ID) fails. Raises ``ValueError`` (a 400) for a bad value, a pass rate the
    named criteria make unreachable, or a default with no passing criterion to fail."""
    if not isinstance(repo, str) or not (_SLUG.match(repo) or repo.startswith(("https://", "http://"))):
        raise ValueError("repo must be owner/name or a repository URL")
    if criteria is not None and not isinstance(criteria, dict):
        raise ValueError("criteria must be an object of criterion IDs to true, false or {numerator, denominator, rationale}")
    if pass_rate is not None and (isinstance(pass_rate, bool) or not isinstance(pass_rate, int | float) or not 0 <= pass_rate <= 100):
        raise ValueError("pass_rate must be a number of percent from 0 to 100")
    latest = next((r for r in listed if matches_repo(r, repo)), None)
    repo_url = repo if "://" in repo else REPO_PREFIX + repo
    if latest is not None:
        results = {c: dict(e) for c, e in latest["report"].items()}
        apps = {path: dict(app) for path, app in latest["apps"].items()}
        repo_url = latest["repoUrl"]
    else:
        results = {c: _result(True, None, c) for c in CRITERIA}
        apps = {path: dict(app) for path, app in NEW_REPOSITORY_APPS.items()}
    named = dict(criteria or {})
    for name, value in named.items():
        results[name] = _result(value, results.get(name), name)
    if pass_rate is not None:
        free = sorted(c for c in results if c not in named)
        target = round(pass_rate / 100 * len(results))
        passing = sum(1 for e in results.values() if _passes(e))
        for name in free:
            if passing > target and _passes(results[name]):
                results[name], passing = _result(False, results[name], name), passing - 1
            elif passing < target and not _passes(results[name]):
                results[name], passing = _result(True, results[name], name), passing + 1
        if passing != target:
            raise ValueError(f"pass_rate {pass_rate:g} cannot be reached with the criteria given ({passing} of {len(results)} pass)")
    elif not named:
        first = next((c for c in sorted(results) if _passes(results[c])), None)
        if first is None:
            raise ValueError("no criterion of the latest report passes: name criteria or a pass_rate")
        results[first] = _result(False, results[first], first)
    model, effort = MODELS[0]
    return {
        "reportId": report_id,
        "createdAt": created_at,
        "repoUrl": repo_url,
        "apps": apps,
        "report": dict(sorted(results.items())),
        "commitHash": f"{rng.getrandbits(160):040x}",
        "branch": "main",
        "hasLocalChanges": False,
        "hasNonRemoteCommits": False,
        "modelUsed": {"id": model, "reasoningEffort": effort},
        "agentVersion": AGENT_VERSIONS[-1],
    }
