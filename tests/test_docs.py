"""The documentation cannot rot: its Python blocks run and its command lines exist.

The rules a page follows are in `tests/_markdown.py` (and docs/internals.md)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import textwrap

import pytest

import _markdown as md

# Runs one page's blocks in order in one namespace; a traceback names the page and its line.
RUNNER = textwrap.dedent("""
    import json, sys
    ns = {"__name__": "__main__"}
    for path, line, code in json.load(open(sys.argv[1])):
        print(f"--- {path}:{line}", flush=True)
        exec(compile("\\n" * (line - 1) + code, path, "exec"), ns)
""")

# `--help` of every shown command, in one process: {key: [exit code, text]}.
HELPS = textwrap.dedent("""
    import contextlib, io, json, runpy, sys
    out, (spec, result) = {}, sys.argv[1:3]
    for key, module, argv in json.load(open(spec)):
        buf = io.StringIO()
        sys.argv = [module] + argv
        code = 0
        with contextlib.redirect_stdout(buf), contextlib.redirect_stderr(buf):
            try:
                runpy.run_module(module, run_name="__main__", alter_sys=True)
            except SystemExit as e:
                code = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
            except Exception as e:
                code, _ = 1, buf.write(repr(e))
        out[key] = [code, buf.getvalue()]
    json.dump(out, open(result, "w"))
""")


def _env():
    env = dict(os.environ, MPLBACKEND="Agg", PYTHONPATH=str(md.ROOT))
    env.pop("XLA_FLAGS", None)
    return env


def _page_param(page, blocks, slow):
    name = str(page.relative_to(md.ROOT))
    return pytest.param(name, blocks, id=name, marks=[pytest.mark.slow] if slow else [])


@pytest.mark.parametrize("name,blocks", [_page_param(*p) for p in md.python_pages()])
def test_python_blocks_of_page_run(name, blocks, tmp_path):
    spec = tmp_path / "blocks.json"
    spec.write_text(json.dumps([[str(b.path), b.line, b.code] for b in blocks]))
    work = tmp_path / "work"
    work.mkdir()
    proc = subprocess.run([sys.executable, "-c", RUNNER, str(spec)], cwd=work, env=_env(),
                          capture_output=True, text=True, timeout=1800)
    assert proc.returncode == 0, f"a Python block of {name} failed:\n{proc.stdout[-3000:]}\n" \
                                 f"{proc.stderr[-6000:]}"


def test_every_page_is_checked():
    """The collector finds the README's blocks (guards against a parser that finds nothing)."""
    readme = md.blocks(md.ROOT / "README.md")
    assert any(b.lang in md.SHELL and "make test" in b.code for b in readme)
    assert any(b.lang == "python" for b in readme)


def test_marker_rules(tmp_path):
    page = tmp_path / "p.md"
    page.write_text("<!-- docs-test: slow | n=1000 => n=3 -->\n```python\nx = [0] * n=1000\n```\n")
    (b,) = md.blocks(page)
    assert b.slow and b.code == "x = [0] * n=3" and b.line == 3
    page.write_text("<!-- docs-test: slow | absent => 1 -->\n```python\nx = 1\n```\n")
    with pytest.raises(ValueError, match="not in the block"):
        md.blocks(page)
    page.write_text("<!-- docs-test: skip -->\n```python\nx = 1\n```\n")
    with pytest.raises(ValueError, match="starts with 'slow'"):
        md.blocks(page)


def _help_argv(cmd: md.Command) -> list[list[str]]:
    """`[SUB, --help]` for the first positional word (a subcommand, if the module has one),
    then plain `--help`."""
    pos = next((a for a in cmd.args if not a.startswith("-")), None)
    return ([[pos, "--help"]] if pos else []) + [["--help"]]


