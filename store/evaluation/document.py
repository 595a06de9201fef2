"""A report as a list of sections of paragraphs, tables and images, rendered as Markdown
(for a repository; images are named, not embedded) or as one self-contained HTML page
(images embedded as base64 PNG)."""

from __future__ import annotations

import base64
import html
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from profstore.presentation.text_table import format_cell

__all__ = ["Image", "Section", "Table", "render_html", "render_markdown"]


@dataclass
class Table:
    columns: list[tuple[str, str]]
    rows: list[dict[str, Any]]


@dataclass
class Image:
    title: str
    png: bytes


@dataclass
class Section:
    title: str
    blocks: list[str | Table | Image] = field(default_factory=list)


def render_markdown(title: str, sections: Sequence[Section]) -> str:
    out = [f"# {title}", ""]
    for section in sections:
        out += [f"## {section.title}", ""]
        for block in section.blocks:
            if isinstance(block, Table):
                out += _md_table(block) + [""]
            elif isinstance(block, Image):
                out += [f"*(figure: {block.title} — in the HTML report)*", ""]
            else:
                out += [block, ""]
    return "\n".join(out)


def _md_cell(value: Any) -> str:
    """A cell as every profstore table writes it (``formatting.format_cell``); an empty
    text or mapping is ``-`` too."""
    text = "-" if value == "" or value == {} else format_cell(value)
    return text.replace("|", "\\|").replace("\n", " ")


def _md_table(table: Table) -> list[str]:
    lines = ["| " + " | ".join(title for _, title in table.columns) + " |",
             "|" + "---|" * len(table.columns)]
    lines += ["| " + " | ".join(_md_cell(row.get(key)) for key, _ in table.columns) + " |"
              for row in table.rows]
    return lines


def render_html(title: str, sections: Sequence[Section]) -> str:
    esc = html.escape
    out = [f"<!doctype html><html><head><meta charset='utf-8'><title>{esc(title)}</title>",
           "<style>body{font:14px sans-serif;margin:2em}table{border-collapse:collapse;"
           "margin:1em 0}td,th{border:1px solid #ccc;padding:3px 6px;vertical-align:top}"
           "th{background:#eee}</style></head><body>", f"<h1>{esc(title)}</h1>"]
    for section in sections:
        out.append(f"<h2>{esc(section.title)}</h2>")
        for block in section.blocks:
            if isinstance(block, Table):
                out.append("<table><tr>" + "".join(f"<th>{esc(h)}</th>"
                                                   for _, h in block.columns) + "</tr>")
                out += ["<tr>" + "".join(f"<td>{esc(_md_cell(row.get(k)))}</td>"
                                         for k, _ in block.columns) + "</tr>"
                        for row in block.rows]
                out.append("</table>")
            elif isinstance(block, Image):
                data = base64.b64encode(block.png).decode("ascii")
                out.append(f"<figure><img alt='{esc(block.title)}' "
                           f"src='data:image/png;base64,{data}'>"
                           f"<figcaption>{esc(block.title)}</figcaption></figure>")
            else:
                out.append(f"<p>{esc(block)}</p>")
    out.append("</body></html>")
    return "\n".join(out)
