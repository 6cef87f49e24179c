"""The runner: rollout boundaries, bootstrap values, LSTM state hand-over, and session.run calls per step."""
import collections
import csv
import os
import queue
import threading
import time

import numpy as np
import pytest

import envs
from acting import EpisodeStats, RunnerThread, env_runner, env_stepper
from curiosity import BetaScaler


Counts = collections.namedtuple("Counts", ["steps"])  # a stand-in LSTM state: [K, 1] steps acted on per env


class CountingPolicy:
    """Walks right; the value is 10 x the observed position; the 'LSTM state' counts each environment's steps."""

    action = 1
    act_value_int = None  # one value head

    def __init__(self):
        self.calls = 0

    def initial_state(self, batch_size=1):
        return Counts(np.zeros((batch_size, 1)))

    def act_and_fetch(self, session, observations, state, fetches=(), feed=None):
        self.calls += 1
        positions = np.array([int(np.argmax(observation)) for observation in observations])
        fetched = [np.full(len(feed["actions"]), 2.0)] if fetches else []  # every forward loss is 2
        return np.full(len(observations), self.action), 10.0 * positions, Counts(state.steps + 1), fetched

    def value_of(self, session, observations, state):
        self.calls += 1
        return np.array([10.0 * int(np.argmax(observations[0]))]), None


def steps_at_start(rollout):
    return int(rollout.features.steps[0, 0])


def test_rollouts_cut_bootstrap_and_end_episodes_with_one_call_per_step():
    env = envs.create_env("Corridor-v0")  # 8 cells: 7 steps right to the goal
    policy = CountingPolicy()
    finished = []
    batches = env_runner([env], policy, None, rollout_len=3, on_episode_end=finished.append)
    [first], [second], [third] = next(batches), next(batches), next(batches)
    assert [len(first), len(second), len(third)] == [3, 3, 1]
    assert [steps_at_start(r) for r in (first, second, third)] == [0, 3, 6]  # LSTM state at each rollout start
    assert not first.terminal and first.bootstrap_value == 30.0  # V(position 3), from the act call for it
    assert second.bootstrap_value == 60.0 and not second.episode_end
    assert third.terminal and third.episode_end and third.rewards == [1.0]
    # one session.run per environment step, plus the act for the next episode's first step, made ahead
    assert policy.calls == 7 + 1
    assert finished == [EpisodeStats(1.0, 7, pytest.approx(finished[0].seconds), 1.0, False, 0.0, {}, [])]
    [fourth] = next(batches)
    assert steps_at_start(fourth) == 0, "the LSTM state restarts with the episode"
    assert policy.calls == 10 + 1


def test_rollouts_fill_unrolls_of_the_frames_given_through_episodes_ends():
    """Unrolls of 10 frames in the 7-step corridor: the first episode (7 steps and the frame after: 8 frames) leaves
    2, so the next episode's first step fills the unroll; the next unroll goes on with that episode's other 6 steps
    and the third episode's first 2 steps, and so on; an unroll never holds more than 10 frames."""
    policy = CountingPolicy()
    batches = env_runner([envs.create_env("Corridor-v0")], policy, None, rollout_len=9,
                         on_episode_end=lambda stats: None, unroll_frames=10)
    rollouts = [next(batches)[0] for _ in range(8)]
    assert [len(rollout) for rollout in rollouts] == [7, 1, 6, 2, 5, 3, 4, 4]
    assert [rollout.episode_end for rollout in rollouts] == [True, False] * 4
    assert [rollout.unroll_end for rollout in rollouts] == [False, True] * 4
    assert [steps_at_start(rollout) for rollout in rollouts] == [0, 0, 1, 0, 2, 0, 3, 0]
    assert {rollout.env for rollout in rollouts} == {0}
    # unrolls of 9 frames: an episode leaves 1, too few for a step and the frame after it; the next one starts anew
    batches = env_runner([envs.create_env("Corridor-v0")], CountingPolicy(), None, rollout_len=8,
                         on_episode_end=lambda stats: None, unroll_frames=9)
    rollouts = [next(batches)[0] for _ in range(3)]
    assert [(len(rollout), rollout.unroll_end) for rollout in rollouts] == [(7, True)] * 3
    two = envs.create_env("Corridor-v0"), envs.create_env("Corridor-v0")
    batch = next(env_runner(two, CountingPolicy(), None, rollout_len=9, on_episode_end=lambda stats: None,
                            unroll_frames=10))
    assert [rollout.env for rollout in batch] == [0, 1] and [len(rollout) for rollout in batch] == [7, 7]


