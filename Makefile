# mcp-suite — every entry point a developer or CI needs. The virtual environment lives in .venv.
SHELL := /bin/bash
# The bytecode cache is what makes start-up fast; some environments disable it globally.
unexport PYTHONDONTWRITEBYTECODE
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
RUN_STAMP := $(VENV)/.installed-run
# `make -C DIR run` prints "make: Entering directory ..." on stdout before it reads this file, and
# "Leaving directory" after the server exits: lines that are not MCP frames. Nothing in a makefile
# can stop the top-level make from printing them, so `run` refuses with the fix instead of serving
# a corrupted stream. Print-directory is on when the flag letters (MAKEFLAGS' first word, unless it
# is a long option or a variable) hold a `w`.
MAKE_FLAG_LETTERS := $(firstword $(MAKEFLAGS))
PRINTS_DIRECTORY := $(if $(findstring =,$(MAKE_FLAG_LETTERS))$(filter -%,$(MAKE_FLAG_LETTERS)),,$(findstring w,$(MAKE_FLAG_LETTERS)))
ifneq ($(filter run,$(MAKECMDGOALS)),)
ifneq ($(PRINTS_DIRECTORY),)
ifeq ($(filter --no-print-directory,$(MAKEFLAGS)),)
$(error make printed "Entering directory" on stdout, which carries only MCP frames in `make run`: use `make -s -C DIR run` (or --no-print-directory))
endif
endif
endif
# Sub-makes never print "Entering directory" either (read above: MAKEFLAGS as make was invoked).
MAKEFLAGS += --no-print-directory

# The Debian packages the tests start: one list (.ci/test-packages), shown by `make help`.
TEST_PACKAGES = $(shell sed -n 's/^[^\#].*=//p' .ci/test-packages)

.PHONY: help venv run try-http demo test lint types pytest bench lock run-container run-container-http smoke clean system-packages mutate mutate-sample mcpb

help:
	@echo "make run            serve MCP on stdio (demo PostgreSQL + examples folder + metrics);"
	@echo "                    from another directory: make -s -C DIR run"
	@echo "make try-http       serve MCP over HTTP on 127.0.0.1:8000 (the demo's data) with an issuer made"
	@echo "                    for this run; prints a token (then: examples/sdk_client.py http URL)"
	@echo "make demo           drive every tool through the official MCP SDK client; refusals are intended"
	@echo "make test           lint, types, the whole test suite and the mutation hand checks"
	@echo "make lint           ruff, flake8-async, the architecture contracts, the offline container checks"
	@echo "make types          mypy --strict"
	@echo "make pytest         the test suite; branch coverage: 100 % of the guardrails, 95 % of the package"
	@echo "make mutate         mutation testing of the guardrails: hand checks, then mutmut with its table and floor"
	@echo "make mutate-sample  the hand checks alone (part of make test)"
	@echo "make bench          benchmarks (ratios against a floor measured in the same run)"
	@echo "make system-packages  the Debian packages the tests start, when missing: $(TEST_PACKAGES)"
	@echo "make venv           create .venv with every locked dependency (make run installs fewer)"
	@echo "make lock           re-lock requirements/*.txt (name, version, hash)"
	@echo "make run-container  build the hardened image if needed and serve it on stdio"
	@echo "make run-container-http  the same image and hardening, serving MCP over HTTP on 127.0.0.1:8000"
	@echo "make smoke          build the image and prove its profile (podman; ENGINE=docker for Docker)"
	@echo "make mcpb           the MCP bundle for Claude Desktop and the registry's server.json, in dist/"
	@echo "make clean          remove the demo database, .venv and the tool caches"
	@echo "make help           this list"

# Everything the install prints goes to stderr: `make run` serves MCP on stdout, which must carry
# protocol frames only, even on the run that first creates the environment. One line per step.
# $(1): the lock file to install (by name, version and hash), then mcp-suite itself, editable: in
# `compat` mode (the checkout on sys.path, no import hook to load at start-up); -qq keeps out the
# banner setuptools prints for every editable mode, pip's errors still show.
define install_locked
	@$(PYTHON) -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else "Python 3.11+ is required")'
	@test -x $(BIN)/python || { echo "creating $(VENV)" 1>&2; $(PYTHON) -m venv $(VENV) 1>&2; }
	@echo "installing $(1) into $(VENV)" 1>&2
	@$(BIN)/python -m pip install --quiet --disable-pip-version-check --require-hashes --no-deps -r $(1) 1>&2
	@echo "installing mcp-suite from this checkout (editable), then compiling it" 1>&2
	@$(BIN)/python -m pip install -qq --disable-pip-version-check --no-deps --no-build-isolation --config-settings editable_mode=compat -e . 1>&2
	@$(BIN)/python -m compileall -q mcp_suite 1>&2
endef

# `make run` needs the runtime and the demo's PostgreSQL only; the test, lint and SDK tools come with
# the targets that use them. The full install satisfies `make run` too.
$(RUN_STAMP): requirements/demo.txt requirements/runtime.txt pyproject.toml
	$(call install_locked,requirements/demo.txt)
	@touch $@

