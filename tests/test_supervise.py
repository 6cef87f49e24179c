"""The supervisor, on stand-in processes: restarts with back-off, the failure limit, usage errors, hung workers,
finished workers and kill.sh's stop marker."""
import json
import os
import signal
import subprocess
import sys
import time

import pytest

import cluster
import logdir
import supervise
from conftest import ROOT

FAST = dict(delays=(0.0, 0.2), limit=3, window=60.0)


def python(code):
    return [sys.executable, "-c", code]


def run_until(supervisor, condition, seconds=30.0):
    """Supervisor rounds until `condition()` holds or the run is over; bounded."""
    deadline = time.time() + seconds
    while time.time() < deadline:
        outcome = supervisor.step()
        if outcome is not None or condition():
            return outcome
        time.sleep(0.05)
    raise AssertionError(f"not reached in {seconds} s")


def member(supervisor, name):
    return next(m for m in supervisor.members if m.name == name)


def test_a_crashing_process_is_restarted_then_stops_the_run_at_the_limit(tmp_path):
    supervisor = supervise.Supervisor(str(tmp_path), {"ps": python("import time; time.sleep(60)"),
                                                      "w-0": python("print('boom'); raise SystemExit(1)")}, **FAST)
    code, reason = run_until(supervisor, lambda: False)
    assert code == 1 and reason.startswith("w-0 failed 3 times in 1 min (last: exit status 1; boom)")
    assert member(supervisor, "w-0").restarts == 2 and member(supervisor, "ps").restarts == 0
    assert (tmp_path / "w-0.out").read_text().count("boom") == 3, "every incarnation appends to the same log"
    record = json.loads((tmp_path / logdir.SUPERVISOR).read_text())
    assert record["outcome"] == [1, reason] and record["processes"]["w-0"]["last_reason"] == "exit status 1"
    for each in supervisor.members:
        if each.process:
            each.process.kill()


def test_a_killed_worker_comes_back_without_orphans_and_a_finished_one_is_done(tmp_path):
    flag, engine = tmp_path / "second-life", tmp_path / "engine.pid"
    # the first incarnation starts a child (as a worker starts its game engines), then dies by SIGKILL;
    # the second finishes
    code = (f"import os, signal, subprocess, pathlib; p = pathlib.Path({str(flag)!r})\n"
            "if p.exists(): raise SystemExit(0)\n"
            f"child = subprocess.Popen(['sleep', '60']); pathlib.Path({str(engine)!r}).write_text(str(child.pid))\n"
            "p.touch(); os.kill(os.getpid(), signal.SIGKILL)")
    supervisor = supervise.Supervisor(str(tmp_path), {"w-0": python(code)}, **FAST)
    assert run_until(supervisor, lambda: False) == (0, "every worker finished")
    assert member(supervisor, "w-0").restarts == 1 and member(supervisor, "w-0").last_reason == "exit status -9"
    orphan = int(engine.read_text())
    deadline = time.time() + 10
    while time.time() < deadline and not supervise.is_zombie(orphan):
        time.sleep(0.1)
    assert supervise.is_zombie(orphan), "the dead worker's child was left running"


# The supervision rules of each role, written out here rather than read from the table they test:
# (the job of the same cluster beside it, whether it finishes (exit 0 ends it), whether its death restarts that
# other job's tasks (it holds their variables or queue), whether it beats a heartbeat).
ROLE_RULES = {
    "ps": ("worker", False, True, False),  # never finishes; its death loses the workers' sessions
    "worker": ("ps", True, False, True),
    "learner": ("actor", True, True, True),  # its death loses the actors' queue and variables: they restart with it
    "actor": ("learner", True, False, True),
}


def test_the_rules_cover_every_role():
    assert set(ROLE_RULES) == set(cluster.JOBS)


