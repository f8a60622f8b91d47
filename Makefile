# The two set-up commands of the README: `make demo` and `make test`. Both install what
# they need (Debian toolchains via infra/, a venv via pip) and are fast when installed.
VENV  := .venv
BIN   := $(VENV)/bin
STAMP := $(VENV)/.installed-stamp

.PHONY: demo test test-durations install toolchains lint bench clean-lake constraints

demo: install
	$(BIN)/crucible run

# Two pytest-xdist workers: on 2 cores the serial suite kept ~1.1 of them busy (its tests
# wait on servers, subprocesses and sleeps); whole files go to one worker (--dist loadfile),
# so a module's shared state is built once, longest files first (tests/durations.json, in
# the conftest's order: --no-loadscope-reorder keeps it). The wall time is printed. Three
# workers are no faster (2026-12-07: 1,326 s against 1,312 s for two, same tree): with two
# the cores are the limit, so only less work shortens the suite.
TEST_WORKERS ?= 2
test: install
	@start=$$(date +%s); \
	$(BIN)/ruff check . && $(BIN)/pytest -q -n $(TEST_WORKERS) --dist loadfile \
	  --no-loadscope-reorder; rc=$$?; \
	echo "make test: $$(( $$(date +%s) - start )) s wall (budget 900 s), exit $$rc"; exit $$rc

# Re-measure the seconds per test file that order `make test` (a serial run, ~35 min).
test-durations: install
	$(BIN)/pytest -q --junitxml=.pytest_cache/durations.xml || true
	$(BIN)/python -m tests.durations .pytest_cache/durations.xml

install: toolchains $(STAMP)

toolchains:
	@bash infra/install-toolchains.sh all

# pyproject.toml says what may co-install; constraints.txt is the exact set measured
# together, so every machine gets today's versions. Editing either re-installs. verl's
# reward path goes in after, without its declared dependencies (infra/verl-requirements.txt
# says why).
$(STAMP): pyproject.toml constraints.txt setup.py infra/verl-requirements.txt
	@test -x $(BIN)/python || python3 -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	@# the distribution was named `crucible` before 0.1.0 became `crucible-data` (PyPI's
	@# `crucible` is another project): an old editable install of that name goes first
	@$(BIN)/python -m pip uninstall -q -y crucible 2>/dev/null || true
	$(BIN)/python -m pip install -q -e '.[all]' -c constraints.txt
	$(BIN)/python -m pip install -q --no-deps -r infra/verl-requirements.txt
	@touch $(STAMP)

# After adding or upgrading a dependency in the venv: record the set it now holds (local
# version labels such as torch's `+cpu` dropped, so an index without them resolves it).
# verl's --no-deps set is pinned in its own file and left out here.
constraints:
	@{ echo "# Exact versions measured together (make constraints); pyproject.toml has the ranges."; \
	  $(BIN)/python -m pip freeze --all --exclude-editable | grep -v -e '^pip==' -e '^crucible-data==' | \
	  grep -v -i -F "$$(sed -n -E 's/^([A-Za-z0-9._-]+==).*/\1/p' infra/verl-requirements.txt)" | \
	  sed -E 's/\+[A-Za-z0-9.]+$$//'; } > constraints.txt

lint: install
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

bench: install
	$(BIN)/python bench/bench_rtl.py
	$(BIN)/python bench/bench_lake.py
	$(BIN)/python bench/bench_pipeline.py
	$(BIN)/python bench/bench_dedup.py
