# tau — every entry point humans and CI use. `make help` lists them.
PYTHON ?= .venv/bin/python
PIP ?= .venv/bin/pip

.DEFAULT_GOAL := help

##@ Setup
.PHONY: help install dist
help: ## List the targets
	@awk 'BEGIN {FS = ":.*##"} /^[a-zA-Z_-]+:.*##/ {printf "  %-18s %s\n", $$1, $$2} /^##@/ {printf "\n%s\n", substr($$0, 5)}' $(MAKEFILE_LIST)

install: ## Create .venv and install tau with its development tools
	test -x $(PYTHON) || python3 -m venv .venv
	$(PIP) install --quiet --upgrade pip
	$(PIP) install --quiet -e '.[dev]'

dist: ## Build the wheel and sdist into dist/ with their SHA256SUMS (what users install)
	rm -rf dist
	$(PYTHON) -m build --outdir dist .
	cd dist && sha256sum *.whl *.tar.gz > SHA256SUMS
	@cat dist/SHA256SUMS

##@ Generated code and goldens
.PHONY: generate check-generated golden
generate: ## Regenerate generated/ from spec/ (the only writer of generated/)
	$(PYTHON) codegen.py

check-generated: ## Fail with a diff when generated/ is stale
	$(PYTHON) codegen.py --check

golden: ## Rewrite golden/ from the current renderer; review the diff
	$(PYTHON) -m pytest -q tests/test_golden*.py tests/test_portal_stellar_golden.py tests/test_status_text.py --update-golden

##@ Checks
.PHONY: lint typecheck test lower-bounds bench verify e2e e2e-faults e2e-build cluster-up cluster-down
lint: ## ruff lint and format check over the hand-written code
	$(PYTHON) -m ruff check src tests codegen.py bench
	$(PYTHON) -m ruff format --check src tests codegen.py bench

typecheck: ## mypy over src/ (configured in pyproject.toml); zero errors
	$(PYTHON) -m mypy

test: lint typecheck ## Lint and type-check, then the test suite (fails on stale generated code or golden drift)
	$(PYTHON) codegen.py --check
	$(PYTHON) -m pytest -q

e2e-build: ## Build the e2e control plane's binaries from the Go module proxy (cached by version)
	$(PYTHON) -m tests.e2e.controlplane build

e2e: ## The lifecycle against a real control plane (kube-apiserver, etcd, Kueue, KubeRay, KWOK, helm)
	$(PYTHON) -m tests.e2e.controlplane e2e

e2e-faults: ## Faults injected under real runs on the real node (apiserver, etcd, kubelet, containerd, ...)
	$(PYTHON) -m tests.e2e.controlplane e2e tests/e2e/test_faults_e2e.py

cluster-up: ## Start that control plane in the background, ready for a researcher (prints KUBECONFIG/CONTEXT/WORKSPACE)
	$(PYTHON) -m tests.e2e.controlplane up

cluster-down: ## Stop the control plane of cluster-up and remove its data
	$(PYTHON) -m tests.e2e.controlplane down

lower-bounds: ## A fast subset of the tests with every dependency at its lower bound (venv cached outside the clone)
	$(PYTHON) -m tests.lower_bounds

bench: ## Run the speed benchmarks and print medians
	$(PYTHON) bench/run_all.py

verify: generate golden ## Regenerate everything, then fail on any diff or untracked output
	git diff --exit-code -- generated golden
	test -z "$$(git ls-files --others --exclude-standard -- generated golden)"
