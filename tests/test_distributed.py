"""The real distributed path: a parameter server and two workers as processes on localhost ports."""
import csv
import glob
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time

import pytest
import tensorflow as tf

import logdir
import train
from conftest import ROOT, skip_for_machine, wait_for

tf1 = tf.compat.v1
FAST = ["--set", "lstm_size=32", "--set", "checkpoint_secs=5"]


def free_exp_id(num_workers, start):
    """An --expId whose parameter-server and worker ports are all free now."""
    for exp_id in range(start, train.MAX_EXP_ID):
        ps_ports, worker_ports, _ = train.ports_for(exp_id, num_workers)
        if not any(train.port_in_use(port) for port in ps_ports + worker_ports):
            return exp_id
    raise RuntimeError("no free ports")


def launch(log_dir, max_steps, exp_id, *extra, mode="child", timeout=300, env_id="CartPole-v1", workers=2):
    argv = [sys.executable, os.path.join(ROOT, "train.py"), "--mode", mode, "--num-workers", str(workers),
            "--env-id", env_id, "--log-dir", str(log_dir), "--expId", str(exp_id), "--no-tensorboard",
            "--set", f"max_global_steps={max_steps}", *FAST, *extra]
    return subprocess.run(argv, capture_output=True, text=True, timeout=timeout)


def checkpoint_step(log_dir):
    latest = tf1.train.latest_checkpoint(os.path.join(log_dir, "train"))
    return int(latest.rsplit("-", 1)[1]) if latest else None


def episodes(log_dir, task):
    with open(os.path.join(log_dir, f"episodes_{task}.csv")) as handle:
        return list(csv.DictReader(handle))


def tags(log_dir, task):
    found = set()
    for path in glob.glob(os.path.join(log_dir, f"train_{task}", "events.out.tfevents.*")):
        for event in tf1.train.summary_iterator(path):
            found.update(value.tag for value in event.summary.value)
    return found


def host_address():
    """This machine's address on its default route (not loopback), or 127.0.0.1 without one."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        try:
            probe.connect(("192.0.2.1", 9))  # TEST-NET-1: nothing is sent; the kernel picks the interface
            return probe.getsockname()[0]
        except OSError:
            return "127.0.0.1"


def heartbeat(log_dir, task):
    """Worker `task`'s last heartbeat (status_<task>.json), or {} before its first."""
    return logdir.read_json(str(log_dir / f"status_{task}.json")) or {}


