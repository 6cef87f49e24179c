"""The launcher: commands for each mode, --dry-run, and one-line errors for bad input."""
import dataclasses
import json
import os
import signal
import socket
import subprocess
import sys
import time

import pytest

import cluster as cluster_roles
import constants
import train
from conftest import ROOT


def run_train(*args, env=None):
    """train.py in a subprocess. Checks that need no launch are tested with --dry-run, so that a broken check
    cannot start a real run on the machine."""
    return subprocess.run([sys.executable, os.path.join(ROOT, "train.py"), *args], capture_output=True, text=True,
                          env=env, timeout=120)


@pytest.mark.parametrize("mode", train.MODES)
def test_create_commands_one_ps_n_workers(mode, tmp_path):
    plan = train.create_commands("exp", 3, "CartPole-v1", str(tmp_path), mode=mode, exp_id=2,
                                 overrides=["gamma=0.9"])
    names = [p.name for p in plan.processes]
    assert names[:6] == ["ps", "w-0", "w-1", "w-2", "supervisor", "tb"]
    assert plan.processes[4].argv[2:] == ["--supervise", "--log-dir", str(tmp_path)]
    assert ("htop" in names) == (mode == "tmux")
    ps_port = train.PS_BASE_PORT + 2 * train.PORT_STRIDE
    assert plan.cluster == {"ps": [f"127.0.0.1:{ps_port}"],
                            "worker": [f"127.0.0.1:{ps_port + i}" for i in (1, 2, 3)]}
    assert train.cluster_ports(plan) == [ps_port, ps_port + 1, ps_port + 2, ps_port + 3]
    assert plan.tb_port == train.TB_BASE_PORT + 2
    hosts = ",".join(plan.cluster["worker"])
    for i, process in enumerate(plan.processes[1:4]):
        argv = process.argv
        assert argv[argv.index("--task") + 1] == str(i) and argv[argv.index("--job-name") + 1] == "worker"
        assert argv[argv.index("--worker-hosts") + 1] == hosts
        assert argv[argv.index("--set") + 1] == "gamma=0.9"
    assert plan.processes[0].argv[plan.processes[0].argv.index("--job-name") + 1] == "ps"
    cmd_sh, kill_sh = train.script_texts(plan)
    if mode == "tmux":
        assert "tmux new-session -d -s exp -n ps" in cmd_sh and cmd_sh.count("send-keys") == len(names)
        # the cluster's windows follow the output of the processes the supervisor runs
        assert f"tail -n +1 -F {os.path.join(str(tmp_path), 'w-2.out')}" in cmd_sh
    else:
        assert sum(line.startswith("nohup ") for line in cmd_sh.splitlines()) == len(names) - 4  # not ps, w-*
        assert f"> {os.path.join(str(tmp_path), 'supervisor.out')} 2>&1 &" in cmd_sh
    assert sum(line.startswith("#   w-") for line in cmd_sh.splitlines()) == 3, "the supervised commands, listed"
    assert "--stop" in kill_sh and str(tmp_path) in kill_sh
    assert ("--expName exp" in kill_sh) == (mode == "tmux"), "kill.sh ends a tmux session only its own run has"


def test_every_run_flag_reaches_the_worker_as_the_launcher_read_it(tmp_path):
    # one schema (constants.RUN_FLAGS): the launcher's parser, the workers' command lines and the worker's parser
    import worker

    args = train.parse_args(["--algo", "dqn", "--env-id", "CartPole-v1", "--envWrap", "--designHead", "mlp",
                             "--unsup", "action", "--noReward", "--noLifeReward", "--visualise", "--preset", "classic",
                             "--pretrain", "elsewhere", "--restore-include", "^global/", "--restore-exclude", "value",
                             "--prefill-random", "3", "--threads", "2", "--set", "gamma=0.9", "--set", "seed=3"])
    launched = constants.run_flag_values(args)
    defaults = constants.run_flag_values(train.parse_args([]))
    assert all(launched[name] != defaults[name] for name in constants.RUN_FLAG_NAMES), "the test covers every flag"
    flags = dict(launched)
    plan = train.create_commands("s", 2, flags.pop("env_id"), str(tmp_path), **flags)
    for process in plan.processes[:3]:
        received = constants.run_flag_values(worker.parse_args(process.argv[2:]))
        assert received == dict(launched, pretrain=os.path.abspath("elsewhere")), process.name
    with pytest.raises(TypeError, match="not a run flag"):
        train.create_commands("s", 2, "doom", str(tmp_path), gama=0.9)


