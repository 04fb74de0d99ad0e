"""API keys and who calls: the two keys of the config and a key of every organization user.

The spec says only "``Authorization: Bearer <TOKEN>``, an API key or a JWT" and that role
requirements are "not shown"; the sandbox's choices:

* ``config.api_key`` (default ``sandbox-owner-key``) is the **owner key**: role ``owner``, no person
  behind it (the bot's key). ``config.member_key`` (default ``sandbox-member-key``) is the **member
  key**: role ``member``, no person. Both work as they always did: the per-person rules of
  :mod:`sandbox.agent_api.access` do not apply to them.
* Every organization user (:mod:`sandbox.agent_api.people`) has a key of their own from the start,
  with their role (``metadata.role``): ``sandbox-key-<local part of the e-mail>``. The fixed people:

  ==================  ========  =====================
  e-mail              role      key
  ==================  ========  =====================
  alice@example.com   owner     ``sandbox-key-alice``
  bob@example.com     manager   ``sandbox-key-bob``
  carol@example.com   member    ``sandbox-key-carol``
  dave@example.com    member    ``sandbox-key-dave``
  erin@example.com    member    ``sandbox-key-erin``
  ==================  ========  =====================

  The others get ``sandbox-key-firstname.lastname`` (a local part with characters other than
  ``A-Z a-z 0-9 . _ -``, or one taken already, gives ``sandbox-key-usr_000123``, the user ID).
* ``POST /_sandbox/keys`` mints another key for a user (deterministic: ``<their first key>-2``,
  ``-3`` ... unless the body names one); ``DELETE /_sandbox/keys/{key}`` revokes one (from then on a
  401, ``"API key revoked"``); ``GET /_sandbox/keys`` lists them (:mod:`sandbox.agent_api.admin_api`).
  A person may hold several keys; revoking one leaves the others working.

A :class:`Caller` is who a request comes from; the request log
(:mod:`sandbox.agent_api.request_log`) shows its :meth:`Caller.who`, never the key.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from .people import Person

KEY_PREFIX = "sandbox-key-"
KEY_MAX = 200
_LOCAL_PART = re.compile(r"^[A-Za-z0-9._-]+$")
_KEY = re.compile(r"^[\x21-\x7e]+$")  # printable ASCII, no spaces


@dataclass(frozen=True)
class Caller:
    """Who a request comes from: a person's key (``person`` set) or a key of the config."""

    role: str
    person: Person | None = None
    label: str = ""  # "owner key" / "member key" for the config keys

    @property
    def email(self) -> str | None:
        return self.person.email if self.person is not None else None

    def who(self) -> dict:
        """``{"who", "email", "role"}`` for logs and admin views: ``who`` is the person's e-mail, or
        ``"owner key"``/``"member key"``."""
        return {"who": self.email or self.label, "email": self.email, "role": self.role}


@dataclass
class UserKey:
    key: str
    person: Person
    revoked: bool = False
    minted: bool = False  # made by POST /_sandbox/keys (not the user's first key)

    def to_json(self) -> dict:
        return {
            "key": self.key,
            "email": self.person.email,
            "userId": self.person.id,
            "role": self.person.role,
            "revoked": self.revoked,
            "minted": self.minted,
        }


def valid_key(key: object) -> bool:
    return isinstance(key, str) and 0 < len(key) <= KEY_MAX and bool(_KEY.match(key))


class KeyStore:
    """Per-user keys (key -> :class:`UserKey`, revoked ones kept so that they answer "revoked")
    next to the config keys (``roles``: key -> role, the state's ``roles`` dict)."""

    def __init__(self, roles: dict[str, str], owner_key: str, member_key: str, people: list[Person]) -> None:
        self.roles = roles
        self._labels = {owner_key: "owner key", member_key: "member key"}
        self.keys: dict[str, UserKey] = {}
        self._first: dict[str, str] = {}  # person id -> their first key
        self._mints: dict[str, int] = {}  # person id -> keys minted so far
        for person in people:
            local = person.email.partition("@")[0]
            key = KEY_PREFIX + local
            if not _LOCAL_PART.match(local) or not valid_key(key) or self._taken(key):
                key = KEY_PREFIX + person.id
            self.keys[key] = UserKey(key, person)
            self._first[person.id] = key

    def _taken(self, key: str) -> bool:
        return key in self.keys or key in self.roles

    def identify(self, authorization: str) -> tuple[Caller | None, str]:
        """The caller of an ``Authorization`` header value, or ``(None, why not)``."""
        if not authorization:
            return None, "missing Authorization header"
        scheme, _, key = authorization.partition(" ")
        key = key.strip()
        if scheme.lower() != "bearer" or not key:
            return None, "missing or invalid API key"
        role = self.roles.get(key)
        if role is not None:
            return Caller(role, label=self._labels.get(key, f"{role} key")), ""
        found = self.keys.get(key)
        if found is None:
            return None, "missing or invalid API key"
        if found.revoked:
            return None, "API key revoked"
        return Caller(found.person.role, found.person), ""

    def holder(self, key: str) -> UserKey | None:
        return self.keys.get(key)

    def first_key(self, person: Person) -> str:
        return self._first[person.id]

    def mint(self, person: Person, key: str | None = None) -> UserKey:
        """A new key for ``person``: ``key`` when given, else ``<first key>-<n>``. Raises
        ``ValueError`` for a key that is malformed or already used (by anyone, revoked or not)."""
        if key is None:
            count = self._mints.get(person.id, 1)
            key = f"{self._first[person.id]}-{count + 1}"
            while self._taken(key):
                count += 1
                key = f"{self._first[person.id]}-{count + 1}"
            self._mints[person.id] = count + 1
        elif not valid_key(key):
            raise ValueError(f"a key is 1 to {KEY_MAX} printable ASCII characters without spaces")
        elif self._taken(key):
            raise ValueError("that key is already in use")
        made = UserKey(key, person, minted=True)
        self.keys[key] = made
        return made

    def revoke(self, key: str) -> UserKey:
        """Revoke a per-user key (again: no change). Raises ``KeyError`` for an unknown key and
        ``ValueError`` for a key of the config."""
        if key in self.roles:
            raise ValueError("the owner and member keys of the config cannot be revoked")
        found = self.keys[key]
        found.revoked = True
        return found

    def listing(self, email: str | None = None) -> list[dict]:
        """Per-user keys (all, or those of one e-mail, case-insensitive), in organization order,
        each person's first key first."""
        wanted = email.lower() if email is not None else None
        rows = [k for k in self.keys.values() if wanted is None or k.person.email.lower() == wanted]
        rows.sort(key=lambda k: (k.person.index, k.minted))
        return [k.to_json() for k in rows]

    def config_keys(self) -> list[dict]:
        return [{"key": key, "who": self._labels.get(key, f"{role} key"), "role": role} for key, role in self.roles.items()]
