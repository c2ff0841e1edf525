VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: install solve report test test-all clean

# The printed rules solved from the start (about 20 minutes, a 12.3 GB table in the
# cache), then the answer at the start, read back from the stored table.
solve: $(STAMP)
	$(VENV)/bin/charge-spark solve
	$(VENV)/bin/charge-spark query start

# The balance report of the printed rules (progress on stderr; a second run reuses the cache).
report: $(STAMP)
	$(VENV)/bin/charge-spark report --out reports/charge-and-spark.html


install: $(STAMP)

$(STAMP): pyproject.toml
	python3 -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[test,crosscheck]'
	touch $(STAMP)

test: $(STAMP) browser
	$(PY) -m pytest -q

# The browser tests drive Debian's chromium (the explorer's through chromedriver);
# installed here when they can be (root with apt-get). Without them those tests are
# skipped, with the reason.
.PHONY: browser
browser:
	@{ command -v chromium && command -v chromedriver; } >/dev/null 2>&1 || { \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	    echo "installing chromium and chromedriver for the browser tests"; \
	    DEBIAN_FRONTEND=noninteractive apt-get update -qq && \
	    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium chromium-driver >/dev/null || \
	    echo "could not install chromium: the browser tests will be skipped"; \
	  else \
	    echo "chromium is missing and cannot be installed here (needs root and apt-get): the browser test will be skipped"; \
	  fi; }

test-all: $(STAMP) browser
	$(PY) -m pytest -q -m ''

clean:
	rm -rf $(VENV) build src/*.egg-info

.PHONY: bench
bench: $(STAMP)
	$(PY) -m solver.bench

.PHONY: example
example: $(STAMP)
	$(VENV)/bin/charge-spark query start --set 'board=S*M' --set health=1
