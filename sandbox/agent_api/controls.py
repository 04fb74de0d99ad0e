"""Enterprise-control change history: 16 revisions of the organization's settings.

Revision 1 is :func:`initial_settings` (every settings member of the spec is present in every revision;
spec: "which members are always present: not shown"). Each later revision applies one scripted change
(:data:`CHANGES`) that touches a few paths, among them: retention days, MCP policy, a custom model
added with an ``apiKey`` (revision 4), that key rotated (revision 7), sandbox network, autonomy cap,
blocked models, BYOM computers. Authors rotate over the organization's owners and managers (shuffled by
the seed); ``user`` is ``{id, email, name}``. ``updatedAt`` (ISO 8601, UTC) is 1-3 days before ``today``
for the newest revision and 5-10 days earlier for each older one.

Listing: newest revision first; the cursor is the revision number (as a string) of the previous
page's last change; ``limit`` 1-100, default 20.
"""

from __future__ import annotations

import copy
import datetime as dt
from collections.abc import Callable

from .people import Person, iso
from .seeding import rng_for

CUSTOM_MODEL = {
    "model": "acme-coder-70b",
    "provider": "generic-chat-completion-api",
    "id": "custom:acme-coder-70b-0",
    "index": 0,
    "baseUrl": "https://llm.internal.acme.dev/v1",
    "apiKey": "sk-acme-live-4f9a2c7e1b3d",
    "displayName": "Acme Coder 70B",
    "maxContextLimit": 131072,
    "enableThinking": False,
    "thinkingMaxTokens": 0,
    "maxOutputTokens": 8192,
    "reasoningEffort": "medium",
    "extraHeaders": {"X-Team": "platform"},
    "extraArgs": {"temperature": 0.2},
    "noImageSupport": True,
    "cloudProvider": {
        "providerProfile": "",
        "providerRegion": "",
        "providerBaseUrl": "",
        "providerAuthRefresh": "",
        "providerCredentialExport": "",
    },
}
CLOUD_MODEL = {
    "model": "claude-sonnet-4-5-managed",
    "provider": "cloud-hosted",
    "id": "custom:claude-sonnet-4-5-managed-1",
    "index": 1,
    "baseUrl": "https://inference.eu-west-1.cloud.example",
    "apiKey": "",
    "displayName": "Sonnet 4.5 (our cloud account)",
    "maxContextLimit": 200000,
    "enableThinking": True,
    "thinkingMaxTokens": 16000,
    "maxOutputTokens": 32000,
    "reasoningEffort": "high",
    "extraHeaders": {},
    "extraArgs": {},
    "noImageSupport": False,
    "cloudProvider": {
        "providerProfile": "acme-ai",
        "providerRegion": "eu-west-1",
        "providerBaseUrl": "https://inference.eu-west-1.cloud.example",
        "providerAuthRefresh": "aws sso login --profile acme-ai",
        "providerCredentialExport": "aws configure export-credentials --profile acme-ai",
    },
}


def initial_settings() -> dict:
    return {
        "sessionDefaultSettings": {
            "model": "claude-sonnet-4-5",
            "reasoningEffort": "medium",
            "interactionMode": "auto",
            "autonomyLevel": "medium",
            "autonomyMode": "normal",
            "specModeModel": "claude-opus-4-1",
            "specModeReasoningEffort": "high",
        },
        "maxAutonomyLevel": "high",
        "mcpAutonomyOverrides": {},
        "cloudSessionSync": True,
        "wikiCloudSync": False,
        "includeCoAuthoredByAgent": True,
        "enableAgentShield": False,
        "ideAutoConnect": True,
        "commandAllowlist": ["git status", "git diff", "npm test", "pytest"],
        "commandDenylist": ["rm -rf /", "git push --force"],
        "customModels": [],
        "modelPolicy": {
            "allowedModelIds": ["claude-sonnet-4-5", "claude-opus-4-1", "claude-haiku-4-5", "gpt-5-codex"],
            "blockedModelIds": [],
            "allowCustomModels": False,
            "allowedBaseUrls": [],
            "allowAllServiceModels": True,
            "isFastModelsAllowed": True,
        },
        "mcpPolicy": {"enabled": False, "allowlist": []},
        "missionPolicy": {"restrictedAccess": False, "allowedUserIds": []},
        "userModelPolicies": {},
        "enabledPlugins": {},
        "extraKnownMarketplaces": {},
        "strictKnownMarketplaces": [],
        "networkPolicy": {"allowedIps": []},
        "sandbox": {
            "enabled": False,
            "mode": "workspace-write",
            "filesystem": {
                "allowWrite": ["./"],
                "allowRead": ["./", "~/.gitconfig"],
                "denyWrite": [".git/hooks"],
                "denyRead": ["~/.ssh", "~/.aws"],
            },
            "network": {
                "allowedDomains": ["github.com", "registry.npmjs.org"],
                "allowUnixSockets": [],
                "allowAllUnixSockets": False,
                "allowLocalBinding": False,
                "httpProxyPort": 8888,
                "socksProxyPort": 1080,
            },
        },
        "restrictMemberVisibility": False,
        "restrictApiKeyCreationToManagers": True,
        "managedComputersEnabled": True,
        "byomComputersEnabled": False,
        "managedComputersAllowedEmails": [],
        "byomComputersAllowedEmails": [],
        "sessionRetentionDays": 90,
    }


