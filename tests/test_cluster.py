"""One run across two machines, simulated on this one: two network namespaces joined by a virtual Ethernet
pair, each with its own address. Machine A runs the parameter server and worker 0 (the chief), machine B
worker 1; each side is started by the same `train.py --cluster cluster.json` command, which picks its share by
address. Needs root (to make namespaces) and iproute2; skipped with the reason where either is missing."""
import json
import os
import shutil
import signal
import subprocess
import sys

import pytest

import cluster as cluster_roles
import train
from conftest import ROOT, skip_for_machine
from test_distributed import FAST, checkpoint_step, episodes, heartbeat, wait_for

SUBNET = "10.231.{}.{}"


def sh(*argv):
    return subprocess.run(argv, capture_output=True, text=True, timeout=30)


@pytest.fixture
def two_machines():
    """{"a": address, "b": address} of two namespaces joined by a veth pair; removed afterwards."""
    if os.geteuid() != 0 or shutil.which("ip") is None:
        skip_for_machine("needs root and iproute2 (ip) to make network namespaces")
    tag = os.getpid() % 10000
    names = {side: f"ca-test-{tag}-{side}" for side in "ab"}
    links = {side: f"ca{tag}{side}" for side in "ab"}  # interface names: at most 15 characters
    addresses = {side: SUBNET.format(tag % 250, index) for index, side in enumerate("ab", 1)}
    made = sh("ip", "netns", "add", names["a"])
    if made.returncode != 0:
        skip_for_machine(f"cannot make a network namespace: {made.stderr.strip()}")
    try:
        steps = [("ip", "netns", "add", names["b"]),
                 ("ip", "link", "add", links["a"], "type", "veth", "peer", "name", links["b"])]
        for side in "ab":
            steps += [("ip", "link", "set", links[side], "netns", names[side]),
                      ("ip", "-n", names[side], "addr", "add", f"{addresses[side]}/24", "dev", links[side]),
                      ("ip", "-n", names[side], "link", "set", links[side], "up"),
                      ("ip", "-n", names[side], "link", "set", "lo", "up")]
        for step in steps:
            result = sh(*step)
            if result.returncode != 0 and "veth" in step:
                skip_for_machine(f"cannot make a virtual Ethernet pair: {result.stderr.strip()}")
            assert result.returncode == 0, f"{' '.join(step)}: {result.stderr}"
        yield {"names": names, **addresses}
    finally:
        for side in "ab":
            sh("ip", "netns", "delete", names[side])  # takes its end of the veth pair with it


def start(machine, cluster_file, log_dir, max_steps, flags=("--env-id", "CartPole-v1", *FAST)):
    argv = ["ip", "netns", "exec", machine, sys.executable, os.path.join(ROOT, "train.py"), "--cluster",
            cluster_file, "--mode", "child", "--log-dir", str(log_dir), "--no-tensorboard", "--set",
            f"max_global_steps={max_steps}", *flags]
    return subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def kill_everything(launchers, log_dirs):
    pids = [launcher.pid for launcher in launchers]
    for log_dir in log_dirs:
        pids += list(train.run_processes(str(log_dir)))
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    for launcher in launchers:
        launcher.wait(timeout=30)
    wait_for(lambda: not any(train.run_processes(str(log_dir)) for log_dir in log_dirs), 30, "every process gone")


def clean_up(launchers, log_dirs):
    """Whatever a first phase left running: its launchers killed, each machine's run stopped by its kill.sh."""
    for launcher in launchers:
        if launcher.poll() is None:
            launcher.kill()
    for log_dir in log_dirs:
        subprocess.run(["bash", str(log_dir / "kill.sh")], capture_output=True, timeout=120)


def run_to_the_end(launchers, log_dirs, digest):
    """The launchers' outputs once each has ended by itself, with exit 0 and the cluster's digest logged; should
    one not end in time, everything of the run is stopped."""
    try:
        outputs = [launcher.communicate(timeout=300)[0] for launcher in launchers]
    except BaseException:
        kill_everything(launchers, log_dirs)
        raise
    for launcher, output in zip(launchers, outputs):
        assert launcher.returncode == 0, output
        assert f"cluster:      {digest}" in output
    return outputs


@pytest.mark.fault
def test_one_run_across_two_machines_trains_checkpoints_and_resumes_after_all_are_killed(two_machines, tmp_path):
    a, b = two_machines["a"], two_machines["b"]
    spec = {"ps": [f"{a}:2222"], "worker": [f"{a}:2223", f"{b}:2222"]}
    cluster_file = tmp_path / "cluster.json"
    cluster_file.write_text(json.dumps(spec))
    log_a, log_b = tmp_path / "machine-a", tmp_path / "machine-b"
    names = two_machines["names"]
    launchers = [start(names["a"], str(cluster_file), log_a, 10**8),
                 start(names["b"], str(cluster_file), log_b, 10**8)]
    try:
        wait_for(lambda: heartbeat(log_a, 0).get("state") == "training"
                 and heartbeat(log_b, 1).get("state") == "training" and (checkpoint_step(log_a) or 0) > 0
                 and os.path.exists(log_b / "episodes_1.csv"), 240,
                 "both machines training and a checkpoint on machine A")
        # each machine started its own share, and logs it: A the ps and the chief, B worker 1
        assert set(train.run_roles(str(log_a))) == {"ps", "w-0"} and set(train.run_roles(str(log_b))) == {"w-1"}
        assert not os.path.exists(log_b / "train"), "only the chief, on machine A, writes checkpoints"
        digest = cluster_roles.digest(spec)
        assert f"cluster {digest}" in (log_b / "w-1.out").read_text()
        assert f"cluster {digest}" in (log_a / "w-0.out").read_text()
        kill_everything(launchers, [log_a, log_b])
    finally:
        clean_up(launchers, [log_a, log_b])
    saved = checkpoint_step(log_a)

    target = saved + 2000
    outputs = run_to_the_end([start(names["a"], str(cluster_file), log_a, target),
                              start(names["b"], str(cluster_file), log_b, target)], [log_a, log_b], digest)
    assert "this machine's share (w-1) of a cluster of 1 + 2" in outputs[1]
    log = (log_a / "w-0.out").read_text()
    assert "resuming from" in log and int(log.split("training from global step ")[-1].split()[0]) >= saved
    assert checkpoint_step(log_a) >= target
    # worker 1 rejoined the restored cluster (the chief may play the 2,000 steps alone: about 2 s of CartPole)
    rejoined = (log_b / "w-1.out").read_text().split("training from global step ")[-1].split()[0]
    assert int(rejoined) >= saved, rejoined
    rows = episodes(log_b, 1)
    steps = [int(row["global_step"]) for row in rows]  # what it played past the checkpoint went to rewound/
    assert steps == sorted(steps), "worker 1 logged steps played twice"
    assert not train.run_processes(str(log_a)) and not train.run_processes(str(log_b))