def test_a_worker_takes_its_role_from_tf_config(monkeypatch):
    import worker

    cluster = {"ps": ["ps0:2222"], "chief": ["c0:2222"], "worker": ["w0:2222", "w1:2222"]}
    hosts = "c0:2222,w0:2222,w1:2222"
    expectations = [({"type": "chief", "index": 0}, ("worker", 0)),  # the chief is worker 0, the workers follow
                    ({"type": "worker", "index": 1}, ("worker", 2)),
                    ({"type": "ps", "index": 0}, ("ps", 0))]
    for task, expected in expectations:
        monkeypatch.setenv("TF_CONFIG", json.dumps({"cluster": cluster, "task": task}))
        args = worker.parse_args(["--log-dir", "x"])
        assert (args.job_name, args.task, args.ps_hosts, args.worker_hosts) == (*expected, "ps0:2222", hosts)
    monkeypatch.setenv("TF_CONFIG", json.dumps({"cluster": {"ps": ["p:1"], "worker": ["a:1", "b:1"]},
                                                "task": {"type": "worker", "index": 1}}))
    assert worker.parse_args([]).task == 1
    assert worker.parse_args(["--task", "0"]).task == 0, "the command line wins"
    for bad in ("{not json", json.dumps({"cluster": {"worker": ["a:1"]}, "task": {"type": "worker", "index": 0}}),
                json.dumps({"cluster": cluster, "task": {"type": "evaluator", "index": 0}})):
        with pytest.raises(ValueError):
            cluster_roles.role_from_tf_config(bad)
    monkeypatch.delenv("TF_CONFIG")
    result = subprocess.run([sys.executable, os.path.join(ROOT, "worker.py"), "--log-dir", "x"], capture_output=True,
                            text=True, timeout=60, env=dict(os.environ, TF_CONFIG="{not json"))
    assert result.returncode == 2 and "TF_CONFIG: not a cluster" in result.stderr and "Traceback" not in result.stderr
    result = subprocess.run([sys.executable, os.path.join(ROOT, "worker.py")], capture_output=True, text=True,
                            timeout=60)
    assert result.returncode == 2 and "or set TF_CONFIG" in result.stderr


def test_a_worker_under_srun_takes_its_role_from_slurm(monkeypatch):
    import worker

    assert cluster_roles.expand_hostlist("node[01-03,07],login1,gpu[8-10]") == [
        "node01", "node02", "node03", "node07", "login1", "gpu8", "gpu9", "gpu10"]
    assert cluster_roles.expand_tasks_per_node("2(x3),1") == [2, 2, 2, 1]
    step = {"SLURM_STEP_NODELIST": "n[1-2]", "SLURM_STEP_TASKS_PER_NODE": "3,2"}  # 5 tasks: the ps and 4 workers
    hosts = "n1:12223,n1:12224,n2:12222,n2:12223"
    assert cluster_roles.role_from_slurm(dict(step, SLURM_PROCID="0")) == {
        "job_name": "ps", "task": 0, "ps_hosts": "n1:12222", "worker_hosts": hosts}
    assert cluster_roles.role_from_slurm(dict(step, SLURM_PROCID="3", SLURM_PORT_BASE="4000"))["task"] == 2
    assert cluster_roles.role_from_slurm({"SLURM_PROCID": "0"}) == {}, "sbatch's shell, not an srun step"
    with pytest.raises(ValueError, match="needs a parameter server and a worker"):
        cluster_roles.role_from_slurm({"SLURM_PROCID": "0", "SLURM_STEP_NODELIST": "n1",
                                       "SLURM_STEP_TASKS_PER_NODE": "1"})
    for name, value in dict(step, SLURM_PROCID="4").items():
        monkeypatch.setenv(name, value)
    monkeypatch.delenv("TF_CONFIG", raising=False)
    args = worker.parse_args(["--log-dir", "x"])
    assert (args.job_name, args.task, args.ps_hosts, args.worker_hosts) == ("worker", 3, "n1:12222", hosts)