@pytest.mark.fault
def test_an_isolated_run_opens_no_port_here_and_its_killed_processes_come_back(tmp_path):
    # One run for both (each launch costs ~10 s of TensorFlow imports on 2 cores): first its isolation, then
    # its faults.
    log_dir = tmp_path / "run"
    exp_id = free_exp_id(2, 470)
    (ps_port,), worker_ports, _ = train.ports_for(exp_id, 2)

    def beat(task):
        return heartbeat(log_dir, task)

    def training(task, not_pid=None):
        return beat(task).get("state") == "training" and beat(task).get("pid") != not_pid

    with socket.socket() as squatter:  # the host's parameter-server port is taken: the run does not need it
        squatter.bind(("127.0.0.1", ps_port))
        squatter.listen()
        result = launch(log_dir, 10**8, exp_id, mode="nohup", timeout=60)
        try:
            assert result.returncode == 0, result.stderr
            assert "no port of it is open here" in result.stdout
            wait_for(lambda: training(0) and training(1) and checkpoint_step(log_dir), 120,
                     "training, a checkpoint")
            assert not any(train.port_in_use(port) for port in worker_ports)
            for address in {"127.0.0.1", host_address()}:  # refused from outside the run's namespace
                for port in [ps_port] + worker_ports:
                    if address == "127.0.0.1" and port == ps_port:
                        continue  # the squatter's
                    with socket.socket() as probe, pytest.raises(ConnectionRefusedError):
                        probe.settimeout(5)
                        probe.connect((address, port))
            running = train.run_processes(str(log_dir))
            cluster = [pid for pid, argv in running.items() if "--job-name" in argv]
            assert len(cluster) == 3 and len(running) == 5, running  # ps, 2 workers, the supervisor, the holder
            assert train.run_processes(os.path.relpath(log_dir)) == running  # a relative path names the same run
            own = os.readlink("/proc/self/ns/net")
            assert all(os.readlink(f"/proc/{pid}/ns/net") != own for pid in cluster)

            # w-1 and the chief killed together: each comes back, the chief into the parameter server's newer
            # values rather than its checkpoint
            worker_1, chief = beat(1)["pid"], beat(0)["pid"]
            os.kill(worker_1, signal.SIGKILL)
            os.kill(chief, signal.SIGKILL)
            wait_for(lambda: training(1, not_pid=worker_1) and training(0, not_pid=chief), 120,
                     "w-1 and w-0 restarted and training")
            assert "joining them, not restoring the checkpoint" in (log_dir / "w-0.out").read_text()

            saved = checkpoint_step(log_dir)
            [ps] = [pid for pid, argv in train.run_processes(str(log_dir)).items() if ("--job-name", "ps") in
                    set(zip(argv, argv[1:]))]
            workers = beat(0)["pid"], beat(1)["pid"]
            os.kill(ps, signal.SIGKILL)
            # every worker is restarted with the parameter server; the chief restores the checkpoint
            wait_for(lambda: training(0, not_pid=workers[0]) and training(1, not_pid=workers[1]), 240,
                     "both workers training again after the parameter server's death")
            wait_for(lambda: beat(0).get("global_step", 0) > saved, 60, "the global step going on from the checkpoint")
            for task in (0, 1):  # what they played past the checkpoint the chief went back to is set aside
                steps = [int(row["global_step"]) for row in logdir.read_rows(logdir.episodes_csv(str(log_dir), task))]
                assert steps == sorted(steps), f"w-{task} logged steps played twice"
            record = logdir.read_json(str(log_dir / logdir.SUPERVISOR))
            assert record["processes"]["ps"]["restarts"] == 1 and record["processes"]["w-1"]["restarts"] >= 2
            assert record["processes"]["w-0"]["restarts"] >= 2
            assert record["outcome"] is None
        finally:
            subprocess.run(["bash", str(log_dir / "kill.sh")], capture_output=True, timeout=120)
    assert train.run_processes(str(log_dir)) == {}, "kill.sh stops the holder too"


@pytest.mark.fault
def test_sigterm_to_the_launcher_stops_the_whole_run_with_a_final_checkpoint(tmp_path):
    # what `timeout 600 train.py --mode child ...` or a scheduler does; it used to leave the run training
    log_dir = tmp_path / "run"
    exp_id = free_exp_id(2, 490)
    argv = [sys.executable, os.path.join(ROOT, "train.py"), "--mode", "child", "--num-workers", "2", "--env-id",
            "CartPole-v1", "--log-dir", str(log_dir), "--expId", str(exp_id), "--no-tensorboard", *FAST]
    launcher = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        wait_for(lambda: all(heartbeat(log_dir, task).get("state") == "training" for task in (0, 1)), 120,
                 "both workers training")
        cluster = [pid for pid, argv in train.run_processes(str(log_dir)).items() if "--job-name" in argv]
        assert len(cluster) == 3
        launcher.send_signal(signal.SIGTERM)
        output, _ = launcher.communicate(timeout=120)
        assert "run over: interrupted" in output
        assert train.run_processes(str(log_dir)) == {}, "processes left after SIGTERM to the launcher"
        assert "saved the final checkpoint" in (log_dir / "w-0.out").read_text()
    finally:
        if launcher.poll() is None:
            launcher.kill()
        subprocess.run(["bash", str(log_dir / "kill.sh")], capture_output=True, timeout=120)


RUN_STEPS = 3000  # the a3c_run trains at least this many steps, both workers with it
RUN_BUDGET = 1_000_000  # its step budget: never reached, the run is stopped once both workers have trained