class TwoHeadedPolicy(CountingPolicy):
    """CountingPolicy with a second value head: V_int = 100 + the observed position."""

    act_value_int = "V_int"

    def act_and_fetch(self, session, observations, state, fetches=(), feed=None):
        assert fetches[0] == self.act_value_int, "V_int comes with every act call"
        actions, values, state, fetched = super().act_and_fetch(session, observations, state, fetches[1:], feed)
        return actions, values, state, [100.0 + values / 10.0] + fetched

    def value_of(self, session, observations, state):
        values, _ = super().value_of(session, observations, state)
        return values, 100.0 + values / 10.0


def test_two_value_heads_bootstrap_a_cut_and_continue_across_the_episode_end():
    env = envs.create_env("Corridor-v0")  # 8 cells: 7 steps right to the goal
    policy = TwoHeadedPolicy()
    batches = env_runner([env], policy, None, rollout_len=4, on_episode_end=lambda stats: None)
    [first], [second] = next(batches), next(batches)
    assert first.values_int == [100.0, 101.0, 102.0, 103.0] and first.bootstrap_value_int == 104.0  # V_int(s_4)
    assert second.terminal and second.values_int == [104.0, 105.0, 106.0]
    # the non-episodic return goes on into the next episode, from its first state (position 0), with no call of
    # its own: V_int came with the act call for that state
    assert second.next_episode_value_int == 100.0 and policy.calls == 7 + 1
    env.close()


class ThreadNoting(envs.Corridor):
    """A corridor that notes which thread stepped it."""

    def step(self, action):
        self.stepped_in = threading.current_thread().name
        return super().step(action)


@pytest.mark.parametrize("threads", [False, True], ids=["one-after-another", "in-threads"])
def test_several_environments_keep_their_own_state_bootstrap_episode_ends_and_bonuses(threads):
    # Corridors of 3, 5 and 8 cells, walked right: their episodes end after 2, 4 and 7 steps.
    corridors = [ThreadNoting(length) for length in (3, 5, 8)]
    policy, predictor, finished = CountingPolicy(), StubPredictor(), []
    with env_stepper(len(corridors), threads) as step_all:
        batches = env_runner(corridors, policy, None, 3, finished.append, bonus=predictor, scaler=BetaScaler(0.5),
                             step_all=step_all)
        first = next(batches)
        calls_for_first, fed_for_first, ended_by_first = policy.calls, predictor.fed, list(finished)
        second = next(batches)
    # the same data either way; only where the steps ran differs
    assert all(corridor.stepped_in.startswith("env_") == threads for corridor in corridors)
    # a batch is complete once every environment ended a rollout: steps 1-3, one act call per step for all
    assert [len(r) for r in first] == [2, 3, 3] and calls_for_first == 3 + 1
    a0, b1, c1 = first
    assert a0.terminal and a0.rewards == [0.0, 1.0] and not (b1.episode_end or c1.episode_end)
    assert (b1.bootstrap_value, c1.bootstrap_value) == (30.0, 30.0)  # V(position 3) of each, from the next act
    assert [steps_at_start(r) for r in first] == [0, 0, 0]
    positions, actions = fed_for_first  # the bonus of all 8 steps, in the same act call
    assert positions == [[0, 1, 2], [0, 1, 2, 3], [0, 1, 2, 3]]
    assert len(actions) == 8 and all(r.bonuses == [1.0] * len(r) for r in first)
    assert [stats.length for stats in ended_by_first] == [2]

    # steps 4-6: env 0 ends two more episodes, env 1 one, env 2 is cut at step 6
    a1, b2, a2, c2 = second
    assert [len(r) for r in second] == [2, 1, 2, 3] and policy.calls == 6 + 1
    assert a1.terminal and b2.terminal and a2.terminal and not c2.episode_end and c2.bootstrap_value == 60.0
    # each environment's own LSTM state: a new episode starts from zero, a continued one from its count
    assert [steps_at_start(r) for r in second] == [0, 3, 0, 3]
    assert [stats.length for stats in finished] == [2, 2, 4, 2]  # episodes in the order they ended
    assert [stats.bonus for stats in finished] == [2.0, 2.0, 4.0, 2.0]  # bonuses summed over each episode
    assert all(stats.reward == 1.0 and not stats.truncated for stats in finished)


