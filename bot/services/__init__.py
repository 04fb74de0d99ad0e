"""Domain services: what the bot does, between a handler and the Agent API / the database.

One module per feature; each takes typed input, calls :mod:`bot.api` and the store, and returns
typed results that :mod:`formatters` turn into Block Kit. Nothing here knows Slack's request shapes.

    usage.py, periods.py   analytics: periods, aggregation of tokens, activity, tools, users
    readiness.py           readiness reports: listing, matching repositories, latest vs previous
    controls.py            enterprise-control history: revisions, summaries, diffs (secrets redacted)
    org_users.py           organization users: search, pagination
    sessions.py            the thread <-> agent-session link (claim rows, leases, relayed posts)
    follower.py            the session follower (polls, relays into threads, exactly once)
    limits.py              credit-limit requests and their state machine, known limits
    digest.py, chart.py    daily digests: subscriptions, landing, claim rows; the chart (matplotlib)

The runtime (app factory, CLI, middleware, role check, store, scheduler, hooks relay, demo) stays in
:mod:`bot`; the data flows one way: handler -> service -> typed result -> formatter (DESIGN.md).
"""
