"""Evaluations, one loop and one log for every algorithm: an episode played by an agent (play_episode), its summary,
and the log directory's evaluation files, written by demo.py --watch beside a cluster's run and by a replay
learner's one-process run in its own loop.

    <log-dir>/eval.csv          one row per evaluation (EVAL_COLUMNS): the log
    <log-dir>/rewards.txt       the same evaluations as "{eval:3d} {step:8d} {mean reward:.1f}" lines, rewritten
                                from eval.csv after each row (the DQN this project grew from wrote this file)
    <log-dir>/eval_NNN/         with frames (--eval-frames): evaluation NNN's episodes, episode_K.mp4 or .gif, or
                                episode_K/frame_NNNNN.png

An agent plays through four methods: `reset()` at each episode's start, `act(observation, greedy)` -> an action as
the environment takes it (None: a random one), `bonus(observation, next_observation, action)` -> its curiosity
bonus of that step, and `close()`. This module does not import TensorFlow.
"""
import csv
import glob
import hashlib
import json
import os
import shutil
import signal
import time

import numpy as np

import envs
import logdir

EVAL_COLUMNS = ["global_step", "wall_time", "episodes", "mean_reward", "min_reward", "max_reward", "success_rate",
                "mean_distance", "checkpoint"]
FRAME_FORMATS = ("png", "mp4", "gif")  # --eval-frames: an image per frame, or a video per episode
FRAMES_FPS = 30  # the evaluation videos' frame rate
FINISH_SIGNAL = signal.SIGUSR1  # to the evaluation process (demo.py --watch): the run is over, evaluate its last
# checkpoint and leave


def random_action(space, rng):
    """A uniformly random action of a discrete space (an int) or of a bounded Box (a float32 vector), from `rng`."""
    if hasattr(space, "n"):
        return int(rng.integers(space.n))
    return rng.uniform(space.low, space.high).astype(np.float32)


def play_episode(env, agent, greedy, rng, max_steps, record, record_signal, seed=None, random_start=0,
                 check_interrupt=lambda: None, on_step=None):
    """One episode: {reward, length, bonus, success, distance, actions digest, ...}, and the frames and inputs when
    asked. Its first 0 to `random_start` actions (drawn from `rng`) are random; the agent acts on those frames too,
    so that its LSTM state has seen them when it takes over. `check_interrupt` is called between steps; `on_step`
    (observation, action, reward, terminated), where given, after each."""
    observation, info = env.reset(seed=seed)
    if agent is not None:
        agent.reset()
    frames = [env.render()] if record else []
    inputs = [observation] if record_signal else []
    episode = {"reward": 0.0, "length": 0, "bonus": 0.0}
    game = envs.GameRecord()
    random_steps = int(rng.integers(random_start + 1)) if random_start else 0
    actions = hashlib.sha1()
    for step in range(max_steps):
        check_interrupt()
        action = None if agent is None else agent.act(observation, greedy)
        if action is None or step < random_steps:
            action = random_action(env.action_space, rng)
        actions.update(np.asarray(action).tobytes())
        next_observation, reward, terminated, truncated, info = env.step(action)
        if agent is not None:
            episode["bonus"] += agent.bonus(observation, next_observation, action)
        if on_step is not None:
            on_step(next_observation, action, reward, terminated)
        episode["reward"] += info.get("env_reward", reward)
        episode["length"] += 1
        game.observe(info, episode["length"])
        observation = next_observation
        if record:
            frames.append(env.render())
        if record_signal:
            inputs.append(observation)
        if terminated or truncated:
            break
    episode["truncated"] = not terminated
    episode["random_steps"] = random_steps
    episode["actions_digest"] = actions.hexdigest()[:16]  # episodes with the same digest took the same actions
    if "success" in game.metrics:
        episode["success"] = bool(game.metrics["success"])
    if "distance" in game.metrics:
        episode["distance"] = game.metrics["distance"]
    episode["visits"] = game.visits
    return episode, frames, inputs


def summarise(episodes):
    """An evaluation's figures of its episodes (play_episode's): mean, min and max reward, mean length and bonus,
    the number of distinct action sequences, and the success rate and mean distance where the game has them."""
    rewards = [episode["reward"] for episode in episodes]
    summary = {"episodes": len(episodes), "mean_reward": float(np.mean(rewards)), "min_reward": float(min(rewards)),
               "max_reward": float(max(rewards)), "mean_length": float(np.mean([e["length"] for e in episodes])),
               "mean_bonus": float(np.mean([e["bonus"] for e in episodes])),
               "distinct_episodes": len({episode["actions_digest"] for episode in episodes})}
    if any("success" in episode for episode in episodes):
        summary["success_rate"] = float(np.mean([episode.get("success", False) for episode in episodes]))
    if any("distance" in episode for episode in episodes):
        summary["mean_distance"] = float(np.mean([episode.get("distance", 0.0) for episode in episodes]))
    return summary


def record(log_dir, step, summary, checkpoint):
    """An evaluation into the log: a row of eval.csv, then rewards.txt rewritten as its view; the evaluation's
    number (1 for the first)."""
    path = os.path.join(log_dir, logdir.EVAL)
    is_new = not os.path.exists(path)
    with open(path, "a", newline="") as handle:
        writer = csv.writer(handle)
        if is_new:
            writer.writerow(EVAL_COLUMNS)
        writer.writerow([step, f"{time.time():.3f}", summary["episodes"], f"{summary['mean_reward']:.6g}",
                         f"{summary['min_reward']:.6g}", f"{summary['max_reward']:.6g}",
                         f"{summary['success_rate']:.4g}" if "success_rate" in summary else "",
                         f"{summary['mean_distance']:.6g}" if "mean_distance" in summary else "", checkpoint])
    return write_rewards_view(log_dir)


