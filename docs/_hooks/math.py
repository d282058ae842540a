"""MkDocs hook: TeX math rendered to MathML when the site is built, so pages need no script
and no network (browsers render MathML natively).

`pymdownx.arithmatex` (generic mode) finds `$...$` and `$$...$$` outside code and leaves
`<span class="arithmatex">\\(...\\)</span>` / `<div class="arithmatex">\\[...\\]</div>`;
this hook replaces each by latex2mathml's MathML. A formula latex2mathml cannot read stops
the build with the page's name."""

from __future__ import annotations

import html
import re

from latex2mathml.converter import convert

_MATH = re.compile(r'<(span|div) class="arithmatex">\s*\\([(\[])(.*?)\\[)\]]\s*</\1>', re.S)


def to_mathml(tex: str, display: bool) -> str:
    return convert(html.unescape(tex).strip(), display="block" if display else "inline")


def on_page_content(content: str, page, **kwargs) -> str:
    def repl(m: re.Match) -> str:
        try:
            return to_mathml(m.group(3), m.group(2) == "[")
        except Exception as e:  # noqa: BLE001 - any parser failure names the page
            raise ValueError(f"{page.file.src_path}: cannot render ${m.group(3)}$: {e}") from e

    return _MATH.sub(repl, content)
