#!/usr/bin/env python
"""Peers in one run: our A3C on Doom at the `doom` preset and our IMPALA in the same setting (each with and without
the ICM) back to back with sample-factory's APPO in its A3C-like setting and stable-baselines3's A2C, on the same
cores, each measured in agent steps a second (one step is one action, 4 frames of the game).

    python benchmarks/peers.py --out tmp/peers                          # 2 rounds of 60 s each
    python benchmarks/peers.py --out tmp/peers --rounds 3 --seconds 90 --only ours sample-factory --sf-batch 1280

The peers run in virtual environments of their own, which the command builds in <out>/venvs/ the first time (a
few minutes; Python 3.11, for which this machine's wheel cache holds a CPU-only torch, else PyPI's):
  sample-factory   sample-factory 2.1.1 (it needs gymnasium<1.0 and numpy<2) with vizdoom; APPO on its
                   doom_my_way_home_flat_actions (its copy of MyWayHome, 5 discrete actions), CPU only, 2 workers x
                   4 environments, an LSTM of 256, rollouts of 20 steps, batches of 160 (one rollout of each
                   environment: A3C's update), frames resized to our 42x42 (its frames stay RGB; ours are grey);
                   measured from its "Samples:" reports
  sb3              stable-baselines3 with vizdoom and opencv: A2C (its CnnPolicy, no LSTM: it has none) on our own
                   `doom` environment (envs.create_env), 8 environments in subprocesses, 20 steps each an update
Ours is benchmarks/throughput.py's training measurement: `train.py --mode child`, 2 workers x 4 environments, a
parameter server, steps counted from the workers' heartbeats after a warm-up; our IMPALA (`impala`, `impala+icm`) the
same with 2 actors x 4 environments and a learner, batches of 8 trajectories of 20 steps (160, sample-factory's
batch here), the steps its learner trained on.

Each round measures every one in turn, so drift between them is shared; `uptime` is printed before each, and a
machine busy with something else makes the figures worthless (compare ratios within one run only). Writes
<out>/peers.json (every measurement, the rounds' ratios to sample-factory) and prints a table.
"""
import argparse
import glob
import json
import os
import re
import shutil
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
WARMUP_SECS = 30.0  # every peer runs this long before its steps are counted: start-up, first updates
SAMPLE_FACTORY = ["sample-factory==2.1.1", "gymnasium<1.0", "numpy<2", "vizdoom"]
SB3 = ["stable-baselines3", "vizdoom", "opencv-python-headless"]
VENVS = {"sample-factory": SAMPLE_FACTORY, "sb3": SB3}
PYTHON = "3.11"
ENVS = 8  # every peer plays 8 environments: 2 workers x 4
ROLLOUT = 20
SF_REPORT = re.compile(r"\[(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d),\d+\].*Fps is .*Samples: (\d+)")


def find_python(version):
    """An interpreter of `version`: pyenv's, else one on the PATH."""
    found = sorted(glob.glob(os.path.expanduser(f"~/.pyenv/versions/{version}.*/bin/python")))
    found = found or [path for path in [shutil.which(f"python{version}")] if path]
    if not found:
        raise SystemExit(f"peers.py: no Python {version} found (pyenv or python{version} on the PATH)")
    return found[-1]


def build_venv(out, name):
    """<out>/venvs/<name> with its packages, built once (a marker file says it is complete); its python."""
    path = os.path.join(out, "venvs", name)
    python, marker = os.path.join(path, "bin", "python"), os.path.join(path, ".complete")
    if os.path.exists(marker):
        return python
    shutil.rmtree(path, ignore_errors=True)
    print(f"building {path} (Python {PYTHON}: {' '.join(VENVS[name])}); a few minutes, once", flush=True)
    subprocess.run([find_python(PYTHON), "-m", "venv", path], check=True)
    torch = sorted(glob.glob(f"/opt/wheels/torch-*+cpu-cp{PYTHON.replace('.', '')}-*.whl"))
    pip = [python, "-m", "pip", "install", "-q"]
    subprocess.run(pip + [torch[-1] if torch else "torch"], check=True)
    subprocess.run(pip + VENVS[name], check=True)
    open(marker, "w").close()
    return python