def test_tf_config_and_slurm_build_an_ape_x_cluster(monkeypatch):
    """The learner and actors of --algo dqn or sac from TF_CONFIG (a "chief" replica is the learner) and from an
    srun step (task 0 the learner, the others the actors), as A3C's ps and workers above."""
    import worker

    apex_cluster = {"learner": ["l0:2222"], "actor": ["a0:2222", "a1:2222"]}
    for task, expected in [({"type": "learner", "index": 0}, ("learner", 0)),
                           ({"type": "actor", "index": 1}, ("actor", 1))]:
        monkeypatch.setenv("TF_CONFIG", json.dumps({"cluster": apex_cluster, "task": task}))
        args = worker.parse_args(["--log-dir", "x", "--algo", "dqn"])
        assert (args.job_name, args.task, args.learner_hosts, args.actor_hosts) == (*expected, "l0:2222",
                                                                                   "a0:2222,a1:2222")
    chief_form = {"chief": ["l0:2222"], "actor": ["a0:2222"]}
    assert cluster_roles.role_from_tf_config(json.dumps({"cluster": chief_form, "task": {"type": "chief", "index": 0}}),
                                             "sac") == {"job_name": "learner", "task": 0, "learner_hosts": "l0:2222",
                                                        "actor_hosts": "a0:2222"}
    for bad, algo in [(json.dumps({"cluster": apex_cluster, "task": {"type": "worker", "index": 0}}), "dqn"),
                      (json.dumps({"cluster": apex_cluster, "task": {"type": "actor", "index": 0}}), "a3c"),
                      (json.dumps({"cluster": {"actor": ["a:1"]}, "task": {"type": "actor", "index": 0}}), "dqn")]:
        with pytest.raises(ValueError):
            cluster_roles.role_from_tf_config(bad, algo)
    monkeypatch.delenv("TF_CONFIG")
    step = {"SLURM_STEP_NODELIST": "n[1-2]", "SLURM_STEP_TASKS_PER_NODE": "2,2"}  # the learner and 3 actors
    assert cluster_roles.role_from_slurm(dict(step, SLURM_PROCID="0"), "dqn") == {
        "job_name": "learner", "task": 0, "learner_hosts": "n1:12222", "actor_hosts": "n1:12223,n2:12222,n2:12223"}
    for name, value in dict(step, SLURM_PROCID="3").items():
        monkeypatch.setenv(name, value)
    args = worker.parse_args(["--log-dir", "x", "--algo", "sac"])
    assert (args.job_name, args.task, args.learner_hosts) == ("actor", 2, "n1:12222")
    with pytest.raises(ValueError, match="needs a learner and an actor"):
        cluster_roles.role_from_slurm({"SLURM_PROCID": "0", "SLURM_STEP_NODELIST": "n1",
                                       "SLURM_STEP_TASKS_PER_NODE": "1"}, "dqn")


def test_the_scheduler_examples_start_worker_py_with_flags_it_takes(monkeypatch):
    import re
    import shlex

    import worker

    monkeypatch.setenv("TF_CONFIG", json.dumps({"cluster": {"ps": ["p:1"], "worker": ["w:1"]},
                                                "task": {"type": "worker", "index": 0}}))
    with open(os.path.join(ROOT, "examples", "tfjob.yaml")) as handle:
        commands = [json.loads(found) for found in re.findall(r"command: (\[.*?\])", handle.read(), re.S)]
    with open(os.path.join(ROOT, "examples", "slurm.sbatch")) as handle:
        script = handle.read()
    srun = script.split("\nsrun ", 1)[1].replace("\\\n", " ").splitlines()[0].rstrip(" &")
    defaults = dict(re.findall(r"^(\w+)=\$\{\1:-(.*)\}$", script, re.M))  # VAR=${VAR:-default}
    assert set(defaults) >= {"LOG_DIR", "ENV_ID", "MAX_STEPS", "PYTHON"}
    for name, value in defaults.items():
        srun = srun.replace(f'"${name}"', value)
    commands.append(shlex.split(srun)[1:])  # after srun's own option
    assert len(commands) == 3
    for command in commands:
        # the TFJob's image has the package installed (pip install .): it runs the module, from anywhere
        assert command[:2] == ["python", "worker.py"] or command[:3] == ["python", "-m", "worker"]
        args = worker.parse_args(command[3 if command[1] == "-m" else 2:])
        assert args.env_id == "doom" and args.unsup == "action" and args.job_name == "worker"


def test_dry_run_prints_commands_and_runs_nothing(tmp_path):
    log_dir = tmp_path / "never-created"
    result = run_train("--num-workers", "8", "--dry-run", "--log-dir", str(log_dir))
    assert result.returncode == 0, result.stderr
    assert result.stdout.count("--job-name worker") == 8 and result.stdout.count("--job-name ps") == 1
    assert "tensorboard.main" in result.stdout
    assert not log_dir.exists()


def assert_one_line_error(result, fragment):
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in result.stderr, result.stderr
    assert fragment in lines[0], lines[0]


TWO_MACHINES = {"ps": ["10.9.0.1:2222"], "worker": ["10.9.0.1:2223", "10.9.0.2:2222", "10.9.0.2:2223"]}


