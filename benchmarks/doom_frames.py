#!/usr/bin/env python
"""How Doom's frames are made: speed of three ways to produce the agent's 42x42 input from a 4-tic step, and how
much max-pooling the last two frames changes it.

  last      the engine repeats the action (make_action(a, 4)) and renders one GRAY8 frame (what DoomEnv does)
  max2      the engine repeats 3 tics, renders, repeats 1 more, renders; the max of the two GRAY8 frames
  tics-rgb  one tic at a time, an RGB24 frame each tic, the max of the last two, then grayscale (the old DoomEnv
            with gymnasium's MaxAndSkipObservation)

Each way plays the same random actions from the same seed; the frame comparison is over the 42x42 inputs of the
max2 run, against its own last frame.

    python benchmarks/doom_frames.py --seconds 20
"""
import argparse
import json
import os
import sys
import time

import cv2
import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
import envs  # noqa: E402

SIZE = (envs.IMAGE_SIZE, envs.IMAGE_SIZE)


def small(frame):
    return cv2.resize(frame, SIZE, interpolation=cv2.INTER_AREA)


def play(way, seconds, seed):
    """Steps/s of `way`, and for max2 the 42x42 frames with and without the max."""
    env = envs.DoomEnv(render_mode="rgb_array" if way == "tics-rgb" else None, repeat=1)
    game, rng = env.game, np.random.default_rng(seed)
    env.reset(seed=seed)
    steps, pairs, start = 0, [], time.time()
    while time.time() - start < seconds:
        buttons = envs.DOOM_BUTTONS[int(rng.integers(len(envs.DOOM_BUTTONS)))]
        if way == "last":
            game.make_action(buttons, envs.DOOM_ACTION_REPEAT)
            frame = None if game.is_episode_finished() else small(game.get_state().screen_buffer)
        elif way == "max2":
            game.make_action(buttons, envs.DOOM_ACTION_REPEAT - 1)
            frame = None
            if not game.is_episode_finished():
                before = game.get_state().screen_buffer
                game.make_action(buttons, 1)
                if not game.is_episode_finished():
                    last = game.get_state().screen_buffer
                    frame = small(np.maximum(before, last))
                    if len(pairs) < 2000:
                        pairs.append((frame, small(last)))
        else:
            screens = []
            for _ in range(envs.DOOM_ACTION_REPEAT):
                game.make_action(buttons, 1)
                if game.is_episode_finished():
                    break
                screens.append(game.get_state().screen_buffer)
            frame = small(cv2.cvtColor(np.maximum(*screens[-2:]), cv2.COLOR_RGB2GRAY)) if len(screens) >= 2 else None
        steps += 1
        if frame is None:
            game.new_episode()
    rate = steps / (time.time() - start)
    env.close()
    return rate, pairs


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", default=os.path.join("tmp", "bench-doom-frames"))
    args = parser.parse_args()
    os.makedirs(args.out, exist_ok=True)
    rates, result = {}, {"seconds": args.seconds}
    for way in ("last", "max2", "tics-rgb"):
        rates[way], pairs = play(way, args.seconds, args.seed)
        print(f"{way:>9}: {rates[way]:7.0f} agent steps/s ({rates[way] / rates['last']:.2f}x of last)", flush=True)
        if pairs:
            pooled, last = (np.array(frames, np.float64) for frames in zip(*pairs))
            changed = np.abs(pooled - last)
            result["max_vs_last"] = {"frames": len(pairs), "mean_abs_diff_of_255": round(float(changed.mean()), 3),
                                     "pixels_changed_fraction": round(float((changed > 0).mean()), 4),
                                     "pixels_changed_by_over_8_fraction": round(float((changed > 8).mean()), 4)}
            print(f"  max of the last two vs the last frame alone, 42x42, {len(pairs)} frames: "
                  f"mean |difference| {changed.mean():.2f} of 255, {100 * (changed > 0).mean():.1f}% of pixels "
                  f"differ, {100 * (changed > 8).mean():.1f}% by more than 8", flush=True)
    result["steps_per_sec"] = {way: round(rate, 1) for way, rate in rates.items()}
    path = os.path.join(args.out, "doom_frames.json")
    with open(path, "w") as handle:
        json.dump(result, handle, indent=2)
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