@pytest.mark.parametrize("job", sorted(ROLE_RULES))
def test_each_role_is_supervised_by_its_rules(tmp_path, job):
    """A task that finishes and exits 0 is done, another is started again (and, where it holds others' variables,
    the tasks of those jobs with it: a learner's death restarts the actors); only a role with a heartbeat is hung
    when its heartbeat stops."""
    other_job, finishes, restarts_other, has_heartbeat = ROLE_RULES[job]
    subject, other = cluster.task_name(job, 0), cluster.task_name(other_job, 1)
    for code in (0, 1):  # it finished; it died
        flag = tmp_path / f"second-life-{code}"
        once = (f"import pathlib, time; p = pathlib.Path({str(flag)!r})\n"
                f"if not p.exists(): p.touch(); raise SystemExit({code})\ntime.sleep(60)")
        supervisor = supervise.Supervisor(str(tmp_path), {subject: python(once),
                                                          other: python("import time; time.sleep(60)")}, **FAST)
        run_until(supervisor, lambda: (member(supervisor, subject).done or member(supervisor, subject).restarts)
                  and member(supervisor, other).process is not None)  # the first exit handled, either way
        done = code == 0 and finishes
        assert member(supervisor, subject).done == done
        assert member(supervisor, subject).restarts == (0 if done else 1)
        assert member(supervisor, other).restarts == (1 if restarts_other and not done else 0)
        for each in supervisor.members:
            if each.process:
                each.process.kill()
    old = tmp_path / logdir.heartbeat_json("", cluster.heartbeat_key(job, 0))
    stale = supervise.Member(subject, [], str(tmp_path))
    stale.process = subprocess.Popen(["true"])
    stale.process.wait()
    old.write_text(json.dumps({"pid": stale.process.pid, "time": 0.0, "state": "training"}))
    assert (stale.heartbeat_age(100.0) is not None) == has_heartbeat


def test_the_run_is_over_when_its_learners_are_not_when_its_actors_are(tmp_path):
    """Ape-X: actors that finished do not end the run; the learner that finishes does, and what is left is
    stopped by the caller."""
    supervisor = supervise.Supervisor(str(tmp_path), {"learner": python("import time; time.sleep(60)"),
                                                      "a-0": python("pass"), "a-1": python("pass")}, **FAST)
    run_until(supervisor, lambda: member(supervisor, "a-0").done and member(supervisor, "a-1").done)
    assert supervisor.outcome is None and member(supervisor, "learner").process.poll() is None
    member(supervisor, "learner").process.terminate()
    supervisor = supervise.Supervisor(str(tmp_path), {"learner": python("pass"),
                                                      "a-0": python("import time; time.sleep(60)")}, **FAST)
    assert run_until(supervisor, lambda: False)[0] == 0
    member(supervisor, "a-0").process.kill()


def test_a_machine_of_actors_alone_is_over_when_they_have_finished_not_before(tmp_path):
    """Ape-X across machines: a machine whose share is actors only runs until each of them has finished (the
    learner, on another machine, ends the run); one that crashes is restarted meanwhile."""
    marker = tmp_path / "crashed"
    crash_once = f"import os, sys, time; p = {str(marker)!r}; os.path.exists(p) or (open(p, 'w'), sys.exit(1))"
    supervisor = supervise.Supervisor(str(tmp_path), {"a-0": python("import time; time.sleep(1)"),
                                                      "a-1": python(crash_once)}, **FAST)
    assert supervisor.step() is None
    outcome = run_until(supervisor, lambda: False)
    assert outcome == (0, "every actor finished") and member(supervisor, "a-1").restarts == 1
    assert member(supervisor, "a-0").done and member(supervisor, "a-1").done


def test_the_supervisor_refuses_a_process_that_is_no_task_of_the_cluster(tmp_path):
    with pytest.raises(ValueError, match="not the name of a task"):
        supervise.Supervisor(str(tmp_path), {"tb": python("pass")})