def write_cluster(tmp_path, spec):
    path = tmp_path / "cluster.json"
    path.write_text(spec if isinstance(spec, str) else json.dumps(spec))
    return str(path)


def test_dry_run_of_a_cluster_prints_each_machines_commands_with_the_files_addresses(tmp_path):
    result = run_train("--cluster", write_cluster(tmp_path, TWO_MACHINES), "--dry-run", "--env-id", "CartPole-v1",
                       "--mode", "nohup", "--log-dir", str(tmp_path / "run"))
    assert result.returncode == 0, result.stderr
    sections = result.stdout.split("# ---- machine ")[1:]
    assert [section.split(":")[0] for section in sections] == ["10.9.0.1", "10.9.0.2"]
    roles = [[line.split(":")[0].strip("# ") for line in section.splitlines() if line.startswith("#   ")]
             for section in sections]
    assert roles == [["ps", "w-0"], ["w-1", "w-2"]]
    workers = [line for line in result.stdout.splitlines() if line.startswith("#   ")]
    assert len(workers) == 4 and all(
        "--ps-hosts 10.9.0.1:2222 --worker-hosts 10.9.0.1:2223,10.9.0.2:2222,10.9.0.2:2223" in line
        for line in workers)
    assert "--tasks worker:1,worker:2" in sections[1]
    assert f"cluster {cluster_roles.digest(TWO_MACHINES)}" in result.stdout
    assert "network namespace" not in result.stdout  # across machines the ports must be reachable
    assert not (tmp_path / "run").exists()


@pytest.mark.parametrize("spec, fragment", [
    ("{not json", "is not JSON"),
    ({"worker": ["a:1"]}, "expected {\"ps\""),
    ({"ps": [], "worker": ["a:1"]}, "the cluster has no parameter server"),
    ({"ps": ["a:1"], "worker": ["a:1"]}, "a:1 is given twice in the cluster (ps and w-0)"),
    ({"ps": ["a:99999"], "worker": ["b:1"]}, "'a:99999' is not host:port"),
    ({"ps": ["a"], "worker": ["b:1"]}, "'a' is not host:port"),
    ({"ps": ["a:1"], "worker": ["b:1"], "evaluator": ["c:1"]}, "unknown job(s) evaluator"),
])
def test_a_bad_cluster_file_gets_one_line(tmp_path, spec, fragment):
    result = run_train("--cluster", write_cluster(tmp_path, spec), "--dry-run", "--log-dir", str(tmp_path / "r"))
    assert_one_line_error(result, fragment)


@pytest.mark.parametrize("flags, fragment", [
    (["--cluster", "/nonexistent/cluster.json"], "cannot read --cluster /nonexistent/cluster.json"),
    (["--ps-hosts", "a:1"], "--ps-hosts and --worker-hosts go together"),
    (["--ps-hosts", "a:1", "--worker-hosts", "b:1", "--num-workers", "3"], "leave out --num-workers"),
    (["--tasks", "ps:0"], "--tasks picks this machine's share of a cluster"),
    (["--ps-hosts", "10.9.0.1:1", "--worker-hosts", "10.9.0.2:1", "--network", "isolated"],
     "a cluster across machines needs its ports reachable"),
    (["--num-ps", "0"], "--num-ps must be between 1 and"),
])
def test_bad_cluster_flags_get_one_line(tmp_path, flags, fragment):
    assert_one_line_error(run_train(*flags, "--dry-run", "--log-dir", str(tmp_path / "r")), fragment)


def test_a_weight_that_rnd_does_not_read_is_refused_not_ignored(tmp_path):
    """RND's bonus is weighed by int_coef: a comparison that set prediction_beta for every bonus would have left
    RND's weight as it was while saying otherwise."""
    flags = ["--env-id", "CartPole-v1", "--num-workers", "2", "--dry-run", "--log-dir", str(tmp_path / "r")]
    assert_one_line_error(run_train("--unsup", "rnd", "--set", "prediction_beta=0.03", *flags),
                          "--set prediction_beta: --unsup rnd does not read it")
    assert run_train("--unsup", "rnd", "--set", "int_coef=0.5", *flags).returncode == 0
    assert run_train("--unsup", "action", "--set", "prediction_beta=0.03", *flags).returncode == 0


def test_another_algorithms_own_hyper_parameter_is_refused_not_ignored(tmp_path):
    """SAC reads no action_repeat: a comparison that set it on every method would have held SAC's actions for one
    step while saying two."""
    flags = ["--env-id", "Pendulum-v1", "--set", "action_repeat=2", "--dry-run", "--log-dir", str(tmp_path / "r")]
    assert_one_line_error(run_train("--algo", "sac", *flags),
                          "--set action_repeat: planet's own hyper-parameter, which --algo sac does not read")
    assert run_train("--algo", "planet", *flags).returncode == 0
    assert run_train("--algo", "planet", *flags, "--set", "tau=0.01").returncode == 0  # its latent actor is SAC's


