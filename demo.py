#!/usr/bin/env python
"""Playback and evaluation: watch what an agent does, and measure it against the random baseline.

    python demo.py --log-dir tmp/doom --episodes 5 --record          # the latest checkpoint, sampled policy
    python demo.py --log-dir tmp/doom --greedy --env-id doomSparse    # the same weights, another start
    python demo.py --log-dir tmp/doom --greedy --episodes 20 --random-start 30  # an evaluation: greedy play,
                                                                      # each episode begun with 0-30 random actions
    python demo.py --log-dir tmp/doom --random --episodes 20          # the random-agent baseline
    python demo.py --log-dir tmp/random-mario --random --env-id mario  # a baseline without any run
    python demo.py --log-dir tmp/doom --watch --every 50000           # evaluate each new checkpoint (train.py
                                                                      # --eval-every starts this for you)

Reads the run's config.json (environment, head, curiosity) and a checkpoint (the latest in <log-dir>/train, or
--checkpoint), copied aside first, so it can run beside training without blocking or disturbing it. Prints
each episode's game reward, length, curiosity bonus and, where the game has them, success and distance; writes
<out>/summary.json, and with --record an MP4 (or GIF, or a folder of PNGs) per episode from the game's frames,
with --record-signal the 42x42 inputs the network saw (<out>/episode_<k>_signal.mp4 and .npz). <out> defaults to
<log-dir>/demo.
"""
import argparse
import contextlib
import glob
import json
import logging
import os
import shutil
import signal
import sys
import tempfile
import time
import types

import logdir

logdir.tf_environment()

import numpy as np  # noqa: E402

import algorithms  # noqa: E402
import constants  # noqa: E402
import envs  # noqa: E402
import evaluation  # noqa: E402
import runs  # noqa: E402
from constants import UsageError  # noqa: E402
from logdir import import_tf  # noqa: E402

logger = logging.getLogger("demo")

PLAYBACK_FPS = {"doom": 35 / envs.DOOM_ACTION_REPEAT, "mario": 60 / envs.MARIO_ACTION_REPEAT, "atari": 15}
SIGNAL_UPSCALE = 4  # the 42x42 inputs are drawn 4 times larger in the signal video
FINISH_POLL_SECS = 0.25  # --watch sleeps in slices this long, to hear the end of the run soon
SNAPSHOT_TRIES = 5  # the chief may delete the oldest checkpoint while we copy it: then take the newest again
NO_CHECKPOINT = ("no checkpoint in {} yet: the chief saves every 30 s after it starts; wait, or pass --random for "
                 "the random baseline")


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add = parser.add_argument
    add("--log-dir", required=True, help="a run's log directory (its config.json and train/ checkpoints)")
    add("--checkpoint", default=None, help="a checkpoint prefix (default: the latest in <log-dir>/train)")
    add("--env-id", default=None, help="play another environment with the same observations and actions "
        "(default: the run's)")
    add("--episodes", type=int, default=3, help="episodes to play")
    policy = parser.add_mutually_exclusive_group()
    policy.add_argument("--greedy", action="store_true", help="take the most likely action (default: sample)")
    policy.add_argument("--random", action="store_true", help="act uniformly at random: the baseline")
    add("--record", action="store_true", help="write a video of each episode from the game's frames")
    add("--record-signal", action="store_true", help="save the 42x42 inputs the network saw, as video and npz")
    add("--video-format", choices=evaluation.FRAME_FORMATS, default="mp4", help="with --record: a video per "
        "episode (mp4, gif), or its frames as PNG images in a folder (png)")
    add("--fps", type=float, default=None, help="video frame rate (default: the game's real time)")
    add("--video-quality", type=float, default=8, help="MP4 quality, 0 (smallest) to 10 (imageio's scale); 5 is "
        "about a third of 8's size and still shows the game's textures")
    add("--random-start", type=random_start_value, default=0, metavar="N", help="begin each episode with 0 to N "
        "uniformly random actions (the policy still sees their frames), so that a greedy policy in a deterministic "
        f"game does not replay one episode; 'auto' (evaluations): {constants.EVAL_RANDOM_START} on images, 0 on "
        "vectors, whose starts are random already")
    add("--epsilon", type=float, default=None, help="a DQN run's exploration when not --greedy (default: its "
        "eval_epsilon); --greedy takes argmax Q")
    add("--max-steps", type=int, default=10000, help="end an episode after this many steps")
    add("--seed", type=int, default=0, help="seeds the environments, the random starts and a sampled policy: "
        "the same seed plays the same episodes again")
    add("--out", default=None, help="folder for summary.json and videos (default: <log-dir>/demo)")
    add("--watch", action="store_true", help="keep evaluating each new checkpoint --every global steps, appending "
        f"to <log-dir>/{logdir.EVAL} and keeping the best checkpoint in <log-dir>/{logdir.BEST}")
    add("--every", type=int, default=100000, help="with --watch: global steps between evaluations")
    add("--poll-seconds", type=float, default=5.0, help="with --watch: how often to look for a new checkpoint")
    args = parser.parse_args(argv)
    for name in ("episodes", "max_steps", "every"):
        if getattr(args, name) < 1:
            parser.error(f"--{name.replace('_', '-')} must be at least 1, got {getattr(args, name)}")
    if args.random_start != "auto" and args.random_start < 0:
        parser.error(f"--random-start must be at least 0, got {args.random_start}")
    if args.epsilon is not None and not 0.0 <= args.epsilon <= 1.0:
        parser.error(f"--epsilon must lie in [0, 1], got {args.epsilon}")
    if not 0 <= args.video_quality <= 10:
        parser.error(f"--video-quality must lie in [0, 10], got {args.video_quality}")
    if args.fps is not None and args.fps <= 0:
        parser.error(f"--fps must be positive, got {args.fps}")
    if args.watch and args.random:
        parser.error("--watch evaluates checkpoints; --random needs none")
    return args


