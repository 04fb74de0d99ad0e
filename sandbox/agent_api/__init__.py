"""The sandbox Agent API: a standalone HTTP server implementing both spec documents.

``create_app(SandboxConfig(...))`` returns a Starlette app (serve it with uvicorn, or
``sandbox.server.serve_in_thread``); ``app.state.sandbox`` is the live state. The CLI wires
``add_sandbox_arguments``/``config_from_args``. This package never imports ``bot``, ``handlers`` or
``formatters``: it is an independent implementation of the spec.

Modules: ``config`` (options), ``catalog`` (models, tools, clients ... vocabulary), ``seeding``,
``people`` (the organization), ``usage`` (analytics data), ``reports`` (readiness), ``controls``
(enterprise-control history), ``sessions``/``computers`` (v0 state and lifecycles), ``faults``,
``keys`` (the config keys and every person's own key), ``access`` (what a person's key may do),
``request_log`` (who made each call), ``middleware`` (log + faults + keys + roles), ``errors`` (error bodies), ``params`` (request parsing),
``*_api`` (HTTP handlers), ``state`` and ``app`` (the factory). Each module docstring states its data
shape and the choices made where the spec says "not shown".
"""

from .app import create_app
from .config import SandboxConfig, add_sandbox_arguments, config_from_args

__all__ = ["SandboxConfig", "add_sandbox_arguments", "config_from_args", "create_app"]
