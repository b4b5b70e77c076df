# Two entry points for a fresh machine (see README): `make demo` and `make test`.
# Each creates .venv and installs what it needs; only the package registries are used.
PY ?= python3.11
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: demo test install bench clean

$(STAMP): pyproject.toml
	# Debian packages pip cannot install, where missing (as root): SLEEF for the CPU backend.
	bash scripts/apt_install_missing.sh libsleef-dev
	$(PY) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	# torch first: the CPU wheel (2.13.0) so the project's torch range pulls no CUDA build.
	$(BIN)/pip install --quiet "torch==2.13.0"
	$(BIN)/pip install --quiet -e ".[dev]"
	touch $(STAMP)

install: $(STAMP)

demo: $(STAMP)
	$(BIN)/evokernel demo --out runs/demo

test: $(STAMP)
	# two workers (CI has 2 cores, and the suite keeps both busy: three took 1,570 s of pytest against 1,513 s
	# with two, 2026-12-03, its 2,500 CPU-seconds being the bound); loadscope runs each module whole on one
	# worker (its module fixtures made once), in the order tests/scheduling.py gives (slowest first). A
	# worker that dies (a native abort) ends the run at once, reported: xdist 3.8 replacing it under
	# loadscope can leave both workers idle until CI's time limit (pytest-xdist issue 1378)
	bash scripts/run_tests.sh -n 2 --dist loadscope --no-loadscope-reorder --max-worker-restart 0

bench: $(STAMP)
	$(BIN)/python -m benchmarks

clean:
	rm -rf $(VENV) runs .pytest_cache