def test_shown_commands_exist(tmp_path):
    cmds = md.commands()
    assert cmds, "no command found in the docs"
    targets = set(re.findall(r"^([\w-]+):", (md.ROOT / "Makefile").read_text(), re.M))
    jobs = {}
    for c in cmds:
        if c.module is not None:
            for argv in _help_argv(c):
                jobs[json.dumps([c.module, argv])] = (c.module, argv)
    spec, result = tmp_path / "helps.json", tmp_path / "out.json"
    spec.write_text(json.dumps([[k, m, a] for k, (m, a) in jobs.items()]))
    subprocess.run([sys.executable, "-c", HELPS, str(spec), str(result)], cwd=md.ROOT,
                   env=_env(), check=True, timeout=900)
    helps = json.loads(result.read_text())
    bad = []
    for c in cmds:
        if c.module is None:
            if c.args and c.args[0] not in targets:
                bad.append(f"{c.where}: `make {c.args[0]}` is not a Makefile target")
            continue
        answers = [helps[json.dumps([c.module, a])] for a in _help_argv(c)]
        text = next((t for code, t in answers if code == 0 and "usage" in t.lower()), None)
        if text is None:
            bad.append(f"{c.where}: `python -m {c.module} ... --help` failed: "
                       f"{answers[-1][1][-500:]}")
            continue
        for a in c.args:
            flag = a.split("=", 1)[0]
            if flag.startswith("--") and not re.search(rf"(?<![\w-]){re.escape(flag)}(?![\w-])",
                                                       text):
                bad.append(f"{c.where}: `{c.line}` shows {flag}, which "
                           f"`python -m {c.module}` does not have")
    assert not bad, "\n".join(bad)


PACKAGES = ("dsr", "dsr.models", "dsr.baselines", "dsr.metrics", "dsr.icl", "data_gen")


def test_every_public_name_has_an_api_entry():
    """Each name a package exports is documented (`::: pkg.name`) on an API page, under that
    package or the one it is re-exported from."""
    import importlib
    text = "\n".join(p.read_text() for p in (md.ROOT / "docs" / "api").glob("*.md"))
    entries = set(re.findall(r"^:::\s*([\w.]+)", text, re.M))
    missing = []
    for pkg in PACKAGES:
        mod = importlib.import_module(pkg)
        names = getattr(mod, "__all__", None) or [n for n in vars(mod) if not n.startswith("_")]
        for n in names:
            obj = getattr(mod, n)
            if getattr(obj, "__module__", "").split(".")[0] not in ("dsr", "data_gen"):
                continue  # a re-exported submodule or constant
            if isinstance(obj, type(mod)):
                continue  # a submodule: its own page
            if not {f"{p}.{n}" for p in PACKAGES} & entries:
                missing.append(f"{pkg}.{n}")
    assert not missing, f"public names without an API entry in docs/api/: {missing}"


# ------------------------------------------------------------------ reference tables vs code

API_GROUPS = ("Training and α strategies", "Models", "Generation and evaluation",
              "Ensembles and devices", "Sweeps", "Solvers and scans", "Files", "Extension")


def _public_names(mod) -> list[str]:
    """The names a package exports: `__all__`, else its public attributes defined in this
    project (not re-exported modules or third-party helpers)."""
    names = getattr(mod, "__all__", None)
    if names is None:
        names = [n for n, v in vars(mod).items() if not n.startswith("_")
                 and not isinstance(v, type(mod))
                 and getattr(v, "__module__", "").split(".")[0] in ("dsr", "data_gen")]
    return list(names)


def test_api_page_groups_every_public_name_by_topic():
    """docs/api/dsr.md is grouped by topic; every public name of `dsr` is in exactly one group
    (a `::: dsr....NAME` entry or a link `[...][dsr....NAME]`), and `fit` comes first."""
    import dsr

    page = md.ROOT / "docs" / "api" / "dsr.md"
    text = page.read_text()
    groups = md.subsections(text, 2)
    assert list(groups) == list(API_GROUPS), f"groups of {page.name}: {list(groups)}"
    entries = re.findall(r"^:::\s*([\w.]+)", text, re.M)
    assert entries and entries[0] == "dsr.fit", f"the first entry is {entries[:1]}, not dsr.fit"
    bad = []
    for name in _public_names(dsr):
        if isinstance(getattr(dsr, name), type(dsr)):
            continue  # a sub-package: its own page
        pat = re.compile(rf"(^:::\s*dsr(\.\w+)*\.{name}\s*$)|(\]\[dsr(\.\w+)*\.{name}\])", re.M)
        where = [g for g, body in groups.items() if pat.search(body)]
        if len(where) != 1:
            bad.append(f"dsr.{name}: in {len(where)} groups {where}")
    assert not bad, "docs/api/dsr.md:\n" + "\n".join(bad)