def rewards_lines(rows):
    """eval.csv's rows as rewards.txt's lines: "{eval:3d} {step:8d} {mean reward:.1f}"."""
    return [f"{index:3d} {int(row['global_step']):8d} {float(row['mean_reward']):.1f}\n"
            for index, row in enumerate(rows, 1)]


def write_rewards_view(log_dir):
    """rewards.txt rewritten from eval.csv (atomically: a reader never sees half of it); the number of lines."""
    lines = rewards_lines(logdir.read_rows(os.path.join(log_dir, logdir.EVAL)))
    path = os.path.join(log_dir, logdir.REWARDS_FILE)
    with open(path + ".tmp", "w") as handle:
        handle.writelines(lines)
    os.replace(path + ".tmp", path)
    return len(lines)


def due(step, last_step, every, final=False):
    """Whether the checkpoint at `step` is to be evaluated, the last evaluated one at `last_step` (None before the
    first): `every` steps after it; once the run is over (`final`), the last checkpoint if it is not evaluated yet,
    whatever its distance."""
    if step is None:
        return False
    if last_step is None:
        return True
    return step >= last_step + every or (final and step > last_step)


def frames_dir(log_dir, index):
    """Where evaluation `index` (1 for the first) keeps its episodes' frames: <log-dir>/eval_NNN."""
    return os.path.join(log_dir, f"eval_{index:03d}")


def write_frames(directory, episode_index, frames, frame_format, fps=FRAMES_FPS, quality=8):
    """One episode's rendered frames into `directory`: episode_K.mp4 or .gif, or episode_K/frame_NNNNN.png; the
    path written."""
    os.makedirs(directory, exist_ok=True)
    if frame_format == "png":
        import imageio.v2 as imageio

        folder = os.path.join(directory, f"episode_{episode_index}")
        os.makedirs(folder, exist_ok=True)
        for number, frame in enumerate(frames):
            imageio.imwrite(os.path.join(folder, f"frame_{number:05d}.png"), np.asarray(frame, np.uint8))
        return folder
    path = os.path.join(directory, f"episode_{episode_index}.{frame_format}")
    write_video(path, frames, fps, quality)
    return path


def write_video(path, frames, fps, quality=8):
    """MP4 (H.264 through imageio-ffmpeg's bundled ffmpeg, `quality` on imageio's 0-10 scale) or GIF, chosen by
    the file's extension."""
    import imageio.v2 as imageio

    frames = [np.ascontiguousarray(frame, dtype=np.uint8) for frame in frames]
    if path.endswith(".gif"):
        imageio.mimsave(path, frames, duration=1000.0 / fps, loop=0)
    else:
        with imageio.get_writer(path, fps=fps, codec="libx264", macro_block_size=2, quality=quality) as writer:
            for frame in frames:
                writer.append_data(frame)


def write_summaries(tf1, writer, step, summary):
    """The evaluation's global/eval_* scalars into a TensorBoard writer."""
    values = {"global/eval_reward_mean": summary["mean_reward"], "global/eval_reward_min": summary["min_reward"],
              "global/eval_reward_max": summary["max_reward"], "global/eval_length": summary["mean_length"]}
    if "success_rate" in summary:
        values["global/eval_success_rate"] = summary["success_rate"]
    if "mean_distance" in summary:
        values["global/eval_distance"] = summary["mean_distance"]
    writer.add_summary(tf1.Summary(value=[tf1.Summary.Value(tag=tag, simple_value=value)
                                          for tag, value in values.items()]), step)
    writer.flush()


def keep_best(tf1, checkpoint, log_dir, summary, step):
    """<log-dir>/best: a copy of `checkpoint` (a private snapshot, or a checkpoint the run will delete in its
    turn), with best.json, its evaluation's summary; replaces the copy kept before."""
    best_dir = os.path.join(log_dir, logdir.BEST)
    shutil.rmtree(best_dir, ignore_errors=True)
    os.makedirs(best_dir)
    for path in glob.glob(checkpoint + ".*"):
        shutil.copy(path, best_dir)
    tf1.train.update_checkpoint_state(best_dir, os.path.basename(checkpoint))  # relative: the run may move
    with open(os.path.join(best_dir, "best.json"), "w") as handle:
        json.dump(dict(summary, global_step=step), handle, indent=2)


def keep(tf1, writer, log_dir, step, summary, checkpoint):
    """An evaluation of `checkpoint` kept as every run keeps one: the checkpoint copied to best/ when it beats every
    earlier evaluation, a row of eval.csv (rewards.txt its view), the global/eval_* scalars; whether it was the
    best."""
    best = summary["mean_reward"] > best_so_far(log_dir)
    if best:
        keep_best(tf1, checkpoint, log_dir, summary, step)
    record(log_dir, step, summary, os.path.basename(checkpoint))
    write_summaries(tf1, writer, step, summary)
    return best


def best_so_far(log_dir):
    """The best mean reward of the run's evaluations in eval.csv, or -inf before the first."""
    rows = logdir.read_rows(os.path.join(log_dir, logdir.EVAL))
    return max((float(row["mean_reward"]) for row in rows), default=-np.inf)