def uptime():
    return subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()


def ours(out, seconds, unsup, exp_id, algo="a3c"):
    """Our A3C at the doom preset, or IMPALA in the same setting: throughput.py's training measurement, agent steps/s
    trained (A3C: both workers'; IMPALA: its learner's)."""
    sys.path.insert(0, os.path.join(ROOT, "benchmarks"))
    import throughput

    overrides = (f"batch_size={ENVS}", f"rollout_maxlen={ROLLOUT}") if algo == "impala" else ()
    rates, profile = throughput.training("doom", seconds, 2, os.path.join(out, "ours"), exp_id, unsup=unsup, count=4,
                                         algo=algo, overrides=overrides)
    return {"steps_per_sec": round(sum(rates), 1), "updates_per_sec": profile["updates_per_sec"]}


def sample_factory(out, seconds, python, batch=ENVS * ROLLOUT):
    """APPO in its A3C-like setting (learner batches of `batch` steps, a multiple of the rollout) for WARMUP_SECS +
    `seconds`: agent steps/s between its first report after the warm-up and its last."""
    train_dir = os.path.join(out, "sample-factory")
    shutil.rmtree(train_dir, ignore_errors=True)
    log = os.path.join(out, "sample-factory.log")
    argv = [python, "-m", "sf_examples.vizdoom.train_vizdoom", "--env", "doom_my_way_home_flat_actions",
            "--algo", "APPO", "--device", "cpu", "--num_workers", "2", "--num_envs_per_worker", str(ENVS // 2),
            "--rnn_size", "256", "--rollout", str(ROLLOUT), "--batch_size", str(batch), "--res_w", "42",
            "--res_h", "42", "--train_for_env_steps", str(10 ** 10), "--experiment", "peers", "--train_dir", train_dir]
    with open(log, "w") as output:
        process = subprocess.Popen(argv, stdout=output, stderr=subprocess.STDOUT, start_new_session=True)
        try:
            started = time.time()
            while time.time() - started < WARMUP_SECS + seconds:
                if process.poll() is not None:
                    raise SystemExit(f"sample-factory stopped (exit {process.returncode}): see {log}")
                time.sleep(1)
        finally:
            os.killpg(process.pid, 15)
            process.wait(timeout=60)
    reports = sample_factory_reports(open(log).read())
    counted = [(when, samples) for when, samples in reports if when >= reports[0][0] + WARMUP_SECS] if reports else []
    if len(counted) < 2:
        raise SystemExit(f"sample-factory reported too little to measure in {WARMUP_SECS + seconds:.0f} s: see {log}")
    (first, before), (last, after) = counted[0], counted[-1]
    return {"steps_per_sec": round((after - before) / (last - first), 1)}


def sample_factory_reports(text):
    """[(seconds since the epoch, agent steps sampled)] of sample-factory's periodic "Fps is ... Samples: N" lines."""
    return [(time.mktime(time.strptime(stamp, "%Y-%m-%d %H:%M:%S")), int(samples))
            for stamp, samples in SF_REPORT.findall(text)]


def sb3(out, seconds, python):
    """A2C on our doom environment, in its own venv (this file's --sb3-child mode): its steps/s after the warm-up."""
    result = subprocess.run([python, os.path.abspath(__file__), "--sb3-child", str(seconds), "--out", out],
                            capture_output=True, text=True)
    lines = [line for line in result.stdout.splitlines() if line.startswith("{")]
    if result.returncode != 0 or not lines:
        raise SystemExit(f"stable-baselines3's run failed (exit {result.returncode}): {result.stderr[-2000:]}")
    return json.loads(lines[-1])


def sb3_child(seconds):
    """In the sb3 venv: A2C on our `doom` environment (channels first, as torch's convolutions take them), 8
    environments in subprocesses, n_steps 20; prints {"steps_per_sec": ...} measured after WARMUP_SECS."""
    import gymnasium
    import numpy as np
    from stable_baselines3 import A2C
    from stable_baselines3.common.callbacks import BaseCallback
    from stable_baselines3.common.vec_env import SubprocVecEnv

    sys.path.insert(0, ROOT)

    def make():
        import envs

        env = envs.create_env("doom")
        shape = env.observation_space.shape
        space = gymnasium.spaces.Box(0.0, 1.0, (shape[2], shape[0], shape[1]), np.float32)
        return gymnasium.wrappers.TransformObservation(env, lambda frame: np.transpose(frame, (2, 0, 1)), space)

    class Clock(BaseCallback):
        def __init__(self):
            super().__init__()
            self.start = time.time()
            self.mark = None

        def _on_step(self):
            now = time.time()
            if self.mark is None and now - self.start >= WARMUP_SECS:
                self.mark = (now, self.num_timesteps)
            return not (self.mark and now - self.mark[0] >= seconds)

    vec = SubprocVecEnv([make] * ENVS)
    clock = Clock()
    model = A2C("CnnPolicy", vec, n_steps=ROLLOUT, policy_kwargs={"normalize_images": False}, device="cpu")
    model.learn(total_timesteps=10 ** 10, callback=clock)
    elapsed = time.time() - clock.mark[0]
    vec.close()
    print(json.dumps({"steps_per_sec": round((model.num_timesteps - clock.mark[1]) / elapsed, 1)}), flush=True)


PEERS = ("ours", "ours+icm", "impala", "impala+icm", "sample-factory", "sb3")


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", required=True)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--seconds", type=float, default=60.0, help="each measurement's, after its warm-up")
    parser.add_argument("--only", nargs="+", choices=PEERS, default=list(PEERS))
    parser.add_argument("--exp-id", type=int, default=23, help="ours: train.py's --expId (its ports)")
    parser.add_argument("--sf-batch", type=int, default=ENVS * ROLLOUT,
                        help="sample-factory's learner batch in steps, a multiple of 20 (default: one rollout of each "
                             "environment, A3C's update)")
    parser.add_argument("--sb3-child", type=float, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.sf_batch % ROLLOUT:
        parser.error(f"--sf-batch {args.sf_batch}: sample-factory's batch must be a multiple of its rollout, {ROLLOUT}")
    if args.sb3_child is not None:
        sb3_child(args.sb3_child)
        return
    os.makedirs(args.out, exist_ok=True)
    pythons = {name: build_venv(args.out, name) for name in VENVS if name in args.only}
    measure = {"ours": lambda: ours(args.out, args.seconds, "none", args.exp_id),
               "ours+icm": lambda: ours(args.out, args.seconds, "action", args.exp_id),
               "impala": lambda: ours(args.out, args.seconds, "none", args.exp_id, "impala"),
               "impala+icm": lambda: ours(args.out, args.seconds, "action", args.exp_id, "impala"),
               "sample-factory": lambda: sample_factory(args.out, args.seconds, pythons["sample-factory"],
                                                        args.sf_batch),
               "sb3": lambda: sb3(args.out, args.seconds, pythons["sb3"])}
    rounds = []
    for number in range(args.rounds):
        measured = {}
        for name in args.only:
            load = uptime()
            measured[name] = {**measure[name](), "uptime_before": load}
            print(f"round {number + 1}: {name:<15} {measured[name]['steps_per_sec']:>8,.0f} agent steps/s   ({load})",
                  flush=True)
        if "sample-factory" in measured:
            base = measured["sample-factory"]["steps_per_sec"]
            for name, figures in measured.items():
                figures["to_sample_factory"] = round(figures["steps_per_sec"] / base, 2)
        rounds.append(measured)
        with open(os.path.join(args.out, "peers.json"), "w") as handle:
            json.dump({"command": sys.argv, "seconds": args.seconds, "warmup_secs": WARMUP_SECS,
                       "sample_factory_batch": args.sf_batch, "rounds": rounds},
                      handle, indent=1)
    print(f"\n{'':<15}" + "".join(f"{'round ' + str(n + 1):>22}" for n in range(len(rounds))))
    for name in args.only:
        cells = [f"{r[name]['steps_per_sec']:>10,.0f}" + (f" ({r[name]['to_sample_factory']:.2f}x SF)"
                                                           if "to_sample_factory" in r[name] else "") for r in rounds]
        print(f"{name:<15}" + "".join(f"{cell:>22}" for cell in cells))
    print(f"wrote {os.path.join(args.out, 'peers.json')}")


if __name__ == "__main__":
    main()