@pytest.mark.fault
def test_apex_across_two_machines_fills_the_learners_replay_from_both_and_resumes_after_all_are_killed(
        two_machines, tmp_path):
    """Machine A runs the learner and actor 0, machine B actor 1, from one cluster file of the learner and actor
    jobs: B's transitions reach the replay on A through TensorFlow's runtime. Every process of both machines is
    killed; the same commands resume from the learner's checkpoint, B's actor joins the restored learner, and the
    learner trains to the end."""
    import tensorflow as tf

    from test_dqn import CORRIDOR

    a, b = two_machines["a"], two_machines["b"]
    spec = {"learner": [f"{a}:2222"], "actor": [f"{a}:2223", f"{b}:2222"]}
    cluster_file = tmp_path / "cluster.json"
    cluster_file.write_text(json.dumps(spec))
    log_a, log_b = tmp_path / "machine-a", tmp_path / "machine-b"
    flags = [flag for flag in CORRIDOR if flag not in ("--num-workers", "0")] + ["--set", "checkpoint_secs=3"]
    names = two_machines["names"]
    digest = cluster_roles.digest(spec)

    def launch(steps):
        return [start(names[side], str(cluster_file), log_dir, steps, flags)
                for side, log_dir in (("a", log_a), ("b", log_b))]

    launchers = launch(10**8)
    try:
        wait_for(lambda: heartbeat(log_a, "learner").get("state") == "training"
                 and heartbeat(log_b, 1).get("state") == "training" and (checkpoint_step(log_a) or 0) > 0
                 and os.path.exists(log_b / "episodes_1.csv")
                 and heartbeat(log_a, "learner").get("replay_size", 0) > 0, 240,
                 "the learner training with a checkpoint, and actor 1 playing on machine B")
        assert set(train.run_roles(str(log_a))) == {"learner", "a-0"} and set(train.run_roles(str(log_b))) == {"a-1"}
        kill_everything(launchers, [log_a, log_b])
    finally:
        clean_up(launchers, [log_a, log_b])
    saved = checkpoint_step(log_a)
    before = len(episodes(log_b, 1))

    target = saved + 2000
    outputs = run_to_the_end(launch(target), [log_a, log_b], digest)
    assert set(train.run_roles(str(log_a))) == set() and "this machine's share (a-1)" in outputs[1]
    assert (log_a / "learner.out").exists() and (log_a / "a-0.out").exists() and not (log_a / "a-1.out").exists()
    assert "resuming from" in (log_a / "learner.out").read_text()
    assert (log_b / "a-1.out").read_text().count(f"cluster {digest}") == 2, "actor 1 started again and rejoined"
    assert len(episodes(log_b, 1)) > before, "actor 1 played on after the resume"
    played = {actor: sum(int(row["length"]) for row in episodes(log_dir, actor))
              for actor, log_dir in ((0, log_a), (1, log_b))}
    learner = json.load(open(log_a / "status_learner.json"))
    # actor 1's steps arrived from the other machine (less its last unsent ones): the replay, refilled since the
    # resume, holds more than actor 0 played since
    assert played[1] > 500 and learner["state"] == "stopped" and learner["replay_size"] > 0, (played, learner)
    latest = tf.train.latest_checkpoint(str(log_a / "train"))
    assert int(latest.rsplit("-", 1)[1]) >= target and not (log_b / "train").exists()


def test_a_player_that_loses_the_learner_says_in_one_line_which_error_and_why():
    """TensorFlow's message begins "Graph execution error:", which says nothing: the line names the error's kind
    and the first line after it."""
    class UnavailableError(Exception):
        def __init__(self, message):
            self.message = message

    errors = type("errors", (), {"UnavailableError": UnavailableError, "DeadlineExceededError": KeyError,
                                 "AbortedError": LookupError})
    tf1 = type("tf1", (), {"errors": errors})
    with pytest.raises(cluster_roles.ClusterError) as raised:
        with cluster_roles.learner_lost(tf1, "127.0.0.1:5000"):
            raise UnavailableError("Graph execution error:\n\nUNAVAILABLE: Socket closed\nAdditional GRPC info")
    assert str(raised.value) == ("lost the learner at 127.0.0.1:5000 (UnavailableError: UNAVAILABLE: Socket closed); "
                                 "relaunch the run to resume")
