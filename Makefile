# Quick start: `make demo` and `make test` work on a fresh machine with Python 3.11.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed-test

.PHONY: demo test lint docs bench clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip

$(VENV)/.installed: $(BIN)/python pyproject.toml
	$(BIN)/pip install -q -e .
	touch $@

$(STAMP): $(BIN)/python pyproject.toml
	$(BIN)/pip install -q -e '.[test]'
	touch $@ $(VENV)/.installed

demo: $(VENV)/.installed
	@echo "== ckpt-doctor diagnose --bundle examples/llamafactory-overwrite-output-dir"
	@$(BIN)/ckpt-doctor diagnose --bundle examples/llamafactory-overwrite-output-dir; rc=$$?; \
	echo; echo "exit code $$rc: 0 nothing failed, 1 a finding failed at or above --fail-on (as here)"; \
	test $$rc -le 1

test: $(STAMP)
	$(BIN)/ruff check src tests bench
	$(BIN)/python -m pytest -q; rc=$$?; if [ $$rc -eq 5 ]; then echo "no tests selected"; rc=0; fi; exit $$rc

docs: $(VENV)/.installed
	$(BIN)/python -m ckpt_doctor.docs > docs/rules.md
	$(BIN)/python -c "from ckpt_doctor.commands.rules import index_text; print(index_text(), end='')" > rules/index.json

bench: $(STAMP)
	$(BIN)/python bench/bench_diagnose.py

clean:
	rm -rf $(VENV) build dist
