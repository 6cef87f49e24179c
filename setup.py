"""curiosity-agent: distributed A3C + ICM (Pathak et al. 2017) on TensorFlow 2 in tf.compat.v1 graph mode."""
import glob
import os

from setuptools import setup

HERE = os.path.dirname(os.path.abspath(__file__))
# Every top-level module is the program's (flat, as the original's): listed from the tree, so that none is left out
# of the package (tests/test_package.py builds the wheel and imports each one from outside the checkout).
MODULES = sorted(os.path.basename(path)[:-3] for path in glob.glob(os.path.join(HERE, "*.py"))
                 if os.path.basename(path) != "setup.py")

DOOM = ["vizdoom>=1.3,<2"]  # ships MyWayHome's .cfg/.wad and freedoom
# gym-super-mario-bros 7.4.0 is pure Python; nes-py compiles on install (g++ and the Python headers) on 3.11-3.13.
# envs.py adapts both to gymnasium and numpy 2.
MARIO = ["gym-super-mario-bros==7.4.0", "nes-py>=8.2,<9"]
ATARI = ["ale-py>=0.9,<1"]  # ships the ROMs
# gymnasium's MuJoCo tasks (InvertedPendulum-v5, HalfCheetah-v5, ...), rendered headless through EGL for -pixels
MUJOCO = ["mujoco>=3.1,<5", "packaging"]
PIXELS = ["pygame-ce>=2.5,<3"]  # classic control's renderer (Pendulum-v1-pixels); vizdoom brings it too
MINIGRID = ["minigrid>=3.2,<4"]  # pure Python; draws with pygame-ce

setup(
    name="curiosity-agent",
    version="0.1.0",
    description="Distributed A3C with the Intrinsic Curiosity Module, on TensorFlow's parameter-server runtime",
    python_requires=">=3.11,<3.14",
    py_modules=MODULES,
    install_requires=[
        "tensorflow-cpu>=2.21,<2.22",
        "tensorboard>=2.21,<2.22",
        "gymnasium>=1.0,<2",
        "numpy>=2.0,<3",
        "scipy>=1.11,<2",
        "opencv-python-headless>=4.9,<6",
        "libtmux>=0.40,<1",
        "matplotlib>=3.8,<4",  # plots.py
        "imageio>=2.34,<3",  # demo.py --record: MP4 through imageio-ffmpeg's bundled ffmpeg, or GIF
        "imageio-ffmpeg>=0.5,<1",
        "py-spy>=0.4,<1",  # the supervisor adds a hung worker's native (TensorFlow C++) stacks to its log
        "tqdm>=4.66,<5",  # the one-process runs' progress bar
    ],
    extras_require={
        "test": ["pytest>=8,<10", "pytest-timeout>=2.3,<3", "pytest-xdist>=3.5,<4", "pyyaml>=6,<7"],
        "doom": DOOM,
        "mario": MARIO,
        "atari": ATARI,
        "mujoco": MUJOCO,
        "pixels": PIXELS,
        "minigrid": MINIGRID,
        "games": DOOM + MARIO + ATARI + MUJOCO + PIXELS + MINIGRID,
    },
)
