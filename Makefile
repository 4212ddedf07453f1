# Quick start: `make demo` and `make test` work on a fresh machine with Python 3.11.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed-test
# test workers (pytest-xdist); `make test TEST_JOBS=0` runs the suite in one process
TEST_JOBS ?= auto

.PHONY: demo test lint docs bench bench-all clean realruns recordings-tests

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip

$(VENV)/.installed: $(BIN)/python pyproject.toml
	$(BIN)/pip install -q -e .
	touch $@

$(STAMP): $(BIN)/python pyproject.toml
	$(BIN)/pip install -q -e '.[test]'
	touch $@ $(VENV)/.installed

# in a terminal: the app on the sandbox (a simulated cluster); without one: the drill and a diagnosis, printed
demo: $(VENV)/.installed
	@$(BIN)/python -m ckpt_doctor.sandbox.demo

test: $(STAMP)
	$(BIN)/ruff check src tests bench
	$(BIN)/python -m pytest -q -n $(TEST_JOBS) --dist loadscope; rc=$$?; if [ $$rc -eq 5 ]; then echo "no tests selected"; rc=0; fi; exit $$rc

docs: $(VENV)/.installed
	$(BIN)/python -m ckpt_doctor.docs > docs/rules.md
	$(BIN)/python -c "from ckpt_doctor.commands.rules import index_text; print(index_text(), end='')" > rules/index.json

# the tables of docs/performance.md, in its order (by hand: about 10 minutes on two cores)
bench: $(STAMP)
	$(BIN)/python bench/bench_startup.py
	$(BIN)/python bench/bench_diagnose.py
	$(BIN)/python bench/bench_diagnose.py --grep
	$(BIN)/python bench/bench_collect.py
	$(BIN)/python bench/bench_live.py --collect
	$(BIN)/python bench/bench_tui.py --pods 512 1024

# every other bench, each with its own question (see its docstring); the watcher's runs ten minutes
bench-all: bench
	$(BIN)/python bench/bench_diagnose.py --points 1024:400 4096:1600 --rounds 3
	$(BIN)/python bench/bench_diagnose.py --crashloop 100 400
	$(BIN)/python bench/bench_formats.py
	$(BIN)/python bench/bench_logs.py
	$(BIN)/python bench/bench_redact.py
	$(BIN)/python bench/bench_shell_parsers.py
	$(BIN)/python bench/bench_program_readers.py
	$(BIN)/python bench/bench_chart.py
	$(BIN)/python bench/bench_fleet.py
	$(BIN)/python bench/bench_watch.py
	$(BIN)/python bench/bench_less_data.py
	$(BIN)/python bench/bench_mutations.py

# Re-record every real framework run (by hand, not part of `make test`): builds the CPU-only venvs under
# realruns/.venvs (hf4, hf5: about 3 min and 1.2 GB each; jax 0.75 GB), records recordings/ (as root: it uses PID and mount
# namespaces), recomputes every recording's verdict from its truth (second takes included: record.py --verdicts),
# then regenerates the bundles, the engine's known misses and docs/frameworks.md.
realruns: $(STAMP)
	nice -n 10 python3 realruns/build_envs.py hf4 hf5 jax
	$(BIN)/python realruns/record.py --jobs 2
	$(BIN)/python realruns/record.py --verdicts
	$(MAKE) recordings-tests

recordings-tests: $(STAMP)
	$(BIN)/python -m tests.recordings.bundles > /dev/null
	$(BIN)/python -m tests.recordings.misses
	$(BIN)/python -m tests.recordings.frameworks_doc

clean:
	rm -rf $(VENV) build dist
