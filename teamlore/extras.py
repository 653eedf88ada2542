"""The optional extras: the platform SDKs and server-store clients the core install leaves out.

The core (embedded store, CLI, API, web wiki, MCP, the bundled embedder) imports none of them. A
module that needs one is imported only when its feature is used, after ``require(extra)``, so a
missing package is one line naming the command to run, not a traceback. pyproject.toml's
``[project.optional-dependencies]`` names the packages; ``MODULES`` names what they install.
"""

from __future__ import annotations

from importlib import import_module

from teamlore.errors import MissingExtra

MODULES: dict[str, tuple[str, ...]] = {
    "slack": ("slack_bolt", "slack_sdk"),
    "discord": ("discord",),
    "teams": (
        "microsoft_agents.hosting.core",
        "microsoft_agents.hosting.aiohttp",
        "microsoft_agents.authentication.msal",
    ),
    "mattermost": ("mattermostautodriver",),
    "weaviate": ("weaviate",),
    "mongo": ("pymongo",),
    "llm": ("openai",),
    "files": ("pypdf", "docx", "openpyxl", "pptx", "defusedxml"),
}


def install_command(extra: str) -> str:
    return f"pip install 'teamlore[{extra}]'"


def require(extra: str) -> None:
    """Import the modules ``extra`` installs; raise ``MissingExtra`` naming the command if one fails."""
    for module in MODULES[extra]:
        try:
            import_module(module)
        except ImportError as exc:
            raise MissingExtra(f"{extra} support is not installed: {install_command(extra)}") from exc
