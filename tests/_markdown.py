"""The code blocks of the documentation, as the docs tests run them.

Rules (also in docs/internals.md, "Documentation that cannot rot"):

- Every ```` ```python ```` block of README.md and docs/**/*.md is executed. The blocks of one
  page run in order, in one namespace, in a fresh temporary working directory.
- A long block says so in an HTML comment on the line right before its fence:
  `<!-- docs-test: slow | steps=6000 => steps=30 | 30_000 => 500 -->`. Each `OLD => NEW` after
  `slow` is a literal replacement applied to that block for the test (smaller sizes); a page
  with a slow block runs in the slow suite (`make test-slow`). Nothing is ever skipped.
- Every `python -m MODULE ...` line of a shell block (```` ```bash ````, `sh`, `console`,
  `shell`) is checked against `python -m MODULE [SUBCOMMAND] --help`: the module must answer
  and every `--flag` on the line must be in its help. `make TARGET` lines must name a target
  of the Makefile.
"""

from __future__ import annotations

import dataclasses
import re
import shlex
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SHELL = {"bash", "sh", "console", "shell"}
OURS = ("dsr", "data_gen", "benchmarks", "examples")
_FENCE = re.compile(r"^(\s*)(`{3,}|~{3,})\s*([\w+-]*)")
_MARK = re.compile(r"^\s*<!--\s*docs-test:\s*(.*?)\s*-->\s*$")


@dataclasses.dataclass(frozen=True)
class Block:
    path: Path
    line: int  # 1-based line of the first code line
    lang: str
    code: str
    slow: bool = False

    @property
    def where(self) -> str:
        return f"{self.path.relative_to(ROOT)}:{self.line}"


def pages() -> list[Path]:
    """README.md and every page of the documentation site."""
    return [ROOT / "README.md"] + sorted((ROOT / "docs").rglob("*.md"))


def _marker(text: str, where: str) -> tuple[bool, list[tuple[str, str]]]:
    parts = [p.strip() for p in text.split("|")]
    if parts[0] != "slow":
        raise ValueError(f"{where}: a docs-test marker starts with 'slow', got {parts[0]!r}")
    subs = []
    for p in parts[1:]:
        if "=>" not in p:
            raise ValueError(f"{where}: expected 'OLD => NEW' in the docs-test marker, got {p!r}")
        old, new = (s.strip() for s in p.split("=>", 1))
        subs.append((old, new))
    return True, subs


def blocks(path: Path) -> list[Block]:
    """The fenced code blocks of one markdown file, markers applied."""
    lines = path.read_text(encoding="utf-8").splitlines()
    out, i = [], 0
    while i < len(lines):
        m = _FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        indent, fence, lang = m.group(1), m.group(2), m.group(3).lower()
        start, j = i + 1, i + 1
        while j < len(lines) and not lines[j].strip().startswith(fence):
            j += 1
        code = "\n".join(ln[len(indent):] if ln.startswith(indent) else ln
                         for ln in lines[start:j])
        prev = lines[i - 1] if i > 0 else ""
        mark = _MARK.match(prev)
        slow, subs = _marker(mark.group(1), f"{path}:{i}") if mark else (False, [])
        for old, new in subs:
            if old not in code:
                raise ValueError(f"{path}:{i}: the docs-test marker replaces {old!r}, "
                                 "which is not in the block")
            code = code.replace(old, new)
        out.append(Block(path, start + 1, lang, code, slow))
        i = j + 1
    return out


def python_pages() -> list[tuple[Path, list[Block], bool]]:
    """`(page, its python blocks, slow)` for every page with python blocks."""
    out = []
    for p in pages():
        py = [b for b in blocks(p) if b.lang in ("python", "py")]
        if py:
            out.append((p, py, any(b.slow for b in py)))
    return out


@dataclasses.dataclass(frozen=True)
class Command:
    where: str
    line: str
    module: str | None  # `python -m MODULE`, or None for `make`
    args: tuple[str, ...]


def _logical_lines(code: str) -> list[str]:
    out, cur = [], ""
    for ln in code.splitlines():
        ln = re.sub(r"^\s*\$\s+", "", ln)
        if ln.rstrip().endswith("\\"):
            cur += ln.rstrip()[:-1] + " "
            continue
        out.append(cur + ln)
        cur = ""
    return out + ([cur] if cur else [])


def commands() -> list[Command]:
    """Every `python -m <our module>` and `make` line shown in a shell block."""
    out = []
    for p in pages():
        for b in blocks(p):
            if b.lang not in SHELL:
                continue
            for ln in _logical_lines(b.code):
                try:
                    words = shlex.split(ln, comments=True)
                except ValueError:
                    words = ln.split()
                out += _commands_in(b.where, ln.strip(), words)
    return out


def _commands_in(where: str, line: str, words: list[str]) -> list[Command]:
    out = []
    for k, w in enumerate(words):
        if w == "make" and k + 1 < len(words):
            out.append(Command(where, line, None, tuple(words[k + 1:k + 2])))
        if re.fullmatch(r"(\S*/)?python3?", w) and words[k + 1:k + 2] == ["-m"] \
                and k + 2 < len(words) and words[k + 2].split(".")[0] in OURS:
            rest = []
            for a in words[k + 3:]:
                if a in ("&&", "||", ";", "|", ">", ">>", "2>&1", "&"):
                    break
                rest.append(a)
            out.append(Command(where, line, words[k + 2], tuple(rest)))
    return out


def section(path: Path, heading: str) -> str:
    """The text of a page under the heading whose text is `heading` (any level), up to the
    next heading of the same or a higher level."""
    lines = path.read_text(encoding="utf-8").splitlines()
    fenced, in_code = [], False
    for ln in lines:  # a `# comment` inside a code block is no heading
        if _FENCE.match(ln):
            in_code = not in_code
        fenced.append(in_code or bool(_FENCE.match(ln)))
    for i, ln in enumerate(lines):
        m = re.match(r"^(#+)\s+(.*?)\s*$", ln)
        if m and not fenced[i] and m.group(2) == heading:
            level, out = len(m.group(1)), []
            for ln2, code in zip(lines[i + 1:], fenced[i + 1:]):
                m2 = re.match(r"^(#+)\s", ln2)
                if m2 and not code and len(m2.group(1)) <= level:
                    break
                out.append(ln2)
            return "\n".join(out)
    raise ValueError(f"{path}: no heading {heading!r}")


def subsections(text: str, level: int) -> dict[str, str]:
    """`{heading: text}` for the headings of exactly `level` in `text`."""
    parts = re.split(rf"^{'#' * level}[ \t]+(.*?)[ \t]*$", text, flags=re.M)
    return dict(zip(parts[1::2], parts[2::2]))


def table_rows(text: str) -> list[list[str]]:
    """The body rows of every Markdown table in `text`, as lists of cell texts."""
    rows, lines = [], text.splitlines()
    for i, ln in enumerate(lines):
        if not ln.startswith("|") or re.fullmatch(r"\|(\s*:?-+:?\s*\|)+", ln.strip()):
            continue
        if i + 1 < len(lines) and re.fullmatch(r"\|(\s*:?-+:?\s*\|)+", lines[i + 1].strip()):
            continue  # a header row
        cells = re.split(r"(?<!\\)\|", ln.strip())[1:-1]
        rows.append([c.strip() for c in cells])
    return rows


def code_spans(cell: str) -> list[str]:
    return re.findall(r"`([^`]+)`", cell)
