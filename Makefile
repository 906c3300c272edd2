# morl_robot: two commands on a fresh Debian machine with Python 3.11 -- `make demo`, `make test`.
# Each creates .venv (project installed editable with ROS 2 from the ros-* wheels) if needed.
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
# Every test run gets its own DDS domain and keeps discovery on this machine.
ROS_ENV := ROS_AUTOMATIC_DISCOVERY_RANGE=LOCALHOST RMW_IMPLEMENTATION=rmw_fastrtps_cpp
PYTEST_ARGS ?=
# Two pytest-xdist workers (tests/conftest.py gives each its own block of DDS domain ids); a
# whole test file runs on one worker, so its module fixtures are built once.
PYTEST_WORKERS ?= 2

# The CAPQL baseline of `experiment conditioned --method capql` (morl-baselines, installed without
# its dependencies: its pycddlib pin often fails to build and CAPQL does not use it; it imports wandb).
CAPQL_STAMP := $(VENV)/.capql
CAPQL_PINS  := morl-baselines==1.3.0
CAPQL_DEPS  := wandb==0.31.0

.PHONY: venv test demo bench lint clean capql-deps docs results-index

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

test: $(STAMP) $(CAPQL_STAMP)
	$(ROS_ENV) $(BIN)/python -m pytest -q -n $(PYTEST_WORKERS) --dist loadfile $(PYTEST_ARGS)

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