def test_fit_table_matches_the_signature():
    """training.md's table has one row per keyword of `dsr.fit`, no other, with its default."""
    import ast
    import inspect

    import dsr

    params = {k: p.default for k, p in inspect.signature(dsr.fit).parameters.items()
              if p.default is not inspect.Parameter.empty}
    rows = md.table_rows(md.section(md.ROOT / "docs" / "training.md", "`dsr.fit` options"))
    seen, bad = set(), []
    for row in rows:
        (name,) = md.code_spans(row[0]) or [row[0]]
        seen.add(name)
        if name not in params:
            bad.append(f"row `{name}`: dsr.fit has no such keyword")
            continue
        shown = md.code_spans(row[1])
        try:
            ok = bool(shown) and ast.literal_eval(shown[0]) == params[name]
        except (ValueError, SyntaxError):
            ok = False
        if not ok:
            bad.append(f"row `{name}`: default {row[1]!r}, the signature's is {params[name]!r}")
    bad += [f"keyword `{k}` has no row" for k in params if k not in seen]
    assert not bad, "docs/training.md, `dsr.fit` options:\n" + "\n".join(bad)


def _cli_options(every_flag: bool = False) -> dict[str, set[str]]:
    """`{command: its options}` of `python -m dsr`, read from its argument parser: the first
    long flag of each optional argument (every flag with `every_flag`), the metavar of each
    positional one."""
    import argparse

    from dsr._cli._main import build_parser

    sub = next(a for a in build_parser()._actions
               if isinstance(a, argparse._SubParsersAction))
    out = {}
    for name, parser in sub.choices.items():
        opts = set()
        for a in parser._actions:
            if isinstance(a, argparse._HelpAction):
                continue
            longs = [s for s in a.option_strings if s.startswith("--")]
            opts |= set(longs if every_flag else longs[:1]) or {a.metavar or a.dest}
        out[name] = opts
    return out


def test_command_line_tables_match_the_parser():
    """own-recordings.md's option tables name every option of `python -m dsr fit / evaluate /
    generate` (in a table whose heading names the command) and no option that does not exist."""
    tables = md.subsections(md.section(md.ROOT / "docs" / "own-recordings.md", "Options"), 3)
    options = _cli_options()
    assert set(options) >= {"fit", "evaluate", "generate"}, options
    bad = []
    for command, opts in options.items():
        shown = set()
        for heading, body in tables.items():
            if re.search(rf"`{command}\b", heading):
                for row in md.table_rows(body):
                    shown |= {w.split()[0] for w in md.code_spans(row[0])}
        bad += [f"`python -m dsr {command}`: {o} has no row" for o in sorted(opts - shown)]
    every = set().union(*options.values(), *_cli_options(every_flag=True).values())
    for heading, body in tables.items():
        for row in md.table_rows(body):
            spans = md.code_spans(row[0])
            for w in spans[:1] + [s for s in spans[1:] if s.startswith("--")]:
                if w.split()[0] not in every:
                    bad.append(f"{heading}: `{w}` is no option of `python -m dsr`")
    assert not bad, "docs/own-recordings.md, Options:\n" + "\n".join(bad)


# ------------------------------------------------------------------ math and the findings' lead

# An equation set as code: a span with ⊙, a time index (`_t =`, `_{t`), or a Greek letter or
# math mark (bar, hat, ⁺, ‖, Σ, ᵀ) together with `=` or `←`. Equations are TeX (`$...$`),
# rendered to MathML by docs/_hooks/math.py; code spans are for what a user types.
_MATHY = re.compile(r"[α-ωΑ-Ω\u0304\u0302\u0303⁺‖∑ᵀ]")
_EQUATION_IN_CODE = re.compile(r"⊙|_t\s*=|_\{t")
_SPAN = r"(?<!`)(`+)(?!`)((?:(?!\n\s*\n).)+?)(?<!`)\1(?!`)"  # one paragraph at most