@pytest.fixture(scope="module")
def a3c_run(tmp_path_factory):
    """A CartPole A3C run that both workers trained, past RUN_STEPS, stopped then by its kill.sh: what the resume
    and pretrain tests start from. It stops on that condition, not on a budget of RUN_STEPS: on a fast machine
    the chief alone trained 3,000 steps (in 0.8 s) before worker 1 had joined."""
    log_dir = tmp_path_factory.mktemp("distributed") / "a3c"
    exp_id = free_exp_id(2, 400)
    result = launch(log_dir, RUN_BUDGET, exp_id, mode="nohup")
    assert result.returncode == 0, result.stdout + result.stderr
    try:
        wait_for(lambda: all(heartbeat(log_dir, task).get("steps_trained", 0) > 0 for task in (0, 1))
                 and heartbeat(log_dir, 0).get("global_step", 0) >= RUN_STEPS, 240,
                 f"both workers training and the chief past step {RUN_STEPS}")
    finally:
        subprocess.run(["bash", str(log_dir / "kill.sh")], capture_output=True, timeout=120)
    return log_dir, exp_id


def test_a_run_trained_by_both_workers_counts_their_steps_and_checkpoints(a3c_run):
    log_dir, _ = a3c_run
    step = checkpoint_step(log_dir)
    assert step is not None and step >= RUN_STEPS
    rows = [episodes(log_dir, 0), episodes(log_dir, 1)]
    assert all(rows), "both workers must finish episodes"
    # The global step counts the environment steps both workers trained on: their finished episodes, plus
    # the trained part of each unfinished one (< 500 steps in each of a worker's K environments), less what
    # was queued or trained after the chief's last save (< queue of 5 + 2 batches of K x 20 steps per worker,
    # and one joined batch).
    k = json.loads((log_dir / "config.json").read_text())["hyperparameters"]["envs_per_worker"]
    played = [sum(int(row["length"]) for row in worker_rows) for worker_rows in rows]
    assert sum(played) - 2 * (5 + 2) * k * 20 - 100 <= step <= sum(played) + 2 * k * 500
    # exactly: each update adds its batch's steps to the global step and to its worker's count, so the last global
    # step a worker saw is the sum of what both trained (give or take an update the runtime retried: run again after
    # it was applied, it counts its steps twice)
    beats = [heartbeat(log_dir, task) for task in (0, 1)]
    retried = sum(sum(beat.get("retried_runs", {}).values()) for beat in beats)
    final = max(beat["global_step"] for beat in beats)
    trained = sum(beat["steps_trained"] for beat in beats)
    restarted = sum(record["restarts"] for record in logdir.read_json(str(log_dir / logdir.SUPERVISOR))["processes"]
                    .values())
    assert all(beat["state"] == "stopped" for beat in beats), beats
    assert trained <= final, (final, trained)
    if not restarted:  # a restarted worker's count begins again: what it trained before is in the step alone
        assert final <= trained + retried * k * 20 * 2, (final, trained, retried)
    for task in (0, 1):
        assert {"global/episode_reward", "global/episode_length", "global/episode_time",
                "model/policy_loss", "model/value_loss", "model/entropy", "model/grad_global_norm",
                "model/var_global_norm", "diagnostics/fps"} <= tags(log_dir, task)
    assert f'"max_global_steps": {RUN_BUDGET}' in (log_dir / "config.json").read_text()
    assert (log_dir / "kill.sh").exists() and (log_dir / "cmd.sh").exists()


@pytest.mark.fault
def test_a_copied_run_resumes_from_its_own_checkpoint_and_a_corrupt_one_is_refused(a3c_run, tmp_path):
    # The run is relaunched from a copy in another place (as one carried to another machine): it resumes from
    # the copy's checkpoints, and the original's stay as they were.
    original, exp_id = a3c_run
    log_dir = tmp_path / "copy"
    shutil.copytree(original, log_dir)
    untouched = sorted(os.listdir(original / "train"))
    step, played = checkpoint_step(log_dir), len(episodes(log_dir, 0))
    second = launch(log_dir, step + 3000, exp_id)
    assert second.returncode == 0, second.stdout + second.stderr
    log = (log_dir / "w-0.out").read_text()
    assert f"resuming from {log_dir / 'train'}/model.ckpt-{step}" in log
    resumed_from = int(log.split("training from global step ")[-1].split()[0])
    assert resumed_from >= step, "the relaunch must continue from the checkpoint"
    assert checkpoint_step(log_dir) >= step + 3000 and sorted(os.listdir(original / "train")) == untouched
    assert len(episodes(log_dir, 0)) > played, "episode CSVs are appended to, not overwritten"

    index = tf1.train.latest_checkpoint(os.path.join(log_dir, "train")) + ".index"
    with open(index, "wb") as handle:
        handle.write(b"not a checkpoint")
    third = launch(log_dir, step + 6000, exp_id, timeout=120)
    assert third.returncode != 0
    assert "is corrupt" in (log_dir / "w-0.out").read_text().splitlines()[-1]
    # a usage error is not restarted: it stops the run, with the chief's one line
    assert "run over: w-0 stopped: w-0: error: checkpoint" in third.stdout
    assert logdir.read_json(str(log_dir / "supervisor.json"))["processes"]["w-0"]["restarts"] == 0
    assert not train.run_processes(str(log_dir)), "a failed chief must not leave the run behind"
    # w-1, stopped while it waited for the chief, left at once and closed its events file whole
    assert "nothing to save, leaving now" in (log_dir / "w-1.out").read_text()
    assert "global/episode_reward" in tags(log_dir, 1)


