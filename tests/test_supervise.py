"""The supervisor, on stand-in processes: restarts with back-off, the failure limit, usage errors, hung workers,
finished workers and kill.sh's stop marker."""
import json
import os
import sys
import time

import supervise

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
    record = json.loads((tmp_path / supervise.STATE_FILE).read_text())
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
    while time.time() < deadline and os.path.exists(f"/proc/{orphan}") and not zombie(orphan):
        time.sleep(0.1)
    assert not os.path.exists(f"/proc/{orphan}") or zombie(orphan), "the dead worker's child was left running"


def zombie(pid):
    try:
        with open(f"/proc/{pid}/stat") as handle:
            return handle.read().rsplit(")", 1)[1].split()[0] == "Z"
    except OSError:
        return True


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
    (tmp_path / supervise.STOP_MARKER).touch()
    for each in supervisor.members:
        each.process.kill()
    assert run_until(supervisor, lambda: False) == (0, "stopped")
    assert all(m.restarts == 0 and m.process is None for m in supervisor.members)
