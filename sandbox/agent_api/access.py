"""What a person's key may do: the sandbox's rules for per-user keys (spec: role requirements "not shown").

These rules apply to requests made with a person's own key (:mod:`sandbox.agent_api.keys`); the
owner key and the member key of the config are not a person and keep their old behaviour (every v0
call allowed, analytics for the owner key only). Refusals use the v0 error body
``{"error": {"code", "message", "requestId"}}`` (:mod:`sandbox.agent_api.errors`).

Roles (the person's ``metadata.role``):

* Analytics (``/api/v1/analytics/...``): owners and managers (spec: "Manager or Owner only");
  members 403 (:mod:`sandbox.agent_api.middleware`).
* A session belongs to whoever's key created it (kept inside the sandbox, shown by
  ``GET /_sandbox/sessions`` and the request log, never in the session object). With a member's key,
  reading a session, its messages or one message, posting a message and ``PATCH`` work on their own
  sessions only: another's (or one made with a config key) is a **403** ``"session <id> belongs to
  someone else; a member may only use their own sessions"``. Managers and owners may act on any.
* ``PUT /organization/usage/limits/users`` with a member's key: **403** (the Manager or Owner role is
  required).

Starting a session (``POST /sessions``), after the usual 400/404 checks, against the newest
enterprise-control revision (``GET .../enterprise-controls/history``), for every role:

* A ``byom`` computer needs ``byomComputersEnabled`` and any other computer (managed)
  ``managedComputersEnabled``; when not: **403** naming the setting.
* ``byomComputersAllowedEmails`` / ``managedComputersAllowedEmails``, when not empty, list who may
  start sessions on those computers (case-insensitive): anyone else gets a **403** naming the setting
  and the allowed e-mails.
* The sandbox's own rule, **computer owners**: a ``byom`` computer whose ``remoteUser`` is the local
  part of an organization user's e-mail is that person's personal computer ("Alice's dev box",
  ``remoteUser`` ``alice``, is alice@example.com's). Only they and owners may start sessions on it:
  anyone else gets a **403** ``"computer cmp-dev-laptop (Alice's dev box) is alice@example.com's
  personal computer; only they and organization owners may start sessions on it"``. (The seeded
  controls let carol@example.com use BYOM computers, so it is this rule that keeps her off Alice's.)

Session settings (``POST /sessions`` and ``PATCH``; members set to ``null`` are not checked):

* ``model`` and ``specModeModel`` must be allowed by ``modelPolicy``: the service models (the
  sandbox's catalog, :data:`~sandbox.agent_api.catalog.MODELS`) when ``allowAllServiceModels``, else
  those in ``allowedModelIds``; plus the custom models' ``id`` or ``model`` when
  ``allowCustomModels``; minus ``blockedModelIds``. Otherwise **403** ``"model 'glm-4-6' is blocked by
  the organization's model policy (modelPolicy.blockedModelIds); allowed: ..."`` (or "is not
  allowed by ...").
* ``autonomyLevel`` is one of ``off``, ``low``, ``medium``, ``high`` (``auto-low``, ``auto-medium``,
  ``auto-high`` are the same levels): another value is a **400** naming the known ones; one above
  ``maxAutonomyLevel`` a **403** ``"autonomyLevel 'high' is above the organization's
  maxAutonomyLevel 'medium'; allowed: off, low, medium"``.
* Not enforced: ``isFastModelsAllowed``, ``userModelPolicies``, ``missionPolicy``, the command lists.
"""

from __future__ import annotations

from collections.abc import Iterable

from .catalog import MODELS
from .errors import ApiError, bad_request
from .keys import Caller

AUTONOMY_LEVELS = ("off", "low", "medium", "high")
MODEL_SETTINGS = ("model", "specModeModel")


def forbidden(message: str) -> ApiError:
    return ApiError(403, message)


def check_session(caller: Caller | None, session) -> None:
    """A member's key may use only the sessions it created."""
    if caller is None or caller.person is None or caller.role in ("owner", "manager"):
        return
    owner = session.created_by.get("email") if session.created_by else None
    if owner is None or owner.lower() != caller.person.email.lower():
        raise forbidden(f"session {session.id} belongs to someone else; a member may only use their own sessions")


def check_manager(caller: Caller | None, what: str) -> None:
    if caller is not None and caller.person is not None and caller.role not in ("owner", "manager"):
        raise forbidden(f"{what} needs the Manager or Owner role; {caller.email} is a {caller.role}")


