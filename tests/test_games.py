"""The real games, headless: Doom, Mario and Atari construct, reset and step with the agent's shapes; Doom's
variants start where they should; Mario reports distance; the preprocessing matches hand-built frames."""
import os
import signal
import subprocess

import cv2
import numpy as np
import pytest

import envs


@pytest.mark.parametrize("env_id,num_actions,family", [
    ("doom", 4, "doom"),
    ("doomSparse", 4, "doom"),
    ("doomVerySparse", 4, "doom"),
    ("VizdoomBasic-v1", 4, "doom"),
    ("mario", 14, "mario"),
    ("mario-1-2", 14, "mario"),
    ("mario-1-3", 14, "mario"),
    ("PongDeterministic-v4", 6, "atari"),
    ("ALE/Pong-v5", 6, "atari"),
    ("BreakoutNoFrameskip-v4", 4, "atari"),
])
def test_every_family_builds_resets_and_steps_headless(env_id, num_actions, family):
    env = envs.create_env(env_id, seed=0)
    try:
        observation, _ = env.reset(seed=0)
        assert envs.env_family(env_id) == family and env.action_space.n == num_actions
        channels = 4 if family in ("doom", "mario") else 1  # the paper's 4-frame stack is built in for these
        assert observation.shape == (42, 42, channels) and observation.dtype == np.float32
        frames = [observation]
        for step in range(40):
            observation, reward, terminated, truncated, info = env.step(step % num_actions)
            frames.append(observation)
            assert np.isfinite(reward) and "env_reward" in info
            if terminated or truncated:
                break
        assert 0.0 <= np.min(frames) and np.max(frames) <= 1.0
        assert np.ptp(np.array(frames)) > 0.05, "the frames show something, not a blank screen"
    finally:
        env.close()


@pytest.mark.parametrize("env_id", ["PongDeterministic-v4", "ALE/Pong-v5"])
def test_atari_with_env_wrap_stacks_four_42x42_frames(env_id):
    env = envs.create_env(env_id, env_wrap=True, seed=0)
    observation, _ = env.reset(seed=0)
    assert observation.shape == (42, 42, 4)
    env.close()


def test_atari_crop_keeps_the_playing_field():
    env = envs._crop_atari(envs.gym.make("PongNoFrameskip-v4"))
    frame, _ = env.reset(seed=0)
    assert frame.shape == (160, 160, 3) and env.observation_space.shape == (160, 160, 3)
    env.close()


@pytest.mark.parametrize("env_wrap", [True, False])
def test_the_atari_frame_the_agent_sees_is_the_emulators_screen_after_the_repeat(env_wrap):
    """With --envWrap: the max of the RGB screen's luminance over the last two of the 4 frames an action is held,
    cropped and resized; without it: the last frame of the id's own skip. Built by hand from single frames."""
    actions = [2, 2, 3, 0, 2, 3, 3, 1, 2, 2, 0, 3] * 3
    env = envs.create_env("PongNoFrameskip-v4" if env_wrap else "PongDeterministic-v4", env_wrap=env_wrap, seed=0)
    single = envs.gym.make("PongNoFrameskip-v4")  # the emulator one frame at a time, RGB
    top, bottom = envs.ATARI_CROP_ROWS

    def agent_frame(screen):
        return cv2.resize(screen[top:bottom], (42, 42), interpolation=cv2.INTER_AREA) / np.float32(255)

    try:
        observations = _play(env, actions)
        single.reset(seed=0)
        max_pooled, last = [], []
        for action in actions:
            screens = [cv2.cvtColor(single.step(action)[0], cv2.COLOR_RGB2GRAY) for _ in range(envs.ACTION_REPEAT)]
            max_pooled.append(agent_frame(np.maximum(screens[-2], screens[-1])))
            last.append(agent_frame(screens[-1]))
        newest = [observation[..., -1] for observation in observations[1:]]
        expected = max_pooled if env_wrap else last
        assert all(np.array_equal(seen, hand_made) for seen, hand_made in zip(newest, expected))
        assert len({frame.tobytes() for frame in newest}) > 10, "the ball and the paddles move"
        if env_wrap:
            flicker = sum(not np.array_equal(a, b) for a, b in zip(max_pooled, last))
            assert flicker > 0, "the max-pool changes some frames, so the check above can tell it apart"
    finally:
        env.close()
        single.close()


