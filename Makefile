# The two commands a new user needs (see README.md):
#   make demo   - set up .venv and run a real mlagents-learn training on the bundled Balance stand-in scene
#   make test   - set up .venv and run the default test suite, one pytest-xdist worker per core up to 4
#                 (TEST_WORKERS=0: one process)
# PYTHON picks the interpreter (3.10 to 3.13, e.g. PYTHON=~/.pyenv/versions/3.13.0/bin/python3); any other than
# the default python3 gets its own environment, .venv-3.X, so switching interpreters never mixes packages.
PYTHON ?= python3
# python3.X that a pyenv shim does not answer for (another version is selected) is taken from pyenv's versions.
override PYTHON := $(shell scripts/find_python.sh $(PYTHON))
ifeq ($(PYTHON),python3)
VENV ?= .venv
else
VENV ?= .venv-$(shell $(PYTHON) -c 'import sys; print("%d.%d" % sys.version_info[:2])' 2>/dev/null || echo unknown)
endif
PY := $(VENV)/bin/python
DEMO_RUN_ID ?= demo
DEMO_CONFIG ?= configs/demo_balance.yaml
DEMO_PORT ?= 5105
PYTEST_ARGS ?=
# pytest-xdist workers of `make test`: one per core this process may use (nproc follows the CPU affinity), at most 4;
# 0 on one core (no worker processes).  Tests that share a fixed resource (the Editor port 5004) carry one
# xdist_group and run on one worker (--dist loadgroup).  --durations=30: every log ends with the 30 slowest tests
# (setup, call and teardown separately), the ones to move to `slow` when the default run grows.
TEST_WORKERS ?= $(shell n=$$(nproc 2>/dev/null || echo 1); if [ "$$n" -gt 4 ]; then n=4; fi; \
	if [ "$$n" -lt 2 ]; then n=0; fi; echo $$n)

.PHONY: setup demo test test-slow test-ray smoke bench bench-quick bench-defaults bench-screen bench-gym bench-ray bench-profile builds clean

setup:
	@VENV=$(VENV) PYTHON=$(PYTHON) scripts/setup_env.sh test

builds: setup
	@$(PY) -m mlagents_plugins.envs.standin --write-builds builds >/dev/null

demo: builds
	$(VENV)/bin/mlagents-learn $(DEMO_CONFIG) --env=builds/Balance --run-id=$(DEMO_RUN_ID) --force \
		--num-areas=4 --base-port=$(DEMO_PORT) --no-graphics
	$(PY) scripts/check_run.py results/$(DEMO_RUN_ID) Balance --scene balance

test: setup
	$(PY) -m pytest -q -m "not slow" -n $(TEST_WORKERS) --dist loadgroup --durations=30 $(PYTEST_ARGS)

test-slow: setup
	$(PY) -m pytest -q -m slow $(PYTEST_ARGS)

# Environment copies on Ray (docs/ray.md): installs the `ray` extra (plain ray core), then the local
# multi-node cluster tests (about 15 minutes on 2 cores).  Without ray those tests skip.
test-ray:
	@VENV=$(VENV) PYTHON=$(PYTHON) scripts/setup_env.sh test ray
	$(PY) -m pytest -q tests/test_ray_cli.py tests/ray_envs $(PYTEST_ARGS)

# A few minutes: the import hooks against the shipped protobuf modules, and one real mlagents-learn run through
# a stand-in build with its ONNX export checked, one in-process training (numpy 2 paths) (CI runs this on
# Python 3.13, the full suite on 3.11).
SMOKE_TESTS ?= tests/test_boot_hooks.py tests/test_patches.py tests/envs/test_e2e.py::test_launch_mode_two_envs_then_resume \
	tests/envs/test_harness.py::test_short_run_writes_models_and_curves_and_reads_parameters
smoke: setup
	$(PY) -m pytest -q $(SMOKE_TESTS) $(PYTEST_ARGS)

# Benchmarks (see bench/README.md; one entry point, `python -m bench <command>`, `python -m bench --help` lists them):
# our trainers vs built-in sac/ppo -> results/bench/REPORT.md + PNGs (the quick mode -> $(BENCH_QUICK_OUT)); every
# default output folder is git-ignored: a study worth keeping goes to bench/results/<study>-<date>/ and its index.
# BENCH_ARGS passes extra options, e.g. BENCH_ARGS="--jobs 2 --note 'idle machine'".
BENCH_ARGS ?=
BENCH_QUICK_OUT ?= results/bench-quick
bench:
	@VENV=$(VENV) PYTHON=$(PYTHON) scripts/setup_env.sh test bench
	$(PY) -m bench learn $(BENCH_ARGS)

bench-quick:
	@VENV=$(VENV) PYTHON=$(PYTHON) scripts/setup_env.sh test bench
	$(PY) -m bench learn --quick --out $(BENCH_QUICK_OUT) $(BENCH_ARGS)

# Defaults benchmark: one minimal drop-in config for every trainer on the validation scenes; its REPORT.md starts
# with README.md's results table (BENCH_ARGS=--update-readme also writes it into README.md).
BENCH_DEFAULTS_OUT ?= results/bench-defaults
bench-defaults:
	@VENV=$(VENV) PYTHON=$(PYTHON) scripts/setup_env.sh test bench
	$(PY) -m bench defaults --out $(BENCH_DEFAULTS_OUT) $(BENCH_ARGS)

# The screening tier of the defaults benchmark (one seed, every validation scene, shorter budgets; bench/README.md)
BENCH_SCREEN_OUT ?= results/bench-screen
bench-screen:
	@VENV=$(VENV) PYTHON=$(PYTHON) scripts/setup_env.sh test bench
	$(PY) -m bench defaults --screen --out $(BENCH_SCREEN_OUT) $(BENCH_ARGS)

# Gymnasium MuJoCo tasks through mlagents-learn beside SB3 SAC / CrossQ -> results/bench-gym/ (docs/gym.md; 15-40
# minutes per 100k-step run on one core: e.g. BENCH_ARGS="--seeds 0 --steps 20000 --continue")
bench-gym:
	@VENV=$(VENV) PYTHON=$(PYTHON) scripts/setup_env.sh test bench bench-gym
	$(PY) -m bench gym $(BENCH_ARGS)

# Ray vs subprocess env-copy scaling -> results/bench-ray/
bench-ray:
	@VENV=$(VENV) PYTHON=$(PYTHON) scripts/setup_env.sh test bench ray
	$(PY) -m bench ray $(BENCH_ARGS)

# CPU seconds per 1k env steps of whole mlagents-learn runs by phase, every trainer, built-in sac and the floor,
# at 8 and 64 agents -> $(BENCH_PROFILE_OUT) (REPORT.md, runs.jsonl)
BENCH_PROFILE_OUT ?= results/bench-profile
bench-profile:
	@VENV=$(VENV) PYTHON=$(PYTHON) scripts/setup_env.sh test bench
	$(PY) -m bench profile --out $(BENCH_PROFILE_OUT) $(BENCH_ARGS)

clean:
	rm -rf $(VENV) results builds .pytest_cache
