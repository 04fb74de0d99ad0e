"""The vocabulary of the generated organization: clients, models and tiers, tools, MCP servers, skills,
slash commands, hooks, languages and file extensions. Data only; :mod:`people` and :mod:`usage` draw from it.
"""

from __future__ import annotations

DELEGATION_LEVELS = ("auto-high", "auto-medium", "auto-low", "spec", "manual")
SKILLS = ("code-review", "pdf", "xlsx", "frontend-design", "release-notes", "db-migrations")
CLIENTS = ("terminal-ui", "web", "non-interactive-cli")
#: model ID -> (tier, popularity weight as a person's primary model)
MODELS = {
    "claude-sonnet-4-5": ("standard", 40),
    "gpt-5-codex": ("thinking", 18),
    "claude-opus-4-1": ("thinking", 10),
    "claude-haiku-4-5": ("standard", 12),
    "gpt-5-mini": ("standard", 8),
    "gemini-2-5-pro": ("thinking", 8),
    "glm-4-6": ("standard", 4),
}
BUILTIN_TOOLS = (
    ("Read", 30.0),
    ("Bash", 20.0),
    ("Edit", 18.0),
    ("Grep", 10.0),
    ("Glob", 6.0),
    ("Write", 5.0),
    ("TodoWrite", 5.0),
    ("MultiEdit", 2.0),
    ("Task", 2.0),
    ("WebFetch", 1.5),
    ("WebSearch", 1.0),
    ("NotebookEdit", 0.2),
)
MCP_TOOLS = {
    "github": ("create_pull_request", "get_issue", "search_code", "list_commits"),
    "linear": ("create_issue", "list_issues", "update_issue"),
    "sentry": ("get_issue_details", "search_events"),
    "postgres": ("query", "list_tables"),
    "playwright": ("browser_navigate", "browser_snapshot", "browser_click"),
    "figma": ("get_design_context", "get_screenshot"),
    "notion": ("search", "fetch"),
}
#: Tool names with parsing artefacts (quotes, brackets, markup) as a span parser may emit them.
ARTEFACT_TOOL_NAMES = (
    'Bash","input',
    "Read]",
    '{"name":"Grep',
    "Edit</tool_use>",
    "mcp__github__create_pull_request)",
)
SLASH_COMMANDS = (
    ("/compact", 30),
    ("/clear", 20),
    ("/review", 12),
    ("/model", 8),
    ("/cost", 5),
    ("/pr-comments", 4),
    ("/init", 3),
    ("/security-review", 2),
)
#: (event, matcher, command) of the hooks people configure; Person.hooks indexes this.
HOOKS = (
    ("PreToolUse", "Bash", "~/.agent/hooks/guard-bash.sh"),
    ("PostToolUse", "Edit|Write", 'npx prettier --write "$FILE_PATH"'),
    ("Stop", "", "notify-send 'Agent finished'"),
    ("Notification", "", "~/.agent/hooks/slack-notify.py"),
    ("SessionEnd", "", "./scripts/log-session.sh"),
)
LANGUAGE_EXTENSIONS = {
    "Python": (".py",),
    "TypeScript": (".ts", ".tsx"),
    "JavaScript": (".js", ".jsx"),
    "Go": (".go",),
    "Rust": (".rs",),
    "Java": (".java",),
    "Kotlin": (".kt",),
    "Ruby": (".rb",),
    "SQL": (".sql",),
    "Shell": (".sh",),
}
DOC_EXTENSIONS = ((".md", "Markdown", 1.5), (".yaml", "YAML", 1.0), (".json", "JSON", 1.0))
EXTENSION_LANGUAGE = {ext: lang for lang, exts in LANGUAGE_EXTENSIONS.items() for ext in exts} | {
    ext: lang for ext, lang, _ in DOC_EXTENSIONS
}
LANGUAGES = tuple(LANGUAGE_EXTENSIONS)


def mcp_server(tool_name: str) -> str | None:
    """The MCP server of a ``mcp__<server>__<tool>`` name, as spelled there; None for other tools."""
    parts = tool_name.split("__")
    return parts[1] if len(parts) >= 3 and parts[0] == "mcp" and parts[1] else None
