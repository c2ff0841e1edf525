VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: install solve report test test-all lint clean docs

# The printed rules solved from the start (10 to 20 min on 2 cores, up to 6.7 GB, a 12.3 GB table in
# the cache: storing it needs about 55 GB free, and the solve says so first where the disk has less),
# then the answer at the start, read back from the stored table.
solve: $(STAMP)
	$(VENV)/bin/charge-spark solve
	$(VENV)/bin/charge-spark query start

# The balance report of the printed rules (progress on stderr; a second run reuses the cache).
report: $(STAMP)
	@echo "make report: writes reports/charge-and-spark.html over the committed sample; about a day on 2 cores from an empty cache (each part is kept: an interrupted run resumes)" >&2
	$(VENV)/bin/charge-spark report --out reports/charge-and-spark.html

# Rewrites the sample outputs marked in README.md and docs/cli.md from the commands
# they name, run on tiny rule sets (about a minute); tests/test_doc_samples.py checks them.
docs: $(STAMP)
	$(PY) docs/generate_samples.py

install: $(STAMP)

$(STAMP): pyproject.toml
	python3 -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[test,crosscheck,lint]'
	touch $(STAMP)

# Lint first: a check that fails in seconds should not wait behind the suite.
# The browser tests (the report's, the explorer's) drive chromium and chromedriver
# where they are installed (.ci/run installs them), and are skipped with the reason
# where they are not. The suite runs on every core (pytest-xdist), a test module
# to a worker, so that a module's shared fixtures are built once.
TEST_WORKERS = -n auto --dist loadscope
test: lint
	$(PY) -m pytest -q $(TEST_WORKERS)

# ruff over the sources and tests; mypy over the generic engine (solver.core).
lint: $(STAMP)
	$(VENV)/bin/ruff check src tests
	$(VENV)/bin/mypy

test-all: lint
	$(PY) -m pytest -q -m '' $(TEST_WORKERS)

clean:
	rm -rf $(VENV) build src/*.egg-info

.PHONY: bench
bench: $(STAMP)
	$(PY) -m solver.bench

.PHONY: example
example: $(STAMP)
	$(VENV)/bin/charge-spark query start --set 'board=S*M' --set health=1