def _strings(value: object) -> list[str]:
    return [item for item in value if isinstance(item, str)] if isinstance(value, list) else []


def _listed(values: Iterable[str]) -> str:
    values = list(values)
    return ", ".join(values) if values else "none"


def check_computer(caller: Caller | None, computer, settings: dict, people: list) -> None:
    """May this person start a session on ``computer`` (enterprise controls ``settings``)?"""
    if caller is None or caller.person is None:
        return
    email = caller.person.email.lower()
    kind, label = ("byom", "BYOM") if computer.provider_type == "byom" else ("managed", "managed")
    enabled = settings.get(f"{kind}ComputersEnabled")
    if enabled is False:
        raise forbidden(f"{label} computers are disabled by the organization's enterprise controls ({kind}ComputersEnabled: false)")
    allowed = _strings(settings.get(f"{kind}ComputersAllowedEmails"))
    if allowed and email not in {a.lower() for a in allowed}:
        raise forbidden(
            f"{caller.email} may not start sessions on {label} computers such as {computer.id}: "
            f"{kind}ComputersAllowedEmails allows only {_listed(allowed)}"
        )
    if computer.provider_type == "byom" and computer.remote_user:
        holder = next((p for p in people if p.email.partition("@")[0].lower() == computer.remote_user.lower()), None)
        if holder is not None and holder.email.lower() != email and caller.role != "owner":
            raise forbidden(
                f"computer {computer.id} ({computer.name}) is {holder.email}'s personal computer; "
                "only they and organization owners may start sessions on it"
            )


def allowed_models(settings: dict) -> list[str]:
    """The model IDs ``modelPolicy`` allows (service models, then other allowed IDs, then custom ones)."""
    policy = settings.get("modelPolicy") if isinstance(settings.get("modelPolicy"), dict) else {}
    blocked = set(_strings(policy.get("blockedModelIds")))
    listed = _strings(policy.get("allowedModelIds"))
    models = [m for m in MODELS if policy.get("allowAllServiceModels") is True or m in listed]
    models += [m for m in listed if m not in models]
    if policy.get("allowCustomModels") is True:
        customs = settings.get("customModels") if isinstance(settings.get("customModels"), list) else []
        for custom in customs:
            if isinstance(custom, dict):
                models += [v for v in (custom.get("id"), custom.get("model")) if isinstance(v, str) and v and v not in models]
    return [m for m in models if m not in blocked]


def check_settings(caller: Caller | None, requested: dict, settings: dict) -> None:
    """``model``/``specModeModel`` against ``modelPolicy`` and ``autonomyLevel`` against
    ``maxAutonomyLevel`` (enterprise controls ``settings``)."""
    if caller is None or caller.person is None:
        return
    policy = settings.get("modelPolicy") if isinstance(settings.get("modelPolicy"), dict) else {}
    allowed = allowed_models(settings)
    for name in MODEL_SETTINGS:
        model = requested.get(name)
        if model is None or model in allowed:
            continue
        if model in _strings(policy.get("blockedModelIds")):
            why = "is blocked by the organization's model policy (modelPolicy.blockedModelIds)"
        else:
            why = "is not allowed by the organization's model policy (modelPolicy)"
        raise forbidden(f"{name} {model!r} {why}; allowed: {_listed(allowed)}")
    level = requested.get("autonomyLevel")
    if level is None:
        return
    rank = _autonomy_rank(level)
    if rank is None:
        known = ", ".join(AUTONOMY_LEVELS)
        raise bad_request(f"autonomyLevel {level!r} is not an autonomy level; known: {known} (or auto-low, auto-medium, auto-high)")
    cap = settings.get("maxAutonomyLevel")
    cap_rank = _autonomy_rank(cap) if isinstance(cap, str) else None
    if cap_rank is not None and rank > cap_rank:
        raise forbidden(
            f"autonomyLevel {level!r} is above the organization's maxAutonomyLevel {cap!r}; "
            f"allowed: {', '.join(AUTONOMY_LEVELS[: cap_rank + 1])}"
        )


def _autonomy_rank(level: str) -> int | None:
    name = level.lower().removeprefix("auto-")
    return AUTONOMY_LEVELS.index(name) if name in AUTONOMY_LEVELS else None
