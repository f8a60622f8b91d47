# The two set-up commands of the README: `make demo` and `make test`. Both install what
# they need (Debian toolchains via infra/, a venv via pip) and are fast when installed.
VENV  := .venv
BIN   := $(VENV)/bin
STAMP := $(VENV)/.installed-stamp

.PHONY: demo test install toolchains lint bench clean-lake

demo: install
	$(BIN)/crucible run

test: install
	$(BIN)/ruff check .
	$(BIN)/pytest -q

install: toolchains $(STAMP)

toolchains:
	@bash infra/install-toolchains.sh all

$(STAMP): pyproject.toml
	@test -x $(BIN)/python || python3 -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -e '.[all]'
	@touch $(STAMP)

lint: install
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

bench: install
	$(BIN)/python bench/bench_rtl.py
	$(BIN)/python bench/bench_lake.py
	$(BIN)/python bench/bench_pipeline.py
	$(BIN)/python bench/bench_dedup.py
