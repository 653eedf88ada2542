"""Q&A in the channel, shared by every bot: the asking channel's scope only, cited, rate-limited.

A platform adapter strips its mention syntax, says whether the author is a bot (or the bot
itself), and renders links its own way (Slack ``<url|label>``, markdown ``[label](url)`` elsewhere);
everything else is decided here, once.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from teamlore.app import Teamlore
from teamlore.capabilities.answers import Answer
from teamlore.capabilities.hits import FactView
from teamlore.domain import Scope
from teamlore.errors import InvalidInput

Link = Callable[[str, str], str]  # (url, label) -> the platform's link markup


def markdown_link(url: str, label: str) -> str:
    return f"[{label}]({url})" if url else label


def slack_link(url: str, label: str) -> str:
    return f"<{url}|{label}>" if url else label


@dataclass(frozen=True, slots=True)
class Reply:
    text: str
    answer: Answer | None  # None when the reply is a refusal (rate limit, empty question)


class ChannelAnswerer:
    """Answers questions asked in a channel from that channel's facts only."""

    def __init__(
        self,
        lore: Teamlore,
        per_user_per_minute: int = 5,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self._lore = lore
        self._limit = per_user_per_minute
        self._monotonic = monotonic
        self._asked: dict[tuple[str, str], deque[float]] = {}

    def reply(
        self,
        workspace: str,
        channel: str,
        user_id: str,
        question: str,
        *,
        author_is_bot: bool,
        link: Link = markdown_link,
        channels: Sequence[str] | None = None,
    ) -> Reply | None:
        """The reply to post, or None when the bot must stay silent (bots, itself). ``channels``:
        what the answer may draw on when that is not the asking channel (a 1:1 chat with the bot)."""
        if author_is_bot:
            return None
        if not self._admit(workspace, user_id):
            return Reply(
                f"You have asked {self._limit} questions in the last minute; try again shortly.", None
            )
        try:
            answer = self._lore.ask(
                question, Scope(workspace, [channel] if channels is None else list(channels))
            )
        except InvalidInput as exc:
            return Reply(f"I could not take that question: {exc}.", None)
        return Reply(render(answer, link), answer)

    def _admit(self, workspace: str, user_id: str) -> bool:
        now = self._monotonic()
        asked = self._asked.setdefault((workspace, user_id), deque())
        while asked and now - asked[0] >= 60.0:
            asked.popleft()
        if len(asked) >= self._limit:
            return False
        asked.append(now)
        return True


def render(answer: Answer, link: Link = markdown_link) -> str:
    """The answer text, then one line per citation linking each source message."""
    if not answer.known:
        return answer.text
    lines = [answer.text, ""]
    for number, view in enumerate(answer.citations, start=1):
        sources = (
            ", ".join(link(s.permalink, f"{s.author_name}, {s.ts:%Y-%m-%d}") for s in view.sources)
            or "source message no longer available"
        )
        flag = " (contested: under review)" if isinstance(view, FactView) and view.fact.contested else ""
        lines.append(f"[{number}] {sources}{flag}")
    return "\n".join(lines)