def _set(**paths) -> Callable[[dict, list[Person]], None]:
    """A change that sets dotted paths (``sandbox__enabled`` stands for ``sandbox.enabled``)."""

    def apply(settings: dict, people: list[Person]) -> None:
        for dotted, value in paths.items():
            *parents, leaf = dotted.split("__")
            target = settings
            for part in parents:
                target = target[part]
            target[leaf] = value(settings, people) if callable(value) else copy.deepcopy(value)

    return apply


def _emails(*positions: int):
    return lambda settings, people: [people[i].email for i in positions if i < len(people)]


def _rotate_key(settings: dict, people: list[Person]) -> None:
    settings["customModels"][0]["apiKey"] = "sk-acme-live-8d31e0b6a5c2"


CHANGES: tuple[Callable[[dict, list[Person]], None], ...] = (
    _set(sessionRetentionDays=30),
    _set(mcpPolicy__enabled=True, mcpPolicy__allowlist=["github", "linear"]),
    _set(
        modelPolicy__allowCustomModels=True,
        modelPolicy__allowedBaseUrls=["https://llm.internal.acme.dev/v1"],
        customModels=[CUSTOM_MODEL],
    ),
    _set(
        sandbox__enabled=True,
        sandbox__network__allowedDomains=["github.com", "registry.npmjs.org", "pypi.org"],
    ),
    _set(maxAutonomyLevel="medium"),
    _rotate_key,
    _set(networkPolicy__allowedIps=["203.0.113.0/24", "198.51.100.7"]),
    _set(commandDenylist=["rm -rf /", "git push --force", "curl * | sh"]),
    _set(sessionDefaultSettings__model="gpt-5-codex", sessionDefaultSettings__reasoningEffort="high"),
    _set(byomComputersEnabled=True, byomComputersAllowedEmails=_emails(0, 2)),
    _set(enableAgentShield=True),
    _set(modelPolicy__blockedModelIds=["glm-4-6"], modelPolicy__isFastModelsAllowed=False),
    _set(
        customModels=lambda s, p: s["customModels"] + [CLOUD_MODEL],
        mcpAutonomyOverrides={"github": "auto-low"},
    ),
    _set(missionPolicy__restrictedAccess=True, missionPolicy__allowedUserIds=lambda s, p: [x.id for x in p[:2]]),
    _set(sessionRetentionDays=60, restrictMemberVisibility=True),
)


def generate_history(seed: int, people: list[Person], today: dt.date) -> list[dict]:
    """All changes, newest (highest revision) first."""
    rng = rng_for(seed, "controls")
    admins = [p for p in people if p.role in ("owner", "manager")] or people[:1]
    rng.shuffle(admins)
    snapshots = [initial_settings()]
    for change in CHANGES:
        snapshots.append(copy.deepcopy(snapshots[-1]))
        change(snapshots[-1], people)
    moment = dt.datetime.combine(today, dt.time(16, 30), dt.UTC) - dt.timedelta(days=rng.randint(1, 3))
    changes = []
    for revision in range(len(snapshots), 0, -1):
        author = admins[(revision - 1) % len(admins)]
        changes.append(
            {
                "revision": revision,
                "settings": snapshots[revision - 1],
                "user": {"id": author.id, "email": author.email, "name": author.name},
                "updatedAt": iso(moment),
            }
        )
        moment -= dt.timedelta(days=rng.randint(5, 10), minutes=rng.randint(-300, 300))
    return changes


NEW_REVISION = {"modelPolicy.blockedModelIds": ["glm-4-6", "gpt-4o-mini"], "sandbox.mode": "read-only"}
"""The change ``POST /_sandbox/controls`` makes when it is given none: a model blocked and the
sandbox mode tightened (both touch security)."""


def next_revision(history: list[dict], changes: dict, author: Person, moment: dt.datetime) -> dict:
    """A new revision after the newest of ``history`` (newest first): its settings with each
    ``"dotted.path": value`` of ``changes`` set (missing objects on the way are created), by ``author``
    at ``moment``. Raises ``ValueError`` when a path goes through a value that is not an object."""
    latest = history[0] if history else {"revision": 0, "settings": initial_settings()}
    settings = copy.deepcopy(latest["settings"])
    for dotted, value in changes.items():
        *parents, leaf = str(dotted).split(".")
        target = settings
        for part in parents:
            target = target.setdefault(part, {})
            if not isinstance(target, dict):
                raise ValueError(f"{dotted}: {part} is not an object")
        target[leaf] = copy.deepcopy(value)
    return {
        "revision": latest["revision"] + 1,
        "settings": settings,
        "user": {"id": author.id, "email": author.email, "name": author.name},
        "updatedAt": iso(moment),
    }
