"""What one read may ask for: the bounds every surface shares (README "Limits", docs/api.md).

A query or a question is read word by word (stems, keyword terms, fusion), so its length is what a
request buys CPU with; ``check_query`` is the one check, made by the capabilities every surface
calls (search, ask, media references), so the CLI, the API, the wiki, MCP and the bots refuse the
same text the same way: ``InvalidInput`` (exit 2, HTTP 400, an MCP tool error, a bot's reply).
"""

from __future__ import annotations

from teamlore.errors import InvalidInput

MAX_QUERY_CHARS = 500
MAX_K = 1_000  # results one search may return


def check_query(text: str, what: str = "query") -> str:
    """``text`` stripped; ``InvalidInput`` if it is empty or longer than ``MAX_QUERY_CHARS``."""
    stripped = (text or "").strip()
    if not stripped:
        raise InvalidInput(f"{what} is empty: give words to look for")
    if len(stripped) > MAX_QUERY_CHARS:
        raise InvalidInput(
            f"{what} is {len(stripped):,} characters; the limit is {MAX_QUERY_CHARS:,}: shorten it"
        )
    return stripped
