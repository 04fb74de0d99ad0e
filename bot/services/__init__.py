"""Domain services: what the bot does, between a handler and the Agent API / the database.

One module or package per feature; each takes typed input, calls :mod:`bot.api` and the store, and
returns typed results (or a :mod:`bot.outcomes` reason) that :mod:`formatters` turn into Block Kit;
what a service posts itself comes from formatters handed in at wiring (:mod:`bot.wiring`). Nothing
here knows Slack's request shapes. Which service serves which command: docs/architecture.md,
"Command map".

The runtime (app factory, CLI, middleware, role check, store, scheduler, hooks relay, demo) stays in
:mod:`bot`; the data flows one way: handler -> service -> typed result -> formatter
(docs/architecture.md, "Layers").
"""