def test_truncated_episode_bootstraps_from_its_last_state():
    env = envs.create_env("Corridor-v0")
    policy = CountingPolicy()
    policy.action = 0  # walks left, into the wall
    finished = []
    [rollout] = next(env_runner([env], policy, None, rollout_len=1000, on_episode_end=finished.append))
    assert len(rollout) == 64 and rollout.episode_end and not rollout.terminal  # Corridor-v0's time limit
    assert rollout.bootstrap_value == 0.0 and finished[0].truncated  # V(position 0) from value_of


def test_a_truncation_ends_the_return_where_time_limits_are_not_bootstrapped():
    env = envs.create_env("Corridor-v0")
    policy = CountingPolicy()
    policy.action = 0
    finished = []
    [rollout] = next(env_runner([env], policy, None, rollout_len=1000, on_episode_end=finished.append,
                                bootstrap_time_limit=False))
    assert len(rollout) == 64 and rollout.episode_end and rollout.terminal and rollout.truncated
    assert finished[0].truncated, "the log still tells a time limit from a termination"
    assert policy.calls == 64 + 1, "no value_of call for the truncated state"


class StubPredictor:
    bonus_per_step = "forward loss per step"

    def feed_sequences(self, sequences, actions):
        self.fed = ([[int(np.argmax(frame)) for frame in frames] for frames in sequences], actions)
        return {"actions": actions}


def test_curiosity_bonus_comes_with_the_next_act_call():
    env = envs.create_env("Corridor-v0")
    policy, predictor = CountingPolicy(), StubPredictor()
    finished = []
    batches = env_runner([env], policy, None, 4, finished.append, bonus=predictor, scaler=BetaScaler(0.5))
    [first] = next(batches)
    positions, actions = predictor.fed
    assert positions == [[0, 1, 2, 3, 4]]  # s_0 .. s_4: the frames of 4 transitions, each once
    assert actions == [1, 1, 1, 1] and first.bonuses == [1.0] * 4  # 0.5 x forward loss 2
    [second] = next(batches)
    assert second.terminal and second.bonuses == [1.0] * 3
    assert finished[0].bonus == 7.0 and finished[0].reward == 1.0
    assert policy.calls == 7 + 1, "the bonus costs no session.run of its own"


def test_runner_thread_failure_is_kept_for_the_trainer():
    class Broken(CountingPolicy):
        def act_and_fetch(self, session, observations, state, fetches=(), feed=None):
            raise RuntimeError("engine died")

    runner = RunnerThread([envs.create_env("Corridor-v0")], Broken(), 5, 2, lambda stats: None)
    runner.start_runner(None)
    runner.join(timeout=10)
    assert isinstance(runner.error, RuntimeError) and "engine died" in str(runner.error)
    with pytest.raises(queue.Empty):
        runner.queue.get_nowait()


