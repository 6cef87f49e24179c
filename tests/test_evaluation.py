"""evaluation.py: the episode every evaluation plays, and the one log (eval.csv, rewards.txt its view, eval_NNN/)."""
import os

import numpy as np

import envs
import evaluation
import logdir


class Right:
    """A scripted agent: always right (the corridor's solution)."""

    def reset(self):
        pass

    def act(self, observation, greedy):
        return 1

    def bonus(self, observation, next_observation, action):
        return 0.5


def test_an_episode_is_played_step_by_step_with_its_frames():
    env = envs.create_env("Corridor-v0", render_mode="rgb_array")
    steps = []
    episode, frames, inputs = evaluation.play_episode(env, Right(), True, np.random.default_rng(0), 100, True, True,
                                                      seed=0, on_step=lambda *step: steps.append(step))
    env.close()
    assert (episode["reward"], episode["length"], episode["bonus"], episode["truncated"]) == (1.0, 7, 3.5, False)
    assert [(action, reward, terminated) for _, action, reward, terminated in steps] == [(1, 0.0, False)] * 6 + [
        (1, 1.0, True)]
    assert [int(np.argmax(observation)) for observation, *_ in steps] == list(range(1, 8))
    assert len(frames) == len(inputs) == 8 and frames[0].shape == (16, 128, 3)
    assert frames[-1][8, 7 * 16 + 8].tolist() == [255, 255, 255], "the agent drawn on the goal's cell at the end"


def test_random_start_actions_come_first_then_the_agent():
    env = envs.create_env("Corridor-v0")
    taken = []
    episode, _, _ = evaluation.play_episode(env, Right(), True, np.random.default_rng(3), 5, False, False, seed=0,
                                            random_start=4, on_step=lambda _, action, *rest: taken.append(action))
    env.close()
    random_steps = episode["random_steps"]
    assert 0 < random_steps <= 4 and taken[random_steps:] == [1] * (5 - random_steps), (random_steps, taken)


def test_the_log_is_eval_csv_and_rewards_txt_is_its_view(tmp_path):
    summary = {"episodes": 2, "mean_reward": 1.0, "min_reward": 1.0, "max_reward": 1.0}
    assert evaluation.record(str(tmp_path), 500, summary, "model.ckpt-500") == 1
    assert evaluation.record(str(tmp_path), 1000, dict(summary, mean_reward=-3.46, success_rate=0.5),
                             "model.ckpt-1000") == 2
    rows = logdir.read_rows(str(tmp_path / logdir.EVAL))
    assert [(row["global_step"], row["mean_reward"], row["success_rate"], row["checkpoint"]) for row in rows] == [
        ("500", "1", "", "model.ckpt-500"), ("1000", "-3.46", "0.5", "model.ckpt-1000")]
    assert (tmp_path / logdir.REWARDS_FILE).read_text() == "  1      500 1.0\n  2     1000 -3.5\n"
    assert logdir.read_rewards(str(tmp_path)) == [(500, 1.0), (1000, -3.5)]
    assert evaluation.best_so_far(str(tmp_path)) == 1.0 and evaluation.best_so_far(str(tmp_path / "none")) == -np.inf


def test_frames_are_written_as_pngs_or_a_video(tmp_path):
    import imageio.v3 as iio

    frames = [np.full((16, 32, 3), value, np.uint8) for value in (0, 100, 200)]
    folder = evaluation.write_frames(str(tmp_path / "eval_001"), 1, frames, "png")
    assert sorted(os.listdir(folder)) == ["frame_00000.png", "frame_00001.png", "frame_00002.png"]
    assert iio.imread(os.path.join(folder, "frame_00001.png")).tolist() == frames[1].tolist()
    video = evaluation.write_frames(str(tmp_path / "eval_001"), 2, frames, "gif")
    assert video == str(tmp_path / "eval_001" / "episode_2.gif") and len(iio.imread(video, index=None)) == 3
    assert evaluation.frames_dir("run", 12) == os.path.join("run", "eval_012")


def test_a_checkpoint_is_evaluated_every_so_many_steps_and_the_runs_last_whatever_its_distance():
    every = 1000
    assert evaluation.due(500, None, every), "the first checkpoint seen"
    assert not evaluation.due(None, None, every, final=True), "none yet"
    assert not evaluation.due(1499, 500, every) and evaluation.due(1500, 500, every)
    assert not evaluation.due(4012, 3500, every) and evaluation.due(4012, 3500, every, final=True), "the last"
    assert not evaluation.due(4012, 4012, every, final=True), "evaluated already"