def test_a_usage_error_stops_the_run_without_a_restart(tmp_path):
    code = "import sys; print('w-0: error: checkpoint x is corrupt', file=sys.stderr); raise SystemExit(2)"
    supervisor = supervise.Supervisor(str(tmp_path), {"w-0": python(code)}, **FAST)
    assert run_until(supervisor, lambda: False) == (2, "w-0 stopped: w-0: error: checkpoint x is corrupt")
    assert member(supervisor, "w-0").restarts == 0


def test_a_worker_whose_heartbeat_stops_is_killed_and_restarted(tmp_path):
    # it beats once, as training, then hangs in a function whose name its stack must show
    code = (f"import json, os, sys, time\n"
            f"sys.path.insert(0, {os.path.dirname(os.path.abspath(supervise.__file__))!r})\n"
            "import supervise\n"
            "supervise.enable_stack_dumps()\n"
            f"json.dump({{'pid': os.getpid(), 'time': time.time(), 'state': 'training', 'task': 0}}, "
            f"open({str(tmp_path / 'status_0.json')!r}, 'w'))\n"
            "def stuck_in_session_run():\n"
            "    time.sleep(60)\n"
            "stuck_in_session_run()")
    supervisor = supervise.Supervisor(str(tmp_path), {"w-0": python(code)}, hang_secs=1.0, **FAST)
    first = run_until(supervisor, lambda: member(supervisor, "w-0").process is not None)
    assert first is None
    pid = member(supervisor, "w-0").process.pid
    run_until(supervisor, lambda: member(supervisor, "w-0").restarts == 1)
    assert member(supervisor, "w-0").last_reason.startswith("hung (no heartbeat for")
    log = (tmp_path / "w-0.out").read_text()
    assert f"stacks of hung process {pid}" in log
    assert "in stuck_in_session_run" in log  # the Python stack of the hung thread, written before the kill
    assert not os.path.exists(f"/proc/{pid}") or open(f"/proc/{pid}/stat").read().split()[2] == "Z"
    run_until(supervisor, lambda: member(supervisor, "w-0").process is not None)
    member(supervisor, "w-0").process.kill()


def test_nothing_is_restarted_once_kill_sh_has_left_its_marker(tmp_path):
    supervisor = supervise.Supervisor(str(tmp_path), {"ps": python("import time; time.sleep(60)"),
                                                      "w-0": python("import time; time.sleep(60)")}, **FAST)
    run_until(supervisor, lambda: all(m.process is not None for m in supervisor.members))
    (tmp_path / logdir.STOP_MARKER).touch()
    for each in supervisor.members:
        each.process.kill()
    assert run_until(supervisor, lambda: False) == (0, "stopped")
    assert all(m.restarts == 0 and m.process is None for m in supervisor.members)


