"""HTML to plain text with paragraph breaks, through selectolax (lexbor, fast and small).

Noise is dropped (scripts, styles, navigation, embedded media). Block elements become
paragraphs separated by a blank line so the paragraph chunker can cut between them;
``<br>`` and table rows become line breaks; whitespace inside other text collapses to one
space as a browser renders it, except inside ``<pre>``, which is kept verbatim.
"""

from __future__ import annotations

import re
from typing import Any

DROP_TAGS = (
    "script", "style", "noscript", "template", "svg", "canvas", "iframe", "object",
    "embed", "nav", "head", "button", "select",
)  # fmt: skip
DROP_SELECTORS = '[role="navigation"], [aria-hidden="true"], [hidden]'
BLOCK_TAGS = frozenset(
    {
        "address", "article", "aside", "blockquote", "body", "caption", "center", "dd",
        "details", "dialog", "div", "dl", "dt", "fieldset", "figcaption", "figure",
        "footer", "form", "h1", "h2", "h3", "h4", "h5", "h6", "header", "hgroup", "hr",
        "legend", "li", "main", "menu", "ol", "p", "pre", "section", "summary", "table",
        "tbody", "thead", "tfoot", "ul",
    }
)  # fmt: skip
LINE_TAGS = frozenset({"br", "tr"})
CELL_TAGS = frozenset({"td", "th"})

# Private-use sentinels mark structure until whitespace is collapsed (stripped from input).
_PARA, _LINE, _SPACE, _TAB = "\ue000", "\ue001", "\ue002", "\ue003"
_SENTINELS = re.compile("[\ue000-\ue003]")
_WS = re.compile(r"\s+")
_SPACES = re.compile(r" {2,}")
_BLANK_RUNS = re.compile(r"\n{3,}")
_EXIT_PRE = object()


def html_to_text(html: str) -> tuple[str, str]:
    """Convert an HTML page to ``(title, text)``.

    Args:
        html: The page source, already decoded.

    Returns:
        The ``<title>`` with whitespace collapsed ("" if none) and the readable text,
        paragraphs separated by one blank line, without leading or trailing whitespace.
    """
    from selectolax.lexbor import LexborHTMLParser

    tree = LexborHTMLParser(html)
    title_node = tree.css_first("title")
    title = _WS.sub(" ", title_node.text()).strip() if title_node is not None else ""
    for node in tree.css(DROP_SELECTORS):
        node.decompose()
    tree.strip_tags(list(DROP_TAGS))
    root = tree.body if tree.body is not None else tree.root
    if root is None:
        return title, ""
    return title, _assemble(_pieces(root))


def _pieces(root: Any) -> list[str]:
    """Walk the tree without recursion (deep pages exist) and emit text plus sentinels."""
    out: list[str] = []
    in_pre = 0
    stack: list[Any] = [root]
    while stack:
        node = stack.pop()
        if node is _EXIT_PRE:
            in_pre -= 1
            continue
        if isinstance(node, str):
            out.append(node)
            continue
        tag = node.tag
        if tag == "-text":
            out.append(_text(node.text_content or "", verbatim=in_pre > 0))
            continue
        if tag.startswith("-"):  # comments, doctype
            continue
        children = list(node.iter(include_text=True))
        if tag in BLOCK_TAGS:
            out.append(_PARA)
            stack.append(_PARA)
        elif tag in LINE_TAGS:
            stack.append(_LINE)
        elif tag in CELL_TAGS:
            stack.append(" ")
        if tag == "pre":
            in_pre += 1
            stack.append(_EXIT_PRE)
        stack.extend(reversed(children))
    return out


def _text(raw: str, *, verbatim: bool) -> str:
    raw = _SENTINELS.sub("", raw)
    if not verbatim:
        return _WS.sub(" ", raw)
    # entities are decoded by now: "&#13;" is a "\r" the loader's newline pass never saw
    raw = raw.replace("\r\n", "\n").replace("\r", "\n")
    return raw.replace("\n", _LINE).replace(" ", _SPACE).replace("\t", _TAB)


def _assemble(pieces: list[str]) -> str:
    """Collapse spaces, strip each line, and join non-empty paragraphs with a blank line."""
    paragraphs = []
    for block in "".join(pieces).split(_PARA):
        lines = [_SPACES.sub(" ", line).strip(" ") for line in block.split(_LINE)]
        text = "\n".join(lines).strip("\n")
        if text:
            paragraphs.append(text.replace(_SPACE, " ").replace(_TAB, "\t"))
    return _BLANK_RUNS.sub("\n\n", "\n\n".join(paragraphs))
