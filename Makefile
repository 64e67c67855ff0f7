# The two commands a new user needs (see README.md):
#   make demo   - set up .venv and run a real mlagents-learn training on the bundled Balance stand-in scene
#   make test   - set up .venv and run the default test suite (well under 20 minutes on 2 cores)
VENV ?= .venv
PYTHON ?= python3
PY := $(VENV)/bin/python
DEMO_RUN_ID ?= demo
DEMO_CONFIG ?= configs/demo_balance.yaml
PYTEST_ARGS ?=

.PHONY: setup demo test test-slow test-ray bench bench-quick bench-defaults bench-ray builds clean

setup:
	@VENV=$(VENV) PYTHON=$(PYTHON) scripts/setup_env.sh test

builds: setup
	@$(PY) -m mlagents_plugins.envs.standin --write-builds builds >/dev/null

demo: builds
	$(VENV)/bin/mlagents-learn $(DEMO_CONFIG) --env=builds/Balance --run-id=$(DEMO_RUN_ID) --force \
		--num-areas=4 --base-port=5105 --no-graphics
	$(PY) scripts/check_run.py results/$(DEMO_RUN_ID) Balance --scene balance

test: setup
	$(PY) -m pytest -q -m "not slow" $(PYTEST_ARGS)

test-slow: setup
	$(PY) -m pytest -q -m slow $(PYTEST_ARGS)

# Environment copies on Ray (docs/ray.md): installs the `ray` extra (plain ray core), then the local
# multi-node cluster tests (about 15 minutes on 2 cores).  Without ray those tests skip.
test-ray:
	@VENV=$(VENV) PYTHON=$(PYTHON) scripts/setup_env.sh test ray
	$(PY) -m pytest -q tests/test_ray_cli.py tests/ray_envs $(PYTEST_ARGS)

# Benchmarks (see bench/README.md): our trainers vs built-in sac/ppo -> bench/results/REPORT.md + PNGs
# (the quick mode writes to $(BENCH_QUICK_OUT), git-ignored, so it never overwrites the committed full report).
# BENCH_ARGS passes extra options, e.g. BENCH_ARGS="--jobs 2 --note 'idle machine'".
BENCH_ARGS ?=
BENCH_QUICK_OUT ?= results/bench-quick
bench:
	@VENV=$(VENV) PYTHON=$(PYTHON) scripts/setup_env.sh test bench
	$(PY) -m bench.run $(BENCH_ARGS)

bench-quick:
	@VENV=$(VENV) PYTHON=$(PYTHON) scripts/setup_env.sh test bench
	$(PY) -m bench.run --quick --out $(BENCH_QUICK_OUT) $(BENCH_ARGS)

# Defaults benchmark (issue #12): one minimal drop-in config for every trainer on the validation scenes.
BENCH_DEFAULTS_OUT ?= bench/results-defaults
bench-defaults:
	@VENV=$(VENV) PYTHON=$(PYTHON) scripts/setup_env.sh test bench
	$(PY) -m bench.run --defaults --out $(BENCH_DEFAULTS_OUT) $(BENCH_ARGS)

# Ray vs subprocess env-copy scaling (bench/ray_scaling.py) -> bench/results/ray/
bench-ray:
	@VENV=$(VENV) PYTHON=$(PYTHON) scripts/setup_env.sh test bench ray
	$(PY) -m bench.ray_scaling $(BENCH_ARGS)

clean:
	rm -rf $(VENV) results builds .pytest_cache