@pytest.mark.parametrize("flags, fragment", [
    (["--eval-every", "-5"], "--eval-every must be at least 1 global step, got -5"),
    (["--eval-episodes", "0"], "--eval-episodes must be at least 1, got 0"),
    (["--set", "batch_size=0"], "batch_size=0 must lie in [1, replay_capacity]"),
    (["--threads", "-1"], "--threads takes a number >= 0 of TensorFlow threads for a one-process run"),
])
@pytest.mark.parametrize("mode", [["--algo", "dqn", "--num-workers", "0"], ["--algo", "sac"], ["--num-workers", "2"]])
def test_bad_flag_values_get_one_line_in_every_mode(tmp_path, flags, fragment, mode):
    """The one-process mode (DQN, SAC) checks the flags as a cluster's launch does: an evaluation every -5 steps
    ran one after each step."""
    env = ["--env-id", "Pendulum-v1"] if "sac" in mode else ["--env-id", "CartPole-v1"]
    assert_one_line_error(run_train(*mode, *env, *flags, "--dry-run", "--log-dir", str(tmp_path / "r")), fragment)


def test_each_machine_starts_the_tasks_whose_host_it_is_or_those_named():
    cluster = train.read_cluster(ps_hosts="10.9.0.1:2222", worker_hosts="10.9.0.1:2223,10.9.0.2:2222")
    assert train.local_tasks(cluster, is_local=lambda host: host == "10.9.0.2") == [("worker", 1)]
    assert train.local_tasks(cluster, is_local=lambda host: host == "10.9.0.1") == [("ps", 0), ("worker", 0)]
    assert train.local_tasks(cluster, "ps:0, worker:1") == [("ps", 0), ("worker", 1)]
    for bad in ("worker:2", "chief:0", "ps", "ps:x"):
        with pytest.raises(train.LaunchError, match="--tasks"):
            train.local_tasks(cluster, bad)
    with pytest.raises(train.LaunchError, match="no host of the cluster is this machine"):
        train.local_tasks(cluster, is_local=lambda host: False)
    assert train.is_this_machine("127.0.0.1") and train.is_this_machine("localhost")
    assert not train.is_this_machine("no-such-host.invalid")


def test_a_cluster_of_200_workers_over_4_machines_is_planned_but_one_machine_starts_at_most_max_tasks(tmp_path):
    hosts = ["10.9.0.1", "10.9.0.2", "10.9.0.3", "10.9.0.4"]
    workers = [f"{hosts[index % 4]}:{3000 + index}" for index in range(200)]
    spec = {"ps": ["10.9.0.1:2222", "10.9.0.2:2222"], "worker": workers}
    result = run_train("--cluster", write_cluster(tmp_path, spec), "--dry-run", "--log-dir", str(tmp_path / "r"))
    assert result.returncode == 0, result.stderr
    for host in hosts:
        assert f"# ---- machine {host}:" in result.stdout
    assert result.stdout.count("--job-name worker") == 200 and result.stdout.count("--job-name ps") == 2
    cluster = train.read_cluster(write_cluster(tmp_path, spec))
    assert len(train.local_tasks(cluster, is_local=lambda host: host == "10.9.0.3")) == 50
    crowded = {"ps": spec["ps"], "worker": [f"10.9.0.1:{3000 + index}" for index in range(train.MAX_TASKS)]}
    with pytest.raises(train.LaunchError, match=f"10.9.0.1's share of the cluster has {train.MAX_TASKS + 1} tasks"):
        train.dry_run_text(lambda tasks: None, crowded, "host")
    with pytest.raises(train.LaunchError, match=f"this machine's share of the cluster has {train.MAX_TASKS + 1}"):
        train.local_tasks(crowded, is_local=lambda host: host == "10.9.0.1")


def test_a_cluster_file_in_tf_configs_form_has_the_chief_as_worker_0(tmp_path):
    cluster = train.read_cluster(write_cluster(tmp_path, {"chief": ["c:1"], "worker": ["w:1"], "ps": ["p:1"]}))
    assert cluster == {"ps": ["p:1"], "worker": ["c:1", "w:1"]}


