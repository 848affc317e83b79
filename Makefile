# The common tasks, with nothing to install beyond make and the Rust toolchain (`deny`
# needs cargo-deny, `fuzz` cargo-fuzz: `cargo install --locked cargo-deny cargo-fuzz`).
# `make help` lists them; variables: T (test filter), BENCH (one bench), PROFILE
# (release or dev, for bench), ARGS (extra arguments of eval), FUZZ_TARGETS, FUZZ_SECONDS.

CARGO ?= cargo
PROFILE ?= release
T ?=

.PHONY: help fmt lint test test-all deploy-test bench eval fuzz deny ci

help: ## this list
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | sed 's/:.*## /\t/' | expand -t 14

fmt: ## format every Rust file
	$(CARGO) fmt --all

lint: ## what CI checks before the tests: formatting, clippy, the layering rule
	$(CARGO) fmt --all -- --check
	$(CARGO) clippy --all-targets --locked -- -D warnings
	python3 tests/support/check_layers.py src

test: ## unit and integration tests (T=filter runs the matching ones)
	$(CARGO) test --locked --lib --bins --tests $(T)

test-all: ## every test, installing what they need (tests/run.sh; the real-model ones too)
	bash tests/run.sh

deploy-test: ## the deployment tests (Ansible role, Dockerfile; as root on a throwaway machine)
	$(CARGO) build --locked --bin sre-agent
	bash tests/deploy/run.sh

bench: ## the benchmarks (BENCH=name for one; PROFILE=dev for a debug build)
	$(CARGO) bench --locked --profile $(PROFILE) $(if $(BENCH),--bench $(BENCH))

eval: ## the eval scenarios against the LLM of config.toml (ARGS="--only disk-filling")
	$(CARGO) run --locked --release -- eval $(ARGS)

fuzz: ## the coverage-guided fuzz targets for a bounded time (fuzz/run.sh)
	bash fuzz/run.sh $(FUZZ_TARGETS)

deny: ## licenses, advisories, banned and duplicate crates (deny.toml)
	$(CARGO) deny --locked check

ci: ## what CI runs (.ci/run)
	bash .ci/run
