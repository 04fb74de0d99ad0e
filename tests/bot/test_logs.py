import logging

from bot.logs import REDACTED, RedactingFilter


def test_secrets_and_token_shapes_are_redacted_from_messages_and_tracebacks():
    f = RedactingFilter(["sk-live-123456"])
    try:
        raise RuntimeError("key sk-live-123456 failed")
    except RuntimeError:
        import sys

        record = logging.LogRecord(
            "x", logging.ERROR, __file__, 1, "calling with %s and %s", ("sk-live-123456", "xoxb-1-2-abc"), sys.exc_info()
        )
    f.filter(record)
    text = record.getMessage() + record.exc_text
    assert "sk-live-123456" not in text and "xoxb-1-2-abc" not in text
    assert text.count(REDACTED) >= 3
    assert f.redact("Authorization: Bearer abc.def") == f"Authorization: Bearer {REDACTED}"


def test_routine_scheduler_ticks_are_debug_not_info():
    import logging

    from bot.logs import configure_logging

    root = logging.getLogger()
    saved = root.handlers[:], root.level
    try:
        configure_logging("INFO")
        tick = logging.getLogger("apscheduler.executors.default")
        assert not tick.isEnabledFor(logging.INFO) and tick.isEnabledFor(logging.WARNING)
        assert logging.getLogger("bot.services.sessions.follower").isEnabledFor(logging.INFO)
        configure_logging("DEBUG")
        assert tick.isEnabledFor(logging.DEBUG)
    finally:
        root.handlers[:] = saved[0]
        root.setLevel(saved[1])
        for name in ("apscheduler.executors", "apscheduler.scheduler"):
            logging.getLogger(name).setLevel(logging.NOTSET)


def test_rotating_tokens_and_refresh_tokens_are_redacted_whole():
    """OAuth with token rotation gives ``xoxe.xoxb-…`` access tokens and ``xoxe-1-…`` refresh
    tokens (DESIGN.md, "Slack facts"): neither may reach a log line, not even its tail."""
    f = RedactingFilter([])
    line = f.redact("stored xoxe.xoxb-1-AbC.def-123 and refresh xoxe-1-My0xNjE2-Zz9 for T1")
    assert line == f"stored {REDACTED} and refresh {REDACTED} for T1"
