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
"""

from __future__ import annotations

import datetime as dt
import uuid

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
