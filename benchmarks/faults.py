#!/usr/bin/env python
"""Fault benchmark: a real supervised run whose processes are killed on a schedule, and how it recovers.

The run is started as a user would (`train.py --mode nohup`, so under its supervisor, in its own network
namespace). Every `--kill-every` seconds one fault is made: SIGKILL of the chief, then of the parameter
server, SIGSTOP of a worker (a hang: the supervisor must notice it), then SIGKILL of each worker in turn. For
each fault it reports

  recovered_s   seconds until every worker trains again as a process started after the fault (for a worker
                fault, the one hit) and the global step has moved past where it stood when they came back;
  steps_lost    the global step just before the fault minus the lowest one reported after it (a parameter
                server fault sends the run back to its last checkpoint); and in seconds of training at the
                rate before the fault.

At the end: whether every episode CSV parses, and whether each worker's TensorBoard events go on past the last
fault. `--soak` makes no faults and samples every process's memory each minute instead (RSS growth after the
first 5 minutes) and counts the polls at which the status view would have shown a worker STALE.

    python benchmarks/faults.py --env-id CartPole-v1 --minutes 10 --out tmp/faults-cartpole
    python benchmarks/faults.py --env-id doom --minutes 10 --out tmp/faults-doom
    python benchmarks/faults.py --env-id doom --soak --minutes 60 --out tmp/soak-doom

Writes `<out>/faults.json` (or `soak.json`) and leaves the run's log directory in `<out>/run`.
"""
import argparse
import csv
import glob
import json
import os
import signal
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
import status  # noqa: E402
from logdir import read_json  # noqa: E402
import train  # noqa: E402

POLL_SECS = 1.0
SAMPLE_SECS = 60.0  # the soak samples memory this often
WARM_UP_SECS = 300.0  # memory growth is measured from this point of a soak
RECOVERY_LIMIT_SECS = 300.0  # a fault not recovered from in this long is reported as not recovered
STOP_HANG_SECS = 120.0  # a SIGSTOPped worker is let go (SIGCONT) after this if nothing has replaced it


class Run:
    """What the benchmark reads of the run: heartbeats, the supervisor's record, the processes."""

    def __init__(self, log_dir, workers):
        self.log_dir, self.workers = log_dir, workers

    def beats(self):
        return [read_json(os.path.join(self.log_dir, f"status_{task}.json")) or {}
                for task in range(self.workers)]

    def global_step(self):
        return max((beat.get("global_step", 0) for beat in self.beats()), default=0)

    def training_since(self, moment):
        """Every worker is training, as a process whose heartbeats began after `moment`."""
        return all(self.began_training(beat, moment) for beat in self.beats())

    def worker_training_since(self, task, moment):
        return self.began_training(self.beats()[task], moment)

    @staticmethod
    def began_training(beat, moment):
        return beat.get("state") == "training" and beat.get("started", 0) > moment

    def pids(self):
        """{"ps": pid, "w-0": pid, ...} of the processes running now."""
        return train.run_roles(self.log_dir)


def schedule(workers, count):
    """The faults to make, in order: the chief, the ps, a hang, then every worker in turn. Spread so that no
    process fails the supervisor's limit of 5 times in 10 minutes (a ps fault makes every worker fail once)."""
    names = [f"w-{task}" for task in range(workers)]
    plan = ["kill w-0", "kill ps", f"stop {names[1 % workers]}"]
    turn = 1
    while len(plan) < count:
        plan.append(f"kill {names[turn % workers]}")
        turn += 1
    return plan[:count]


def make_fault(run, fault):
    """Kill or stop the process the fault names; (pid, global step just before)."""
    action, name = fault.split()
    pid = run.pids().get(name)
    if pid is None:
        return None, None
    before = run.global_step()
    os.kill(pid, signal.SIGKILL if action == "kill" else signal.SIGSTOP)
    return pid, before


