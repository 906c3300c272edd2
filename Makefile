# morl_robot: two commands on a fresh Debian machine with Python 3.11 -- `make demo`, `make test`.
# Each creates .venv (project installed editable with ROS 2 from the ros-* wheels) if needed.
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
# Every test run gets its own DDS domain and keeps discovery on this machine.
ROS_ENV := ROS_AUTOMATIC_DISCOVERY_RANGE=LOCALHOST RMW_IMPLEMENTATION=rmw_fastrtps_cpp
PYTEST_ARGS ?=
# Three pytest-xdist workers on the 2-core machines (about a third of the suite waits on DDS,
# processes and real-time sessions, not on a core; tests/conftest.py gives each worker its own block
# of DDS domain ids); a whole test file runs on one worker, so its module fixtures are built once.
PYTEST_WORKERS ?= 3
# make test is the default suite (under 15 minutes on 2 cores); tests marked `extended` (long
# experiments, contrasts, benchmarks) run with make test-extended.

# The CAPQL baseline of `experiment conditioned --method capql` (morl-baselines, installed without
# its dependencies: its pycddlib pin often fails to build and CAPQL does not use it; it imports wandb).
CAPQL_STAMP := $(VENV)/.capql
CAPQL_PINS  := morl-baselines==1.3.0
CAPQL_DEPS  := wandb==0.31.0

.PHONY: venv test test-extended demo bench lint clean capql-deps sac-deps docs results-index

$(STAMP): setup.py requirements/pip_only.txt requirements/venv_constraints.txt
	@# Debian's python3 ships venv/ensurepip separately (python3-venv): install it if missing.
	@$(PYTHON) -c "import ensurepip, venv" 2>/dev/null || { echo "installing python3-venv (apt)"; \
	  apt-get update -qq && apt-get install -y -qq python3-venv; }
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -c requirements/venv_constraints.txt -e '.[ros,test]'
	touch $(STAMP)

venv: $(STAMP)

$(CAPQL_STAMP): $(STAMP)
	$(BIN)/python -m pip install --quiet -c requirements/venv_constraints.txt $(CAPQL_DEPS)
	$(BIN)/python -m pip install --quiet --no-deps $(CAPQL_PINS)
	touch $(CAPQL_STAMP)

capql-deps: $(CAPQL_STAMP)

# The SAC baseline of `experiment hopper-dynamics` (stable-baselines3, setup.py extra 'sac'; pip's
# resolution keeps the venv's torch: it needs torch>=2.8 and adds nothing else).
SAC_STAMP := $(VENV)/.sac
SAC_PINS  := stable-baselines3==2.9.2

$(SAC_STAMP): $(STAMP)
	$(BIN)/python -m pip install --quiet -c requirements/venv_constraints.txt $(SAC_PINS)
	touch $(SAC_STAMP)

sac-deps: $(SAC_STAMP)

test: $(STAMP) $(CAPQL_STAMP) $(SAC_STAMP)
	$(ROS_ENV) $(BIN)/python -m pytest -q -n $(PYTEST_WORKERS) --dist loadfile -m "not extended" $(PYTEST_ARGS)

test-extended: $(STAMP) $(CAPQL_STAMP) $(SAC_STAMP)
	$(ROS_ENV) $(BIN)/python -m pytest -q -n $(PYTEST_WORKERS) --dist loadfile -m extended $(PYTEST_ARGS)

demo: $(STAMP)
	$(ROS_ENV) $(BIN)/morl-robot demo

bench: $(STAMP)
	$(BIN)/morl-robot bench env

# The documentation (Sphinx + MyST; reference pages generated from the code) into docs/_build/html.
docs: $(STAMP)
	$(BIN)/sphinx-build -W --keep-going -q -b html docs docs/_build/html
	@echo "docs: docs/_build/html/index.html"

lint: $(STAMP)
	$(BIN)/ruff check morl_robot tests launch docs

clean:
	rm -rf $(VENV) build install log *.egg-info docs/_build

# results/README.md and docs/results/ from each results folder's RESULT.yaml (a test checks they are current)
results-index: $(STAMP)
	$(BIN)/python -m morl_robot.evaluation.results_index
