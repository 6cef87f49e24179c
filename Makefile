# make train: set up .venv (first time only), check tmux, launch a run in tmux.
# make test:  set up .venv (first time only), run the test suite.
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
WORKERS ?= 2
ENV ?= doom
UNSUP ?= action
ARGS ?=

.PHONY: train test bench-throughput bench-cartpole clean

$(VENV)/.installed: setup.py
	@$(PYTHON) -c 'import sys; sys.exit(0 if sys.version_info[:2] == (3, 11) else "Python 3.11 is needed, found " + sys.version.split()[0] + ": make PYTHON=/path/to/python3.11")'
	$(PYTHON) -m venv $(VENV)
	$(VENV)/bin/pip install --quiet --upgrade pip
	$(VENV)/bin/pip install --quiet -e ".[test,games]"
	touch $@

train: $(VENV)/.installed
	@command -v tmux >/dev/null || { echo "tmux is not installed: apt-get install tmux, or run: $(VENV)/bin/python train.py --mode nohup"; exit 1; }
	$(VENV)/bin/python train.py --num-workers $(WORKERS) --env-id $(ENV) --unsup $(UNSUP) $(ARGS)

test: $(VENV)/.installed
	$(VENV)/bin/python -m pytest -q tests

bench-throughput: $(VENV)/.installed
	$(VENV)/bin/python benchmarks/throughput.py $(ARGS)

bench-cartpole: $(VENV)/.installed
	$(VENV)/bin/python benchmarks/cartpole_time_to_solve.py $(ARGS)

clean:
	rm -rf $(VENV) *.egg-info .pytest_cache