def test_runner_thread_stops_when_asked():
    runner = RunnerThread([envs.create_env("Corridor-v0")], CountingPolicy(), 5, 1, lambda stats: None)
    runner.start_runner(None)
    deadline = time.time() + 30
    while not runner.queue.full():  # the queue is full: the runner waits to put
        assert time.time() < deadline and runner.is_alive(), "the runner never filled its queue"
        time.sleep(0.01)
    runner.stop()
    runner.join(timeout=5)
    assert not runner.is_alive() and runner.error is None


class FlakySession:
    """Raises `error` (TF's duplicate-RunGraph AbortedError unless given) `failures` times, then answers."""

    def __init__(self, failures, error=None):
        self.failures = failures
        self.error = error
        self.calls = 0

    def run(self, fetches, feed_dict=None, options=None):
        import tensorflow as tf

        self.calls += 1
        if self.calls <= self.failures:
            raise self.error or tf.errors.AbortedError(None, None,
                                                       "The same RunGraph (Worker) request was received twice.")
        return fetches


def test_aborted_runs_are_retried_then_reported():
    import tensorflow as tf

    from sessions import ABORT_RETRIES, AbortRetrySession, abort_reason

    session = AbortRetrySession(FlakySession(failures=2))
    reason = "The same RunGraph (Worker) request was received twice. step_id: 7"
    assert abort_reason(f"Graph execution error:\n\n{reason}") == reason
    other = "ABORTED: From /job:ps/replica:0/task:0:"  # an abort of another kind: TF's first line says nothing
    assert abort_reason(f"Graph execution error:\n\n=====================\n{other}\nmore") == other
    assert session.run("fetches") == "fetches" and session.aborts == 2
    with pytest.raises(tf.errors.AbortedError):
        AbortRetrySession(FlakySession(failures=ABORT_RETRIES + 1)).run("fetches")


def test_a_run_stuck_in_the_distributed_runtime_is_cancelled_and_run_again():
    # A worker's update that never returned (LocalMaster::RunStep waiting for ever, seen in three Doom runs) stands
    # here as a dequeue from an empty queue on a real TensorFlow server: the deadline cancels it, and the run
    # again gets the value enqueued (by the retry's own warning, so nothing here depends on timing).
    import logging

    import tensorflow as tf

    import sessions

    tf1 = tf.compat.v1
    server = tf1.train.Server.create_local_server()
    graph = tf.Graph()
    with graph.as_default():
        queue = tf1.FIFOQueue(1, tf.float32)
        enqueue, dequeue = queue.enqueue(7.0), queue.dequeue()
        with tf1.Session(server.target, graph=graph) as raw:
            session = sessions.AbortRetrySession(raw, timeout=0.5)

            class EnqueueOnWarning(logging.Handler):
                def emit(self, record):
                    raw.run(enqueue)

            outcome = {}

            def run():
                try:
                    outcome["value"] = session.run(dequeue)
                except Exception as error:  # noqa: BLE001 - raised again in the test's thread
                    outcome["error"] = error

            handler = EnqueueOnWarning(logging.WARNING)
            sessions.logger.addHandler(handler)
            try:
                thread = threading.Thread(target=run, daemon=True)
                thread.start()
                thread.join(timeout=60)
                if thread.is_alive():  # never cancelled: free it, then fail
                    raw.run(enqueue)
                    thread.join(timeout=10)
                    pytest.fail("a run stuck for 60 s was never cancelled")
            finally:
                sessions.logger.removeHandler(handler)
            if "error" in outcome:
                raise outcome["error"]
            assert outcome["value"] == 7.0 and session.timeouts == 1 and session.aborts == 0
            with pytest.raises(tf.errors.DeadlineExceededError):  # still stuck after its retries: raised
                sessions.AbortRetrySession(raw, retries=1, timeout=0.2).run(dequeue)