def test_another_machine_that_does_not_answer_is_named_before_anything_starts(tmp_path):
    with socket.socket() as listening, socket.socket() as closed, socket.socket() as full:
        listening.bind(("127.0.0.1", 0))
        listening.listen()
        closed.bind(("127.0.0.1", 0))  # bound, not listening: a connect is refused, as by a task not started yet
        full.bind(("127.0.0.1", 0))
        full.listen(0)  # its queue holds one connection; then the kernel drops connects: no answer, as a firewall
        held = socket.create_connection(full.getsockname(), timeout=2)
        up, down, silent = (f"127.0.0.1:{sock.getsockname()[1]}" for sock in (listening, closed, full))
        cluster = {"ps": [up], "worker": ["127.0.0.1:1", down]}
        train.check_reachable(cluster, [("worker", 0)], timeout=2.0)  # answered and refused: both reachable
        cluster["worker"].append(silent)
        with pytest.raises(train.LaunchError, match=f"cannot reach 127.0.0.1 \\(w-2 at {silent}: no answer in 1 s"):
            train.check_reachable(cluster, [("worker", 0)], timeout=1.0)
        held.close()
    ps_port = train.ports_for(free_exp_id_for_test(), 1)[0][0]
    result = run_train("--ps-hosts", f"127.0.0.1:{ps_port}", "--worker-hosts", "no-such-host.invalid:9", "--tasks",
                       "ps:0", "--mode", "nohup", "--log-dir", str(tmp_path / "r"), "--env-id", "CartPole-v1")
    assert_one_line_error(result, "cannot reach no-such-host.invalid (w-0 at no-such-host.invalid:9: the name "
                                  "does not resolve)")
    assert not train.run_processes(str(tmp_path / "r"))


def free_exp_id_for_test():
    return next(exp_id for exp_id in range(300, train.MAX_EXP_ID)
                if not train.port_in_use(train.ports_for(exp_id, 1)[0][0]))


def test_unknown_env_id(tmp_path):
    result = run_train("--env-id", "NoSuchGame-v9", "--log-dir", str(tmp_path), "--dry-run")
    assert_one_line_error(result, "unknown environment id 'NoSuchGame-v9'; supported:")


def test_zero_workers_is_one_process_and_a_negative_count_an_error(tmp_path):
    result = run_train("--num-workers", "0", "--env-id", "CartPole-v1", "--log-dir", str(tmp_path), "--dry-run")
    assert result.returncode == 0 and "one process: a3c:run_local (a3c) on CartPole-v1" in result.stdout
    assert_one_line_error(run_train("--num-workers", "-1", "--log-dir", str(tmp_path), "--dry-run"),
                          "--num-workers must be")


def test_bad_hyperparameter(tmp_path):
    assert_one_line_error(run_train("--set", "gamma=1.5", "--log-dir", str(tmp_path), "--dry-run"),
                          "gamma=1.5 must lie in")


def test_dry_run_with_curiosity_passes_it_to_every_worker(tmp_path):
    result = run_train("--num-workers", "8", "--unsup", "action", "--dry-run", "--log-dir", str(tmp_path))
    assert result.returncode == 0, result.stderr
    assert result.stdout.count("--unsup action") == 1 + 8  # the PS takes the same flags


def test_pixel_baselines_need_the_universe_head(tmp_path):
    result = run_train("--unsup", "state", "--designHead", "nips", "--dry-run", "--log-dir", str(tmp_path))
    assert_one_line_error(result, "--unsup state predicts images with the universe head")


def test_busy_port(tmp_path):
    exp_id = 37
    ps_port = train.ports_for(exp_id, 1)[0][0]
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", ps_port))
        holder.listen()
        result = run_train("--num-workers", "1", "--expId", str(exp_id), "--log-dir", str(tmp_path),
                           "--mode", "child", "--network", "host")
    assert_one_line_error(result, f"port(s) {ps_port} already in use")


def test_without_a_network_namespace_the_run_falls_back_to_the_host_with_a_warning(tmp_path):
    fake = tmp_path / "bin"
    fake.mkdir()
    (fake / "unshare").write_text("#!/bin/sh\necho 'unshare: unshare failed: Operation not permitted' >&2\nexit 1\n")
    (fake / "unshare").chmod(0o755)
    env = dict(os.environ, PATH=f"{fake}:{os.environ['PATH']}")
    exp_id = 36
    ps_port = train.ports_for(exp_id, 1)[0][0]
    with socket.socket() as holder:  # on the host the cluster's ports are checked again: this one is busy
        holder.bind(("127.0.0.1", ps_port))
        holder.listen()
        result = run_train("--num-workers", "1", "--expId", str(exp_id), "--log-dir", str(tmp_path / "run"),
                           "--mode", "child", "--no-tensorboard", env=env)
    warning, error = result.stderr.strip().splitlines()
    assert "cannot give the run a network namespace (unshare: unshare failed: Operation not permitted)" in warning
    assert result.returncode == 2 and f"port(s) {ps_port} already in use" in error


