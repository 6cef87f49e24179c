#!/usr/bin/env python
"""Live status of a run: is every worker alive, how fast is it going, how is it doing.

    python status.py --log-dir tmp/doom            # print once
    python status.py --log-dir tmp/doom --watch    # refresh every 2 s (the tmux window 'status' runs this)

    python status.py --log-dir a/run b/run         # a run across machines: each machine's log dir, as one run

Reads what the run writes anyway: each worker's heartbeat (<log-dir>/status_<i>.json, rewritten every 2 s
while it trains), the episode CSVs, eval.csv and config.json (logdir.py). A worker whose heartbeat is older than
--stale-seconds is marked STALE: hung, or dead. Imports no TensorFlow, so it starts at once.
"""
import argparse
import os
import sys
import time

import cluster
import logdir

RECENT_EPISODES = 20  # the recent mean reward and bonus are over this many latest episodes of all workers
STALE_SECONDS = 60.0  # a heartbeat older than this marks its worker stale (workers beat every 2 s; an update
#                       of a slow game can take a few seconds, a checkpoint save longer)


REPLAY_FIELDS = ("replay_size", "inserts_per_sec", "samples_per_sec", "sample_insert_ratio", "updates_per_sec")


def worker_name(heartbeat):
    """The name of the task that wrote a heartbeat (a worker's, where an older run's heartbeat has no name)."""
    return heartbeat.get("name") or cluster.task_name(cluster.WORKER.job, heartbeat["task"])


def exploration(heartbeat):
    """How an Ape-X actor explores, in brief (its learner's `actor_status`: DQN's epsilons, SAC's "random" or
    "policy"); None for any other task."""
    epsilons = heartbeat.get("epsilons")
    if epsilons:
        low, high = min(epsilons), max(epsilons)
        return f"epsilon {high:.3g}" if low == high else f"epsilon {low:.3g}-{high:.3g}"
    return heartbeat.get("exploration")


def collect(log_dirs, now=None, stale_seconds=STALE_SECONDS):
    """Everything the view shows, as a dict (pure apart from reading the run's directories: one, or one per
    machine of a run across machines)."""
    now = time.time() if now is None else now
    dirs = logdir.as_dirs(log_dirs)
    config = logdir.run_config(dirs)
    workers = []
    for beat in logdir.heartbeats(dirs):
        age = now - beat.get("time", 0.0)
        state = beat.get("state", "?")
        if state == "training" and age > stale_seconds:
            state = "STALE"
        workers.append(dict(beat, age=age, state=state))
    episodes = logdir.rows_of(dirs, "episodes_*.csv")
    episodes.sort(key=lambda row: float(row["wall_time"]))
    recent = episodes[-RECENT_EPISODES:]
    training = [worker for worker in workers if worker["state"] == "training"]
    status = {
        "log_dir": " + ".join(dirs), "env_id": config.get("run", {}).get("env_id"),
        "unsup": config.get("run", {}).get("unsup"), "algo": config.get("run", {}).get("algo", "a3c"),
        "global_step": max([worker.get("global_step", 0) for worker in workers]
                           + [int(row["global_step"]) for row in episodes[-1:]], default=0),
        "max_global_steps": max((worker.get("max_global_steps", 0) for worker in workers), default=0),
        # the Ape-X learner's steps are the transitions it received: its actors' steps again
        "steps_per_sec": sum(worker.get("steps_per_sec", 0.0) for worker in training
                             if cluster.role_of(worker_name(worker)) is not cluster.LEARNER),
        "episodes": len(episodes), "workers": workers,
        "stale": [worker["task"] for worker in workers if worker["state"] == "STALE"],
    }
    # Ape-X's learner's or a one-process run's (offpolicy.replay_status)
    learner = next((worker for worker in workers if "replay_size" in worker), None)
    if learner is not None:
        status["replay"] = {key: learner[key] for key in REPLAY_FIELDS}
    # each over the recent episodes that have it: a run resumed from an archive carried in a study's report
    # (benchmarks/reproduce.py --carry) has its earlier episodes with the report's columns only, no "reward"
    for key, column in (("recent_reward", "reward"), ("recent_bonus", "bonus"), ("recent_success", "success")):
        values = [float(row[column]) for row in recent if row.get(column)]
        if values:
            status[key] = sum(values) / len(values)
    supervisors = logdir.supervisor_records(dirs)
    processes = {name: record for supervisor in supervisors for name, record in supervisor.get("processes", {}).items()}
    for worker in workers:
        worker["restarts"] = processes.get(worker_name(worker), {}).get("restarts", 0)
    status["ps_restarts"] = sum(record.get("restarts", 0) for name, record in processes.items()
                                if cluster.role_of(name) is cluster.PS)
    outcomes = [supervisor["outcome"][1] for supervisor in supervisors if supervisor.get("outcome")]
    if outcomes:
        status["outcome"] = "; ".join(outcomes)
    evaluations = logdir.eval_rows(dirs)  # the evaluation process's, which keeps the best checkpoint
    status["best_kept"] = bool(evaluations)
    evaluations = evaluations or [{"global_step": step, "mean_reward": mean} for log_dir in dirs
                                  for step, mean in logdir.read_rewards(log_dir)]  # a one-process run's
    if evaluations:
        status["last_eval"] = evaluations[-1]
        status["best_eval"] = max(evaluations, key=lambda row: float(row["mean_reward"]))
    return status