def test_a_cancellation_caused_by_the_duplicate_request_abort_is_retried_and_no_other():
    import tensorflow as tf

    from sessions import AbortRetrySession

    message = ("Graph execution error:\n\n=====================\nCANCELLED: From /job:worker/replica:0/task:0:\n"
               "RecvFromRemoteAsync is cancelled.\n\t [[{{node ReadVariableOp_26_S411}}]]\nABORTED: From "
               "/job:ps/replica:0/task:0:\nThe same RunGraph (Worker) request was received twice. graph_handle: "
               "\"0000000000000007\" step_id: 80141466847362230\n=====================")
    # a Mario A3C worker's update failed so twice in one sitting: its own part of the step cancelled, the parameter
    # server's duplicate-RunGraph abort below it (the message as TensorFlow gave it)
    session = AbortRetrySession(FlakySession(2, tf.errors.CancelledError(None, None, message)))
    assert session.run("fetches") == "fetches" and session.aborts == 2
    closed = "Graph execution error:\n\nCANCELLED: Session has been closed."
    closing = FlakySession(1, tf.errors.CancelledError(None, None, closed))
    with pytest.raises(tf.errors.CancelledError, match="closed"):
        AbortRetrySession(closing).run("fetches")
    assert closing.calls == 1


class MisdescribingSession(FlakySession):
    """Fails as TensorFlow's Session.run does when an abort's message quotes `[[` and a colon: with a ValueError
    raised while it handles the AbortedError."""

    def run(self, fetches, feed_dict=None, options=None):
        import tensorflow as tf

        try:
            return super().run(fetches, feed_dict, options)
        except tf.errors.AbortedError:
            raise ValueError("Name '<\\275=' appears to refer to a Tensor, not a Operation.")


def test_an_abort_that_tensorflow_fails_to_describe_is_retried_too():
    from sessions import AbortRetrySession

    session = AbortRetrySession(MisdescribingSession(failures=1))
    assert session.run("fetches") == "fetches" and session.aborts == 1


def test_an_error_whose_message_quotes_a_tensor_name_raises_as_itself():
    # the real Session.run: the op's error quotes `[[x:0`, which TensorFlow takes for a node's name
    import tensorflow as tf

    from sessions import AbortRetrySession

    tf1 = tf.compat.v1

    def fail():
        raise RuntimeError("tensor_content: \"[[<\\275=:\\003\"")

    graph = tf.Graph()
    with graph.as_default():
        failing = tf1.py_func(fail, [], tf.float32)
        with tf1.Session(graph=graph) as session, pytest.raises(tf.errors.UnknownError, match="tensor_content"):
            AbortRetrySession(session).run(failing)


def test_a_huge_error_message_is_raised_at_once_not_parsed_for_minutes():
    # StringToNumber's error quotes its input, as the duplicate-RunGraph abort quotes its request: 200 kB here,
    # which TensorFlow's own message parsing would take about two minutes over (it is quadratic), holding the GIL
    import tensorflow as tf

    import sessions

    sessions.bound_error_messages()  # what every learner's AbortRetrySession installs; here on its own, in any order
    tf1 = tf.compat.v1
    graph = tf.Graph()
    with graph.as_default():
        text = tf1.placeholder(tf.string, [])
        number = tf.strings.to_number(text)
        with tf1.Session(graph=graph) as session:
            start = time.perf_counter()
            with pytest.raises(tf.errors.InvalidArgumentError) as raised:
                session.run(number, {text: "x" * 200_000})
            seconds = time.perf_counter() - start
    message = raised.value.message
    # unbounded, TensorFlow's parsing of this message takes about two minutes; bounded, well under a second
    assert seconds < 30.0, f"the error took {seconds:.1f} s to raise"
    assert "characters cut" in message and len(message) < 10 * sessions.ERROR_MESSAGE_KEPT  # the cut, and its traceback


