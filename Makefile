# Entry points of durable_schedule. `make test` is the test command (CI runs exactly it).
#
#   make test    find or start PostgreSQL (15 system, 18 embedded), then tox: py311-django52
#                (PostgreSQL 15), py312-django6 (PostgreSQL 18), lint
#   make demo    install into .venv, find or start PostgreSQL, run scripts/demo.sh
#   make lint    ruff check (tox env "lint")
#   make bench   python -m bench: throughput, scale and a peer (docs/benchmarks.md)
#   make pg-stop stop the throwaway cluster in .pgdata/ (if scripts/ensure_postgres.sh started one)
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
# The PostgreSQL matrix (docs/development.md "PostgreSQL matrix"): py312-django6 runs on
# PostgreSQL 18 from the embedded wheel (own port and folder), exported as DURABLE_PG18_URL for
# tox.ini. Without it that env runs on DATABASE_URL, except where DURABLE_REQUIRE_PG18=1 (CI).
PG18_ENV := DURABLE_PG_EMBEDDED=1 DURABLE_PG_MAJOR=18 DURABLE_PG_PORT=54318 DURABLE_PG_DIR=.pgdata18
ENSURE_PG_MATRIX := if pg18=$$($(PG18_ENV) scripts/ensure_postgres.sh); then \
	export DURABLE_PG18_URL=$$(eval "$$pg18"; printf '%s' "$$DATABASE_URL"); \
	echo "make test: py312-django6 on PostgreSQL 18 ($$DURABLE_PG18_URL)"; \
	elif [[ $${DURABLE_REQUIRE_PG18:-0} == 1 ]]; then echo "no PostgreSQL 18" >&2; exit 1; \
	else echo "make test: no PostgreSQL 18; py312-django6 runs on DATABASE_URL" >&2; fi

.PHONY: help test demo lint bench pg-stop venv clean

help:
	@sed -n '1,9p' Makefile | sed 's/^# \{0,1\}//'

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

test: $(TOX)
	@scripts/install_browser.sh
	@$(ENSURE_PG); \
	echo "make test: DATABASE_URL=$$(sed -E 's#(://[^:/@]*):[^@/]*@#\1:***@#' <<<"$$DATABASE_URL")"; \
	$(ENSURE_PG_MATRIX); \
	$(TOX) $(TOX_ARGS)

demo: $(VENV)/.installed-test
	@$(ENSURE_PG); PYTHON=$(VPY) scripts/demo.sh

lint: $(TOX)
	$(TOX) -e lint $(TOX_ARGS)

# The package with its test and bench extras (matplotlib, Procrastinate), then the benchmarks:
# `make bench` (a few minutes), `make bench BENCH_ARGS=--quick` (under a minute).
bench: | $(VENV)/bin/python
	$(VPY) -m pip install --quiet -e '.[test,bench]'
	@$(ENSURE_PG); $(VPY) -m bench $(BENCH_ARGS)

pg-stop:
	scripts/ensure_postgres.sh --stop

clean:
	rm -rf .tox build dist .pytest_cache .ruff_cache .hypothesis