def test_a_checkpoint_list_naming_another_directory_is_made_to_name_this_one(tmp_path):
    # what the workers wrote before they saved relative paths, in a run directory copied from /old/run
    train_dir = tmp_path / "train"
    train_dir.mkdir()
    for step in (0, 300):
        (train_dir / f"model.ckpt-{step}.index").write_text("")
    listed = ['model_checkpoint_path: "/old/run/train/model.ckpt-300"',
              'all_model_checkpoint_paths: "/old/run/train/model.ckpt-0"',
              'all_model_checkpoint_paths: "/old/run/train/model.ckpt-300"',
              'all_model_checkpoint_paths: "/old/run/train/model.ckpt-900"',  # not in the copy: not this run's
              "all_model_checkpoint_timestamps: 1795465192.5", "last_preserved_timestamp: 1795465100.25"]
    (train_dir / "checkpoint").write_text("\n".join(listed) + "\n")
    assert logdir.relocate_checkpoints(str(train_dir))
    state = tf1.train.get_checkpoint_state(str(train_dir))
    assert state.model_checkpoint_path == str(train_dir / "model.ckpt-300")
    assert list(state.all_model_checkpoint_paths) == [str(train_dir / "model.ckpt-0"),
                                                      str(train_dir / "model.ckpt-300")]
    assert list(state.all_model_checkpoint_timestamps) == [1795465192.5]
    assert not logdir.relocate_checkpoints(str(train_dir)), "a second call changes nothing"
    # a copy without its latest checkpoint names that one here, missing, not the original's file elsewhere
    original, partial = tmp_path / "original" / "train", tmp_path / "partial" / "train"
    for directory in (original, partial):
        directory.mkdir(parents=True)
    (original / "model.ckpt-5.index").write_text("")
    (partial / "checkpoint").write_text(f'model_checkpoint_path: "{original}/model.ckpt-5"\n')
    assert logdir.relocate_checkpoints(str(partial))
    assert tf1.train.get_checkpoint_state(str(partial)).model_checkpoint_path == str(partial / "model.ckpt-5")
    assert not logdir.relocate_checkpoints(str(tmp_path / "none")), "no list: nothing to do"


def tmux_windows(session):
    out = subprocess.run(["tmux", "list-windows", "-t", session, "-F", "#{window_name}"], capture_output=True,
                         text=True)
    return out.stdout.split() if out.returncode == 0 else []


def tmux_pane(session, window):
    out = subprocess.run(["tmux", "capture-pane", "-p", "-t", f"{session}:{window}"], capture_output=True, text=True)
    return out.stdout