def test_ctrl_c_is_held_until_checked_and_a_second_one_interrupts_at_once():
    import signal

    from sessions import DeferredInterrupt

    before = signal.getsignal(signal.SIGINT)
    with DeferredInterrupt() as interrupt:
        os.kill(os.getpid(), signal.SIGINT)  # delivered to this (the main) thread; nothing is raised here
        deadline = time.time() + 10
        while not interrupt.requested:
            assert time.time() < deadline, "SIGINT was not noted"
            time.sleep(0.01)
        with pytest.raises(KeyboardInterrupt):
            interrupt.check()
        with pytest.raises(KeyboardInterrupt):
            os.kill(os.getpid(), signal.SIGINT)
            time.sleep(10)  # the second Ctrl-C ends this at once
    assert signal.getsignal(signal.SIGINT) is before


def test_game_metrics_reach_the_episode_csv(tmp_path):
    from acting import EpisodeLogger, EpisodeTally

    tally = EpisodeTally()
    for info in ({"distance": 40, "position_x": 1.0}, {"distance": 90, "position_x": 2.0}, {"distance": 60}):
        tally.observe(dict(info, env_reward=0.0))
    logger = EpisodeLogger(str(tmp_path), 3, None, lambda: 123)
    logger(tally.stats(truncated=False))
    logger(EpisodeTally().stats(truncated=True))
    logger.close()
    with open(tmp_path / "episodes_3.csv") as handle:
        rows = list(csv.DictReader(handle))
    assert rows[0]["distance"] == "90" and rows[0]["position_x"] == "2" and rows[0]["success"] == ""
    assert rows[1]["distance"] == "" and rows[1]["truncated"] == "1" and rows[1]["global_step"] == "123"


def test_an_older_episode_csv_is_moved_aside_not_misaligned(tmp_path):
    from acting import EpisodeLogger, EpisodeTally

    old = tmp_path / "episodes_0.csv"
    old.write_text("global_step,wall_time,worker,reward\n10,1.0,0,2.5\n")
    logger = EpisodeLogger(str(tmp_path), 0, None, lambda: 20)
    logger(EpisodeTally().stats(truncated=False))
    logger.close()
    assert (tmp_path / "episodes_0.before-1.csv").read_text() == "global_step,wall_time,worker,reward\n10,1.0,0,2.5\n"
    with open(old) as handle:
        assert next(csv.reader(handle)) == EpisodeLogger.COLUMNS


def test_a_row_cut_short_by_a_kill_is_cut_on_resume_and_skipped_by_readers(tmp_path):
    import logdir
    from acting import EpisodeLogger, EpisodeTally

    first = EpisodeLogger(str(tmp_path), 0, None, lambda: 10)
    first(EpisodeTally().stats(truncated=False))
    first.close()
    path = tmp_path / "episodes_0.csv"
    complete = path.read_text()
    with open(path, "a") as handle:
        handle.write("20,1795000000.5,0,1.0,4")  # the kill came in the middle of this row
    assert len(logdir.read_rows(str(path))) == 1, "readers leave the partial row out"
    resumed = EpisodeLogger(str(tmp_path), 0, None, lambda: 30)
    resumed(EpisodeTally().stats(truncated=True))
    resumed.close()
    text = path.read_text()
    assert text.startswith(complete) and "1795000000.5" not in text
    rows = logdir.read_rows(str(path))
    assert [row["global_step"] for row in rows] == ["10", "30"] and rows[1]["truncated"] == "1"


@pytest.mark.parametrize("tail", [b"", b"20,17,0,1.0,4", b"x" * 10000])
def test_cut_partial_line_keeps_every_complete_row_whatever_the_tail(tmp_path, tail):
    import logdir

    rows = b"".join(b"%d,%s\n" % (step, b"y" * 3000) for step in range(5))  # rows span the scan steps
    path = tmp_path / "episodes_0.csv"
    path.write_bytes(rows + tail)
    logdir.cut_partial_line(str(path))
    assert path.read_bytes() == rows
    path.write_bytes(tail)  # no complete row at all
    logdir.cut_partial_line(str(path))
    assert path.read_bytes() == b""