def test_disk_problem_keeps_room_for_two_checkpoints_and_names_a_read_only_filesystem(tmp_path, monkeypatch):
    import errno

    import worker

    train_dir = tmp_path / "train"
    train_dir.mkdir()
    (train_dir / "model.ckpt-7.data-00000-of-00001").write_bytes(b"0" * (8 * 2**20))
    (train_dir / "model.ckpt-7.index").write_bytes(b"0" * 1024)
    (train_dir / "checkpoint").write_text('model_checkpoint_path: "/elsewhere/train/model.ckpt-7"\n')
    real = os.statvfs(tmp_path)

    def fake(free_mb, flags=0):
        fields = dict(f_bavail=int(free_mb * 2**20 // real.f_frsize), f_flag=real.f_flag | flags)
        return lambda path: type("Stats", (), {name: getattr(real, name) for name in dir(real)
                                               if name.startswith("f_")} | fields)

    monkeypatch.setattr(os, "statvfs", fake(17.0))
    assert supervise.disk_problem(str(tmp_path)) is None
    monkeypatch.setattr(os, "statvfs", fake(15.9))
    assert "15.9 MB free, less than the 16.0 MB that 2 more checkpoints need" in supervise.disk_problem(str(tmp_path))
    monkeypatch.setattr(os, "statvfs", fake(1000.0, os.ST_RDONLY))
    assert "is on a filesystem that is read-only now" in supervise.disk_problem(str(tmp_path))
    assert supervise.resume_note(str(tmp_path)) == ("the last checkpoint, model.ckpt-7, is intact; a relaunch "
                                                    "resumes from it")

    # the worker's side: a failed write into the log directory is one line; anything else is not its business
    full = OSError(errno.ENOSPC, "No space left on device", str(tmp_path / "episodes_0.csv"))
    assert worker.write_failure(full, str(tmp_path)) == (
        f"cannot write {tmp_path / 'episodes_0.csv'} (No space left on device): stopped; the last checkpoint, "
        f"model.ckpt-7, is intact; a relaunch resumes from it")
    wrapped = RuntimeError("runner thread failed")
    wrapped.__cause__ = full
    assert worker.write_failure(wrapped, str(tmp_path)).startswith("cannot write")
    saver = type("OpError", (Exception,), {"message": f"{train_dir}/model.ckpt-9.tempstate1; Read-only file system"})
    assert worker.write_failure(saver(), str(tmp_path)).startswith(
        f"cannot write a checkpoint in {train_dir} (Read-only file system)")
    assert worker.write_failure(OSError(errno.ENOENT, "No such file or directory"), str(tmp_path)) is None
    assert worker.write_failure(ValueError("No space left on device"), str(tmp_path)) is None


def test_a_worker_over_its_memory_limit_is_stopped_and_started_again_not_counted_as_failing(tmp_path):
    # 150 MB held, then waits; SIGTERM ends it cleanly, as it ends a worker (the chief saves first)
    code = ("import signal, sys, time\n"
            "signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))\n"
            "hold = b'x' * (150 * 2**20)\n"
            "print('holding', flush=True)\n"
            "time.sleep(60)")
    supervisor = supervise.Supervisor(str(tmp_path), {"w-0": python(code)}, memory_limit_mb=100, **FAST)
    worker = member(supervisor, "w-0")
    assert run_until(supervisor, lambda: worker.restarts == 1) is None
    assert worker.last_reason.startswith("restarted for its memory (") and "over 100 MB" in worker.last_reason
    assert not worker.failures and not worker.done, "a planned restart is neither a failure nor the end"
    run_until(supervisor, lambda: worker.process is not None)
    worker.process.kill()


def test_workers_are_started_again_with_a_parameter_server_that_died_not_counted_as_failing(tmp_path):
    lives = tmp_path / "lives"
    lives.mkdir()
    # each incarnation of the worker leaves a file of its own (two writers of one file could lose a count),
    # then waits (a worker blocked on its lost session)
    code = f"import os, pathlib, time; (pathlib.Path({str(lives)!r}) / str(os.getpid())).touch(); time.sleep(60)"
    supervisor = supervise.Supervisor(str(tmp_path), {"ps": python("import time; time.sleep(60)"),
                                                      "w-0": python(code), "w-1": python(code)}, **FAST)
    ps, workers = member(supervisor, "ps"), [member(supervisor, "w-0"), member(supervisor, "w-1")]
    run_until(supervisor, lambda: len(list(lives.iterdir())) == 2)
    first = [worker.process.pid for worker in workers]
    ps.process.kill()
    run_until(supervisor, lambda: all(worker.process is not None and worker.process.pid not in first
                                      for worker in workers) and ps.process is not None)
    assert ps.restarts == 1 and len(ps.failures) == 1, "the parameter server's death is a failure"
    for worker in workers:
        assert worker.restarts == 1 and not worker.failures and worker.last_reason == "restarted with ps"
    run_until(supervisor, lambda: len(list(lives.iterdir())) == 4)
    for each in supervisor.members:
        each.process.kill()


def test_actors_that_had_finished_start_again_with_a_learner_that_died(tmp_path):
    """The learner resumes from its checkpoint, below the budget the actors had reached: without them it would
    wait for transitions forever."""
    lives = tmp_path / "lives"
    lives.mkdir()
    code = f"import os, pathlib; (pathlib.Path({str(lives)!r}) / str(os.getpid())).touch()"  # plays, finishes
    supervisor = supervise.Supervisor(str(tmp_path), {"learner": python("import time; time.sleep(60)"),
                                                      "a-0": python(code), "a-1": python(code)}, **FAST)
    learner, actors = member(supervisor, "learner"), [member(supervisor, "a-0"), member(supervisor, "a-1")]
    run_until(supervisor, lambda: all(actor.done for actor in actors))
    learner.process.kill()
    run_until(supervisor, lambda: len(list(lives.iterdir())) == 4 and all(actor.done for actor in actors))
    for actor in actors:
        assert actor.restarts == 1 and not actor.failures and actor.last_reason == "restarted with learner"
    assert supervisor.outcome is None
    learner.process.kill()


def test_the_workers_memory_limit_is_their_share_of_half_the_machine():
    with open("/proc/meminfo") as handle:
        total_mb = int(handle.readline().split()[1]) / 1024
    assert supervise.worker_memory_limit_mb(4) == pytest.approx(total_mb / 8)
    assert supervise.Supervisor("/nowhere", {"ps": ["true"], "w-0": ["true"], "w-1": ["true"]}).memory_limit_mb \
        == pytest.approx(total_mb / 4)


STOP_FLAG = """
import logging, time
import sessions
logging.basicConfig(level=logging.INFO)
flag = sessions.StopFlag()
flag.training = {training}
print("ready", flush=True)
deadline = time.time() + 30
while not flag.stop and time.time() < deadline:
    time.sleep(0.05)
print("stop flag set" if flag.stop else "no stop", flush=True)
"""


def test_a_worker_signalled_before_training_leaves_at_once_and_one_training_stops_after_its_update():
    # Before its session is up a worker has nothing to save: it used to wait FORCE_EXIT_SECS (a worker waiting for
    # a chief that had failed held every stop up by 20 s). The two at once: each spends seconds importing TensorFlow.
    processes = {training: subprocess.Popen(python(STOP_FLAG.format(training=training)), cwd=ROOT,
                                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
                 for training in (False, True)}
    outputs = {}
    try:
        for training, process in processes.items():
            lines = iter(process.stdout.readline, "")  # TensorFlow may say something first; "ready" within 50 lines
            assert any(line.strip() == "ready" for line, _ in zip(lines, range(50)))
            process.send_signal(signal.SIGTERM)
        for training, process in processes.items():
            outputs[training] = process.communicate(timeout=30)[0]
    finally:
        for process in processes.values():
            process.kill()
    stopped, waiting = processes[True], processes[False]
    assert stopped.returncode == 0 and "stopping after this update" in outputs[True], outputs[True]
    assert "stop flag set" in outputs[True]
    assert waiting.returncode == 128 + signal.SIGTERM, outputs[False]
    assert "nothing to save, leaving now" in outputs[False] and "stop flag" not in outputs[False]


def test_a_second_ctrl_c_does_not_cut_the_stopping_short(tmp_path):
    """Ctrl-C twice (an impatient user, or a terminal's and a launcher's): the first stops the run, the second,
    which lands while the worker saves its final checkpoint, is ignored; before, it raised in the middle of the
    stopping and left the parameter server running."""
    import train

    log_dir = str(tmp_path)
    # stand-ins whose command lines name the run as a worker's and a parameter server's do; the worker takes 2 s
    # to leave on SIGTERM, as one saving its checkpoint does
    worker = ("import signal, sys, time, pathlib\n"
              f"stopping = pathlib.Path({os.path.join(log_dir, 'stopping')!r})\n"
              "signal.signal(signal.SIGTERM, lambda *_: (stopping.touch(), time.sleep(2), sys.exit(0)))\n"
              f"pathlib.Path({os.path.join(log_dir, 'up')!r}).touch()\n"
              "time.sleep(120)")
    processes = {"ps": python("import time; time.sleep(120)") + [train.WORKER_SCRIPT, "--log-dir", log_dir,
                                                                 "--job-name", "ps", "--task", "0"],
                 "w-0": python(worker) + [train.WORKER_SCRIPT, "--log-dir", log_dir, "--job-name", "worker",
                                          "--task", "0"]}
    logdir.write_json_atomically(os.path.join(log_dir, logdir.SUPERVISED), processes)
    supervisor = subprocess.Popen([sys.executable, os.path.join(ROOT, "train.py"), train.SUPERVISE_FLAG,
                                   "--log-dir", log_dir], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                  start_new_session=True)
    try:
        deadline = time.time() + 60
        while not (os.path.exists(os.path.join(log_dir, "up")) and len(train.run_roles(log_dir)) == 2):
            assert supervisor.poll() is None and time.time() < deadline, supervisor.communicate()[0]
            time.sleep(0.1)
        supervisor.send_signal(signal.SIGINT)
        deadline = time.time() + 30
        while not os.path.exists(os.path.join(log_dir, "stopping")):
            assert time.time() < deadline, "the worker was never told to stop"
            time.sleep(0.05)
        supervisor.send_signal(signal.SIGINT)  # while the worker is stopping
        output = supervisor.communicate(timeout=60)[0]
        left = train.run_roles(log_dir)
    finally:
        supervisor.kill()
        supervisor.wait()
        train.stop_run(log_dir, None, quiet=True)
    assert "Traceback" not in output and "run over: interrupted" in output, output
    assert "a second Ctrl-C is ignored" in output, output
    assert supervisor.returncode == 0, output
    assert not left, f"left running: {left}"


def test_restarts_back_off_and_five_failures_in_ten_minutes_stop_the_run(tmp_path):
    """The defaults, on an injected clock: a process that keeps failing is started again after 1, 2, 4, 8 s (not
    a moment before), and its fifth failure within 10 minutes stops the run; failures further apart than that never
    add up, and one that ran 5 minutes has recovered: its next restart waits 1 s again."""
    now = [1000.0]

    def fail_and_step(supervisor, ran=0.0):
        """Start the member, let `ran` seconds pass, step once it has failed: (outcome, the delay then set)."""
        crashing = member(supervisor, "w-0")
        assert supervisor.step() is None and crashing.process is not None, "started when due"
        now[0] += ran
        crashing.process.wait(timeout=60)
        outcome = supervisor.step()
        return outcome, crashing.due - now[0]

    crash = {"w-0": python("raise SystemExit(1)")}
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    supervisor = supervise.Supervisor(str(tmp_path / "a"), crash, clock=lambda: now[0])
    assert (supervisor.delays, supervisor.limit, supervisor.window) == ((1.0, 2.0, 4.0, 8.0, 16.0, 30.0), 5, 600.0)
    for expected in (1.0, 2.0, 4.0, 8.0):
        outcome, delay = fail_and_step(supervisor)
        assert outcome is None and delay == expected
        now[0] += delay - 0.01
        assert supervisor.step() is None and member(supervisor, "w-0").process is None, "not before its delay"
        now[0] += 0.01
    outcome, _ = fail_and_step(supervisor)
    assert outcome[0] == 1 and outcome[1].startswith("w-0 failed 5 times in 10 min (last: exit status 1")

    spaced = supervise.Supervisor(str(tmp_path / "b"), crash, clock=lambda: now[0])
    delays = []
    for _ in range(6):  # six failures, each after 601 s of running: never five in the window, each healthy first
        outcome, delay = fail_and_step(spaced, ran=601.0)
        assert outcome is None
        delays.append(delay)
        now[0] += delay
    assert delays == [1.0] * 6 and member(spaced, "w-0").restarts == 6