def render(status, tensorboard_port=None):
    """The status as text, one screen."""
    lines = [f"run {status['log_dir']}   {status['algo']}   env {status['env_id']}   curiosity {status['unsup']}"
             + (f"   TensorBoard http://127.0.0.1:{tensorboard_port}" if tensorboard_port else "")]
    total = status["max_global_steps"]
    progress = f" / {total:,} ({100.0 * status['global_step'] / total:.2f}%)" if total else ""
    lines.append(f"global step {status['global_step']:,}{progress}   {status['steps_per_sec']:,.0f} steps/s in all   "
                 f"{status['episodes']:,} episodes")
    if "replay" in status:
        replay = status["replay"]
        lines.append(f"replay {replay['replay_size']:,} transitions   {replay['inserts_per_sec']:,.0f} inserts/s   "
                     f"{replay['samples_per_sec']:,.0f} samples/s   sample:insert "
                     f"{replay['sample_insert_ratio']:.1f}   learner {replay['updates_per_sec']:,.0f} updates/s")
    recent = [f"{label} {status[key]:{form}}" for key, label, form in (
        ("recent_reward", "mean reward", ".4g"), ("recent_bonus", "mean bonus", ".4g"),
        ("recent_success", "success rate", ".2f")) if key in status]
    if recent:
        lines.append(f"last {min(status['episodes'], RECENT_EPISODES)} episodes: " + "   ".join(recent))
    lines.append("")
    lines.append(f"{'worker':<8}{'state':<10}{'global step':>13}{'steps/s':>9}{'episodes':>10}{'restarts':>10}"
                 f"{'last update':>14}")
    for worker in status["workers"]:
        note = "   <- no update: hung or dead" if worker["state"] == "STALE" else ""
        if worker.get("skipped_updates"):
            note += f"   ({worker['skipped_updates']:,} NaN/inf updates skipped)"
        retried = {cause: count for cause, count in (worker.get("retried_runs") or {}).items() if count}
        if retried:
            note += f"   (session.runs retried: {', '.join(f'{n:,} {cause}' for cause, n in retried.items())})"
        if exploration(worker):
            note += f"   explores: {exploration(worker)}"
        lines.append(f"{worker_name(worker):<8}{worker['state']:<10}{worker.get('global_step', 0):>13,}"
                     f"{worker.get('steps_per_sec', 0.0):>9,.0f}{worker.get('episodes', 0):>10,}"
                     f"{worker.get('restarts', 0):>10}{worker['age']:>12.0f} s ago{note}")
    if status.get("ps_restarts"):
        lines.append(f"the parameter server(s) restarted {status['ps_restarts']} time(s)")
    if status.get("outcome"):
        lines.append(f"run over: {status['outcome']}")
    if not status["workers"]:
        lines.append("(no worker has reported yet: they write status_<i>.json once they train)")
    if "last_eval" in status:
        last, best = status["last_eval"], status["best_eval"]
        lines.append("")
        lines.append(f"evaluation at step {int(last['global_step']):,}: mean reward {float(last['mean_reward']):.4g}"
                     f"   best {float(best['mean_reward']):.4g} at step {int(best['global_step']):,}"
                     + (" (kept in best/)" if status["best_kept"] else ""))
    return "\n".join(lines)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--log-dir", required=True, nargs="+", action="extend",
                        help="the run's log directory; a run across machines: each machine's, gathered here")
    parser.add_argument("--watch", action="store_true", help="refresh until interrupted")
    parser.add_argument("--interval", type=float, default=2.0, help="seconds between refreshes with --watch")
    parser.add_argument("--stale-seconds", type=float, default=STALE_SECONDS)
    parser.add_argument("--tensorboard-port", type=int, default=None)
    args = parser.parse_args(argv)
    if args.interval <= 0 or args.stale_seconds <= 0:
        parser.error("--interval and --stale-seconds must be positive")
    for log_dir in args.log_dir:
        if not os.path.isdir(log_dir):
            print(f"status.py: error: {log_dir} does not exist: is it a run's --log-dir?", file=sys.stderr)
            return 2
    try:
        while True:
            text = render(collect(args.log_dir, stale_seconds=args.stale_seconds), args.tensorboard_port)
            if not args.watch:
                print(text)
                return 0
            print("\033[H\033[J" + time.strftime("%H:%M:%S ") + text, flush=True)
            time.sleep(args.interval)
    except KeyboardInterrupt:
        return 0


if __name__ == "__main__":
    sys.exit(main())
