"""Page sections as HTML: the writer's Markdown, with each citation opening its source message in
the wiki and each statement linking to its fact's timeline.

Markdown is rendered with raw HTML off (message text is data: nothing in it becomes markup).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from markdown_it import MarkdownIt
from markdown_it.token import Token
from markupsafe import Markup

from teamlore.wiki.model import Section

_md = MarkdownIt("commonmark", {"html": False}).enable("strikethrough")


@dataclass(frozen=True, slots=True)
class RenderedSection:
    key: str
    title: str
    html: Markup
    unlinked: tuple[str, ...]  # cited fact ids no statement line could carry (shown as a list)


def section_html(
    section: Section, message_urls: Mapping[str, str], fact_url: str, citations: Sequence[str]
) -> RenderedSection:
    """``message_urls``: permalink -> the wiki's page of that message. ``fact_url``: a format
    string with ``{fact_id}``. A writer that puts one list item per cited fact (the template
    writer does) gets a timeline link on each item; otherwise the cited facts are listed apart."""
    tokens = _md.parse(section.body)
    items = [t for t in tokens if t.type == "list_item_open" and t.level == 1]
    per_item = len(items) == len(citations)
    position = -1
    for index, token in enumerate(tokens):
        if token.type == "list_item_open" and token.level == 1:
            position += 1
        if token.type != "inline" or token.children is None:
            continue
        for child in token.children:
            if child.type == "link_open":
                _relink(child, message_urls)
        in_item = index > 0 and tokens[index - 1].type == "paragraph_open" and tokens[index - 1].level == 2
        if per_item and in_item and position >= 0:
            token.children.extend(_timeline_link(fact_url.format(fact_id=citations[position])))
    html = Markup(_md.renderer.render(tokens, _md.options, {}))  # raw HTML was off: safe
    return RenderedSection(section.key, section.title, html, () if per_item else tuple(citations))


def _relink(link: Token, message_urls: Mapping[str, str]) -> None:
    href = str(link.attrGet("href") or "")
    if href in message_urls:
        link.attrSet("href", message_urls[href])
        link.attrSet("class", "cite")
        link.attrSet("title", "Open the source message")
    else:
        link.attrSet("rel", "noopener noreferrer")


def _timeline_link(url: str) -> list[Token]:
    opening = Token("link_open", "a", 1, attrs={"href": url, "class": "fact-link"})
    return [
        Token("text", "", 0, content=" "),
        opening,
        Token("text", "", 0, content="timeline"),
        Token("link_close", "a", -1),
    ]
