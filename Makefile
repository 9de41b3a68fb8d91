# Two commands set everything up on a fresh machine: `make demo` and `make test`.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: demo test venv clean tools

$(STAMP): requirements.txt
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -r requirements.txt
	touch $(STAMP)

venv: $(STAMP)

# The node builder (zdbsp) where the machine allows: maps then load about 4x faster.
tools:
	@.ci/install-zdbsp

test: $(STAMP) tools
	$(PY) -m pytest -q -n 2 --durations=30 tests

demo: $(STAMP) tools
	$(PY) build.py hello
	$(PY) build.py museum

clean:
	rm -rf $(VENV) wads/*.wad