def run_settings(log_dir):
    """(run flags, hyper-parameters Config) from the run's config.json."""
    record = constants.read_run_config(log_dir)
    if record is None:
        raise UsageError(f"{log_dir} has no {logdir.CONFIG}: is it a run's log directory? A run writes "
                         "it when its workers start (for the random baseline alone, give --random --env-id ID)")
    config = constants.apply_overrides(constants.Config(), [f"{key}={value}" for key, value in
                                                           record["hyperparameters"].items()])
    return record["run"], config


def snapshot_checkpoint(tf1, train_dir, chosen, destination):
    """Copy a checkpoint (the chosen prefix, or the latest in `train_dir`) into `destination`: (prefix, step).

    Training keeps writing and deleting checkpoints; a private copy cannot change under the restore.
    """
    try:
        logdir.relocate_checkpoints(train_dir)  # a run copied or moved here names its checkpoints here
    except OSError:
        pass  # a read-only copy: TensorFlow's list is read as it is
    for _ in range(SNAPSHOT_TRIES):
        source = chosen or tf1.train.latest_checkpoint(train_dir)
        if source is None:
            raise UsageError(NO_CHECKPOINT.format(train_dir))
        files = glob.glob(source + ".index") + glob.glob(source + ".data-*")
        try:
            if not any(path.endswith(".index") for path in files):
                raise FileNotFoundError(source + ".index")
            for path in files:
                shutil.copy(path, destination)
        except FileNotFoundError:
            if chosen:
                raise UsageError(f"checkpoint {chosen} does not exist (no {chosen}.index)") from None
            time.sleep(0.5)
            continue
        prefix = os.path.join(destination, os.path.basename(source))
        return prefix, checkpoint_step(tf1, prefix)
    raise UsageError(f"checkpoints in {train_dir} kept disappearing while being copied; try again")


def checkpoint_step(tf1, prefix):
    """The global step the checkpoint's weights were saved at. Not the one in its name: TensorFlow's Saver
    reads the step for the name apart from the save itself, and the other workers' updates go on in between
    (a test saw model.ckpt-3440 hold step 3521)."""
    try:
        return int(tf1.train.NewCheckpointReader(prefix).get_tensor("global/global_step"))
    except Exception:  # noqa: BLE001 -- a checkpoint without the step (pretrained weights): use its name
        step = prefix.rsplit("-", 1)[-1]
        return int(step) if step.isdigit() else 0


def make_agent(args, env, run, config, checkpoint):
    """The run's policy as its algorithm's agent (its row's entry point): the A3C policy, a DQN's Q network or a SAC
    run's actor."""
    return algorithms.of_run(run).entry("agent")(env, run, config, checkpoint, args.epsilon, args.seed)


def signal_frames(inputs):
    """The newest channel of each 42x42 input, as gray RGB frames SIGNAL_UPSCALE times larger."""
    frames = []
    for observation in inputs:
        newest = (np.asarray(observation)[..., -1] * 255).clip(0, 255).astype(np.uint8)
        big = np.kron(newest, np.ones((SIGNAL_UPSCALE, SIGNAL_UPSCALE), np.uint8))
        frames.append(np.stack([big] * 3, axis=-1))
    return frames


def write_visits(path, episodes):
    """The positions of every episode, in the runs' visits_<i>.csv format, so plots.py can map them."""
    rows = [(index, x, y) for index, episode in enumerate(episodes, 1) for x, y in episode.pop("visits")]
    if rows:
        with open(path, "w") as handle:
            handle.write(logdir.VISITS_HEADER)
            handle.writelines(f"0,0,{index},{x:.1f},{y:.1f}\n" for index, x, y in rows)