def test_tmux_mode_windows_and_kill_script(tmp_path):
    log_dir = tmp_path / "run"
    session = f"test-{os.getpid()}"
    exp_id = free_exp_id(2, 450)
    result = launch(log_dir, 10**8, exp_id, "--expName", session, mode="tmux", timeout=60)
    try:
        assert result.returncode == 0, result.stderr
        assert f"tmux attach -t {session}" in result.stdout
        assert tmux_windows(session) == ["ps", "w-0", "w-1", "supervisor", "status", "htop"]
        deadline = time.time() + 120
        while time.time() < deadline and not all((log_dir / f"episodes_{t}.csv").exists() for t in (0, 1)):
            time.sleep(1)
        assert all((log_dir / f"episodes_{t}.csv").exists() for t in (0, 1)), "workers did not start training"
        def scripts():
            return sorted(os.path.basename(argv[1]) for argv in train.run_processes(str(log_dir)).values())

        def status_shows_both():
            pane = tmux_pane(session, "status")
            return "w-0     training" in pane and "w-1" in pane

        deadline = time.time() + 60  # the status window's shell may still be starting, and refreshes every 2 s
        while time.time() < deadline and not (status_shows_both() and len(scripts()) == 6):
            time.sleep(1)
        # train.py twice: the network's holder and the supervisor
        assert scripts() == ["status.py", "train.py", "train.py"] + ["worker.py"] * 3
        assert status_shows_both(), tmux_pane(session, "status")
        assert "w-0 INFO" in tmux_pane(session, "w-0"), "the worker's window follows its output"
    finally:
        stop = subprocess.run(["bash", str(log_dir / "kill.sh")], capture_output=True, text=True, timeout=120)
    assert stop.returncode == 0, stop.stderr
    assert not train.run_processes(str(log_dir))
    assert tmux_windows(session) == []
    assert checkpoint_step(log_dir) is not None, "the chief saves a last checkpoint when stopped"


def test_curiosity_without_reward_end_to_end_on_two_parameter_servers(tmp_path):
    log_dir = tmp_path / "run"
    exp_id = free_exp_id(3, 420)  # two parameter servers and two workers: four ports
    result = launch(log_dir, 1500, exp_id, "--unsup", "action", "--noReward", "--envs-per-worker", "3",
                    "--num-ps", "2")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "playing 3 CartPole-v1 environments at once" in (log_dir / "w-1.out").read_text()
    rows = episodes(log_dir, 0) + episodes(log_dir, 1)
    assert rows and all(float(row["reward"]) == 0.0 for row in rows)
    assert all(float(row["bonus"]) > 0.0 and float(row["env_reward"]) > 0.0 for row in rows)
    assert {"model/predloss", "model/inv_loss", "model/forward_loss", "model/predgrad_global_norm",
            "model/predvar_global_norm", "global/episode_bonus"} <= tags(log_dir, 0)
    # the global variables are split over both parameter servers, and one checkpoint gathers them
    assert "2 parameter servers, 2 workers" in result.stdout
    assert checkpoint_step(log_dir) >= 1500
    for name, task in (("ps", 0), ("ps-1", 1)):
        assert f"parameter server {task} listening" in (log_dir / f"{name}.out").read_text()
    saved = {name for name, _ in tf1.train.list_variables(os.path.join(log_dir, "train"))}
    assert "global/global_step" in saved and any(name.startswith("global/predictor/") for name in saved)


def test_pretrain_starts_a_new_run_from_old_weights(a3c_run, tmp_path):
    (source, _), target = a3c_run, tmp_path / "icm"
    exp_id = free_exp_id(1, 430)
    # A near-zero learning rate keeps the one update this run makes from moving the weights; one worker, the
    # chief, is the one that restores.
    second = launch(target, 1, exp_id, "--num-workers", "1", "--pretrain", str(source), "--unsup", "action",
                    "--set", "learning_rate=1e-12")
    assert second.returncode == 0, second.stdout + second.stderr
    log = (target / "w-0.out").read_text()
    assert "pretrain: restoring" in log and "training from global step 0" in log
    assert "not restored (fresh) global/predictor/" in log, "the predictor the source lacks is reported"
    old = tf1.train.NewCheckpointReader(tf1.train.latest_checkpoint(str(source / "train")))
    new = tf1.train.NewCheckpointReader(tf1.train.latest_checkpoint(str(target / "train")))
    policy = [name for name in old.get_variable_to_shape_map()
              if name.startswith("global/") and "Adam" not in name and name != "global/global_step"]
    assert policy
    for name in policy:
        assert abs(old.get_tensor(name) - new.get_tensor(name)).max() < 1e-6, name
    assert new.get_tensor("global/global_step") < 1000