def test_rows_logged_past_the_step_a_run_resumes_from_are_set_aside_and_the_rest_kept(tmp_path):
    """Rows long enough to span several blocks of the backward read; a row at the step itself stays; rows past it
    go to rewound/ under the same name (its header once); a partial last row is cut, not moved."""
    import logdir

    header = b"global_step,worker,x\n"
    rows = [b"%d,0,%s\n" % (step, b"y" * 3000) for step in (10, 20, 30, 40, 50)]
    path = tmp_path / "visits_0.csv"
    path.write_bytes(header + b"".join(rows) + b"60,0,yy")  # the kill came in the middle of the last row
    assert logdir.set_aside_rows_after(str(path), 30, str(tmp_path)) == 2
    assert path.read_bytes() == header + b"".join(rows[:3])
    aside = tmp_path / "rewound" / "visits_0.csv"
    assert aside.read_bytes() == header + b"".join(rows[3:])
    assert logdir.set_aside_rows_after(str(path), 30, str(tmp_path)) == 0, "nothing past 30 is left"
    assert logdir.set_aside_rows_after(str(path), 5, str(tmp_path)) == 3  # appended, no second header
    assert path.read_bytes() == header and aside.read_bytes() == header + b"".join(rows[3:] + rows[:3])
    assert logdir.set_aside_rows_after(str(tmp_path / "none.csv"), 5, str(tmp_path)) == 0


def test_rows_of_an_earlier_resume_out_of_order_stay_only_the_last_rows_past_the_step_move(tmp_path):
    import logdir

    path = tmp_path / "episodes_0.csv"
    path.write_text("global_step,reward\n10,1\n50,1\n20,1\n60,1\n70,1\n")
    assert logdir.set_aside_rows_after(str(path), 55, str(tmp_path)) == 2
    assert path.read_text() == "global_step,reward\n10,1\n50,1\n20,1\n"


def test_an_episode_logger_resuming_sets_aside_its_rows_past_the_step_and_purges_tensorboard_there(tmp_path, graph):
    import tensorflow as tf

    import logdir
    from acting import EpisodeLogger, EpisodeTally

    step = [100]
    first = EpisodeLogger(str(tmp_path), 1, None, lambda: step[0])
    for step[0] in (100, 200, 300):
        first(EpisodeTally().stats(truncated=False))
    first.close()
    writer = tf.compat.v1.summary.FileWriter(str(tmp_path / "train_1"))
    resumed = EpisodeLogger(str(tmp_path), 1, writer, lambda: step[0])
    assert resumed.resume_from(150) == 2
    step[0] = 160
    resumed(EpisodeTally().stats(truncated=False))
    resumed.close()
    writer.close()
    assert [row["global_step"] for row in logdir.read_rows(str(tmp_path / "episodes_1.csv"))] == ["100", "160"]
    assert [row["global_step"] for row in logdir.read_rows(str(tmp_path / "rewound" / "episodes_1.csv"))] == [
        "200", "300"]
    (events,) = os.listdir(tmp_path / "train_1")
    starts = [event.step for event in tf.compat.v1.train.summary_iterator(str(tmp_path / "train_1" / events))
              if event.HasField("session_log")]
    assert starts == [150], "TensorBoard purges this writer's events past the step it resumed from"


def test_readers_count_each_step_once_where_an_older_run_went_back_to_its_checkpoint(tmp_path):
    """Worker 0 was stopped at step 30 past its checkpoint at 15 and went on from 15; worker 1 was not (its steps
    rise): the rows of the play that was lost are left out, in a worker's file and in an archive sorted by step."""
    import logdir

    header = "global_step,wall_time,worker,reward\n"
    lines = ["10,1.0,0,1", "20,2.0,0,2", "30,3.0,0,3", "15,4.0,0,4", "25,5.0,0,5"]
    (tmp_path / "episodes_0.csv").write_text(header + "\n".join(lines) + "\n")
    (tmp_path / "episodes_1.csv").write_text(header + "12,1.5,1,6\n40,6.0,1,7\n")
    rows = logdir.episode_rows(str(tmp_path))
    assert [(row["global_step"], row["reward"]) for row in rows] == [
        ("10", "1"), ("12", "6"), ("15", "4"), ("25", "5"), ("40", "7")]
    archive = tmp_path / "archive"
    archive.mkdir()
    merged = sorted(lines + ["12,1.5,1,6", "40,6.0,1,7"], key=lambda line: int(line.split(",")[0]))
    (archive / "episodes_all.csv").write_text(header + "\n".join(merged) + "\n")
    assert logdir.episode_rows(str(archive)) == rows
    for folder in (tmp_path, archive):
        ((steps, rewards),) = logdir.episode_columns(str(folder), "reward")
        assert steps.tolist() == [10, 12, 15, 25, 40] and rewards.tolist() == [1, 6, 4, 5, 7], folder