$(STAMP): requirements/dev.txt requirements/demo.txt requirements/runtime.txt pyproject.toml
	$(call install_locked,requirements/dev.txt)
	@touch $@ $(RUN_STAMP)

venv: $(STAMP)

# GNU make passes SIGTERM on to the recipe but only waits on SIGINT: the relay beside the server
# (mcp_suite/make_relay.py) turns a SIGINT sent to make's PID alone into SIGTERM for the server.
# The shell execs the server's parent, so make's SIGTERM still reaches it directly.
run: $(RUN_STAMP)
	@$(BIN)/python -m mcp_suite.make_relay $$PPID $$$$ >/dev/null & exec $(BIN)/python -m mcp_suite.demo serve -- $(BIN)/python -m mcp_suite

# The team endpoint on this machine (docs/operations/remote.md, "Trying it"): serve-http with the
# demo's databases and folder, on loopback only, with an issuer made for this run; the token it
# signs is the one line on stdout. The full environment: the example client needs the MCP SDK.
try-http: $(STAMP)
	@exec $(BIN)/python -m mcp_suite.demo serve -- $(BIN)/python -m mcp_suite try-http

# The SDK tour lives in the test harness (it needs the MCP SDK, a dev dependency): not in the wheel.
demo: $(STAMP)
	@$(BIN)/python -m tests.support.devdb.tour

lint: $(STAMP)
	$(BIN)/ruff check mcp_suite tests bench mcpb
	$(BIN)/ruff format --check mcp_suite tests bench mcpb
	$(BIN)/flake8 --select=ASYNC mcp_suite
	$(BIN)/lint-imports
	$(BIN)/pre-commit validate-config .pre-commit-config.yaml
	$(BIN)/zizmor --offline --no-progress .github/workflows/ci.yml
	PYTHON=$(BIN)/python containers/smoke.sh --offline

types: $(STAMP)
	$(BIN)/mypy

# Branch coverage floors (docs/quality.md): every branch of the guardrails (the session core with its
# deadline decision, framing, the message guard, the argument sanitizer, the limiter, the file policy
# and descriptor walk, the SQL policy, its denylist, the definer check) must be exercised; the run
# fails below 100 % on them and prints the missing lines. Child processes (the server, the CLI,
# the demo tool) are measured too (`patch = subprocess` in pyproject.toml).
# The modules are listed once, as `only_mutate` in pyproject.toml's [tool.mutmut] (tests/mutation).
GUARDRAIL_MODULES = $(shell $(BIN)/python -m tests.mutation modules)

# Debian packages the tests start through the harness (.ci/test-packages); installed when missing
# and this is root with apt-get (CI), else the run stops and says what to install.
system-packages:
	@.ci/system-packages --tests

pytest: $(STAMP) system-packages
	MCP_HERMETIC_CANARY=1 PGSERVICE=mcp-hermetic-canary $(BIN)/python -m pytest -p no:cacheprovider --cov=mcp_suite --cov-branch --cov-report= $(PYTEST_ARGS)
	$(BIN)/python -m coverage report --include='$(GUARDRAIL_MODULES)' --show-missing --fail-under=100
	@echo "the whole package: at least 95 % of its lines and branches (the missing ones below)"
	$(BIN)/python -m coverage report --skip-covered --show-missing --fail-under=95

# The hand checks of `make mutate` (a fixed sample: twelve defences removed one at a time, each must
# make its tests fail) run in `make test`; the full mutmut run is `make mutate`.
mutate-sample: $(STAMP) system-packages
	$(BIN)/python -m tests.mutation hand

mutate: $(STAMP) system-packages
	$(BIN)/python -m tests.mutation

test: lint types pytest mutate-sample

bench: $(STAMP) system-packages
	$(BIN)/python -m bench

lock:
	cd requirements && $(CURDIR)/$(BIN)/pip-compile -q --generate-hashes --no-emit-index-url --no-emit-find-links --allow-unsafe --strip-extras --no-header -o runtime.txt runtime.in
	cd requirements && $(CURDIR)/$(BIN)/pip-compile -q --generate-hashes --no-emit-index-url --no-emit-find-links --allow-unsafe --strip-extras --no-header -o demo.txt demo.in
	cd requirements && $(CURDIR)/$(BIN)/pip-compile -q --generate-hashes --no-emit-index-url --no-emit-find-links --allow-unsafe --strip-extras --no-header -o dev.txt dev.in

# The MCP bundle (docs/operations/bundle.md): packed and validated by the official MCPB CLI (npm),
# for this machine's platform and Python; MCPB_URL is where it will be downloaded from (server.json).
mcpb: $(STAMP)
	$(BIN)/python -m mcpb.build --url '$(MCPB_URL)' --registry-name '$(REGISTRY_NAME)'

run-container:
	@containers/run.sh

run-container-http:
	@containers/run.sh http

smoke:
	@containers/smoke.sh

# The demo database goes first, through the project's own command, wherever it lives (.cache/devdb,
# or root's cache when root works in a private clone), while there is still a Python to run it.
clean:
	$(if $(wildcard $(BIN)/python),$(BIN)/python,$(PYTHON)) -m mcp_suite.demo destroy
	rm -rf $(VENV) .mypy_cache .ruff_cache .pytest_cache .coverage mutants
