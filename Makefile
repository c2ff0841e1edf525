VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: install test test-all clean

install: $(STAMP)

$(STAMP): pyproject.toml
	python3 -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[test,crosscheck]'
	touch $(STAMP)

test: $(STAMP)
	$(PY) -m pytest -q

test-all: $(STAMP)
	$(PY) -m pytest -q -m ''

clean:
	rm -rf $(VENV) build src/*.egg-info

.PHONY: bench
bench: $(STAMP)
	$(PY) -m solver.bench

.PHONY: example
example: $(STAMP)
	$(VENV)/bin/charge-spark query start --set 'board=S*M' --set health=1