def test_only_the_cluster_enters_the_network_namespace(tmp_path):
    plan = train.isolate(train.create_commands("s", 2, "CartPole-v1", str(tmp_path), eval_every=100), 4321)
    entered = {p.name for p in plan.processes if p.argv[:2] == ["nsenter", "--target=4321"]}
    assert entered == {"ps", "w-0", "w-1"}
    assert {p.name for p in plan.processes} - entered == {"supervisor", "eval", "tb", "status", "htop"}


def test_tmux_missing(tmp_path):
    env = dict(os.environ, PATH=os.path.dirname(sys.executable))  # python, but no tmux
    result = run_train("--num-workers", "1", "--expId", "38", "--log-dir", str(tmp_path), env=env)
    assert_one_line_error(result, "tmux is not installed")


def test_unwritable_log_dir(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("a file where a directory should be")
    result = run_train("--log-dir", str(blocker / "run"), "--mode", "child")
    assert_one_line_error(result, "cannot write to log directory")


def test_a_truncated_config_json_stops_the_launch_and_is_kept(tmp_path):
    broken = '{"run": {"env_id": "CartPole-v1", "uns'  # the file cut short
    (tmp_path / "config.json").write_text(broken)
    result = run_train("--log-dir", str(tmp_path), "--env-id", "CartPole-v1", "--dry-run")
    assert_one_line_error(result, "config.json is unreadable")
    assert "move it away or use another --log-dir" in result.stderr
    assert (tmp_path / "config.json").read_text() == broken


def test_log_dir_of_another_environment(tmp_path):
    (tmp_path / "config.json").write_text('{"run": {"env_id": "Acrobot-v1"}}')
    result = run_train("--env-id", "CartPole-v1", "--log-dir", str(tmp_path), "--mode", "child", "--expId", "39")
    assert_one_line_error(result, "holds a run with env_id='Acrobot-v1'")


def saved_run(log_dir, **hyperparameters):
    """A config.json as a classic-control run writes it, with some hyper-parameters off their defaults."""
    config = dataclasses.replace(constants.config_from_overrides([], "classic"), **hyperparameters)
    record = {"run": {"env_id": "CartPole-v1", "design_head": None, "unsup": "none", "env_wrap": False},
              "preset": "classic", "hyperparameters": config.to_dict()}
    (log_dir / "config.json").write_text(json.dumps(record))
    return config


def test_a_relaunch_keeps_the_saved_values_and_says_so_unless_allowed(tmp_path):
    saved_run(tmp_path)
    args = ("--env-id", "CartPole-v1", "--log-dir", str(tmp_path), "--mode", "child", "--expId", "41", "--dry-run",
            "--set", "gamma=0.95", "--envs-per-worker", "4", "--set", "max_global_steps=5000")
    kept = run_train(*args)
    assert kept.returncode == 0, kept.stderr
    assert ("resuming with the saved hyper-parameters of " in kept.stdout
            and "gamma 0.99 (asked 0.95), envs_per_worker 8 (asked 4); add --allow-config-change" in kept.stdout)
    assert "gamma=0.95" not in kept.stdout and "envs_per_worker=4" not in kept.stdout, "the workers are not told"
    assert "max_global_steps=5000" in kept.stdout, "a run control is applied without asking"
    allowed = run_train(*args, "--allow-config-change")
    assert "resuming with the saved" not in allowed.stdout and "--set gamma=0.95" in allowed.stdout
    assert json.loads((tmp_path / "config.json").read_text())["hyperparameters"]["gamma"] == 0.99, "dry run"
    # the network's shapes cannot change under a checkpoint, even when asked
    result = run_train(*args, "--allow-config-change", "--set", "lstm_size=64")
    assert_one_line_error(result, "lstm_size 256 -> 64 changes the network's shapes")
    result = run_train(*args, "--allow-config-change", "--set", "mlp_units=256")
    assert_one_line_error(result, "mlp_units 64 -> 256 changes the network's shapes")


def test_a_relaunch_resumes_the_saved_hyperparameters_not_todays_defaults(tmp_path):
    # a run saved before the classic preset's adam_epsilon became 0.1 keeps its own 1e-8
    saved = saved_run(tmp_path, adam_epsilon=1e-8, learning_rate=3e-4)
    assert constants.check_relaunch(str(tmp_path), [], "auto", allow_change=False) == (saved, {}, {})
    config, applied, kept = constants.check_relaunch(str(tmp_path), ["learning_rate=1e-4"], "auto", False)
    assert config == saved and applied == {} and kept == {"learning_rate": (3e-4, 1e-4)}
    config, applied, kept = constants.check_relaunch(str(tmp_path), ["learning_rate=1e-4"], "auto", True)
    assert applied == {"learning_rate": (3e-4, 1e-4)} and kept == {} and config.adam_epsilon == 1e-8
    constants.record_config_change(str(tmp_path), config, applied)
    record = json.loads((tmp_path / "config.json").read_text())
    assert record["hyperparameters"]["learning_rate"] == 1e-4
    assert record["changes"][0]["values"] == {"learning_rate": [3e-4, 1e-4]}
    # a longer step budget is a relaunch's usual reason: it needs no permission, and is recorded all the same
    _, applied, kept = constants.check_relaunch(str(tmp_path), ["max_global_steps=1e9"], "auto", False)
    assert applied == {"max_global_steps": (saved.max_global_steps, 10**9)} and kept == {}
    # naming another preset is a change as well
    _, _, kept = constants.check_relaunch(str(tmp_path), [], "mario", allow_change=False)
    assert kept["entropy_beta"] == (0.001, 0.0005)


def test_auto_preset_keeps_adam_epsilon_small_when_a_bonus_must_be_followed():
    assert constants.resolve_preset("auto", "vector") == "classic"
    assert constants.resolve_preset("auto", "vector", unsup="action") == "classic_curiosity"
    assert constants.resolve_preset("auto", "image", "doom", "action") == "doom"
    assert constants.config_from_overrides([], "doom").envs_per_worker == 4
    assert constants.resolve_preset("auto", "image", "atari") == "atari"
    assert (constants.config_from_overrides([], "atari").envs_per_worker,
            constants.config_from_overrides([], "atari").rollout_maxlen) == (16, 5)
    assert constants.resolve_preset("auto", "image", "mario") == "mario"
    assert constants.config_from_overrides([], "classic").adam_epsilon == 0.1
    assert constants.config_from_overrides([], "classic_curiosity").adam_epsilon == 1e-8
    # the preset's own environments per worker, and --envs-per-worker (a --set) above it
    assert constants.config_from_overrides([], "classic").envs_per_worker == 8
    assert constants.config_from_overrides(["envs_per_worker=1"], "classic").envs_per_worker == 1
    assert constants.config_from_overrides([], "classic_curiosity").envs_per_worker == 1


def test_auto_preset_gives_dqn_with_a_bonus_an_update_every_step():
    """The batch of 256 every 4 steps that solves CartPole found no reward on the long corridor with a bonus, where
    64 every step did (docs/history/2026-11-25-dqn.md): DQN with a bonus on vectors gets the latter, on images the
    image preset."""
    assert constants.resolve_preset("auto", "vector", algo="dqn") == "dqn_classic"
    for unsup in ("action", "rnd", "state", "stateAenc"):
        assert constants.resolve_preset("auto", "vector", unsup=unsup, algo="dqn") == "dqn_classic_curiosity"
    assert constants.resolve_preset("auto", "vector", unsup="action", algo="sac") == "sac_classic"
    assert constants.resolve_preset("auto", "image", "atari", "action", "dqn") == "dqn"
    plain, curious = (constants.config_from_overrides([], name) for name in ("dqn_classic", "dqn_classic_curiosity"))
    assert (plain.batch_size, plain.replay_capacity, curious.batch_size, curious.replay_capacity) == (
        256, 200000, 64, 50000)
    assert plain.replay_ratio == curious.replay_ratio == 64  # the same samples per step, 4 times the updates


def test_pretrain_from_nowhere(tmp_path):
    result = run_train("--pretrain", str(tmp_path / "missing"), "--log-dir", str(tmp_path / "run"), "--dry-run")
    assert_one_line_error(result, "no such run directory or checkpoint")


def test_descendants_finds_the_whole_process_tree():
    parent = subprocess.Popen(["sh", "-c", "sleep 60 & sleep 60 & wait"])
    try:
        deadline = time.time() + 10
        while len(train.descendants([parent.pid])) < 2 and time.time() < deadline:
            time.sleep(0.05)
        below = train.descendants([parent.pid])
        assert len(below) == 2 and parent.pid not in below
        assert below <= train.descendants([os.getpid()]), "grandchildren are found too"
    finally:
        for pid in train.descendants([parent.pid]):
            os.kill(pid, signal.SIGKILL)
        parent.kill()
        parent.wait()