def recover(run, fault, moment, before, rate, pid):
    """Wait for the run to recover from a fault made at `moment`; its record."""
    _, name = fault.split()
    lowest, back_at, back_step = before, None, None
    deadline = moment + RECOVERY_LIMIT_SECS
    while time.time() < deadline:
        time.sleep(POLL_SECS)
        step = run.global_step()
        lowest = min(lowest, step)
        back = (run.training_since(moment) if name == "ps"
                else run.worker_training_since(int(name[2:]), moment))
        if back and back_at is None:
            back_at, back_step = time.time(), step
        if back_at is not None and step > back_step:
            break
        if fault.startswith("stop") and time.time() - moment > STOP_HANG_SECS and os.path.exists(f"/proc/{pid}"):
            os.kill(pid, signal.SIGCONT)  # nothing replaced it: let it go, and report the fault unrecovered
    recovered = back_at is not None and run.global_step() > (back_step or 0)
    steps_lost = max(before - lowest, 0)
    return {"fault": fault, "at_global_step": before, "recovered": recovered,
            "recovered_s": round(time.time() - moment, 1) if recovered else None,
            "steps_lost": steps_lost, "seconds_lost": round(steps_lost / rate, 1) if rate else None}


def csvs_parse(log_dir):
    """Every episode CSV reads with every row complete (a SIGKILL mid-write must not leave a broken line)."""
    problems = []
    for path in sorted(glob.glob(os.path.join(log_dir, "episodes_*.csv"))):
        with open(path, newline="") as handle:
            rows = list(csv.reader(handle))
        width = len(rows[0]) if rows else 0
        problems += [f"{os.path.basename(path)} line {number}" for number, row in enumerate(rows[1:], 2)
                     if len(row) != width]
    return problems


def last_event_steps(log_dir, workers):
    """Each worker's highest step in its TensorBoard event files."""
    import tensorflow as tf

    steps = {}
    for task in range(workers):
        highest = 0
        for path in glob.glob(os.path.join(log_dir, f"train_{task}", "events.out.tfevents.*")):
            try:
                for event in tf.compat.v1.train.summary_iterator(path):
                    highest = max(highest, event.step)
            except tf.errors.DataLossError:  # the file being written ends mid-record
                pass
        steps[f"w-{task}"] = highest
    return steps


def launch(args, log_dir):
    argv = [sys.executable, os.path.join(ROOT, "train.py"), "--mode", "nohup", "--num-workers", str(args.workers),
            "--env-id", args.env_id, "--unsup", args.unsup, "--log-dir", log_dir, "--expId", str(args.exp_id),
            "--no-tensorboard", *args.extra]
    result = subprocess.run(argv, capture_output=True, text=True, timeout=120)
    if result.returncode != 0:
        sys.exit(f"faults.py: the run did not start: {(result.stderr or result.stdout).strip().splitlines()[-1]}")


def wait_until_training(run, seconds=300.0):
    deadline = time.time() + seconds
    while time.time() < deadline:
        if all(beat.get("state") == "training" for beat in run.beats()) and run.global_step() > 0:
            return
        time.sleep(POLL_SECS)
    sys.exit(f"faults.py: the workers were not training after {seconds:.0f} s; see {run.log_dir}/*.out")


def rate_over(run, seconds):
    """Global steps per second over the next `seconds`."""
    first, start = run.global_step(), time.time()
    time.sleep(seconds)
    return (run.global_step() - first) / (time.time() - start)