def _code_spans_outside_blocks(text: str) -> list[tuple[int, str]]:
    text = re.sub(r"^(\s*)(`{3,}|~{3,}).*?^\1\2", lambda m: "\n" * m.group(0).count("\n"),
                  text, flags=re.S | re.M)
    return [(text.count("\n", 0, m.start()) + 1, m.group(2))
            for m in re.finditer(_SPAN, text, re.S)]


# Pages still to convert (none left).
_MATH_LATER: set[str] = set()


def test_equations_are_math_not_code():
    """No page (README.md and docs/) shows an equation as an inline code span."""
    bad = []
    for page in md.pages():
        if str(page.relative_to(md.ROOT)) in _MATH_LATER:
            continue
        for line, span in _code_spans_outside_blocks(page.read_text(encoding="utf-8")):
            if _EQUATION_IN_CODE.search(span) or (_MATHY.search(span)
                                                  and re.search(r"=|←", span)):
                bad.append(f"{page.relative_to(md.ROOT)}:{line}: `{span}`")
    assert not bad, "equations in code spans (write them as $...$ TeX):\n" + "\n".join(bad)


def test_findings_page_opens_with_a_short_answer():
    """docs/findings.md opens (before its first `##`) with a table of at most 5 columns whose
    rows each give a verdict and name their record under docs/findings/; every `a ± b` in a
    row is a median ± MAD of that record's summary, as shown (rounded)."""
    import math

    text = (md.ROOT / "docs" / "findings.md").read_text(encoding="utf-8")
    lead = text.split("\n## ", 1)[0]
    rows = md.table_rows(lead)
    header = next(ln for ln in lead.splitlines() if ln.startswith("|"))
    assert rows and len(header.strip("|").split("|")) <= 5, "no short table (≤ 5 columns) first"
    bad = []
    for row in rows:
        if "holds" not in row[1]:
            bad.append(f"row {row[0]!r}: no verdict in words")
        records = [md.ROOT / "docs" / "findings" / s for s in md.code_spans(row[-1])]
        if not records or not all(r.is_file() for r in records):
            bad.append(f"row {row[0]!r}: names no record under docs/findings/: {row[-1]!r}")
            continue
        pairs = {(d[m], d[m + "_mad"]) for r in records
                 for d in json.loads(r.read_text())["summary"]
                 for m in ("D", "D_stsp_DE", "D_stsp") if m in d}
        for med, mad in re.findall(r"([\d.]+) ± ([\d.]+)", " ".join(row)):
            def shown(x, s):
                return math.isfinite(x) and abs(x - float(s)) <= 0.5 * 10 ** -len(
                    s.partition(".")[2])
            if not any(shown(a, med) and shown(b, mad) for a, b in pairs):
                bad.append(f"row {row[0]!r}: {med} ± {mad} is in none of {row[-1]}")
    assert not bad, "docs/findings.md, the short answer:\n" + "\n".join(bad)


def test_command_line_tables_give_the_parsers_numeric_defaults():
    """The default column of own-recordings.md's `fit` tables equals `dsr fit`'s default for
    every option with a numeric default (they follow `dsr.fit`'s, which change with evidence)."""
    from dsr._cli._options import FIT_OPTIONS

    tables = md.subsections(md.section(md.ROOT / "docs" / "own-recordings.md", "Options"), 3)
    rows = {md.code_spans(r[0])[0].split()[0]: r for h, body in tables.items()
            if re.search(r"`fit\b", h) for r in md.table_rows(body) if md.code_spans(r[0])}
    bad = []
    for o in FIT_OPTIONS:
        d = o.default
        if isinstance(d, bool) or not isinstance(d, (int, float)) or o.long not in rows:
            continue
        shown = rows[o.long][1].strip().strip("`").replace(",", "")  # 20,000
        try:
            ok = float(shown) == float(d)
        except ValueError:
            ok = False
        if not ok:
            bad.append(f"{o.long}: the table says {shown!r}, the parser's default is {d!r}")
    assert not bad, "docs/own-recordings.md, Options:\n" + "\n".join(bad)