def describe(index, episode):
    parts = [f"episode {index}: reward {episode['reward']:.4g}", f"length {episode['length']}",
             f"bonus {episode['bonus']:.4g}"]
    if episode.get("random_steps"):
        parts.append(f"{episode['random_steps']} random actions first")
    if "success" in episode:
        parts.append("success" if episode["success"] else "no success")
    if "distance" in episode:
        parts.append(f"distance {episode['distance']:.0f}")
    return ", ".join(parts)


def random_start_value(text):
    """--random-start: a number of actions, or 'auto'."""
    if text == "auto":
        return text
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number of actions or 'auto': {text!r}") from None


def make_env(args, run, record):
    """The run's environment as its learner saw it; `--random-start auto` becomes this environment's number."""
    env = runs.make_env({**run, "no_reward": False, "no_life_reward": False}, "rgb_array" if record else None,
                        args.env_id)
    if args.random_start == "auto":
        args.random_start = envs.evaluation_random_start(args.env_id or run["env_id"], env.observation_space)
    return env


def deferred_interrupt(agent):
    """Ctrl-C held until the step being played ends (sessions.DeferredInterrupt), where an agent runs TensorFlow;
    a random agent runs none, and needs no import of it."""
    if agent is None:
        return contextlib.nullcontext(types.SimpleNamespace(check=lambda: None))
    import sessions

    return sessions.DeferredInterrupt()


def play_and_record(args, env, agent, rng, out, fps, index, check_interrupt):
    """Episode `index` of the playback, its video and inputs written into `out` when asked."""
    episode, frames, inputs = evaluation.play_episode(env, agent, args.greedy, rng, args.max_steps, args.record,
                                                      args.record_signal, seed=args.seed + index,
                                                      random_start=args.random_start, check_interrupt=check_interrupt)
    if args.record:
        episode["video"] = evaluation.write_frames(out, index, frames, args.video_format, fps, args.video_quality)
    if args.record_signal:
        episode["signal"] = os.path.join(out, f"episode_{index}_signal.npz")
        np.savez_compressed(episode["signal"], observations=np.asarray(inputs, np.float16))
        evaluation.write_frames(out, f"{index}_signal", signal_frames(inputs), args.video_format, fps,
                                args.video_quality)
    return episode


def evaluate(args, run, config, env, checkpoint, out, quiet=False, keep_on_interrupt=False):
    """Play args.episodes episodes; write videos and inputs into `out`; return (summary, episodes). With
    `keep_on_interrupt`, Ctrl-C after at least one whole episode ends the playback with those episodes (the
    summary says "interrupted") instead of losing them."""
    agent = None if args.random else make_agent(args, env, run, config, checkpoint)
    rng = np.random.default_rng(args.seed)
    fps = args.fps or PLAYBACK_FPS.get(envs.env_family(args.env_id or run["env_id"]), 30)
    episodes = []
    try:
        with deferred_interrupt(agent) as interrupt:
            for index in range(1, args.episodes + 1):
                episodes.append(play_and_record(args, env, agent, rng, out, fps, index, interrupt.check))
                if not quiet:
                    print(describe(index, episodes[-1]), flush=True)
    except KeyboardInterrupt:
        if not (keep_on_interrupt and episodes):
            raise
        return {**evaluation.summarise(episodes), "random_start": args.random_start, "interrupted": True}, episodes
    finally:
        if agent is not None:
            agent.close()
    return {**evaluation.summarise(episodes), "random_start": args.random_start}, episodes


