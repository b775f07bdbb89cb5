# make demo | make test | make bench  — each sets up its own virtualenv first.
PY ?= python3
VENV ?= .venv
VPY := $(VENV)/bin/python
BACKENDS ?= cpu sim
PYTEST_ARGS ?=

.PHONY: demo test bench lint mutate clean

$(VENV)/.installed-dev: pyproject.toml
	$(PY) -m venv $(VENV)
	$(VPY) -m pip install -q --upgrade pip
	$(VPY) -m pip install -q -e '.[dev]'
	touch $@

demo: $(VENV)/.installed-dev
	$(VPY) -m rocsample.demo

test: $(VENV)/.installed-dev
	@for b in $(BACKENDS); do \
	  echo "== pytest --backend $$b"; \
	  $(VPY) -m pytest -q --backend $$b $(PYTEST_ARGS) || exit $$?; \
	done

bench: $(VENV)/.installed-dev
	$(VPY) -m pip install -q matplotlib
	mkdir -p bench/results
	$(VPY) -m pytest bench -q --benchmark-only --benchmark-json=bench/results/latest.json $(PYTEST_ARGS)

lint: $(VENV)/.installed-dev
	$(VPY) -m ruff check rocsample tests bench

mutate: $(VENV)/.installed-dev
	$(VPY) -m pip install -q 'mutmut>=3'
	$(VPY) -m mutmut run

clean:
	rm -rf $(VENV) .pytest_cache .benchmarks mutants
