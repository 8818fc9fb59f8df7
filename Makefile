# gapless — two commands a newcomer needs: `make demo` and `make test`.
# Both bootstrap .venv on their own from a fresh clone (Python 3.11 + Java 17).

PYTHON ?= python3.11
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
MYPYROOT := $(VENV)/mypy-root
PKGS   := spec impl invariants models spark_fuzz cli benchmarks

.PHONY: demo test venv java lint typecheck pytest mutation coverage-laws bench clean

# The venv: created if missing, dependencies (re)installed when pyproject.toml changes.
$(STAMP): pyproject.toml
	@command -v $(PYTHON) >/dev/null 2>&1 || { echo "error: $(PYTHON) not found; install Python 3.11 (or run make PYTHON=/path/to/python3.11)"; exit 2; }
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[all]'
	@mkdir -p $(MYPYROOT)/gapless
	@for p in $(PKGS); do ln -sfn ../../../$$p $(MYPYROOT)/gapless/$$p; done
	@touch $(STAMP)

venv: $(STAMP)

# Spark needs a JVM. Install it with apt-get when we can, else say exactly what to install.
java:
	@if command -v java >/dev/null 2>&1 || [ -n "$$JAVA_HOME" ]; then :; \
	elif command -v apt-get >/dev/null 2>&1 && [ "$$(id -u)" = 0 ]; then \
		echo "java not found: installing openjdk-17-jre-headless with apt-get"; \
		apt-get update -qq && apt-get install -y -qq openjdk-17-jre-headless; \
	else \
		echo "error: Java 17 is required for Spark. Install it, e.g. 'sudo apt-get install openjdk-17-jre-headless', or set JAVA_HOME."; \
		exit 2; \
	fi

lint: $(STAMP)
	$(BIN)/ruff check $(PKGS) tests
	$(BIN)/ruff format --check $(PKGS) tests

typecheck: $(STAMP)
	MYPYPATH=$(MYPYROOT) $(BIN)/mypy -p gapless.spec -p gapless.impl -p gapless.invariants

# The default tier on every core, one test file per worker at a time (DEVELOPERS.md: the
# 12-minute budget). PYTEST_WORKERS=0 runs it in one process.
PYTEST_WORKERS ?= logical
pytest: $(STAMP) java
	HYPOTHESIS_PROFILE=$${HYPOTHESIS_PROFILE:-ci} $(BIN)/pytest -q -m "not long" -n $(PYTEST_WORKERS) --dist loadfile

test: lint typecheck pytest

# The main job: a fuzz campaign of GD Figure 3 under random failure schedules on local Spark,
# its summary, and the HTML report (out/demo/report/index.html). Keeps fuzz's exit code.
demo: $(STAMP) java
	$(BIN)/gapless fuzz --config campaigns/demo.toml; s=$$?; $(BIN)/gapless report out/demo; exit $$s

bench: $(STAMP)
	$(BIN)/gapless bench streams

# Mutation score of the stream, tick-set and ledger modules the GD roles run, per module and
# total, survivors with their diffs; resumes an interrupted run (benchmarks/mutation_score.py).
# Writes benchmarks/mutation_score.json, the figure the README cites.
mutation: $(STAMP)
	nice -n 10 $(BIN)/python benchmarks/mutation_score.py --run --max-children 2 --show --record

# Branch coverage of the stream, tick-set and ledger modules under the law tests: every fast
# path must be entered by a generated case (benchmarks/coverage_laws.py).
coverage-laws: $(STAMP)
	$(BIN)/python benchmarks/coverage_laws.py

clean:
	rm -rf $(VENV) build dist *.egg-info mutants .hypothesis .mypy_cache .ruff_cache .pytest_cache

# Long tiers kept out of `make test`: the SHB storage killed with SIGKILL 100 times under load
# (tests/durable/test_crash_kill.py; `gapless bench durable` does the same and reports it), and
# the tests marked `long` (the reduced GD zoo end to end on Spark).
.PHONY: test-long
test-long: $(STAMP) java
	GAPLESS_CRASH_KILLS=100 HYPOTHESIS_PROFILE=$${HYPOTHESIS_PROFILE:-ci} $(BIN)/pytest -q tests/durable/test_crash_kill.py
	HYPOTHESIS_PROFILE=$${HYPOTHESIS_PROFILE:-ci} $(BIN)/pytest -q -m long
