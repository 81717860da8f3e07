# Entry points of durable_schedule. `make test` is the test command (CI runs exactly it).
# None of them needs root or a system package manager, except `make browser`.
#
#   make test       find or start PostgreSQL (15: the machine's; 16, 17, 18: packaged binaries),
#                   then tox: py311-django52 (PG 15), py312-django6 (PG 18), py311-django52-pg16
#                   and -pg17 (store, schedule and Work suites), lint, docs; two at a time when
#                   each test env has its own server (scripts/run_tox.sh), else one after another
#   make demo       install into .venv, find or start PostgreSQL, run scripts/demo.sh
#   make lint       ruff check (tox env "lint")
#   make docs       build the documentation site into site/ (mkdocs --strict)
#   make docs-serve preview the documentation site on http://127.0.0.1:8000/
#   make bench      python -m bench: throughput, scale and a peer (docs/benchmarks.md)
#   make browser    as root: install Debian's chromium, for the admin's real-browser test
#   make pg-stop    stop the throwaway cluster in .pgdata/ (if scripts/ensure_postgres.sh started one)
#
# Extra arguments: `make test TOX_ARGS="-e py311-django52 -- -k policy -x"`.

SHELL := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c
.DEFAULT_GOAL := help

# tox looks for python3.11 / python3.12 on PATH. Where those are pyenv shims, a shim only works
# for versions named in PYENV_VERSION, so list every installed pyenv version, the current one
# first (it is what plain `python3` resolves to).
ifneq ($(shell command -v pyenv 2>/dev/null),)
PYENV_VERSION := $(shell { pyenv version-name 2>/dev/null | tr ':' '\n'; pyenv versions --bare 2>/dev/null; } | awk 'NF && !seen[$$0]++' | paste -sd: -)
ifneq ($(PYENV_VERSION),)
export PYENV_VERSION
endif
endif

PYTHON ?= python3
VENV := .venv
VPY := $(VENV)/bin/python
TOX := $(VENV)/bin/tox
TOX_ARGS ?=
# Finds or starts PostgreSQL and exports DATABASE_URL into the recipe's shell.
ENSURE_PG := pg_env=$$(scripts/ensure_postgres.sh) && eval "$$pg_env"
# The PostgreSQL matrix (docs/development.md "PostgreSQL matrix"): throwaway clusters of 16, 17
# (npm packages) and 18 (the embedded wheel) on ports 543NN in .pgdataNN/, exported as
# DURABLE_PGNN_URL for tox.ini. Without one, its tox env runs on DATABASE_URL (with a message),
# except where DURABLE_REQUIRE_PG_MATRIX=1 (CI): there it fails.
ENSURE_PG_MATRIX := for major in 16 17 18; do \
	if url=$$(DURABLE_PG_EMBEDDED=1 DURABLE_PG_MAJOR=$$major DURABLE_PG_PORT=543$$major \
	    DURABLE_PG_DIR=.pgdata$$major scripts/ensure_postgres.sh); then \
	export "DURABLE_PG$${major}_URL=$$(eval "$$url"; printf '%s' "$$DATABASE_URL")"; \
	elif [[ $${DURABLE_REQUIRE_PG_MATRIX:-0} == 1 ]]; then \
	echo "make test: no PostgreSQL $$major for the matrix" >&2; exit 1; \
	else echo "make test: no PostgreSQL $$major; its tox env runs on DATABASE_URL" >&2; fi; \
	done

.PHONY: help test demo lint docs docs-serve bench browser pg-stop venv clean

help:
	@sed -n '1,14p' Makefile | sed 's/^# \{0,1\}//'

$(VENV)/bin/python:
	$(PYTHON) -m venv $(VENV)
	$(VPY) -m pip install --quiet --upgrade pip

# tox runs the tests in its own environments; .venv only hosts tox itself (and the demo).
$(TOX): | $(VENV)/bin/python
	$(VPY) -m pip install --quiet 'tox>=4.11'

# The package with its test extra, for the demo and for running pytest by hand.
$(VENV)/.installed-test: pyproject.toml | $(VENV)/bin/python
	$(VPY) -m pip install --quiet -e '.[test]'
	touch $@

venv: $(TOX) $(VENV)/.installed-test

# The browser test of the admin skips (saying how to enable it) where no Chromium is installed;
# `make browser` installs one, and .ci/run does so before `make test`.
test: $(TOX)
	@$(ENSURE_PG); \
	echo "make test: DATABASE_URL=$$(sed -E 's#(://[^:/@]*):[^@/]*@#\1:***@#' <<<"$$DATABASE_URL")"; \
	$(ENSURE_PG_MATRIX); \
	scripts/run_tox.sh $(TOX) $(TOX_ARGS)

demo: $(VENV)/.installed-test
	@$(ENSURE_PG); PYTHON=$(VPY) scripts/demo.sh

lint: $(TOX)
	$(TOX) -e lint $(TOX_ARGS)

# The package with its test and bench extras (matplotlib, Procrastinate, pgqueuer), then the
# benchmarks: `make bench` (about 10 minutes on a quiet machine, estimated), `make bench BENCH_ARGS=--quick`.
bench: | $(VENV)/bin/python
	$(VPY) -m pip install --quiet -e '.[test,bench]'
	@$(ENSURE_PG); $(VPY) -m bench $(BENCH_ARGS)

# The docs extra (MkDocs, Material, mkdocstrings) in .venv; the site goes to site/.
$(VENV)/.installed-docs: pyproject.toml | $(VENV)/bin/python
	$(VPY) -m pip install --quiet -e '.[docs]'
	touch $@

docs: $(VENV)/.installed-docs
	NO_MKDOCS_2_WARNING=1 $(VENV)/bin/mkdocs build --strict

docs-serve: $(VENV)/.installed-docs
	NO_MKDOCS_2_WARNING=1 $(VENV)/bin/mkdocs serve

browser:
	scripts/install_browser.sh

pg-stop:
	scripts/ensure_postgres.sh --stop

clean:
	rm -rf .tox build dist site .pytest_cache .ruff_cache .hypothesis
