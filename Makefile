# Two commands set everything up: `make run` (server on the embedded store) and `make test`.
# Each creates .venv with a Python >= 3.12 found on this machine and installs what it needs.
SHELL := /bin/bash
VENV ?= .venv
PY := $(VENV)/bin/python
PORT ?= 8765
STAMP := $(VENV)/.installed

# First Python >= 3.12 found: $PYTHON, then python3.13/3.12 on PATH, then pyenv's, then python3.
PYTHON_BIN := $(shell for c in "$$PYTHON" python3.14 python3.13 python3.12 \
	$$(ls -d $$HOME/.pyenv/versions/3.1[2-9]*/bin/python 2>/dev/null | sort -rV) python3; do \
	[ -n "$$c" ] && command -v "$$c" >/dev/null 2>&1 && \
	"$$c" -c 'import sys; sys.exit(sys.version_info < (3, 12))' 2>/dev/null && { command -v "$$c"; break; }; done)

.PHONY: run test lint bench venv clean ui-vendor

$(STAMP): pyproject.toml
	@if [ -z "$(PYTHON_BIN)" ]; then echo "polyg needs Python >= 3.12 (set PYTHON=/path/to/python3.12)" >&2; exit 1; fi
	@[ -x $(PY) ] || $(PYTHON_BIN) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[dev]'
	@# polyg's own bytecode, once (0.8 s), rather than by every process the first test run starts.
	@$(PY) -m compileall -q polyg bench >/dev/null
	@touch $(STAMP)

venv: $(STAMP)

run: $(STAMP)
	$(VENV)/bin/polyg serve --transport http --port $(PORT)

lint: $(STAMP)
	$(VENV)/bin/ruff check polyg tests bench
	$(VENV)/bin/ruff format --check polyg tests bench
	$(VENV)/bin/mypy
	$(VENV)/bin/lint-imports

# Three workers on two cores: the tests wait on servers starting, databases loading and index
# builds, and a third worker fills that time. loadscope keeps each module (and its module-scoped
# server) on one worker and the cluster, memory-tool and browser tests on one each; the long
# modules go first (tests/conftest.py). No test relies on timing (README, "Tests on a loaded
# machine"). PYTEST_ARGS= (empty) runs one process.
PYTEST_ARGS ?= -n 3 --dist loadscope
# Bytecode is cached even where the environment says not to (PYTHONDONTWRITEBYTECODE): each
# Python process the suite starts would compile polyg's modules again without the cache, and each
# worker every test module to collect them.
# Lint runs beside the tests at the lowest priority, on the CPU time the tests leave idle (they
# wait on servers and databases), instead of ~13 s before them; its output follows theirs, and
# either failing fails the target.
test: $(STAMP)
	@lint_log=$$(mktemp); nice -n 19 $(MAKE) --no-print-directory lint >$$lint_log 2>&1 & lint_pid=$$!; \
	PYTHONDONTWRITEBYTECODE= $(PY) -m pytest $(PYTEST_ARGS); tests=$$?; \
	wait $$lint_pid; lint=$$?; cat $$lint_log; rm -f $$lint_log; \
	if [ $$lint -ne 0 ]; then echo "make test: lint failed (make lint)" >&2; fi; \
	if [ $$tests -ne 0 ]; then exit $$tests; fi; exit $$lint

bench: $(STAMP)
	$(PY) bench/latency/kg_bench.py

# The graph view's library, from npm, into polyg/ui/static with its licence (committed: the page
# and the MCP App work offline and from a wheel). CYTOSCAPE=3.x.y to move to another version.
CYTOSCAPE ?= 3.35.0
ui-vendor:
	@tmp=$$(mktemp -d) && cd $$tmp && npm pack -q cytoscape@$(CYTOSCAPE) >/dev/null && \
	tar xzf cytoscape-$(CYTOSCAPE).tgz && \
	cp package/dist/cytoscape.min.js $(CURDIR)/polyg/ui/static/cytoscape.min.js && \
	cp package/LICENSE $(CURDIR)/polyg/ui/static/cytoscape.LICENSE && rm -rf $$tmp
	@sha256sum polyg/ui/static/cytoscape.min.js

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache
