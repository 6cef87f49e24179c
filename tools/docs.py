#!/usr/bin/env python
"""The docs' generated parts: the README's support matrix, results table, speed line and sample outputs; the
configuration reference (every flag, hyper-parameter and preset); the algorithm pages' results. Each is a block of
a page between two markers,

    <!-- generated: NAME -->
    ...
    <!-- end generated -->

made by GENERATORS[NAME] from the code (its tables, its parser, its printing functions) or from the committed results
file it names, so that a figure shown on several pages comes from one file and a page cannot drift from it.

    python tools/docs.py            # rewrite every page's blocks
    python tools/docs.py --check    # exit 1, naming each block that differs from what it would be made (a test)
"""
import argparse
import contextlib
import datetime
import functools
import glob
import io
import json
import os
import re
import statistics
import sys
import textwrap

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
import algorithms  # noqa: E402
import constants  # noqa: E402
import logdir  # noqa: E402
import status  # noqa: E402
import train  # noqa: E402

BLOCK = re.compile(r"(<!-- generated: ([\w-]+) -->\n)(.*?)(<!-- end generated -->)", re.S)
RESULTS = os.path.join(ROOT, "docs", "results")
DOOM_REPORT = "docs/results/doom-k4"
MARIO_REPORT = "docs/results/mario-study"
BONUS_REPORT = "docs/results/minigrid/bonuses"  # the bonus comparison (reproduce.py --method ...) on MiniGrid
DOOM_TASKS = ("doom", "doomSparse", "doomVerySparse")
DOOM_STARTS = {"doom": "a random one of the 17 spawn spots", "doomSparse": "spawn spot 10 (the paper: ~270 steps "
               "away, on a map it modified)", "doomVerySparse": "spawn spot 15, the farthest (the paper: ~350 steps, "
               "on its modified map)"}


def pages():
    return [os.path.join(ROOT, "README.md")] + sorted(glob.glob(os.path.join(ROOT, "docs", "**", "*.md"),
                                                                recursive=True))


def load(path):
    with open(os.path.join(ROOT, path)) as handle:
        return json.load(handle)


def short(steps):
    return f"{steps / 1e6:g}M" if steps >= 1_000_000 else f"{steps / 1e3:g}k"


def span(values, form="{:,.0f}"):
    low, high = min(values), max(values)
    return form.format(low) if low == high else f"{form.format(low)}-{form.format(high)}"


def table(head, rows):
    return "\n".join(["| " + " | ".join(head) + " |", "|---" * len(head) + "|"]
                     + ["| " + " | ".join(row) + " |" for row in rows])


# ---------------------------------------------------------------- the README's samples, made by the code

SAMPLE_COMMAND = ["--num-workers", "2", "--unsup", "rnd", "--log-dir", "/tmp/rnd-doom"]
# A run's heartbeats and episodes as status.collect reads them (what the 'status' window showed of a real run), for
# status.render to draw: the sample is the view's own layout
SAMPLE_STATUS = {
    "log_dir": "/tmp/rnd-doom", "algo": "a3c", "env_id": "doom", "unsup": "rnd", "max_global_steps": 100_000_000,
    "global_step": 70_145, "steps_per_sec": 1_920.0, "episodes": 134, "recent_reward": -0.21, "recent_bonus": 1.146,
    "recent_success": 0.0,
    "workers": [{"task": 0, "state": "training", "global_step": 70_145, "steps_per_sec": 1_015.0, "episodes": 67,
                 "restarts": 0, "age": 1.0},
                {"task": 1, "state": "training", "global_step": 68_865, "steps_per_sec": 905.0, "episodes": 66,
                 "restarts": 0, "age": 1.0}]}


def launch_sample():
    args = train.parse_args(SAMPLE_COMMAND)
    args.exp_name = args.algo
    train.check_args(args)
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        train.announce(train.plan_of(args), isolated=True)
    return "```\n$ .venv/bin/python train.py " + " ".join(SAMPLE_COMMAND) + "\n" + printed.getvalue() + "```"


# The 'status' window of a run with an evaluation process, one of its workers stopped (kill -STOP) for 68 s
WATCH_STATUS = {
    **SAMPLE_STATUS, "log_dir": "tmp/doom", "unsup": "action", "global_step": 85_207, "steps_per_sec": 303.0,
    "episodes": 169, "recent_bonus": 0.3704,
    "workers": [{"task": 0, "state": "training", "global_step": 85_022, "steps_per_sec": 138.0, "episodes": 99,
                 "restarts": 0, "age": 2.0},
                {"task": 1, "state": "STALE", "global_step": 12_080, "steps_per_sec": 169.0, "episodes": 10,
                 "restarts": 0, "age": 68.0}],
    "last_eval": {"global_step": 71_919, "mean_reward": -0.21}, "best_eval": {"global_step": 0, "mean_reward": -0.21},
    "best_kept": True}


def status_watch_sample():
    return ("```\n$ .venv/bin/python status.py --log-dir tmp/doom --tensorboard-port 6006\n"
            + status.render(WATCH_STATUS, tensorboard_port=6006) + "\n```")


def status_sample():
    return ("```\n$ .venv/bin/python status.py --log-dir /tmp/rnd-doom        # what the tmux window 'status' shows\n"
            + status.render(SAMPLE_STATUS) + "\n```")


# ---------------------------------------------------------------- the support matrix, from the tables

def placements(row):
    cluster = " + ".join(f"{'1' if role.single or role is row.serving else 'N'} {role.title}"
                         + ("s" if not role.single and role is not row.serving else "") for role in row.roles)
    return cluster


def support_matrix():
    pixel = set(constants.PIXEL_CURIOSITY)
    bonuses = ", ".join(f"`{name}`" + ("*" if name in pixel else "") for name in constants.CURIOSITY_CHOICES)
    rows = [[f"`{row.name}`", ", ".join(row.actions), bonuses if row.bonuses else "`none`",
             "yes" if row.local else "no", placements(row) if row.clusters else "no",
             "0" if row.default_workers == 0 else "one per core"]
            for row in algorithms.ALGORITHMS.values()]
    return (table(["`--algo`", "actions", "`--unsup` bonuses", "one process (`--num-workers 0`)",
                   "cluster (`--num-workers N`)", "default `--num-workers`"], rows)
            + "\n\n\\* on image observations only: they predict the next frame's pixels.")


# ---------------------------------------------------------------- results, from the committed files

def doom_line(task, results):
    methods, verdict = results["tasks"][task], results["verdicts"][task]
    by = reproduce_paper()[task]["by"]
    cells = []
    for method, label in (("icm", "ICM"), ("a3c", "A3C")):
        seeds = list(methods[method]["seeds"].values())
        at_end = [seed["success_at"]["5000000"] for seed in seeds]
        solved = sum(seed.get("sustained_from") is not None and seed["sustained_from"] <= by for seed in seeds)
        cells.append(f"{label} {span(at_end, '{:.2f}')}, {solved} of {len(seeds)} solved for good by {short(by)}")
    paper = reproduce_paper()[task]
    return [f"`{task}`", DOOM_STARTS[task], "2 workers x 4 envs, 5M steps, 3 seeds a method",
            "success over the last 100 episodes at 5M; solved for good (every 1,000 episodes in a row >= 90% to the "
            "end) by the paper's step", "; ".join(cells), f"ICM {paper['icm']}; A3C {paper['a3c']} (20 workers x 1 env; "
            "steps read off its mean curves)", verdict["verdict"] + (" (each seed's steps against the paper's mean "
                                                                       "curves, from other starts)"
                                                                       if verdict["verdict"] == "beaten" else "")]


def reproduce_module():
    sys.path.insert(0, os.path.join(ROOT, "benchmarks"))
    import reproduce

    return reproduce


def reproduce_paper():
    return reproduce_module().PAPER


def minigrid_line(task, results):
    """A MiniGrid task of the bonus comparison: per method its seeds' mean return at the last milestone, the seeds
    at RIDE's level and when; RIDE's figure beside it; the best method's lead and its test as the verdict."""
    reproduce = reproduce_module()
    methods, level, compared = results["tasks"][task], reproduce.RIDE_LEVELS[task], results["compared"].get(task)
    last = max(reproduce.task_milestones(task, results["milestones"]))  # the step summarise compared at
    # the methods with a seed run to its budget and a return at `last`: the line's methods
    finished = {method: summary for method, summary in methods.items() if summary["return_at"][str(last)]
                and summary["runs_finished"]}
    cells = []
    for method, summary in finished.items():
        returns = summary["return_at"][str(last)]
        at = (f", median {reproduce.steps_or_dash(summary['median_level_from'])}"
              if summary.get("median_level_from") else "")
        cells.append(f"{reproduce.method_label(method, task)} {returns['mean']:.2f} ({returns['min']:.2f}-"
                     f"{returns['max']:.2f}), {summary['runs_at_level']} of {summary['runs_finished']} at the level{at}")
    setups = {setup for summary in finished.values() for setup in summary["setups"]}
    seeds = sorted({summary["runs_finished"] for summary in finished.values()})
    paper = "; ".join(f"{reproduce.method_label(method, task)} {frames}" for method, frames in level["frames"].items())
    # untested, the method with the most seeds run and of those the highest return: one seed does not outrank three
    best = compared["best"] if compared else max(finished, key=lambda m: (
        finished[m]["runs_finished"], finished[m]["return_at"][str(last)]["mean"]))
    summary, label = methods[best], reproduce.method_label(best, task)
    verdict = (f"{label}, the highest return" + ("" if compared else " of the methods with the most seeds run")
               + f": {summary['runs_at_level']} of {summary['runs_finished']} seeds at RIDE's "
               f"level" + (f" by {reproduce.steps_or_dash(summary['median_level_from'])} (median)"
                           if summary.get("median_level_from") else "")
               + f", its curve in the figure {level['frames'].get(best, 'not drawn')}; ")
    if compared:
        family = sum(test["p"] is not None for test in compared["others"].values())  # Holm's adjusts for it
        verdict += "its lead " + "; ".join(
            f"over {reproduce.method_label(method, task)} {test['difference']:.3f} +- {test['error']:.3f}"
            + ((f" (Welch p {p_text(test['p'])}" + (f", Holm's {p_text(test['p_holm'])}" if family > 1 else "") + ")")
               if test["p"] is not None else " (no spread to test)")
            for method, test in compared["others"].items())
    else:
        verdict += f"not tested: fewer than two methods with {reproduce.SEEDS_TO_JUDGE} seeds run to the budget"
    return [f"`{task}`", "a new layout every episode",
            f"{', '.join(sorted(setups))} envs, {short(last)} steps, {span(seeds, '{}')} seed{'s' if seeds != [1] else ''} a method",
            f"the mean return (RIDE's measure) of the last 100 episodes at {short(last)}, the seeds' mean (lowest-"
            f"highest); seeds at RIDE's level ({level['return']:.2f}, within {reproduce.LEVEL_READING}) and the "
            "median step", "; ".join(cells), f"RIDE's Figure {level['panel']} (IMPALA, 40 actors; frames to the "
            f"level read off its mean curves): {paper}", verdict]


def tested(lead):
    """The Welch test of the ICM's lead over A3C, in brief."""
    if lead["p"] is None:
        return "the seeds do not vary: no test"
    return (f"Welch p = {lead['p']:.2f} ({lead['seeds'][0]} seeds a method "
            + ("separate" if lead["p"] < 0.05 else "do not separate") + " the means)")


def mario_line(results):
    methods, verdict = results["tasks"]["mario"], results["verdicts"]["mario"]
    lead = verdict["lead"]
    icm, a3c = (methods[m]["distance_at"]["1500000"] for m in ("icm", "a3c"))
    goals = lead["goals"]
    return ["`mario` 1-1, `--noReward`", "the level's start", "2 workers x 1 env, 1.5M steps, 3 seeds a method",
            "distance (the game's x) over the last 100 episodes at 1.5M, the seeds' mean +- standard error; episodes "
            "that reached the flag",
            f"ICM {icm['mean']:.0f} +- {icm['error']:.0f}, A3C {a3c['mean']:.0f} +- {a3c['error']:.0f}: the lead "
            f"{lead['difference']:.0f} +- {lead['error']:.0f}, " + tested(lead)
            + f"; the flag in {goals['icm']['goals']} of {goals['icm']['episodes']:,} ICM episodes, "
            f"{goals['a3c']['goals']} of {goals['a3c']['episodes']:,} A3C",
            "ICM 711 +- 59 (Table 1; no A3C without reward)", verdict["verdict"] + " (the ICM's distance)"]


def time_to_solve(path):
    """A cartpole_time_to_solve.py file in brief: seeds solved, at which steps and seconds."""
    results = load(path)["results"]
    solved = [r for r in results if r["solved"]]
    text = f"solved in {len(solved)} of {len(results)} seeds"
    if solved:
        text += (f", at {span([r['global_step'] / 1e3 for r in solved], '{:.1f}k')} steps "
                 f"({span([r['seconds'] for r in solved])} s)")
    return text


def solved_steps(path):
    """A time-to-solve file's seeds solved and at which steps (its seconds left out: such runs shared the cores)."""
    results = load(path)["results"]
    solved = [r for r in results if r["solved"]]
    return (f"{len(solved)} of {len(results)} seeds, at {span([r['global_step'] / 1e3 for r in solved], '{:.1f}k')} "
            "steps")


def first_greedy_solve(path):
    """A time-to-solve file whose greedy evaluations are the measure: the step each seed's first solved."""
    results = load(path)["results"]
    steps = [r["first_eval_solved_step"] for r in results if r.get("first_eval_solved_step")]
    return (f"greedy evaluation at the solved mean in {len(steps)} of {len(results)} seeds, first at "
            f"{span([s / 1e3 for s in steps], '{:.0f}k')} steps")


def exploration(path, labels):
    """A curiosity_exploration.py file in brief: per configuration, the seeds that reached the goal, and when."""
    results = load(path)["results"]
    parts = []
    for config, label in labels.items():
        runs = [r for r in results if r["config"] == config]
        found = [r["first_success_step"] for r in runs if r["successes"]]
        parts.append(f"{label} {len(found)} of {len(runs)}"
                     + (f" (first at {span([s / 1e3 for s in found], '{:.1f}k')})" if found else ""))
    return "; ".join(parts)


def pong(path):
    data = load(path)
    parts = [f"{r['replay']} {r['mean_return_at'][str(data['steps'])]:.1f}" for r in data["results"]]
    return f"mean return of the last {data['window']} episodes at {short(data['steps'])}: " + ", ".join(parts)


# (algorithm, task, what was compared, set-up, measure, result, file): the other learners' results
PLANET_PENDULUM = "docs/results/planet/pendulum-state/planet_learning.json"
IMPALA_DOOM_PRESET = "docs/results/impala/doomSparse-icm-adam"  # reproduce.py's report of IMPALA at impala_doom
IMPALA_DOOM_RMSPROP = "docs/results/impala/doomSparse-icm-b4-eps"  # the same with policy_optimizer rmsprop
PLANET_COVERAGE = "docs/results/planet/coverage/coverage.json"  # benchmarks/exploration_coverage.py
PLANET_PIXELS = "docs/results/planet/pendulum-pixels/planet_learning.json"
PLANET_REACHER = "docs/results/planet/reacher-pixels/planet_learning.json"


def last_evaluations(path):
    """Each method's evaluations at a planet_learning.py file's last step: the seeds' mean (min to max)."""
    data = load(path)
    last = str(data["steps"])
    return "; ".join(f"{method} {values['at_steps'][last][0]:,.0f} ({values['at_steps'][last][1]:,.0f} to "
                     f"{values['at_steps'][last][2]:,.0f})" for method, values in data["summary"].items()
                     if last in values["at_steps"])


def p_text(p):
    return reproduce_module().p_text(p)


def coverage_line(path):
    """Each explorer's mean share of the grid visited, with Welch's p against Plan2Explore's, and the seeds."""
    data = load(path)
    seeds = sorted({values["runs"] for values in data["methods"].values()})
    return f"{'/'.join(map(str, seeds))} seeds each: " + "; ".join(f"{method} {values['mean']:.1%}" + (
        f" (p {p_text(values['welch_p_against_plan2explore'])})" if "welch_p_against_plan2explore" in values else "")
        for method, values in data["methods"].items())


OTHER_RESULTS = (
    ("a3c", "`CartPole-v1`", "A3C, one process", "`classic` preset, 8 envs", "mean of 475 over 100 episodes (solved)",
     lambda: time_to_solve("docs/results/a3c-one-process/time_to_solve.json"),
     "docs/results/a3c-one-process/time_to_solve.json"),
    ("dqn", "`CartPole-v1`", "DQN, one process, prioritized against uniform replay, 3 seeds each", "`dqn_classic`",
     "mean of 475 over 100 episodes", lambda: "prioritized " + solved_steps(
         "docs/results/dqn/per-vs-uniform-cartpole/prioritized.json") + "; uniform " + solved_steps(
         "docs/results/dqn/per-vs-uniform-cartpole/uniform.json"),
     "docs/results/dqn/per-vs-uniform-cartpole/"),
    ("dqn", "`CartPole-v1`", "Ape-X DQN: a learner, 2 actors", "`dqn_classic`, 2 cores", "mean of 475 over 100 episodes",
     lambda: time_to_solve("docs/results/dqn/apex-cartpole-preset-batch256/time_to_solve.json"),
     "docs/results/dqn/apex-cartpole-preset-batch256/time_to_solve.json"),
    ("dqn", "`PongDeterministic-v4`", "DQN, prioritized against uniform replay, 1 seed each", "`dqn` preset, 3M steps",
     "the game's return", lambda: pong("docs/results/dqn/pong-per-vs-uniform/replay_learning.json"),
     "docs/results/dqn/pong-per-vs-uniform/replay_learning.json"),
    ("dqn", "`CorridorLong-v0`", "DQN alone, + ICM, + RND, 3 seeds each", "`dqn_classic_curiosity`, 30k steps",
     "seeds that reached the goal",
     lambda: exploration("docs/results/dqn/corridorlong-dqn-icm-rnd-30k.json",
                         {"dqn": "DQN", "dqn_icm": "+ ICM", "dqn_rnd": "+ RND"}),
     "docs/results/dqn/corridorlong-dqn-icm-rnd-30k.json"),
    ("impala", "`CartPole-v1`", "IMPALA: a learner, 2 actors", "`impala_classic`, 2 cores shared with other runs",
     "mean of 475 over 100 episodes",
     lambda: time_to_solve("docs/results/impala/cartpole-2-actors/time_to_solve.json"),
     "docs/results/impala/cartpole-2-actors/time_to_solve.json"),
    ("impala", "`doomSparse`", "IMPALA + ICM: a learner, 2 actors x 8, beside A3C + ICM's seeds at the `doom` "
     "preset", "`impala_doom`, 5M steps", "seeds solved for good (every 1,000 episodes in a row >= 90% to the end)",
     lambda: doom_learners_line("IMPALA", IMPALA_DOOM_PRESET), f"{IMPALA_DOOM_PRESET}/results.md"),
    ("planet", "`Pendulum-v1`", "PlaNet's planner, one process, 3 seeds", "`planet_cpu`, action_repeat 2, 3,000 steps",
     "mean of -200 over 10 episodes", lambda: planet_solved(PLANET_PENDULUM), PLANET_PENDULUM),
    ("planet", "`Pendulum-v1`", "Plan2Explore against a random policy and SAC + ICM / + disagreement without "
     "reward", "`planet_cpu`, 3,000 steps", "share of a 24 x 24 grid of (angle, velocity) visited",
     lambda: coverage_line(PLANET_COVERAGE), PLANET_COVERAGE),
    ("planet", "`Pendulum-v1-pixels`", "PlaNet's planner, SAC on its latent state and SAC on the frames, 3 seeds "
     "each", "`planet_cpu_pixels`, 5,000 steps", "mean return of 5 evaluation episodes at 5,000 steps",
     lambda: last_evaluations(PLANET_PIXELS), PLANET_PIXELS),
    ("planet", "`Reacher-v5-pixels`", "PlaNet's planner, SAC on its latent state and SAC on the frames, 3 seeds "
     "each", "`planet_cpu_pixels`, 4,000 steps", "mean return of 5 evaluation episodes at 4,000 steps (an arm that "
     "never moves: -11.5)", lambda: last_evaluations(PLANET_REACHER), PLANET_REACHER),
    ("sac", "`Pendulum-v1`", "SAC, one process, 3 seeds", "`sac_classic`", "mean of -200 over 10 episodes",
     lambda: time_to_solve("docs/results/sac/pendulum-3seeds.json"), "docs/results/sac/pendulum-3seeds.json"),
    ("sac", "`CartPole-v1`", "SAC, discrete actions, 3 seeds", "`sac_classic`, 35k steps", "greedy evaluation solved",
     lambda: first_greedy_solve("docs/results/sac/cartpole-discrete-3seeds-35k-quiet.json"),
     "docs/results/sac/cartpole-discrete-3seeds-35k-quiet.json"),
    ("sac", "`MountainCarContinuous-v0`", "SAC alone, + ICM, + RND, 3 seeds each", "`sac_classic`, 20k steps",
     "seeds that reached the flag",
     lambda: exploration("docs/results/sac/mountaincarcontinuous-relabel/curiosity_exploration.json",
                         {"sac": "SAC", "sac_icm": "+ ICM", "sac_rnd": "+ RND"}),
     "docs/results/sac/mountaincarcontinuous-relabel/curiosity_exploration.json"),
)


def link(path, page_dir):
    return f"[{os.path.basename(path.rstrip('/')) or path}]({os.path.relpath(os.path.join(ROOT, path), page_dir)})"


def results_table(page_dir):
    """The README's results: a line a task, saying what was compared, the set-up, the measure, and the file."""
    return study_table(page_dir, DOOM_TASKS + ("mario", "minigrid"))


def study_table(page_dir, tasks):
    """The results table's lines of the study's `tasks`."""
    doom_tasks = [task for task in tasks if task in DOOM_TASKS]
    doom = load(f"{DOOM_REPORT}/results.json") if doom_tasks else None
    rows = [doom_line(task, doom) + [link(f"{DOOM_REPORT}/results.md", page_dir)] for task in doom_tasks]
    if "mario" in tasks:
        rows.append(mario_line(load(f"{MARIO_REPORT}/results.json")) + [link(f"{MARIO_REPORT}/results.md", page_dir)])
    if "minigrid" in tasks:
        bonuses = load(f"{BONUS_REPORT}/results.json")
        rows += [minigrid_line(task, bonuses) + [link(f"{BONUS_REPORT}/results.md", page_dir)]
                 for task in bonuses["tasks"]]
    return table(["task", "start", "set-up", "measure", "here", "the paper", "verdict", "file"], rows)


def random_agents(page_dir):
    """Each study task's random agent: its episodes, its seed (a task's own), what it reached, and its file."""
    rows = []
    for report, task in [(DOOM_REPORT, task) for task in DOOM_TASKS] + [(MARIO_REPORT, "mario")]:
        path = f"{report}/{task}/random_agent.json"
        summary = load(path)
        reached = (f"the vest in {summary['success_rate']:.0%} of them" if task != "mario"
                   else f"{summary['mean_distance']:.0f} on average")
        rows.append([f"`{task}`", f"{summary['episodes']}", str(summary.get("seed", 0)), reached, link(path, page_dir)])
    return table(["task", "episodes", "seed", "reached", "file"], rows)


def other_results(page_dir, algo=None):
    """The other learners' results (one algorithm's where `algo` says)."""
    rows = [[task, compared, setup, measure, result(), link(path, page_dir)]
            for name, task, compared, setup, measure, result, path in OTHER_RESULTS if algo in (None, name)]
    return table(["task", "compared", "set-up", "measure", "result", "file"], rows)


def speed_line(page_dir):
    path = "docs/results/doom-dense/k4/throughput-k4-k16.json"
    runs = {r["envs_per_worker"]: r for r in load(path)["results"] if r["measurement"] == "training"}
    k4, k16 = runs[4]["aggregate_steps_per_sec"], runs[16]["aggregate_steps_per_sec"]
    return textwrap.fill(f"Speed, 2 workers on 2 cores with the ICM, in one run ({link(path, page_dir)}): {k4:,.0f} "
                         f"environment steps/s at the `doom` preset's 4 environments a worker, {k16:,.0f} at 16 "
                         f"({k16 / k4:.2f}x, with a quarter of the updates per step).", width=118,
                         break_long_words=False, break_on_hyphens=False)


SCALING = ("docs/results/scaling/16-cores-impala-icm.json", "docs/results/scaling/16-cores-a3c-icm.json",
           "docs/results/scaling/16-cores-impala-none.json")  # the first two from one run of the device's script


def scaling_table(page_dir):
    """Training steps/s with 1..N players on the 16-core machine: each run's against N times its one player's, from
    benchmarks/throughput.py's files."""
    rows = []
    for path in SCALING:
        data = load(path)
        runs = sorted((r for r in data["results"] if r["measurement"] == "training"), key=lambda r: r["workers"])
        one = runs[0]["aggregate_steps_per_sec"] / runs[0]["workers"]
        players = "actors" if data.get("algo") == "impala" else "workers"
        bonus = "the ICM" if data["unsup"] == "action" else data["unsup"]
        for run in runs:
            profile = run["profile"]
            busy = profile["ps_cpu_percent"]
            rows.append([f"`{data.get('algo', 'a3c')}`, {bonus}", f"{run['workers']} {players[:-1] if run['workers'] == 1 else players} x {run['envs_per_worker']}",
                         f"{run['aggregate_steps_per_sec']:,.0f}",
                         f"{run['aggregate_steps_per_sec'] / (one * run['workers']):.2f}",
                         f"{profile['updates_per_sec']:.1f}",
                         ", ".join(f"{name} {percent}%" for name, percent in busy.items()), link(path, page_dir)])
    return table(["algorithm, bonus", "players x environments", "steps/s trained", "of N x one player's",
                  "updates/s", "CPU of the task holding the variables", "file"], rows)


def benchmark_rounds(directory, read):
    """{round: {setting: read(its file)}} from a directory of benchmarks/throughput.py's files named
    r<round>-<setting>.json, each round one benchmark run."""
    rounds = {}
    for path in sorted(glob.glob(os.path.join(ROOT, directory, "r*-*.json"))):
        number, setting = os.path.basename(path)[1:-len(".json")].split("-")
        rounds.setdefault(int(number), {})[setting] = read(load(path))
    return rounds


IMPALA_BATCHES = "docs/results/speed/impala-batches"  # r<round>-<b<batch>|a3c>.json: benchmarks/throughput.py


def impala_batches_table(page_dir):
    """IMPALA + ICM on Doom at each batch size beside A3C's `doom` preset, in rounds of one benchmark run each:
    steps/s trained, updates/s, and the ratio to A3C's in the same round."""
    rounds = benchmark_rounds(IMPALA_BATCHES, lambda data: (data["results"][0]["aggregate_steps_per_sec"],
                                                            data["results"][0]["profile"]["updates_per_sec"]))
    settings = sorted({setting for measured in rounds.values() for setting in measured if setting != "a3c"},
                      key=lambda setting: -int(setting[1:])) + ["a3c"]
    rows = []
    for setting in settings:
        name = "A3C, `doom` preset (2 workers x 4)" if setting == "a3c" else (
            f"IMPALA, batches of {setting[1:]} x 20 steps (2 actors x 8)")
        rows.append([name] + [f"{measured[setting][0]:,.0f} ({measured[setting][1]:.1f}; "
                              f"{measured[setting][0] / measured['a3c'][0]:.2f}x)" for _, measured in sorted(rounds.items())])
    return (table(["learner"] + [f"round {number}: steps/s trained (updates/s; x A3C)" for number in sorted(rounds)], rows)
            + f"\n\nFrom {link(IMPALA_BATCHES, page_dir)}, 2 cores, nothing else running, 40 s a measurement.")


IMPALA_K = "docs/results/speed/impala-k4-k16"  # r<round>-<impala|a3c>.json: benchmarks/throughput.py at K = 4 and 16


def impala_k_table(page_dir):
    """Each learner's steps/s trained at 4 and 16 environments a player, and K = 4's fraction of K = 16's, in rounds
    of one benchmark run each (A3C's workers pay a sync and a train call each K rollouts; IMPALA's learner does not
    see K)."""
    rounds = benchmark_rounds(IMPALA_K, lambda data: {result["envs_per_worker"]: result["aggregate_steps_per_sec"]
                                                      for result in data["results"]})
    names = {"impala": "IMPALA, `impala_doom` with RMSProp (2 actors)", "a3c": "A3C, `doom` preset (2 workers)"}
    rows = [[name] + [f"{rates[4]:,.0f} / {rates[16]:,.0f} ({rates[4] / rates[16]:.2f})"
                      for rates in (measured[algo] for _, measured in sorted(rounds.items()))]
            for algo, name in names.items() if all(algo in measured for measured in rounds.values())]
    header = ["learner"] + [f"round {number}: steps/s at K = 4 / K = 16 (K = 4's fraction)"
                            for number in sorted(rounds)]
    return (table(header, rows) + f"\n\nFrom {link(IMPALA_K, page_dir)}: Doom with the ICM, 2 players, 2 cores, "
            f"nothing else running, 40 s a measurement.")


UPDATE_COST = "docs/results/speed/update-cost-doom-icm.json"


def update_cost_table(page_dir):
    """benchmarks/update_cost.py: each call's milliseconds at each K, and the fitted cost a call and a step."""
    data = load(UPDATE_COST)
    rows = []
    for placement, result in data["results"].items():
        where = "in the process" if placement == "local" else "on a parameter server"
        for count, found in result["calls"].items():
            per_step = 1e6 * (found["sync"] + found["train"]) / found["steps"]
            rows.append([where, count, f"{found['steps']}", f"{1e3 * found['act']:.1f}", f"{1e3 * found['sync']:.1f}",
                         f"{1e3 * found['train']:.1f}", f"{per_step:,.0f}"])
        fits = result["fits_ms_per_call_us_per_step"]
        rows.append([where, "fit", "", f"{fits['act'][0]:.1f} + {fits['act'][1]:.0f} us an env",
                     f"{fits['sync'][0]:.1f}", f"{fits['train'][0]:.1f} + {fits['train'][1]:.0f} us a step", ""])
    return (table(["global variables", "K", "steps an update", "act ms", "sync ms", "train ms",
                   "sync + train, us a step"], rows)
            + f"\n\nFrom {link(UPDATE_COST, page_dir)}: {data['env_id']} with the ICM, {data['cpus']} cores, the median "
              f"of {data['repeats']} calls each.")


ATARI_SPEED = "docs/results/speed/pong-k1-k4-k16-t20-t5.json"


def atari_setting():
    """The `atari` preset's (K emulators a worker, T steps a rollout)."""
    preset = constants.config_from_overrides([], "atari")
    return preset.envs_per_worker, preset.rollout_maxlen


def training_rates(data):
    """{(K, T): steps/s trained} of one run of benchmarks/throughput.py."""
    return {(r["envs_per_worker"], r["rollout_maxlen"]): r["aggregate_steps_per_sec"] for r in data["results"]
            if r["measurement"] == "training"}


def atari_speed_line(page_dir):
    """Pong's training steps/s at each number K of emulators a worker and rollout length T, from one run of
    benchmarks/throughput.py, against the original's K and T and the `atari` preset's."""
    data = load(ATARI_SPEED)
    env = next(r for r in data["results"] if r["measurement"] == "env")["aggregate_steps_per_sec"]
    runs = training_rates(data)
    original = constants.Config()
    base = runs[(original.envs_per_worker, original.rollout_maxlen)]
    rows = [[f"{count}", f"{length}", f"{rate:,.0f}", f"{rate / env:.2f}", f"{rate / base:.2f}x"]
            for (count, length), rate in sorted(runs.items())]
    return (table(["K emulators a worker", "T steps a rollout", "steps/s trained", "of the emulators' alone",
                   f"x K = {original.envs_per_worker}, T = {original.rollout_maxlen} (the original's)"], rows)
            + "\n\n" + textwrap.fill(
                f"{data['env_id']}, 2 workers on 2 cores, one run ({link(ATARI_SPEED, page_dir)}); the emulators "
                f"alone {env:,.0f} steps/s. The `atari` preset is K = {atari_setting()[0]}, T = "
                f"{atari_setting()[1]}.", width=118, break_long_words=False, break_on_hyphens=False))


PONG_SETTINGS = "docs/results/pong-settings"  # archives <k>-<t>-s<seed>/ of train.py's Pong runs (reproduce's form)
PONG_MILESTONES = (1_000_000, 2_000_000, 3_000_000)


def pong_settings_table(page_dir, folder=PONG_SETTINGS, speed=ATARI_SPEED):
    """Pong's learning at each K x T of emulators a worker and rollout length: per setting over its seeds, the mean
    return of the last 100 episodes at each milestone (mean, lowest to highest), and Welch's test of each against
    the `atari` preset's at the last milestone, and in equal training time (`speed`'s steps/s of the two)."""
    reproduce = reproduce_module()
    preset_key = atari_setting()
    curves = {}  # {(K, T): each seed's mean return of the last 100 episodes at a step}
    for archive in sorted(glob.glob(os.path.join(ROOT, folder, "k*-t*-s*"))):
        config = load(os.path.relpath(os.path.join(archive, "config.json"), ROOT))
        reached = (logdir.read_json(os.path.join(archive, "run.json")) or {}).get("global_step")
        steps, returns = reproduce.episode_arrays(archive, "env_reward")
        values = config["hyperparameters"]
        curves.setdefault((values["envs_per_worker"], values["rollout_maxlen"]), []).append(
            functools.partial(reproduce.success_at, steps, returns, reached=reached))
    found = {key: [{milestone: curve(milestone) for milestone in PONG_MILESTONES} for curve in seeds]
             for key, seeds in curves.items()}
    rows = []
    for (count, length), seeds in sorted(found.items()):
        cells = []
        for milestone in PONG_MILESTONES:
            values = [seed[milestone] for seed in seeds if seed[milestone] is not None]
            cells.append(f"{statistics.fmean(values):.1f} ({min(values):.1f} to {max(values):.1f})" if values else "-")
        name = f"{count} x {length}" + (" (the `atari` preset)" if (count, length) == preset_key else "")
        rows.append([name, f"{len(seeds)}", *cells])
    last = PONG_MILESTONES[-1]
    at_last = {key: [seed[last] for seed in seeds if seed[last] is not None] for key, seeds in found.items()}
    tests = []
    for (count, length), values in sorted(at_last.items()):
        if (count, length) != preset_key and min(len(values), len(at_last.get(preset_key, []))) >= 2:
            result = reproduce.welch(values, at_last[preset_key])
            tests.append(f"{count} x {length} minus the preset's {result['difference']:+.1f} +- "
                         f"{result['error']:.1f}" + (f" (Welch's p {p_text(result['p'])})"
                                                     if result["p"] is not None else ""))
    test = f" At {short(last)}: " + "; ".join(tests) + "." if tests else ""
    test += equal_time_tests(curves, preset_key, last, speed)
    return (table(["K emulators x T steps", "seeds"] + [f"return at {short(m)}" for m in PONG_MILESTONES], rows)
            + "\n\n" + textwrap.fill(
                f"Mean return of the last 100 episodes (the seeds' mean, lowest to highest), from the archived "
                f"episodes of each run in {link(folder, page_dir)}.{test}", width=118,
                break_long_words=False, break_on_hyphens=False))


def equal_time_tests(curves, preset_key, last, speed):
    """Each setting against the preset in equal training time: the faster of the two at `last` steps, the slower
    at the steps its rate makes meanwhile (the rates of one run of the throughput benchmark); '' without rates."""
    rates = training_rates(load(speed))
    tests = []
    for key in sorted(curves):
        if key == preset_key or preset_key not in curves or key not in rates or preset_key not in rates:
            continue
        fast, slow = (key, preset_key) if rates[key] >= rates[preset_key] else (preset_key, key)
        step = last * rates[slow] / rates[fast]
        fast_values = [value for value in (curve(last) for curve in curves[fast]) if value is not None]
        slow_values = [value for value in (curve(step) for curve in curves[slow]) if value is not None]
        if min(len(fast_values), len(slow_values)) < 2:
            continue
        result = reproduce_module().welch(fast_values, slow_values)
        tests.append(f"{fast[0]} x {fast[1]} at {short(last)} against {slow[0]} x {slow[1]} at {step / 1e6:.2f}M, "
                     f"{statistics.fmean(fast_values):.1f} against {statistics.fmean(slow_values):.1f}: "
                     f"{result['difference']:+.1f} +- {result['error']:.1f}"
                     + (f" (Welch's p {p_text(result['p'])})" if result["p"] is not None else ""))
    return (" In equal training time (the steps/s of the speed table above): " + "; ".join(tests) + "."
            if tests else "")


IMPALA_DOOM = "docs/results/impala/doomSparse-icm"  # benchmarks/reproduce.py's report of IMPALA + ICM runs
# IMPALA + ICM on doomSparse at each setting tried: (the row's name, its report); a report not archived yet is left out
IMPALA_DOOM_BATCHES = (
    ("IMPALA, `impala` preset (batches of 32, rate 6e-4, epsilon 0.01)", IMPALA_DOOM),
    ("IMPALA, `impala_doom` with RMSProp (`policy_optimizer` rmsprop: batches of 4, rate 1e-4, epsilon 1e-8)",
     IMPALA_DOOM_RMSPROP),
    ("IMPALA, `impala_doom` preset (A3C's Adam: batches of 4, rate 1e-4)", IMPALA_DOOM_PRESET),
    ("IMPALA, `impala` preset with epsilon 1e-8", "docs/results/impala/doomSparse-icm-eps"))


def run_hours(seed):
    """A run's own time, the sum of its sittings' spans in hours, and the steps made in them."""
    seconds = sum((datetime.datetime.fromisoformat(sitting["ended"])
                   - datetime.datetime.fromisoformat(sitting["started"])).total_seconds() for sitting in seed["sittings"])
    return seconds / 3600, sum(sitting["at_step"] - sitting["from_step"] for sitting in seed["sittings"])


def finished_seeds(summary):
    """A method's seeds in a reproduce.py report that reached their budget, and a line for each one short of it."""
    seeds, running = [], []
    for key in sorted(summary["seeds"], key=int):
        seed = summary["seeds"][key]
        if seed["global_step"] < seed["budget"]:
            running.append(f"seed {key} ({seed['global_step'] / 1e6:.2f}M of {seed['budget'] / 1e6:g}M)")
        else:
            seeds.append(seed)
    return seeds, running


def solved_for_good(seeds):
    """`2 of 3 (3.66M, 3.95M, -)`: the seeds solved for good and each one's step."""
    steps = ", ".join(f"{seed['sustained_from'] / 1e6:.2f}M" if seed.get("sustained_from") is not None else "-"
                      for seed in seeds)
    return f"{sum(seed.get('sustained_from') is not None for seed in seeds)} of {len(seeds)} ({steps})"


def doom_learners_line(learner, report, task="doomSparse", method="icm"):
    """One learner's seeds solved for good on a Doom task in its report, beside A3C's at the `doom` preset."""
    line, finished = [], []
    for name, path in ((learner, report), ("A3C", DOOM_REPORT)):
        seeds, running = finished_seeds(load(f"{path}/results.json")["tasks"][task][method])
        line.append(f"{name} {solved_for_good(seeds)}" + (f", {len(running)} running" if running else ""))
        finished.append(seeds)
    return "solved for good: " + "; ".join(line) + "." + welch_text(learner, finished[0], "A3C", finished[1])


def welch_text(name, seeds, other, other_seeds):
    """' NAME's step to solved for good minus OTHER's: +0.41M +- 0.31M (Welch's p 0.293).' over two learners' seeds
    run to their budget, where each has 2 or more solved for good; '' otherwise."""
    steps, other_steps = ([seed["sustained_from"] for seed in group if seed.get("sustained_from") is not None]
                          for group in (seeds, other_seeds))
    if min(len(steps), len(other_steps)) < 2:
        return ""
    result = reproduce_module().welch(steps, other_steps)
    return (f" {name}'s step to solved for good minus {other}'s: {result['difference'] / 1e6:+.2f}M +- "
            f"{result['error'] / 1e6:.2f}M" + (f" (Welch's p {p_text(result['p'])})." if result["p"] is not None
                                                else "."))


def learners_table(page_dir, reports, task="doomSparse", method="icm", milestones=(3_000_000, 5_000_000)):
    """One bonus on one task under each learner (or setting), from reproduce.py's reports: success at the milestones
    (the seeds' mean and range), the seeds solved for good and at which step, each run's own hours and steps/s;
    Welch's test of the steps to solved for good of each row against the first. Only runs that reached their
    budget count: a seed still going is named below the table."""
    rows, finished, going = [], {}, []
    for name, report in reports:
        summary = load(f"{report}/results.json")["tasks"][task][method]
        seeds, running = finished_seeds(summary)
        going += [f"{name}: {text}" for text in running]
        cells = []
        for milestone in milestones:
            values = [seed["success_at"][str(milestone)] for seed in seeds
                      if seed["success_at"].get(str(milestone)) is not None]
            cells.append(f"{statistics.fmean(values):.2f} ({span(values, '{:.2f}')})" if values else "-")
        finished[name] = seeds
        timed = [run_hours(seed) for seed in seeds]
        rows.append([name, ", ".join(summary["setups"]), f"{len(seeds)}", *cells,
                     solved_for_good(seeds), span([hours for hours, _ in timed], "{:.2f}"),
                     span([made / (hours * 3600) for hours, made in timed])])
    text = table(["learner", "set-up", "seeds"] + [f"success at {short(m)}" for m in milestones]
                 + ["solved for good (each seed's step)", "hours a run", "steps/s a run"], rows)
    sources = "; ".join(f"{name}: {link(f'{report}/results.md', page_dir)}" for name, report in reports)
    text += (f"\n\n`{task}` with the {method.upper()}, from each row's report ({sources}). A run's hours are its "
             f"sittings' spans, on the machines its report names (these drift by up to 1.7x).")
    if going:
        text += f" Not counted until they reach their budget: {'; '.join(going)}."
    first = reports[0][0]
    for name, _ in reports[1:]:
        text += welch_text(name, finished[name], first, finished[first])
    return text


def peers_table(page_dir, path="docs/results/peers/peers.json"):
    """benchmarks/peers.py's rounds: each peer's agent steps/s and its ratio to sample-factory's in the round."""
    rounds = load(path)["rounds"]
    names = list(rounds[0])
    rows = [[f"`{name}`"] + [f"{measured[name]['steps_per_sec']:,.0f} ({measured[name]['to_sample_factory']:.2f}x)"
                             for measured in rounds] for name in names]
    return (table(["peer"] + [f"round {number + 1}: agent steps/s (x sample-factory)" for number in range(len(rounds))],
                  rows) + f"\n\nFrom {link(path, page_dir)}, one run, 2 cores, nothing else running.")


def benchmark_reference(page_dir):
    """Each benchmark: what its docstring's first sentence says it measures, and the first command it shows."""
    import ast

    rows = []
    for path in sorted(glob.glob(os.path.join(ROOT, "benchmarks", "*.py"))):
        doc = ast.get_docstring(ast.parse(open(path).read())) or ""
        first = " ".join(doc.split("\n\n")[0].split())
        command = next((" ".join(line.split()) for line in doc.splitlines()
                        if line.strip().startswith("python benchmarks/")), "")
        name = os.path.relpath(path, ROOT)
        rows.append([f"[`{name}`]({os.path.relpath(path, page_dir)})", cell(first),
                     f"`{command.rstrip(chr(92)).strip()}`" if command else "see its `--help`"])
    return table(["script", "what it measures", "a command it shows"], rows)


ENV_SPEED = "docs/results/env-speed"  # benchmarks/throughput.py --measurements env --out <ENV_SPEED>/<id>


def env_speed(page_dir):
    """Each measured environment's agent steps a second alone, from its throughput.json."""
    rows = []
    for path in sorted(glob.glob(os.path.join(ROOT, ENV_SPEED, "*", "throughput.json"))):
        data = load(os.path.relpath(path, ROOT))
        run = next(r for r in data["results"] if r["measurement"] == "env")
        flags = " `--envWrap`" if data.get("env_wrap") else ""
        rows.append([f"`{data['env_id']}`{flags}", f"{run['aggregate_steps_per_sec']:,.0f}",
                     link(os.path.relpath(path, ROOT), page_dir)])
    return table(["id", "agent steps/s", "file"], rows)


def ps_load(page_dir):
    """What one parameter server spends per update, from the --num-ps measurements."""
    paths = ["docs/results/num-ps/doom-icm-k16-4-8-workers.json", "docs/results/num-ps/doom-icm-k1-8-workers-rollout1.json"]
    costs = [r["profile"]["ps_cpu_ms_per_update"] for path in paths for r in load(path)["results"] if r["num_ps"] == 1]
    return textwrap.fill(
        f"One parameter server spent {min(costs):.0f}-{max(costs):.0f} ms of CPU per update of the ICM model on these "
        f"machines (an update moves every variable's gradient in and its value out, whatever its batch), so one core of "
        f"it serves about {1000 / max(costs):.0f}-{1000 / min(costs):.0f} updates a second, and a second server pays only "
        f"beyond that ({', '.join(link(path, page_dir) for path in paths)}; `benchmarks/throughput.py --num-ps 1 2` "
        "measures both, with the servers' CPU per update).", width=118, break_long_words=False, break_on_hyphens=False)


def soak_line(page_dir):
    path = "docs/results/soak/doom-2workers-k16-60min.json"
    data = load(path)
    growth = [value for name, value in data["rss_growth_after_warm_up"].items()
              if name.startswith("w-") and not name.endswith("anon")]
    return textwrap.fill(
        f"In a {data['minutes']:.0f}-minute Doom run of {data['workers']} workers with the ICM at 16 environments a "
        f"worker, the workers' memory grew by {min(growth):.1%}-{max(growth):.1%} after its warm-up "
        f"({link(path, page_dir)}; the cause is not found).", width=118, break_long_words=False,
        break_on_hyphens=False)


CEM_COLUMNS = ["preset", "candidates x refits", "horizon"]


def cem_cells(result):
    """A planner benchmark's row's first cells: its preset and that preset's cross-entropy method (CEM_COLUMNS)."""
    return [f"`{result['preset']}`", f"{result['candidates']:,} x {result['iterations']}, the best {result['top']}",
            str(result["horizon"])]


def planet_solved(path):
    """A planet_learning.py file in brief: each method's seeds that reached its solved mean, and at which steps."""
    data = load(path)
    return "; ".join(f"{method}: {summary['solved']} of {len(summary['seeds'])} seeds" + (
        f" (at {', '.join(f'{step:,}' for step in summary['solved_at'] if step is not None)} steps)"
        if summary["solved"] else "") for method, summary in data["summary"].items())


def planet_learning(path, page_dir):
    """Each method's evaluations of a planet_learning.py file: the seeds' mean (min to max) at each step, the seeds
    that reached its solved mean, Welch's tests at the last step, and the command."""
    data = load(path)
    steps = sorted({int(step) for summary in data["summary"].values() for step in summary["at_steps"]})
    rows = [[f"{step:,}"] + [
        "{:,.0f} ({:,.0f} to {:,.0f})".format(*summary["at_steps"][str(step)][:3]) if str(step) in summary["at_steps"]
        else "" for summary in data["summary"].values()] for step in steps]
    seeds = " ".join(str(seed) for seed in next(iter(data["summary"].values()))["seeds"])
    command = data.get("command") or (  # a results file from before planet_learning.py wrote its command
        f"benchmarks/planet_learning.py --env-id {data['env_id']} --steps {data['steps']} --eval-every "
        f"{data['eval_every']} --eval-episodes {data['eval_episodes']} --seeds {seeds} --methods "
        f"{' '.join(data['summary'])} -- {' '.join(data['train_flags'])}")
    tests = "".join(f" At {test['step']:,} steps, {pair.replace(' vs ', ' against ')}: Welch's p {test['p']:.3f}."
                    for pair, test in data.get("tests", {}).items())
    minutes = [f"{method} {values['wall_minutes'][0]:.0f}-{values['wall_minutes'][1]:.0f}"
               for method, values in data["summary"].items() if values.get("wall_minutes")]
    if minutes:
        tests += f" Minutes a run: {', '.join(minutes)}."
    return (table(["steps"] + [f"`{method}`: the seeds' mean (min to max)" for method in data["summary"]], rows)
            + "\n\n" + textwrap.fill(
                f"From {link(path, page_dir)}, {data['eval_episodes']} evaluation episodes each "
                f"{data['eval_every']:,} steps without exploration noise; {planet_solved(path)} at "
                f"{data['solved_mean']:,.0f}.{tests} Command: `{command}`.", width=118, break_long_words=False,
                break_on_hyphens=False))


def planet_coverage(page_dir):
    """Each explorer's share of the state grid visited over seeds, Welch's test against Plan2Explore, and
    Plan2Explore's zero-shot returns."""
    data = load(PLANET_COVERAGE)
    rows = []
    for method, values in data["methods"].items():
        runs = [run for run in data["runs"] if run["method"] == method]
        cells = [run["coverage"] for run in runs]
        p = values.get("welch_p_against_plan2explore")
        rows.append([f"`{method}`", f"{values['mean']:.1%} +- {values['std']:.1%} ({min(cells):.1%} to "
                     f"{max(cells):.1%})", "" if p is None else p_text(p), str(values["runs"])])
    zero_shot = [run["evaluation"] for run in data["runs"] if run["method"] == "plan2explore"
                 and run["evaluation"] is not None]
    return (table(["explorer", "cells visited: mean +- sd (min to max)", "Welch's p against `plan2explore`",
                   "seeds"], rows)
            + "\n\n" + textwrap.fill(
                f"From {link(PLANET_COVERAGE, page_dir)}: {data['env_id']}, {data['steps']:,} environment steps each, "
                f"a grid of {data['grid']} x {data['grid']} cells over (angle, angular velocity). Plan2Explore's "
                f"zero-shot return (its planner with the reward its model learned from the same episodes, "
                f"{len(zero_shot)} seeds): {statistics.mean(zero_shot):,.0f} ({min(zero_shot):,.0f} to "
                f"{max(zero_shot):,.0f}). Command: `{data['command']}`.", width=118, break_long_words=False,
                break_on_hyphens=False))


def planning_speed(page_dir):
    path = "docs/results/planet/planning_speed.json"
    data = load(path)
    rows = [cem_cells(r) + [f"{r['median_ms']:,.0f} ({r['min_ms']:,.0f}-{r['max_ms']:,.0f})"]
            for r in data["results"]]
    return (table(CEM_COLUMNS + ["ms a decision: median (range)"], rows)
            + f"\n\nFrom {link(path, page_dir)}: {data['results'][0]['decisions']} timed decisions each, a model of "
            f"PlaNet's sizes for {data['observation_size']} observations and {data['action_size']} action.")


def planner_ceiling(page_dir):
    path = "docs/results/planet/planner_ceiling.json"
    data = load(path)
    rows = [cem_cells(r) + [f"{round(r['mean']):,} ({round(min(r['returns'])):,} to {round(max(r['returns'])):,})"]
            for r in data["results"]]
    first = data["results"][0]
    return (table(CEM_COLUMNS + ["mean return of the episodes (min to max)"], rows)
            + f"\n\nFrom {link(path, page_dir)}: {len(first['returns'])} episodes each from a seed-0 run's evaluation "
            f"seeds, action_repeat {first['action_repeat']}; command: `{data['command']}`.")


SPAWNS = "docs/results/doom-spawns/spawns.csv"  # benchmarks/doom_spawn_distances.py --out docs/results/doom-spawns
PAPER_SPAWN_STEPS = {"doomSparse": 270, "doomVerySparse": 350}  # the paper's rooms' distances, in its "steps"


def spawn_table(page_dir):
    """MyWayHome's spawn spots by their distance to the vest, the two the sparse tasks start on named, and how their
    scripted steps compare with the paper's counts."""
    import csv

    with open(os.path.join(ROOT, SPAWNS)) as handle:
        spots = sorted(csv.DictReader(handle), key=lambda spot: -float(spot["path_units"]))
    rows, rest = [], []
    for spot in spots:
        named = spot["variant"] or len(rows) < 5
        if not named:
            rest.append(spot)
            continue
        tics = f" ({int(spot['steps']) * 4} tics)" if spot["variant"] else ""
        rows.append([f"{spot['spot']} ({float(spot['x']):.0f}, {float(spot['y']):.0f})",
                     f"{float(spot['path_units']):,.0f}", spot["steps"] + tics,
                     f"`{spot['variant']}`" if spot["variant"] else ""])
    if rest:
        rows.append([", ".join(spot["spot"] for spot in rest),
                     f"{float(rest[0]['path_units']):,.0f} down to {float(rest[-1]['path_units']):,.0f}",
                     f"{rest[0]['steps']} down to {rest[-1]['steps']}", ""])
    tics = {spot["variant"]: int(spot["steps"]) * 4 for spot in spots if spot["variant"]}
    ours = tics["doomSparse"] / tics["doomVerySparse"]
    theirs = PAPER_SPAWN_STEPS["doomSparse"] / PAPER_SPAWN_STEPS["doomVerySparse"]
    return (table(["spawn spot (x, y)", "path (map units)", "scripted steps to the vest (4 tics each)", "task"], rows)
            + "\n\n" + textwrap.fill(
                f"From {link(SPAWNS, page_dir)}. The scripted steps are an upper bound on the optimal policy's. The "
                f"paper's {PAPER_SPAWN_STEPS['doomSparse']} and {PAPER_SPAWN_STEPS['doomVerySparse']} \"steps\" are "
                f"close to these spots' counts in tics ({tics['doomSparse']} and {tics['doomVerySparse']}), not in "
                f"4-tic agent steps; their ratio ({theirs:.2f}) is close to ours ({ours:.2f}), and the very sparse "
                "start is, as in the paper, the farthest point of the map.", width=118, break_long_words=False,
                break_on_hyphens=False))


# ---------------------------------------------------------------- the configuration reference, from the code

def cell(text):
    return str(text).replace("|", "\\|").replace("\n", " ")


def flag_reference():
    rows = []
    for action in train.build_parser()._actions:  # argparse keeps no public list of them
        if action.help == argparse.SUPPRESS or not action.option_strings or isinstance(action, argparse._HelpAction):
            continue
        spellings = ", ".join(f"`{flag}`" for flag in action.option_strings)
        default = "" if action.default in (None, False, [], argparse.SUPPRESS) else f"`{action.default}`"
        choices = f" ({', '.join(map(str, action.choices))})" if action.choices else ""
        meaning = re.sub(r", \d+ here\)", ")", action.help or "")  # this machine's core count: not the docs'
        rows.append([spellings, default, cell(meaning % {"default": action.default}) + choices])
    return table(["flag", "default", "meaning"], rows)


def hyperparameter_reference():
    own = {parameter.name: row.name for row in algorithms.ALGORITHMS.values()
           for parameter in row.own_hyperparameters}
    # HELP begins an algorithm's own with "--algo NAME: " (for --help-config): said here as "`--algo NAME` only: "
    readers = {name: " and ".join(f"`--algo {row.name}`" for row in algorithms.ALGORITHMS.values()
                                  if algorithms.reads(row.name, name)) for name in own}
    rows = [[f"`{name}`", f"`{value!r}`", (f"{readers[name]} only: " if name in own else "")
             + cell(constants.HELP[name].removeprefix(f"--algo {own.get(name)}: "))]
            for name, value in constants.Config().to_dict().items()]
    return table(["name (`--set NAME=VALUE`)", "default", "meaning"], rows)


def preset_reference():
    rows = []
    for row in algorithms.ALGORITHMS.values():
        auto = {}
        for key, preset in row.presets.items():
            family, _, bonus = key.partition("/")
            auto.setdefault(preset, []).append(f"{family} with --unsup {bonus}" if bonus
                                               else key.replace("_bonus", " with a bonus"))
        for name, values in row.hyperparameters.items():
            shown = ", ".join(f"{key}={value}" for key, value in values.items()) or "the defaults"
            rows.append([f"`{name}`", f"`{row.name}`", ", ".join(auto.get(name, [])) or "-", cell(shown)])
    return table(["preset", "`--algo`", "`--preset auto` picks it for", "values"], rows)


GENERATORS = {
    "launch-sample": lambda page_dir: launch_sample(),
    "status-sample": lambda page_dir: status_sample(),
    "status-watch-sample": lambda page_dir: status_watch_sample(),
    "support-matrix": lambda page_dir: support_matrix(),
    "results": results_table,
    "doom-results": lambda page_dir: study_table(page_dir, DOOM_TASKS),
    "mario-results": lambda page_dir: study_table(page_dir, ("mario",)),
    "bonus-results": lambda page_dir: study_table(page_dir, ("minigrid",)),
    "random-agents": random_agents,
    "other-results": other_results,
    **{f"{name}-results": (lambda page_dir, name=name: other_results(page_dir, name)) for name in algorithms.NAMES},
    "speed": speed_line,
    "impala-doom": lambda page_dir: learners_table(page_dir, (("A3C", DOOM_REPORT),) + tuple(
        (name, report) for name, report in IMPALA_DOOM_BATCHES if os.path.exists(os.path.join(ROOT, report)))),
    "impala-batches": impala_batches_table,
    "impala-k": impala_k_table,
    "peers": peers_table,
    "scaling": scaling_table,
    "atari-speed": atari_speed_line,
    "pong-settings": pong_settings_table,
    "update-cost": update_cost_table,
    "benchmarks": benchmark_reference,
    "spawns": spawn_table,
    "planning-speed": planning_speed,
    "planner-ceiling": planner_ceiling,
    "planet-pendulum": lambda page_dir: planet_learning(PLANET_PENDULUM, page_dir),
    "planet-coverage": planet_coverage,
    "planet-pixels": lambda page_dir: planet_learning(PLANET_PIXELS, page_dir),
    "planet-reacher": lambda page_dir: planet_learning(PLANET_REACHER, page_dir),
    "peers-impala": lambda page_dir: peers_table(page_dir, "docs/results/peers/peers-impala.json"),
    "env-speed": env_speed,
    "ps-load": ps_load,
    "soak": soak_line,
    "flags": lambda page_dir: flag_reference(),
    "hyperparameters": lambda page_dir: hyperparameter_reference(),
    "presets": lambda page_dir: preset_reference(),
}


def rendered(path):
    """The page at `path` with every block made again, and the names of the blocks it has."""
    text = open(path).read()
    names = []

    def make(match):
        name = match.group(2)
        names.append(name)
        if name not in GENERATORS:
            raise SystemExit(f"{os.path.relpath(path, ROOT)}: no generator named {name!r} (tools/docs.py)")
        return match.group(1) + GENERATORS[name](os.path.dirname(path)) + "\n" + match.group(4)

    return BLOCK.sub(make, text), names


def stale():
    """The pages whose blocks differ from what they would be made now."""
    found = []
    for path in pages():
        text, _ = rendered(path)
        if text != open(path).read():
            found.append(path)
    return found


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="change nothing; exit 1 if a block is stale")
    args = parser.parse_args(argv)
    differ = stale()
    if args.check:
        for path in differ:
            print(f"{os.path.relpath(path, ROOT)}: generated blocks are stale: run python tools/docs.py")
        return 1 if differ else 0
    for path in differ:
        text = rendered(path)[0]
        with open(path, "w") as handle:
            handle.write(text)
        print(f"rewrote {os.path.relpath(path, ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