def faults(args, run):
    end = time.time() + args.minutes * 60
    plan = schedule(args.workers, max(int(args.minutes * 60 // args.kill_every) - 1, 1))
    records = []
    for fault in plan:
        if time.time() + args.kill_every > end:
            break
        time.sleep(args.kill_every / 2)
        rate = rate_over(run, args.kill_every / 2)  # the rate just before the fault, for steps lost in seconds
        moment = time.time()
        pid, before = make_fault(run, fault)
        if pid is None:
            records.append({"fault": fault, "recovered": False, "note": "no such process at the time"})
            continue
        record = recover(run, fault, moment, before, rate, pid)
        records.append(record)
        print(f"{time.strftime('%H:%M:%S')} {fault:10s} at step {before:>9,}: "
              + (f"recovered in {record['recovered_s']:5.1f} s" if record["recovered"] else "NOT recovered")
              + f", {record['steps_lost']:,} steps lost ({record['seconds_lost']} s)", flush=True)
    while time.time() < end:
        time.sleep(POLL_SECS)
    return {"faults": records}


def soak(args, run):
    start = time.time()
    end = start + args.minutes * 60
    samples, stale_polls, polls, next_sample = [], 0, 0, start
    while time.time() < end:
        if time.time() >= next_sample:
            memory = train.run_memory_mb(run.log_dir)
            samples.append({"minute": round((time.time() - start) / 60, 1), "global_step": run.global_step(),
                            "rss_mb": memory})
            print(f"{time.strftime('%H:%M:%S')} minute {samples[-1]['minute']:5.1f}, global step "
                  f"{samples[-1]['global_step']:>10,}, RSS MB {memory}, stale polls {stale_polls}", flush=True)
            next_sample += SAMPLE_SECS
        polls += 1
        stale_polls += bool(status.collect(run.log_dir)["stale"])
        time.sleep(POLL_SECS)
    base = next((sample for sample in samples if sample["minute"] * 60 >= WARM_UP_SECS), samples[0])
    growth = {name: round(samples[-1]["rss_mb"].get(name, 0) / mb - 1, 3)
              for name, mb in base["rss_mb"].items() if mb and not name.endswith(" engines")}
    return {"samples": samples, "rss_growth_after_warm_up": growth, "stale_polls": stale_polls, "polls": polls}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--env-id", default="CartPole-v1")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--unsup", default="none")
    parser.add_argument("--minutes", type=float, default=10.0)
    parser.add_argument("--kill-every", type=float, default=90.0, help="seconds between faults")
    parser.add_argument("--soak", action="store_true", help="no faults: memory and STALE over --minutes")
    parser.add_argument("--exp-id", type=int, default=60)
    parser.add_argument("--out", default="tmp/faults")
    parser.add_argument("extra", nargs="*", help="more train.py flags, after --")
    args = parser.parse_args(argv)
    if args.workers < 1 or args.minutes <= 0 or args.kill_every < 10:
        parser.error("--workers >= 1, --minutes > 0 and --kill-every >= 10 are needed")
    log_dir = os.path.abspath(os.path.join(args.out, "run"))
    if os.path.exists(log_dir):
        sys.exit(f"faults.py: {log_dir} exists: remove it or choose another --out")
    os.makedirs(args.out, exist_ok=True)
    run = Run(log_dir, args.workers)
    launch(args, log_dir)
    try:
        wait_until_training(run)
        print(f"{time.strftime('%H:%M:%S')} training; {'soak' if args.soak else 'faults'} for {args.minutes:g} min "
              f"in {log_dir}", flush=True)
        result = soak(args, run) if args.soak else faults(args, run)
    finally:
        subprocess.run(["bash", os.path.join(log_dir, "kill.sh")], capture_output=True, timeout=180)
    result.update(env_id=args.env_id, workers=args.workers, unsup=args.unsup, minutes=args.minutes,
                  csv_problems=csvs_parse(log_dir), event_steps=last_event_steps(log_dir, args.workers),
                  supervisor=read_json(os.path.join(log_dir, "supervisor.json")))
    if not args.soak and result["faults"]:
        last = max(record.get("at_global_step", 0) for record in result["faults"])
        result["events_go_on"] = all(step > last for step in result["event_steps"].values())
    name = "soak.json" if args.soak else "faults.json"
    with open(os.path.join(args.out, name), "w") as handle:
        json.dump(result, handle, indent=2)
    print(json.dumps({key: value for key, value in result.items() if key not in ("samples", "supervisor")},
                     indent=1))
    print(f"wrote {os.path.join(args.out, name)}")


if __name__ == "__main__":
    main()
