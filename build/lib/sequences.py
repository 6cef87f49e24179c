"""Batches of sequences from the episodes a run stores (`<log-dir>/train_episodes/`, logdir.write_episode): what a
world model trains on. numpy only.

As PlaNet's loader does, the episodes are read once and kept: those written since the last draw are `recent`, the
rest the `cache`; each draw takes half its episodes from the recent ones and half from the cache, so that new
experience is trained on at once and old experience is not forgotten, then the recent ones join the cache. Each
episode gives one chunk of `length` consecutive rows at a random offset.
"""
import logging

import numpy as np

import logdir

logger = logging.getLogger(__name__)


class EpisodeLoader:
    """The episodes of `directory`, picked up as they appear, drawn as PlaNet's recent/cache mix."""

    def __init__(self, directory, rng, min_rows=1, max_episodes=None):
        self.directory, self.rng, self.min_rows = directory, rng, min_rows
        self.max_episodes = max_episodes  # the cache's bound: the oldest are dropped past it (None: no bound)
        self.recent, self.cache = {}, {}  # {path: episode}, each in the order it was read
        self.unusable = set()  # files read once and found too short or broken: not read again

    def refresh(self):
        """Read the files written since the last call into `recent`; the number read."""
        known = self.recent.keys() | self.cache.keys() | self.unusable
        found = 0
        for path in logdir.episode_files(self.directory):
            if path in known:
                continue
            episode = logdir.read_episode(path)
            if episode is None or len(episode["reward"]) < self.min_rows:
                self.unusable.add(path)  # cut short, or shorter than a chunk: it can give no sequence
                continue
            self.recent[path] = episode
            found += 1
        return found

    def __len__(self):
        return len(self.recent) + len(self.cache)

    def draw(self, count):
        """`count` episodes: half (rounded up) from the recent ones, the rest from the cache, each part without
        repeats as far as it goes and with them beyond; all from one part where the other is empty. Then the recent
        ones join the cache."""
        self.refresh()
        if not len(self):
            raise ValueError(f"no episode of at least {self.min_rows} rows in {self.directory}")
        recent, cached = list(self.recent.values()), list(self.cache.values())
        from_recent = count if not cached else 0 if not recent else (count + 1) // 2
        episodes = self._sample(recent, from_recent) + self._sample(cached, count - from_recent)
        self.cache.update(self.recent)
        self.recent = {}
        if self.max_episodes is not None:
            for path in list(self.cache)[:max(0, len(self.cache) - self.max_episodes)]:
                del self.cache[path]
        return episodes

    def _sample(self, episodes, count):
        if not count:
            return []
        whole, part = divmod(count, len(episodes))
        picks = [index for _ in range(whole) for index in self.rng.permutation(len(episodes))]
        picks += list(self.rng.choice(len(episodes), part, replace=False))
        return [episodes[index] for index in picks]


def chunk(episode, length, rng):
    """`length` consecutive rows of every array of `episode`, from a random offset."""
    rows = len(episode["reward"])
    if rows < length:
        raise ValueError(f"an episode of {rows} rows has no chunk of {length}")
    start = int(rng.integers(0, rows - length + 1))
    return {key: value[start:start + length] for key, value in episode.items()}


def batch(loader, size, length):
    """A batch of `size` chunks of `length` rows, {key: [size, length, ...]}."""
    chunks = [chunk(episode, length, loader.rng) for episode in loader.draw(size)]
    return {key: np.stack([part[key] for part in chunks]) for key in chunks[0]}

