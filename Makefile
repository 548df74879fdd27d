# `make run` and `make test` each build .venv from nothing when it is missing.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed
BENCH_STAMP := $(VENV)/.installed-bench

.PHONY: run catalog test test-stress lint fmt typecheck layering whitespace pytest bench clean

# Some machines set PYTHONDONTWRITEBYTECODE for every shell. Under it no `.pyc` is ever written,
# so every process of the tree, every zygote, every test worker and every `lineup run` a test
# starts compiled LineUp's ~250 modules from source again: about 0.45 s of CPU each time, most
# of a start. The project's own commands always write (and so reuse) bytecode.
unexport PYTHONDONTWRITEBYTECODE

# The embedded default offers the examples (examples/) in the App Registry from a local catalog,
# signed with a development key made once (build/dev-key/, git-ignored) that only the embedded
# default trusts. Rebuilt at each `make run`; a no-op when nothing changed. `make test` does not
# need it.
CATALOG := build/catalog

run: $(STAMP) catalog
	$(VENV)/bin/lineup run --catalog $(CATALOG) $(ARGS)

catalog: $(STAMP)
	$(PY) -m lineup.ops.catalog build --out $(CATALOG) --key build/dev-key/lineup-dev

# The static checks run beside pytest, whose real processes leave the cores idle much of the
# time (their few lines may land between pytest's). They run `nice`: on a fresh clone mypy has
# no cache and wants a core for ~40 s, which it takes from what pytest leaves idle instead of
# from pytest.
NICE := nice -n 10
test: $(STAMP)
	$(MAKE) --no-print-directory -j4 lint typecheck layering whitespace pytest

lint: $(STAMP)
	$(NICE) $(VENV)/bin/ruff check .
	$(NICE) $(VENV)/bin/ruff format --check .

fmt: $(STAMP)
	$(VENV)/bin/ruff check --fix .
	$(VENV)/bin/ruff format .

# The package and its tests (lineup.tests), strict, by pyproject's [tool.mypy].
typecheck: $(STAMP)
	$(NICE) $(VENV)/bin/mypy -p lineup

layering: $(STAMP)
	$(NICE) $(VENV)/bin/lint-imports

# No trailing space, no space before a tab, no conflict marker in any tracked file as it is on
# disk (seed 000 §11): every file against git's empty tree. Nothing to check outside a clone.
EMPTY_TREE := 4b825dc642cb6eb9a060e54bf8d69288fbee4904
whitespace:
	@if git rev-parse --git-dir >/dev/null 2>&1; then git diff --check $(EMPTY_TREE) -- .; fi

# Four workers (pytest-xdist) on CI's two cores: the suite's tests are mostly real processes
# waiting on one another, so the cores stay busy only with more workers than cores. Measured on
# fresh clones on two cores: pytest took 10 min 5 s on two workers; `make test` 9 min 22 s to
# 12 min 56 s on three, where the same suite on four (`make test-stress`) took 7 min 35 s to
# 10 min 29 s. Every run ends with its 30 slowest tests, so a test that grows slow is seen where
# it lands.
# `--dist loadgroup`: tests are handed out one by one as with `load`, but a module marked as one
# `xdist_group` (one whose module-scoped fixture starts a runtime) runs on one worker, which
# alone pays for that fixture.
# `--max-worker-restart 0`: a worker that dies (pytest-timeout's backstop ends one whose test
# ignored its deadline, tests/support/deadline.py) ends the run with that test named. Replaced
# instead, it leaves xdist 3.8's `loadgroup` waiting forever on work already done (xdist #1378).
PYTEST_WORKERS ?= 4
pytest: $(STAMP)
	$(PY) -m pytest -n $(PYTEST_WORKERS) --dist loadgroup --max-worker-restart 0 --durations=30 \
		$(PYTEST_ARGS)

# The whole suite twice oversubscribed (4 workers on CI's 2 cores), without the static checks:
# a test that waits on a deadline guessed for a quiet machine, instead of on the event it means,
# fails here too. `make test` runs the same workers with the checks beside them.
test-stress: $(STAMP)
	$(MAKE) pytest PYTEST_WORKERS=4

bench: $(BENCH_STAMP)
	$(PY) -m lineup.ops.bench $(ARGS)

# The `bench` extra (ray, the peer measured beside LineUp) is installed for `make bench` only:
# `make run` and `make test` never install it.
$(BENCH_STAMP): $(STAMP)
	$(PY) ops/install_dev.py --extra bench
	touch $(BENCH_STAMP)

# The dependencies come from pyproject.toml; the package itself is linked, not copied, so the
# repository root is importable as `lineup` (DESIGN §10) and edits take effect at once.
$(STAMP): pyproject.toml ops/install_dev.py
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) ops/install_dev.py
	touch $(STAMP)

clean:
	rm -rf $(VENV)