@pytest.mark.parametrize("env_id", ["doomSparse", "doomVerySparse"])
def test_doom_sparse_variants_start_at_their_fixed_spot(env_id):
    start = envs.DOOM_VARIANTS[env_id]
    assert start.spot in envs.doom_map().spawn_spots
    spot = envs.doom_map().spawn_spots[start.spot]
    env = envs.DoomEnv(start=start)
    try:
        for seed in (0, 1, 2):
            _, info = env.reset(seed=seed)
            assert (info["position_x"], info["position_y"]) == (start.x, start.y)
            assert info["cell"] == (start.x // envs.DOOM_CELL, start.y // envs.DOOM_CELL)  # floors: -176 is in -3
            assert abs(start.x - spot[0]) < 1 and abs(start.y - spot[1]) < 1
            angle = env.game.get_game_variable(env.vizdoom.GameVariable.ANGLE)
            assert abs((angle - start.angle + 180) % 360 - 180) < 0.01
    finally:
        env.close()


def test_doom_dense_starts_on_the_maps_spawn_spots():
    spots = np.array(list(envs.doom_map().spawn_spots.values()))
    env = envs.DoomEnv()
    seen = set()
    try:
        for seed in range(12):
            _, info = env.reset(seed=seed)
            distances = np.hypot(*(spots - (info["position_x"], info["position_y"])).T)
            assert distances.min() < 1.0, "every start is one of the 17 spawn spots"
            seen.add(int(distances.argmin()))
    finally:
        env.close()
    assert len(seen) >= 4, "the dense task starts at random spots"


def test_doom_map_has_the_scenarios_layout():
    layout = envs.doom_map()
    assert sorted(layout.spawn_spots) == list(range(10, 27)) and layout.goal == (1040.0, -352.0)
    assert layout.walls.shape[1:] == (2, 2) and len(layout.walls) > 50


def test_doom_rules_reward_and_position():
    env = envs.create_env("doomSparse", seed=0)
    _, info = env.reset(seed=0)
    start = (info["position_x"], info["position_y"])
    _, reward, terminated, truncated, info = env.step(envs.DOOM_ACTIONS.index("forward"))
    assert reward == pytest.approx(-0.0001 * envs.DOOM_ACTION_REPEAT), "living penalty per tic, 4 tics a step"
    assert info["position_x"] > start[0] and not (terminated or truncated), "facing east, forward moves east"
    env.close()


def _play(env, actions, seed=0):
    """The frames an environment shows over a fixed sequence of actions, the first from reset."""
    frames = [env.reset(seed=seed)[0]]
    frames += [env.step(action)[0] for action in actions]
    return frames


def test_the_doom_frame_the_agent_sees_is_the_engines_screen_after_the_repeat():
    actions = [1, 1, 2, 1, 3, 3, 1, 0, 1, 2] * 3
    start = envs.DOOM_VARIANTS["doomSparse"]
    repeated, single = envs.DoomEnv(start=start), envs.DoomEnv(start=start, repeat=1)
    try:
        frames = _play(repeated, actions)
        tic_frames = _play(single, [a for a in actions for _ in range(envs.DOOM_ACTION_REPEAT)])
        assert frames[0].shape == (120, 160) and frames[0].dtype == np.uint8
        # the engine repeats the action: the frame after each step is the screen after its last tic
        assert all(np.array_equal(f, t) for f, t in zip(frames, tic_frames[::envs.DOOM_ACTION_REPEAT]))
        assert len({f.tobytes() for f in frames}) > 20, "the view changes as the player moves and turns"
    finally:
        repeated.close()
        single.close()
    # what the network gets: that screen resized (cv2's INTER_AREA) to 42x42, newest of 4 stacked frames
    env = envs.create_env("doomSparse", seed=0)
    try:
        observations = _play(env, actions[:6])
        screen = env.unwrapped.game.get_state().screen_buffer
        expected = cv2.resize(screen, (42, 42), interpolation=cv2.INTER_AREA).astype(np.float32) / 255.0
        np.testing.assert_array_equal(observations[-1][..., -1], expected)
        np.testing.assert_array_equal(observations[-1][..., -2], observations[-2][..., -1])
    finally:
        env.close()


def test_recorded_doom_episodes_show_colour_and_feed_the_same_gray_frames():
    actions = [1, 2, 1, 1, 3, 1, 0, 1] * 3
    start = envs.DOOM_VARIANTS["doomVerySparse"]
    trained, recorded = envs.DoomEnv(start=start), envs.DoomEnv(start=start, render_mode="rgb_array")
    try:
        gray, shown = _play(trained, actions), _play(recorded, actions)
        assert all(np.array_equal(a, b) for a, b in zip(gray, shown)), "ViZDoom's GRAY8 = doom_gray(RGB24)"
        colour = recorded.render()
        assert colour.shape == (120, 160, 3) and np.abs(colour[..., 0].astype(int) - colour[..., 1]).max() > 0
    finally:
        trained.close()
        recorded.close()


def _vizdoom_children():
    listing = subprocess.run(["ps", "--ppid", str(os.getpid()), "-o", "pid=,comm="], capture_output=True,
                             text=True, check=True).stdout
    return {int(pid) for pid, name in (line.split() for line in listing.splitlines()) if name == "vizdoom"}


def test_a_dead_doom_engine_is_relaunched_and_the_episode_truncated():
    before = _vizdoom_children()
    env = envs.DoomEnv(start=envs.DOOM_VARIANTS["doomSparse"])
    try:
        env.reset(seed=0)
        engines = _vizdoom_children() - before
        assert len(engines) == 1
        os.kill(engines.pop(), signal.SIGKILL)
        for _ in range(50):  # the engine's death is noticed within a few steps
            _, _, terminated, truncated, info = env.step(1)
            if truncated:
                break
        assert truncated and not terminated and info.get("engine_restarted") and env.engine_restarts == 1
        _, info = env.reset()
        assert (info["position_x"], info["position_y"]) == (240.0, -176.0)
        env.step(1)
    finally:
        env.close()


def test_mario_reports_distance_and_ends_when_mario_loses_a_life():
    env = envs.create_env("mario", seed=0)
    _, info = env.reset(seed=0)
    distances = [info["distance"]]
    right = envs.MARIO_ACTIONS.index(("right", "B"))
    for _ in range(2000):  # running right without jumping: the first Goomba kills him
        _, _, terminated, truncated, info = env.step(right)
        distances.append(info["distance"])
        if terminated or truncated:
            break
    assert max(distances) > distances[0] + 100, "running right moves Mario right"
    assert terminated and not truncated and info["success"] is False, "a lost life ends the episode"
    env.close()


def test_mario_numpy2_layer_reads_the_rom_header_and_ram_as_numpy1_did():
    nes = envs._numpy2_super_mario_bros()(rom_mode="vanilla", target=(1, 1))
    rom = envs.importlib.import_module("nes_py.nes_env").ROM(nes._rom_path)
    assert (rom.prg_rom_size, rom.chr_rom_size, rom.mapper) == (32, 8, 0), "Super Mario Bros is NROM, 32K + 8K"
    assert isinstance(nes.ram[0x86], int) and nes.ram[0x6d] * 0x100 + nes.ram[0x86] == nes._x_position
    assert nes.ram.base is not None, "RAM stays a view of the emulator's memory"
    nes.close()


def test_mario_actions_are_the_papers_fourteen_nes_buttons():
    assert len(envs.MARIO_ACTIONS) == 14 and len(set(envs.MARIO_ACTIONS)) == 14
    assert envs.nes_button_byte(()) == 0 and envs.nes_button_byte(("right", "A", "B")) == 0b10000011


class Frames(envs.gym.Env):
    """Plays hand-built 42x42 frames: frame k is filled with the value k, reward k."""

    observation_space = envs.spaces.Box(0, 255, (42, 42), np.uint8)
    action_space = envs.spaces.Discrete(2)

    def reset(self, *, seed=None, options=None):
        self.k = 0
        return np.zeros((42, 42), np.uint8), {}

    def step(self, action):
        self.k += 1
        frame = np.full((42, 42), self.k, np.uint8)
        frame[0, 0] = 100 if self.k == 3 else 0  # one bright pixel in the second-to-last frame of step 1
        return frame, float(self.k), False, False, {}


def test_action_repeat_max_pools_the_last_two_frames_and_stacks_four():
    env = envs._to_small_image(Frames(), repeat=4, stack=True)
    observation, _ = env.reset()
    assert observation.shape == (42, 42, 4) and np.all(observation == 0)
    observation, reward, _, _, _ = env.step(0)  # raw frames 1..4
    assert reward == 1 + 2 + 3 + 4
    assert observation[1, 1, -1] * 255 == pytest.approx(4), "max of frames 3 and 4"
    assert observation[0, 0, -1] * 255 == pytest.approx(100), "the max keeps what only frame 3 showed"
    observation, _, _, _, _ = env.step(0)  # raw frames 5..8
    assert observation[1, 1, :] * 255 == pytest.approx([0, 0, 4, 8]), "oldest first, newest last"


def test_paper_preprocessing_is_built_in_for_doom_and_mario_only():
    assert envs.paper_preprocessing("doom", False) and envs.paper_preprocessing("mario-1-2", False)
    assert not envs.paper_preprocessing("PongDeterministic-v4", False)
    assert envs.paper_preprocessing("PongDeterministic-v4", True)


def test_game_engines_start_staggered():
    assert envs.startup_delay("doom", 0) == 0 and envs.startup_delay("doom", 3) == 3 * envs.STARTUP_STAGGER_SECONDS
    assert envs.startup_delay("mario", 2) > 0 and envs.startup_delay("CartPole-v1", 5) == 0


def test_unknown_ids_name_the_families():
    for env_id in ("dooom", "mario-9-1", "PongDeterministic-v9"):
        with pytest.raises(envs.EnvError, match="supported: doom, doomSparse, doomVerySparse"):
            envs.check_env_id(env_id)
