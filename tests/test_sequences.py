"""sequences.py: the world model's batches of sequences from stored episodes, PlaNet's recent/cache mix by hand."""
import numpy as np
import pytest

import logdir
import sequences


def write(directory, tag, steps=9):
    """An episode of `steps` steps whose every reward is `tag`, so that a drawn chunk says which episode it is."""
    rows = steps + 1
    return logdir.write_episode(str(directory), {
        "observation": np.full((rows, 3), tag, np.float32), "action": np.zeros((rows, 1), np.float32),
        "reward": np.full(rows, tag, np.float32), "discount": np.ones(rows, np.float32)})


def tags(episodes):
    return sorted(int(episode["reward"][0]) for episode in episodes)


def test_half_of_a_draw_is_the_new_episodes_and_half_the_cache(tmp_path):
    for tag in range(4):
        write(tmp_path, tag)
    loader = sequences.EpisodeLoader(str(tmp_path), np.random.default_rng(0))
    assert tags(loader.draw(4)) == [0, 1, 2, 3]  # nothing cached yet: all four are new, each once
    assert loader.refresh() == 0 and len(loader.cache) == 4 and not loader.recent
    write(tmp_path, 10)
    write(tmp_path, 11)
    assert loader.refresh() == 2 and len(loader.recent) == 2 and len(loader.cache) == 4
    drawn = tags(loader.draw(4))
    assert drawn[2:] == [10, 11], "the two new episodes are half of the draw, each once"
    assert len(set(drawn[:2])) == 2 and set(drawn[:2]) <= {0, 1, 2, 3}, "the other half from the cache, no repeat"
    assert len(loader.cache) == 6 and not loader.recent
    for seed in range(20):  # whatever the draw's randomness: a 4-of-6 sample would miss one of them 60% of the time
        again = sequences.EpisodeLoader(str(tmp_path), np.random.default_rng(seed))
        again.cache = {path: episode for path, episode in loader.cache.items() if episode["reward"][0] < 10}
        assert tags(again.draw(4))[2:] == [10, 11]
    assert set(tags(loader.draw(6))) == {0, 1, 2, 3, 10, 11}, "no new file: the whole draw from the cache, each once"


def test_a_part_smaller_than_its_half_repeats_only_beyond_its_size(tmp_path):
    write(tmp_path, 0)
    loader = sequences.EpisodeLoader(str(tmp_path), np.random.default_rng(1))
    loader.draw(1)
    write(tmp_path, 1)
    assert tags(loader.draw(6)) == [0, 0, 0, 1, 1, 1]  # one recent, one cached: three each


def test_unreadable_and_short_files_are_skipped_once_and_the_cache_keeps_its_bound(tmp_path, caplog):
    write(tmp_path, 0, steps=2)  # 3 rows: too short for chunks of 5
    (tmp_path / "20990101T000000-broken-9.npz").write_bytes(b"not a zip")
    write(tmp_path, 1)
    loader = sequences.EpisodeLoader(str(tmp_path), np.random.default_rng(0), min_rows=5, max_episodes=2)
    assert loader.refresh() == 1 and len(loader.unusable) == 2
    assert "cannot be read whole" in caplog.text
    caplog.clear()
    assert loader.refresh() == 0 and "cannot be read whole" not in caplog.text, "a broken file is read once"
    for tag in (2, 3):  # each read in a draw of its own, so the cache holds them in the order they came
        loader.draw(1)
        write(tmp_path, tag)
    loader.draw(1)
    assert [int(episode["reward"][0]) for episode in loader.cache.values()] == [2, 3], \
        "past max_episodes the oldest leave the cache"
    with pytest.raises(ValueError, match="no episode of at least 5 rows"):
        sequences.EpisodeLoader(str(tmp_path / "none"), np.random.default_rng(0), min_rows=5).draw(1)


def test_a_chunk_is_consecutive_rows_from_any_offset_and_a_batch_stacks_them(tmp_path):
    rows = 10
    episode = {"reward": np.arange(rows, dtype=np.float32), "observation": np.arange(rows * 2).reshape(rows, 2)}
    rng = np.random.default_rng(0)
    starts = set()
    for _ in range(200):
        part = sequences.chunk(episode, 4, rng)
        start = int(part["reward"][0])
        assert list(part["reward"]) == [start, start + 1, start + 2, start + 3]
        assert (part["observation"] == episode["observation"][start:start + 4]).all()
        starts.add(start)
    assert starts == set(range(rows - 4 + 1)), "every offset, the last whole chunk's included"
    with pytest.raises(ValueError, match="no chunk of 11"):
        sequences.chunk(episode, 11, rng)
    for tag in range(3):
        write(tmp_path, tag)
    drawn = sequences.batch(sequences.EpisodeLoader(str(tmp_path), rng, min_rows=5), 5, 5)
    assert drawn["observation"].shape == (5, 5, 3) and drawn["reward"].shape == (5, 5)
    assert all(len(set(row)) == 1 for row in drawn["reward"]), "each chunk is one episode's"