def test_the_column_reader_gives_the_row_readers_episodes_in_their_order(tmp_path):
    """episode_columns against episode_rows: rows tied on step and time keep episode_rows' order (worker 1's row
    first: its worker's first row is the earlier), an empty value leaves its episode out of that column only, and a
    row cut short (a process killed mid-write) is left out of both."""
    import gzip

    import logdir

    header = "global_step,wall_time,worker,reward,distance\n"
    lines = ["20,2.0,0,2,", "20,2.0,1,3,7", "10,0.5,1,1,5", "30,3.0,0,4,9", "40,4.0"]
    with gzip.open(tmp_path / "episodes_all.csv.gz", "wt") as handle:
        handle.write(header + "\n".join(lines) + "\n")
    rows = logdir.episode_rows(str(tmp_path))
    columns = logdir.episode_columns(str(tmp_path), "reward", "distance", "absent")
    for column, (steps, values) in zip(("reward", "distance", "absent"), columns):
        having = [row for row in rows if row.get(column, "") != ""]
        assert steps.tolist() == [int(row["global_step"]) for row in having], column
        assert values.tolist() == [float(row[column]) for row in having], column
    assert columns[0][1].tolist() == [1, 3, 2, 4] and columns[1][1].tolist() == [5, 7, 9]


def test_the_runners_copy_of_the_policy_acts_as_the_local_policy_after_each_sync(graph):
    """acting_copy: after a sync the copy gives the local policy's values, greedy actions and LSTM state; a fetch of
    the trainer's graph (the ICM's bonus) comes back in its place among the fetches."""
    import tensorflow as tf

    import constants
    from a3c import A3C

    tf1 = tf.compat.v1
    trainer = A3C(envs.create_env("CorridorPixels-v0", seed=0), 0, constants.Config(lstm_size=16, acting_copy=True),
                  unsup="action")
    session = trainer.session = tf1.Session()
    session.run(tf1.global_variables_initializer())
    rng = np.random.default_rng(0)
    session.run([variable.assign(rng.normal(0, 0.3, variable.shape)) for variable in trainer.network.var_list])
    observations = rng.random((2, 42, 42, 1), dtype=np.float32)
    state = trainer.local_network.initial_state(2)
    predictor = trainer.local_predictor
    feed = predictor.feed_sequences([[observations[0], observations[1], observations[0]]], [1, 0])

    def act(policy):
        return policy.act_and_fetch(session, observations, state, [predictor.bonus_per_step], feed, greedy=True)

    before = act(trainer.acting_copy)
    trainer.sync_local()
    local, copy = act(trainer.local_network), act(trainer.acting_copy)
    assert not np.allclose(before[1], local[1]), "the sync changed the weights"
    np.testing.assert_array_equal(copy[0], local[0])
    pairs = [(copy[1], local[1]), (copy[2].c, local[2].c), (copy[2].h, local[2].h), (copy[3][0], local[3][0])]
    for mine, theirs in pairs:
        np.testing.assert_allclose(mine, theirs, rtol=1e-5, atol=1e-6)
    values, _ = trainer.acting_copy.value_of(session, observations, state)
    np.testing.assert_allclose(values, local[1], rtol=1e-5, atol=1e-6)