DISK_FAULT_SCRIPT = r"""
set -u
mount -t tmpfs -o size=40m tmpfs "$DISK" || exit 97
run() { "$PY" "$TRAIN" --mode child --num-workers 1 --env-id CartPole-v1 --log-dir "$DISK/run" --expId "$EXP" \
        --no-tensorboard --set lstm_size=32 --set checkpoint_secs=2; }
run > "$OUT/launcher.txt" 2>&1 &
launcher=$!
i=0  # the fault comes once a checkpoint past step 0 exists, or after 120 s
until grep -qs 'model_checkpoint_path: .*ckpt-[1-9]' "$DISK/run/train/checkpoint" || [ $i -ge 240 ]; do
    sleep 0.5; i=$((i + 1))
done
case "$FAULT" in
    full)  # in one call, so that the supervisor cannot see the disk half full (then its line names that)
        fallocate -l $(( $(stat -f -c %a "$DISK") * $(stat -f -c %S "$DISK") )) "$DISK/filler" 2>/dev/null
        dd if=/dev/zero of="$DISK/filler2" bs=4k 2>/dev/null ;;  # what fallocate left, if anything
    read-only) mount --bind "$DISK" "$DISK" && mount -o remount,bind,ro "$DISK" ;;
esac
wait $launcher; echo $? > "$OUT/launcher.rc"
run > "$OUT/relaunch.txt" 2>&1; echo $? > "$OUT/relaunch.rc"
cp -r "$DISK/run" "$OUT/run"
"""


@pytest.mark.fault
def test_a_full_or_read_only_disk_stops_the_run_in_one_line_and_keeps_the_checkpoint(tmp_path):
    """The log directory's filesystem fills up, or turns read-only, under a running run (a filesystem of its own
    in a user and mount namespace): the run stops with one line, leaves no process, and the checkpoint it names
    restores; the relaunch is refused in one line until there is room. The two faults at once, each its own run."""
    if subprocess.run(["unshare", "-rm", "true"], capture_output=True).returncode != 0:
        skip_for_machine("no user and mount namespaces here to give the run a filesystem of its own")
    faults, started = ("full", "read-only"), []
    for index, fault in enumerate(faults):
        disk, out = tmp_path / fault / "disk", tmp_path / fault / "out"
        disk.mkdir(parents=True)
        out.mkdir()
        env = dict(os.environ, DISK=str(disk), OUT=str(out), FAULT=fault, PY=sys.executable,
                   TRAIN=os.path.join(ROOT, "train.py"), EXP=str(free_exp_id(1, 300 + 10 * index)))
        started.append(subprocess.Popen(["unshare", "-rm", "sh", "-c", DISK_FAULT_SCRIPT], env=env))
    try:
        for process in started:
            assert process.wait(timeout=280) == 0
    finally:
        for process in started:
            process.kill()
        leftover = {pid for fault in faults for pid in train.run_processes(str(tmp_path / fault / "disk" / "run"))}
        for pid in leftover:
            os.kill(pid, signal.SIGKILL)
    assert leftover == set(), "processes of the runs left behind"
    for fault in faults:
        out = tmp_path / fault / "out"
        output = (out / "launcher.txt").read_text()
        assert (out / "launcher.rc").read_text().strip() == "1", output
        assert "Traceback" not in output
        # Full: the saver may delete an old checkpoint after the filler took the last block, so the line names
        # what was free when the supervisor looked (0.0 MB or the size of that checkpoint), always less than it
        # needs.
        reason = {"full": r"filesystem has \d+\.\d MB free, less than the \d+\.\d MB that \d+ more checkpoints need",
                  "read-only": "is on a filesystem that is read-only now"}[fault]
        last = output.strip().splitlines()[-1]
        assert last.startswith("run over: ") and re.search(reason, last), last
        assert "the run is stopped; the last checkpoint" in last, last
        named = last.split("the last checkpoint, ")[1].split(",")[0]
        reader = tf1.train.load_checkpoint(str(out / "run" / "train" / named))
        assert "global/global_step" in reader.get_variable_to_shape_map()
        assert reader.get_tensor("global/global_step") > 0
        assert episodes(out / "run", 0), "the episode CSV is kept and parses"
        relaunch = (out / "relaunch.txt").read_text().strip()
        assert (out / "relaunch.rc").read_text().strip() == "2" and len(relaunch.splitlines()) == 1, relaunch
        assert {"full": "free some space or choose another --log-dir",
                "read-only": "Read-only file system"}[fault] in relaunch
