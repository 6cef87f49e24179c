# make train: set up the virtual environment (first time only), check tmux, launch a run in tmux.
# make test:  set up the virtual environment (first time only), run the test suite.
# The Python is the newest of 3.13 / 3.12 / 3.11 found on the PATH or under pyenv, or PYTHON=... (tools/venv.sh).
PYTHON ?=
VENV ?= .venv
TESTS ?= tests
# the tests make test leaves out: the fault runs, a benchmark of recovery of their own (make test-faults)
MARKS ?= not fault
WORKERS ?= 2
ENV ?= doom
UNSUP ?= action
ARGS ?=
# test files run side by side in this many processes (pytest-xdist), each file in one: most of a test's time is its
# runs' processes importing TensorFlow and waiting on one another, which two at a time overlap on 2 cores
TEST_PROCESSES ?= 2

.PHONY: venv train test test-faults bench-throughput bench-cartpole clean

venv:
	@tools/venv.sh ensure "$(VENV)" "$(PYTHON)"

train: venv
	@command -v tmux >/dev/null || { echo "tmux is not installed: apt-get install tmux, or run: $(VENV)/bin/python train.py --mode nohup"; exit 1; }
	$(VENV)/bin/python train.py --num-workers $(WORKERS) --env-id $(ENV) --unsup $(UNSUP) $(ARGS)

test: venv
	$(VENV)/bin/python -m pytest -q -n $(TEST_PROCESSES) --dist loadfile --durations=10 -m "$(MARKS)" $(TESTS)

test-faults: venv
	$(VENV)/bin/python -m pytest -q -n $(TEST_PROCESSES) --dist loadfile --durations=10 -m fault tests

bench-throughput: venv
	$(VENV)/bin/python benchmarks/throughput.py $(ARGS)

bench-cartpole: venv
	$(VENV)/bin/python benchmarks/cartpole_time_to_solve.py $(ARGS)

clean:
	rm -rf .venv .venv-3.* *.egg-info .pytest_cache