def play(args):
    if args.random and args.env_id and constants.read_run_config(args.log_dir) is None:
        run, config = {"env_id": args.env_id, "unsup": "none"}, constants.Config()  # a baseline needs no run
    else:
        run, config = run_settings(args.log_dir)
    out = args.out or os.path.join(args.log_dir, "demo")
    os.makedirs(out, exist_ok=True)
    env = make_env(args, run, args.record)
    train_dir = logdir.checkpoints_dir(args.log_dir)
    if not args.random and not args.checkpoint and not os.path.exists(os.path.join(train_dir, "checkpoint")):
        raise UsageError(NO_CHECKPOINT.format(train_dir))  # said before TensorFlow's start-up noise
    with tempfile.TemporaryDirectory() as scratch:
        checkpoint, step = (None, None) if args.random else snapshot_checkpoint(
            import_tf(), train_dir, args.checkpoint, scratch)
        policy = "random" if args.random else ("greedy" if args.greedy else "sampled")
        print(f"{args.env_id or run['env_id']}: {policy} policy"
              + (f", checkpoint at global step {step}" if step is not None else ""), flush=True)
        summary, episodes = evaluate(args, run, config, env, checkpoint, out, keep_on_interrupt=True)
    env.close()
    write_visits(os.path.join(out, "visits.csv"), episodes)
    summary.update({"env_id": args.env_id or run["env_id"], "policy": policy, "global_step": step,
                    "checkpoint": args.checkpoint or (os.path.basename(checkpoint) if checkpoint else None),
                    "episode_details": episodes})
    path = os.path.join(out, "summary.json")
    with open(path, "w") as handle:
        json.dump(summary, handle, indent=2)
    rate = f", success rate {summary['success_rate']:.2f}" if "success_rate" in summary else ""
    cut = f" (interrupted: {summary['episodes']} of {args.episodes} played)" if summary.get("interrupted") else ""
    print(f"mean reward {summary['mean_reward']:.4g} (min {summary['min_reward']:.4g}, max "
          f"{summary['max_reward']:.4g}) over {summary['episodes']} episodes, {summary['distinct_episodes']} distinct"
          f"{rate}{cut}; wrote {path}")
    if summary["episodes"] > 1 and summary["distinct_episodes"] == 1 and not args.random_start:
        print(f"note: all {summary['episodes']} episodes took the same actions (a deterministic game from a fixed "
              f"start); --random-start {constants.EVAL_RANDOM_START} begins each with up to "
              f"{constants.EVAL_RANDOM_START} random actions")
    return 130 if summary.get("interrupted") else 0


def main(argv=None):
    args = parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s demo %(levelname)s %(message)s", stream=sys.stderr)
    try:
        if args.watch:
            watch(args)
            return 0
        return play(args)
    except (UsageError, logdir.UnreadableCheckpoint, constants.ConfigError, envs.EnvError) as error:
        print(f"demo.py: error: {error}", file=sys.stderr)
        return 2
    except OSError as error:  # an output folder that cannot be written
        print(f"demo.py: error: {error.filename}: {error.strerror}; choose another --out", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130


def watch(args):
    """Evaluate each new checkpoint at least args.every global steps after the last evaluated one until stopped,
    or until told that the run is over (evaluation.FINISH_SIGNAL): then its last checkpoint, and leave. A row in
    eval.csv (and rewards.txt, its view), global/eval_* summaries in <log-dir>/eval, the best
    checkpoint kept; with --record each evaluation's videos (or frames) in <log-dir>/eval_NNN."""
    finishing = []  # the launcher's word that the run is over (evaluation.FINISH_SIGNAL)
    signal.signal(evaluation.FINISH_SIGNAL, lambda *_: finishing.append(True))
    tf1 = import_tf()
    while constants.read_run_config(args.log_dir) is None:  # started before the workers write it
        if finishing:
            return  # over before it began: nothing to evaluate
        time.sleep(FINISH_POLL_SECS)
    run, config = run_settings(args.log_dir)
    train_dir = logdir.checkpoints_dir(args.log_dir)
    out = args.out or os.path.join(args.log_dir, logdir.EVAL_EVENTS)
    os.makedirs(out, exist_ok=True)
    eval_path = os.path.join(args.log_dir, logdir.EVAL)
    earlier = logdir.read_rows(eval_path)
    last_step = max((int(row["global_step"]) for row in earlier), default=None)
    best = evaluation.best_so_far(args.log_dir)
    env = make_env(args, run, args.record)
    writer = tf1.summary.FileWriter(out)
    logger.info("evaluating %d episodes every %d global steps from %s", args.episodes, args.every, train_dir)
    while True:
        final = bool(finishing)  # before the checkpoint is looked for: the one found then is the run's last
        latest = tf1.train.latest_checkpoint(train_dir)
        step = int(latest.rsplit("-", 1)[-1]) if latest else None
        if evaluation.due(step, last_step, args.every, final):
            with tempfile.TemporaryDirectory() as scratch:
                checkpoint, step = snapshot_checkpoint(tf1, train_dir, None, scratch)
                frames = evaluation.frames_dir(args.log_dir, len(logdir.read_rows(eval_path)) + 1)
                summary, episodes = evaluate(args, run, config, env, checkpoint, frames if args.record else out,
                                             quiet=True)
                for episode in episodes:
                    episode.pop("visits")
                evaluation.keep(tf1, writer, args.log_dir, step, summary, checkpoint)
                best = max(best, summary["mean_reward"])
            logger.info("global step %d: mean reward %.4g over %d episodes (best %.4g)", step,
                        summary["mean_reward"], summary["episodes"], best)
            last_step = step
        if final:
            logger.info("the run is over; its last checkpoint%s is evaluated: done",
                        "" if last_step is None else f" (global step {last_step})")
            return
        deadline = time.time() + args.poll_seconds
        while time.time() < deadline and not finishing:
            time.sleep(min(FINISH_POLL_SECS, args.poll_seconds))


if __name__ == "__main__":
    sys.exit(main())
