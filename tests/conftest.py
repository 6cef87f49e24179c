import os
import signal
import sys
import time

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
import logdir  # noqa: E402

logdir.tf_environment()  # the tests' TensorFlow runs as the workers' does
# A shell starts a background job (`make test &`, `nohup ... &` in a script) with Ctrl-C ignored, and the processes
# the tests start would inherit that: the tests of Ctrl-C would send it to processes that ignore it. As a terminal
# would: processes started from here get the default disposition again.
if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)


# The packages whose versions move a run's numbers: a failure in a fresh clone's CI (which installs the newest
# allowed releases) can then be put beside the versions of the run that passed.
REPORTED_PACKAGES = ("tensorflow-cpu", "numpy", "gymnasium", "scipy", "opencv-python-headless", "vizdoom", "ale-py",
                     "nes-py", "libtmux")


def pytest_terminal_summary(terminalreporter):
    """At the end (printed under -q too, unlike pytest's header)."""
    from importlib import metadata

    def version(name):
        try:
            return metadata.version(name)
        except metadata.PackageNotFoundError:
            return "absent"
    terminalreporter.write_line("packages: " + ", ".join(f"{name} {version(name)}" for name in REPORTED_PACKAGES))
    for line in SKIPPED:
        terminalreporter.write_line(f"skipped: {line}")
    if unexpected_skips() and os.environ.get("CURIOSITY_FAIL_ON_SKIP"):
        terminalreporter.write_line(f"CI fails on an unexpected skip (CURIOSITY_FAIL_ON_SKIP): "
                                    f"{len(unexpected_skips())} skipped")


def side_by_side(script, *argvs):
    """The project's `script` (demo.py, train.py) with each of `argvs`, all at once, each forked from the preloaded
    process (tests/preloaded.py: TensorFlow imported once): their results, as subprocess.run gives them."""
    import preloaded

    started = [preloaded.start(script, *argv) for argv in argvs]
    try:
        return [preloaded.finish(process, 300) for process in started]
    finally:
        for process in started:
            process.kill()


def wait_for(condition, seconds, what, every=0.5):
    """Wait until `condition()` holds, at most `seconds`; fail saying `what` was waited for."""
    deadline = time.time() + seconds
    while time.time() < deadline and not condition():
        time.sleep(every)
    assert condition(), f"{what}: not within {seconds} s"


@pytest.fixture
def graph():
    """A fresh TensorFlow graph, in graph mode, as the default for the test."""
    import tensorflow as tf

    tf.compat.v1.disable_eager_execution()
    with tf.Graph().as_default() as g:
        yield g


def losses_while_training(trainer, updates, loss):
    """Train `trainer` (an A3C) for `updates` updates in a fresh session and return, after each, the value of the
    tensor `loss` of its local bonus on the batch it trained on; with the episodes' stats the runner reported."""
    import tensorflow as tf

    tf1 = tf.compat.v1
    values, episodes = [], []
    bonus = trainer.local_predictor
    with tf1.Session() as session:
        session.run(tf1.global_variables_initializer())
        trainer.start(session, None, episodes.append)
        for _ in range(updates):
            batch = trainer.process()
            values.append(session.run(loss, bonus.feed_sequences(batch.sequences, batch.actions)))
        trainer.stop()
    return values, episodes


# CI (.ci/run sets CURIOSITY_FAIL_ON_SKIP=1) fails on an unexpected skip: a check that quietly does not run (a missing
# package, say) is one CI would otherwise report as passed. The expected ones are the tests that need what a machine
# may not give (root, network or user namespaces): they skip through skip_for_machine, are listed at the end of the
# run, and do not fail it.
SKIPPED = []
MACHINE = "[needs of the machine] "  # what skip_for_machine puts before its reason


def skip_for_machine(reason):
    """Skip a test this machine cannot run (no root, no namespaces): listed at the end, expected in CI."""
    pytest.skip(MACHINE + reason)


def pytest_runtest_logreport(report):
    if report.skipped and not hasattr(report, "wasxfail"):
        SKIPPED.append(f"{report.nodeid}: {report.longrepr[2] if isinstance(report.longrepr, tuple) else ''}")


def unexpected_skips():
    return [line for line in SKIPPED if MACHINE not in line]


def pytest_sessionfinish(session, exitstatus):
    if unexpected_skips() and os.environ.get("CURIOSITY_FAIL_ON_SKIP") and exitstatus == 0:
        session.exitstatus = 1


def episode_line(*values):
    """One row of an episodes CSV as the episode logger writes it now: `values` from the first column on, the rest
    of the columns empty (the game's metrics, which these rows do not report)."""
    from acting import EpisodeLogger

    return ",".join(map(str, values + ("",) * (len(EpisodeLogger.COLUMNS) - len(values)))) + "\n"
