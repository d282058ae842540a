"""The documentation site as a reader meets it (slow): built with `mkdocs build --strict`,
served on localhost, every page opened in headless Chromium (Playwright drives Debian's
`chromium`): no console errors, every image loads, every internal link resolves, and the
search box finds `fit`, no TeX is left unrendered (`$...$` as text); at 1,280 px nothing in
the content column needs sideways scrolling
and every figure is drawn at 60 % of its natural width or more. Needs the `docs` and `site` dependency groups and `chromium`
(`.ci/run` installs them); set DSR_SITE_SHOTS=DIR to keep a screenshot of every page."""

from __future__ import annotations

import functools
import http.server
import os
import shutil
import subprocess
import sys
import threading
import urllib.parse
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
CHROMIUM = os.environ.get("DSR_CHROMIUM") or shutil.which("chromium") or "/usr/bin/chromium"
FLAGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync"]

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    out = tmp_path_factory.mktemp("site")
    # not -q: a quiet build drops its warnings before --strict counts them (a page missing from
    # the nav passed here and failed `make docs`)
    built = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "-d", str(out)],
                           cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert built.returncode == 0, built.stderr[-4000:]
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(out))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield out, f"http://127.0.0.1:{server.server_address[1]}/"
    server.shutdown()


@pytest.fixture(scope="module")
def browser():
    from playwright import sync_api as sync  # the `site` group (make test-slow installs it)

    assert Path(CHROMIUM).exists(), f"no Chromium at {CHROMIUM} (apt-get install chromium)"
    with sync.sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=FLAGS)
        yield b
        b.close()


def _pages(out: Path) -> list[str]:
    return sorted(str(p.relative_to(out)) for p in out.rglob("index.html")
                  if "assets" not in p.parts and p.parent.name != "404")


def _internal_target(out: Path, page: str, href: str) -> Path | None:
    """The file an internal link points at (None for external links and anchors only)."""
    u = urllib.parse.urlparse(href)
    if u.scheme in ("http", "https") and u.hostname != "127.0.0.1" or u.scheme in (
            "mailto", "javascript", "data") or not u.path:
        return None
    path = urllib.parse.unquote(u.path)
    base = out / ("/" if path.startswith("/") else Path(page).parent)
    target = (out / path.lstrip("/")) if path.startswith("/") else (base / path)
    return target / "index.html" if path.endswith("/") or target.is_dir() else target


# Every <details> opened first, so folded tables and figures are measured too.
LAYOUT = """() => {
  document.querySelectorAll('details').forEach(d => { d.open = true; });
  const col = document.querySelector('.md-content__inner');
  const cr = col.getBoundingClientRect();
  const out = [], seen = new Set(), SLACK = 4;  // px: an inline code span's padding at a line end
  const text = el => (el.textContent || el.getAttribute('src') || '').trim().slice(0, 70);
  if (col.scrollWidth > col.clientWidth + SLACK)
    out.push(`the column is ${col.scrollWidth} px wide inside ${col.clientWidth} px`);
  for (const el of col.querySelectorAll('*')) {
    if ([...seen].some(a => a.contains(el))) continue;
    const r = el.getBoundingClientRect();
    if (r.width === 0 || r.height === 0) continue;
    const s = getComputedStyle(el);
    if (['auto', 'scroll'].includes(s.overflowX) && el.scrollWidth > el.clientWidth + SLACK) {
      out.push(`<${el.tagName.toLowerCase()}> scrolls sideways (${el.scrollWidth} px in ` +
               `${el.clientWidth} px): ${text(el)}`);
      seen.add(el);
    } else if (r.right > cr.right + SLACK) {
      out.push(`<${el.tagName.toLowerCase()}> sticks out of the column by ` +
               `${Math.round(r.right - cr.right)} px: ${text(el)}`);
      seen.add(el);
    }
  }
  const figs = [...col.querySelectorAll('img')].filter(i => i.naturalWidth >= 200).map(
    i => [i.getAttribute('src'), i.naturalWidth, i.getBoundingClientRect().width]);
  return [out, figs];
}"""


# Math is MathML (docs/_hooks/math.py): a `$...$` left in the page's text outside code is TeX
# that was not rendered.
RAW_MATH = r"""() => {
  const out = [], walk = document.createTreeWalker(
    document.querySelector('.md-content__inner'), NodeFilter.SHOW_TEXT);
  while (walk.nextNode()) {
    const n = walk.currentNode;
    if (n.parentElement.closest('code, pre, kbd, script, style, math')) continue;
    const m = n.textContent.match(/\$[^$]+\$/);
    if (m) out.push(m[0].slice(0, 70));
  }
  return out;
}"""


def test_every_page_loads_cleanly(site, browser):
    out, url = site
    shots = os.environ.get("DSR_SITE_SHOTS")
    pages = _pages(out)
    assert len(pages) >= 10, pages
    problems = []
    for rel in pages:
        page = browser.new_page(viewport={"width": 1280, "height": 900})
        errors = []
        page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
        page.on("pageerror", lambda e: errors.append(str(e)))
        page.on("requestfailed", lambda r: errors.append(f"request failed: {r.url}"))
        page.goto(url + rel.removesuffix("index.html"), wait_until="networkidle")
        problems += [f"{rel}: console error {e}" for e in errors]
        for src, ok in page.eval_on_selector_all(
                "img", "els => els.map(e => [e.src, e.complete && e.naturalWidth > 0])"):
            if not ok:
                problems.append(f"{rel}: image does not load: {src}")
        for href in page.eval_on_selector_all("a[href]", "els => els.map(e => e.href)"):
            target = _internal_target(out, rel, href.replace(url, "/"))
            if target is not None and not target.exists():
                problems.append(f"{rel}: broken link {href}")
        problems += [f"{rel}: TeX not rendered: {t}" for t in page.evaluate(RAW_MATH)]
        overflow, figures = page.evaluate(LAYOUT)
        problems += [f"{rel} at 1280 px: {o}" for o in overflow]
        for src, natural, shown in figures:
            if shown < 0.6 * natural:
                problems.append(f"{rel}: figure {src} drawn at {shown:.0f} of its {natural} px "
                                f"({shown / natural:.0%} < 60 %): split it into smaller figures")
        if shots:
            Path(shots).mkdir(parents=True, exist_ok=True)
            page.screenshot(path=str(Path(shots) / (rel.replace("/", "_") + ".png")),
                            full_page=False)
        page.close()
    assert not problems, "\n".join(problems)


def test_search_finds_fit(site, browser):
    _, url = site
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    page.goto(url, wait_until="networkidle")
    page.click("input.md-search__input", timeout=10_000)  # in the header at 1280 px
    page.locator("input.md-search__input").press_sequentially("fit", delay=50)  # as typed
    page.wait_for_selector(".md-search-result__item", timeout=20_000)
    titles = page.eval_on_selector_all(".md-search-result__item",
                                       "els => els.map(e => e.innerText)")
    page.close()
    assert titles and any("fit" in t.lower() for t in titles), titles
