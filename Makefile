# Stepwell: every target sets up what it needs, so a fresh machine runs `make demo` and `make test`.
SHELL := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c
.DEFAULT_GOAL := help

PYTHON ?= python3
VENV := .venv
BIN := $(CURDIR)/$(VENV)/bin
CACHE := $(CURDIR)/.cache
export TF_CLI_CONFIG_FILE := $(CACHE)/terraformrc
export TF_IN_AUTOMATION := 1
export PATH := $(BIN):$(PATH)

TF_DIRS := . $(wildcard modules/*) $(wildcard examples/*)

.PHONY: help setup venv otel-conformance tfrc node localstack browser lint fmt-check validate tf-test ruff mypy checkov docs docs-check checks pytest test demo screenshot bench chaos soak clean

help:
	@echo "make demo   run the main story on the embedded (moto) backend"
	@echo "make test   run every check and test suite (both backends)"
	@echo "make bench  write BENCHMARKS.md"
	@echo "make chaos  run 1,000 executions under injected faults on moto, then on LocalStack; write their sections of BENCHMARKS.md"
	@echo "make soak   run a mix of executions through their retention on moto; write its section of BENCHMARKS.md (fails if anything is left)"
	@echo "make throughput  executions/s and the due-to-run delay with 1, 2 and 4 workers on LocalStack; write its section of BENCHMARKS.md"
	@echo "make scale  record a mix's AWS requests on moto, project them to issue 42's targets; write its section of BENCHMARKS.md"
	@echo "make screenshot  write docs/console-timeline.png (the console's timeline of the demo's order)"

setup: venv tfrc node

venv: $(VENV)/.installed
$(VENV)/.installed: pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -e '.[dev]'
	touch $@

# AWS's OpenTelemetry conformance validators (tests/conformance/test_otel_suites.py), fetched unmodified and
# unpacked onto the tests' sys.path, not installed: their wheels say Requires-Python >=3.14 (for the S3
# collector's compression.zstd, which the tests do not import) and the venv is 3.11. Pinned by version and sha256.
OTEL_CONFORMANCE := $(CACHE)/otel-conformance-0.2.0
otel-conformance: $(OTEL_CONFORMANCE)/.installed
$(OTEL_CONFORMANCE)/.installed: | venv
	rm -rf $(OTEL_CONFORMANCE) && mkdir -p $(OTEL_CONFORMANCE)/wheels
	$(BIN)/python -m pip download -q --no-deps --python-version 3.14 --only-binary=:all: -d $(OTEL_CONFORMANCE)/wheels \
	  aws-durable-execution-conformance-tests==1.0.0 aws-durable-execution-conformance-tests-otel==0.2.0
	cd $(OTEL_CONFORMANCE)/wheels && printf '%s  %s\n' \
	  59b46cda93c0cbfed6a80f342ab0b93542ad8841196200a15fc716ebaa619c30 aws_durable_execution_conformance_tests-1.0.0-py3-none-any.whl \
	  622638184567947282a5a95379a011c8a5982f2e5ea467090df6e61c04f817ec aws_durable_execution_conformance_tests_otel-0.2.0-py3-none-any.whl \
	  | sha256sum -c --quiet
	for wheel in $(OTEL_CONFORMANCE)/wheels/*.whl; do $(BIN)/python -m zipfile -e $$wheel $(OTEL_CONFORMANCE)/site; done
	touch $@

tfrc: $(CACHE)/terraformrc
$(CACHE)/terraformrc: tools/terraform_cli_config.sh
	tools/terraform_cli_config.sh $@ >/dev/null

# Node.js for the local Lambda runtime's nodejs functions (Debian's, when the machine has none), and the npm
# packages the tests bundle into JavaScript durable functions (tools/node: package.json pins
# @aws/durable-execution-sdk-js, package-lock.json the rest) into its git-ignored node_modules; again only
# when the lock changes, so an installed machine runs offline.
node: tools/node/node_modules/.installed
tools/node/node_modules/.installed: tools/node/package.json tools/node/package-lock.json
	if ! command -v node >/dev/null || ! command -v npm >/dev/null; then \
	  apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q nodejs npm; \
	fi
	cd tools/node && npm ci --no-audit --no-fund --loglevel=error
	touch $@

localstack: venv
	tools/localstack/setup.sh

# Debian's Chromium and its driver for the console's browser test and `make screenshot` (we run as root).
CHROMIUM := /usr/bin/chromium
CHROMEDRIVER := /usr/bin/chromedriver
browser:
	if [ ! -x $(CHROMIUM) ] || [ ! -x $(CHROMEDRIVER) ]; then \
	  apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q chromium chromium-driver; \
	fi

checkov-venv: $(CACHE)/checkov/.installed
$(CACHE)/checkov/.installed:
	$(PYTHON) -m venv $(CACHE)/checkov
	$(CACHE)/checkov/bin/python -m pip install -q 'checkov>=3.2,<4'
	touch $@

fmt-check: tfrc
	terraform fmt -check -recursive

validate: tfrc
	for d in $(TF_DIRS); do \
	  (cd $$d && terraform init -backend=false -input=false -no-color >/dev/null && terraform validate -no-color) ; \
	done

tf-test: tfrc
	terraform init -backend=false -input=false -no-color -test-directory=tests/terraform >/dev/null
	terraform test -no-color -test-directory=tests/terraform

ruff: venv
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

mypy: venv
	$(BIN)/mypy

# Examples and terraform test's fixture roots stand in for a user's own resources, which are not the module's.
checkov: checkov-venv
	$(CACHE)/checkov/bin/checkov --quiet --compact --skip-download -d . --framework terraform --skip-path examples --skip-path tests/terraform/fixtures --skip-path .cache

# Without file names: docs/reference/module-inputs.md (the root module's, linked from README.md) and every
# modules/*/README.md (a submodule without one fails the check).
docs: venv
	$(BIN)/python tools/terraform_docs.py --write

docs-check: venv
	$(BIN)/python tools/terraform_docs.py --check

lint: fmt-check validate ruff mypy checkov docs-check

# One worker more than CPUs (tests/conftest.py keeps each deployed backend's tests, which share one apply, in one
# worker, and every other module's tests together): the deployed backends' units spend most of their time waiting
# on the backend (with one worker per CPU, a clean-clone run kept about one of two CPUs busy), so a third worker
# runs the in-process tests beside them. PYTEST_WORKERS=0 runs in one process.
PYTEST_WORKERS ?= $(shell echo $$(( $$(nproc) + 1 )))
pytest: venv tfrc node localstack browser otel-conformance
	$(BIN)/python -m pytest -n $(PYTEST_WORKERS)

checks: lint tf-test

# The checks run beside pytest rather than before it: pytest's workers spend much of their time waiting (on
# the AWS provider's fixed waits during applies, on the local backends), which leaves room on 2 CPUs for the
# checks (minutes on their own, terraform test most of it). Their output goes to a log printed after
# pytest's; either failing fails the target. They run in a process group of their own, stopped if make is
# (a background job ignores Ctrl-C).
CHECKS_LOG := $(CACHE)/checks.log
test: venv tfrc
	@echo "make checks (lint, tf-test) runs beside pytest; its output follows pytest's ($(CHECKS_LOG))"
	@setsid $(MAKE) --no-print-directory checks >$(CHECKS_LOG) 2>&1 & checks=$$!; \
	trap 'kill -TERM -- -$$checks 2>/dev/null || true' EXIT INT TERM; \
	tests=0; $(MAKE) --no-print-directory pytest || tests=$$?; \
	checked=0; wait $$checks || checked=$$?; \
	echo "==================== make checks (lint, tf-test): exit $$checked ===================="; \
	cat $(CHECKS_LOG); \
	echo "make test: pytest exit $$tests, checks exit $$checked"; \
	test $$tests -eq 0 && test $$checked -eq 0

demo: venv tfrc
	$(BIN)/python -m stepwell.testing.demo
	$(BIN)/python examples/definitions/demo.py

screenshot: venv tfrc browser
	$(BIN)/python -m stepwell.testing.demo --console-screenshot docs/console-timeline.png

bench: venv tfrc
	$(BIN)/python tools/bench.py --write BENCHMARKS.md

# The same run on LocalStack (about as long as on moto here); a smaller one: make chaos CHAOS_LOCALSTACK_EXECUTIONS=300.
CHAOS_LOCALSTACK_EXECUTIONS ?= 1000

chaos: venv localstack
	$(BIN)/python tools/chaos.py --write BENCHMARKS.md
	$(BIN)/python tools/chaos.py --backend localstack --executions $(CHAOS_LOCALSTACK_EXECUTIONS) --write BENCHMARKS.md

soak: venv
	$(BIN)/python tools/soak.py --write BENCHMARKS.md

# A few minutes: three chaos runs without faults (1, 2, 4 workers) of THROUGHPUT_EXECUTIONS executions each.
THROUGHPUT_EXECUTIONS ?= 150
.PHONY: throughput
throughput: venv localstack
	$(BIN)/python tools/throughput.py --executions $(THROUGHPUT_EXECUTIONS) --write BENCHMARKS.md

# Another design's settings: make scale SCALE_ARGS="--set index_shards=16 --set long_wait_wakeups=sweep".
scale: venv
	$(BIN)/python tools/scale.py --write BENCHMARKS.md $(SCALE_ARGS)

# A wheel of the Python package (engine, client, CLI, test harness) in dist/, for a repo that uses the module:
# pip install "dist/stepwell-0.1.0-py3-none-any.whl[testing]". pip builds it in-tree: build/ goes after.
.PHONY: dist
dist: venv
	rm -rf dist build
	$(BIN)/python -m pip wheel --no-deps --quiet --wheel-dir dist .
	rm -rf build
	ls dist/*.whl

clean:
	rm -rf $(VENV) $(CACHE) .pytest_cache .mypy_cache .ruff_cache
	find . -name .terraform -type d -prune -exec rm -rf {} +
