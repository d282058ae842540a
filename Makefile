# `make demo` and `make test` bootstrap .venv on a fresh machine.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
DOCS_STAMP := $(VENV)/.docs-installed

.PHONY: demo test test-slow test-all venv bench docs clean

venv: $(STAMP)

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PY) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -e ".[test]"
	touch $(STAMP)

demo: $(STAMP)
	$(BIN)/python -m examples.demo

# Two workers (pytest-xdist): most test time is single-threaded XLA compilation.
test: $(STAMP)
	$(BIN)/python -m pytest -n 2

# The slow suite also runs the comparison (`compare` group) and the site test in headless
# Chromium (`site` group; Debian's chromium, which .ci/run installs).
SLOW_STAMP := $(VENV)/.installed-slow
$(SLOW_STAMP): $(STAMP)
	$(BIN)/python -m pip install -q -e ".[test,docs,site,compare]"
	touch $(SLOW_STAMP)

test-slow: $(SLOW_STAMP)
	$(BIN)/python -m pytest -n 2 -m slow

test-all: $(SLOW_STAMP)
	$(BIN)/python -m pytest -n 2 -m ""

bench: $(STAMP)
	$(BIN)/python -m benchmarks.runtime --quick --out results/runtime
	$(BIN)/python -m benchmarks.scan --quick --out results/scan

# The documentation site (mkdocs-material + mkdocstrings), built into site/; --strict turns a
# broken link or an unresolved reference into an error.
$(DOCS_STAMP): $(STAMP)
	$(BIN)/python -c "import mkdocs, material, mkdocstrings_handlers.python, latex2mathml, pymdownx" 2>/dev/null \
	    || $(BIN)/python -m pip install -q -e ".[docs]"
	touch $(DOCS_STAMP)

docs: $(DOCS_STAMP)
	$(BIN)/python -m mkdocs build --strict -d site

clean:
	rm -rf $(VENV) results .pytest_cache site
