"""The bonuses read from a memory of embeddings (curiosity.EmbeddingMemoryBonus): E3B's elliptical bonus, RIDE's
impact over the episode's count, NGU's episodic nearest neighbours and SimHash's pseudo-counts, each against a
computation by hand; their scaler's memories per episode or per process; each with every learner in a short run."""
import numpy as np
import pytest
import tensorflow as tf

import constants
import curiosity
import envs

tf1 = tf.compat.v1


def test_e3b_sherman_morrison_keeps_the_inverse_of_the_episodes_covariance():
    rng = np.random.default_rng(0)
    embeddings = rng.normal(size=(6, 4))
    memory = curiosity.EllipticalMemory(4, ridge=0.1)
    covariance = 0.1 * np.eye(4)
    for phi in embeddings:
        expected = phi @ np.linalg.inv(covariance) @ phi  # the bonus before phi joins
        assert memory.visit(phi) == pytest.approx(expected, rel=1e-9)
        covariance += np.outer(phi, phi)
        np.testing.assert_allclose(memory.inverse, np.linalg.inv(covariance), rtol=1e-7, atol=1e-9)
    # a state seen again earns less than it did: b / (1 + b) after one visit of bonus b
    fresh = curiosity.EllipticalMemory(4, ridge=0.1)
    first = fresh.visit(embeddings[0])
    assert fresh.visit(embeddings[0]) == pytest.approx(first / (1 + first))


def test_simhash_counts_a_state_and_its_neighbours_under_one_code_and_its_opposite_apart():
    hasher = curiosity.SimHash(8, bits=16, seed=3)
    memory = curiosity.CountMemory(hasher)
    state = np.arange(1.0, 9.0)
    assert [memory.visit(state) for _ in range(3)] == pytest.approx([1.0, 1 / np.sqrt(2), 1 / np.sqrt(3)])
    assert memory.visit(2.0 * state) == pytest.approx(0.5)  # a positive multiple: the same signs, the 4th visit
    assert memory.visit(-state) == 1.0  # every projection's sign flips: a code of its own
    assert hasher(state) == bytes(np.packbits(hasher.projection @ state > 0))


def test_ride_divides_the_impact_by_the_root_of_the_episodes_count():
    memory = curiosity.ImpactMemory(curiosity.SimHash(3, seed=0))
    seen, other = [1.0, 2.0, 3.0], [-1.0, -2.0, -3.0]
    assert memory.visit([2.0, *seen]) == 2.0
    assert memory.visit([2.0, *seen]) == pytest.approx(2.0 / np.sqrt(2))
    assert memory.visit([0.5, *other]) == 0.5
    assert memory.visit([3.0, *seen]) == pytest.approx(3.0 / np.sqrt(3))


def test_ngus_kernel_on_a_fixed_memory_by_hand():
    memory = curiosity.NearestNeighbourMemory(neighbours=2)
    assert memory.visit([0.0, 0.0]) == pytest.approx(1 / 1.001)  # the first: one visit's worth, K(f, f) = 1
    memory.embeddings = [np.array([0.0, 0.0]), np.array([3.0, 0.0]), np.array([0.0, 1.0])]
    memory.mean = [10.0, 4]  # the running mean of the k-th neighbours' squared distances so far: 2.5
    # f = (0, 2): squared distances 4, 13, 1 -> the 2 nearest 1 and 4; the mean becomes (10 + 5) / 6 = 2.5
    # normalised 0.4 and 1.6, less xi 0.008: 0.392, 1.592; kernel 0.001 / (d + 0.001)
    kernel = 0.001 / (0.392 + 0.001) + 0.001 / (1.592 + 0.001)
    assert memory.visit([0.0, 2.0]) == pytest.approx(1 / (np.sqrt(kernel) + 0.001), rel=1e-9)
    assert memory.mean == [15.0, 6] and len(memory.embeddings) == 4
    # the same state again: its 2 nearest at squared distances 0 and 1, the mean (2 + 1) / (2 + 2) = 0.75; normalised
    # 0 (within xi: kernel 1) and 1 / 0.75
    memory.mean = [2.0, 2]
    kernel = 1.0 + 0.001 / (1 / 0.75 - 0.008 + 0.001)
    assert memory.visit([0.0, 2.0]) == pytest.approx(1 / (np.sqrt(kernel) + 0.001), rel=1e-9)


def test_ngu_earns_nothing_past_the_largest_similarity():
    memory = curiosity.NearestNeighbourMemory(neighbours=100)
    memory.embeddings = [np.zeros(2)] * 100
    memory.mean = [1.0, 1]
    assert memory.visit([0.0, 0.0]) == 0.0  # sqrt(100 kernels of 1) = 10 > s_max 8


def test_ngus_rnd_modulation_multiplies_by_the_errors_standard_score_plus_one_clipped_to_1_and_5():
    errors = curiosity.ErrorStatistics()
    first = curiosity.ModulatedMemory(curiosity.NearestNeighbourMemory(), errors)
    alone = 1 / 1.001  # the episode's first state: one visit's worth
    assert first.visit([4.0, 0.0, 0.0]) == pytest.approx(alone)  # one error: no spread yet, alpha 1
    second = curiosity.ModulatedMemory(curiosity.NearestNeighbourMemory(), errors)  # a new episode, the same errors
    assert second.visit([2.0, 0.0, 0.0]) == pytest.approx(alone)  # errors 4, 2: 2 is below the mean, clipped to 1
    third = curiosity.ModulatedMemory(curiosity.NearestNeighbourMemory(), errors)
    # errors 4, 2, 9: mean 5, std sqrt(26 / 3); alpha = 1 + 4 / 2.944 = 2.359
    assert third.visit([9.0, 0.0, 0.0]) == pytest.approx(alone * (1 + 4 / np.sqrt(26 / 3)), rel=1e-9)
    for _ in range(20):
        errors.add(1.0)
    fourth = curiosity.ModulatedMemory(curiosity.NearestNeighbourMemory(), errors)
    assert fourth.visit([100.0, 0.0, 0.0]) == pytest.approx(alone * 5.0)  # far out: at most L = 5


def test_ngus_distance_mean_is_kept_across_episodes():
    with tf.Graph().as_default():
        module = curiosity.build("ngu", (6,), 3, "mlp")
    one, other = module.memory(), module.memory()
    for embedding in ([0.0, 0.0], [1.0, 0.0], [0.0, 3.0]):
        one.visit(embedding)
    assert other.mean is one.mean and one.mean[1] == 3 and one.mean[0] == pytest.approx(1 + 9 + 10)


def test_an_episodic_memory_is_new_with_each_episode_and_the_counts_last_the_process():
    episodic = curiosity.MemoryScaler(lambda: curiosity.CountMemory(curiosity.SimHash(2)), 0.5, 2, episodic=True)
    state = np.array([[1.0, 1.0], [1.0, 1.0]])
    assert list(episodic.step(state, ())[0]) == [0.5, 0.5]  # each environment its own memory
    assert list(episodic.step(state, ())[0]) == pytest.approx([0.5 / np.sqrt(2)] * 2)
    episodic.episode_begins(0)
    assert list(episodic.step(state, ())[0]) == pytest.approx([0.5, 0.5 / np.sqrt(3)])
    lifelong = curiosity.MemoryScaler(lambda: curiosity.CountMemory(curiosity.SimHash(2)), 1.0, 2, episodic=False)
    assert list(lifelong.step(state, ())[0]) == pytest.approx([1.0, 1 / np.sqrt(2)])  # one memory for both
    lifelong.episode_begins(0)  # the counts go on: the third visit
    assert lifelong.step(state[:1], ())[0][0] == pytest.approx(1 / np.sqrt(3))


class Paying:
    """A memory whose visits pay 1, 3, 5, ... whatever they are shown."""

    def __init__(self):
        self.paid = -1.0

    def visit(self, row):
        self.paid += 2.0
        return self.paid


def test_the_bonuses_said_to_read_normalise_bonus_are_the_memory_bonuses():
    """constants.NORMALISED_BONUSES, which the study's reports name a run's normalisation by, are the bonuses whose
    scaler is the MemoryScaler that reads normalise_bonus."""
    memory_bonuses = {name for name, bonus in curiosity.BONUSES.items()
                      if issubclass(bonus, curiosity.EmbeddingMemoryBonus)}
    assert set(constants.NORMALISED_BONUSES) == memory_bonuses


def test_normalise_bonus_divides_each_bonus_by_the_deviation_of_all_so_far_this_one_included():
    normalised = curiosity.MemoryScaler(Paying, 2.0, 1, episodic=False, normalise=True)
    rewards = [float(normalised.step(np.zeros((1, 2)), ())[0][0]) for _ in range(3)]
    # 1 alone has no deviation and is paid as it is; then 3 / std(1, 3) = 3 / 1; 5 / std(1, 3, 5) = 5 / sqrt(8 / 3)
    assert rewards == pytest.approx([2.0 * 1.0, 2.0 * 3.0, 2.0 * 5.0 / np.sqrt(8.0 / 3.0)])
    plain = curiosity.MemoryScaler(Paying, 2.0, 1, episodic=False)
    assert [float(plain.step(np.zeros((1, 2)), ())[0][0]) for _ in range(3)] == [2.0, 6.0, 10.0]
    with tf.Graph().as_default():
        module = curiosity.build("e3b", (6,), 3, "mlp")
    config = constants.apply_overrides(constants.Config(), ["normalise_bonus=true"])
    assert module.scaler(config, 2).moments is not None and module.scaler(constants.Config(), 2).moments is None


@pytest.mark.parametrize("unsup", ["e3b", "ride", "ngu", "ngu_rnd", "counts"])
def test_a_memory_bonus_gives_its_memory_what_it_reads_and_trains_phi_without_the_policy(unsup):
    with tf.Graph().as_default():
        module = curiosity.build(unsup, (6,), 3, "mlp")
        rows = module.bonus_per_step
        assert tf.gradients(tf.reduce_sum(rows), module.var_list) == [None] * len(module.var_list)
        first = getattr(module, "networks", None)  # ngu_rnd: RND's error of each step, its predictor trained
        if first is not None:
            assert not set(first.target_variables) & set(module.var_list)
            assert any(v.name.startswith("predictor/") for v in module.var_list)
        with tf1.Session() as session:
            session.run(tf1.global_variables_initializer())
            rng = np.random.default_rng(0)
            next_observations = rng.normal(size=(4, 6))
            feed = module.feed(rng.normal(size=(4, 6)), next_observations, [0, 1, 2, 0])
            values, phi1, phi2 = session.run([rows, module.phi1, module.phi2], feed)
            errors = session.run(first.error, feed) if first is not None else None
    if unsup == "ride":
        np.testing.assert_allclose(values[:, 0], np.linalg.norm(phi2 - phi1, axis=1), rtol=1e-5)
        np.testing.assert_allclose(values[:, 1:], next_observations, rtol=1e-6)  # counted: the observation
    elif unsup == "counts":
        np.testing.assert_allclose(values, next_observations, rtol=1e-6)
    elif unsup == "ngu_rnd":
        assert np.all(errors > 0)
        np.testing.assert_allclose(values[:, 0], errors, rtol=1e-6)
        np.testing.assert_allclose(values[:, 1:], phi2)
    else:
        np.testing.assert_allclose(values, phi2)


def test_ride_counts_minigrids_views_exactly_and_shapes_phi_mostly_by_its_forward_model():
    """Counted under the observation (count_full_state off, or an environment that reports no state key), a 7x7
    view seen again divides the impact by sqrt(2), whatever the embedding; RIDE's embedding takes the forward loss
    100 times the inverse loss (coefficients 10 and 0.1)."""
    from constants import Config
    with tf.Graph().as_default():
        module = curiosity.build("ride", (7, 7, 3), 7, "minigrid")
        with tf1.Session() as session:
            session.run(tf1.global_variables_initializer())
            rng = np.random.default_rng(1)
            views = rng.integers(0, 3, size=(3, 7, 7, 3)).astype(np.float32)
            views[2] = 2 * views[1]  # another view, which SimHash would count under view 1's code (the same signs)
            feed = module.feed(views[[0, 1, 2]], views[[1, 2, 1]], [0, 1, 2])  # s_t+1: view 1, view 2, view 1 again
            rows = session.run(module.bonus_per_step, feed)
            config = Config(prediction_lr_scale=1.0)
            loss, inverse, forward = session.run([module.training_loss(config), module.inverse_loss,
                                                  module.forward_loss], feed)
            icm_weights = session.run(module.training_loss(Config(prediction_lr_scale=1.0, ride_forward_share=0.2)),
                                      feed)
    memory = module.memory()
    assert [memory.visit(row) for row in rows] == pytest.approx([rows[0, 0], rows[1, 0], rows[2, 0] / np.sqrt(2)])
    assert loss == pytest.approx((0.1 * inverse + 10.0 * forward) / 10.1, rel=1e-5)
    assert icm_weights == pytest.approx(0.8 * inverse + 0.2 * forward, rel=1e-5)  # ride_forward_share chooses
    # elsewhere (pixels) the key is the observation's SimHash code: near frames share a count
    assert isinstance(curiosity.observation_key("doom", 42 * 42), curiosity.SimHash)


class KeyedCorridor(envs.Corridor):
    """A corridor whose environment reports a key of the whole state: two neighbouring cells share one."""

    def reset(self, **kwargs):
        observation, info = super().reset(**kwargs)
        return observation, {**info, "state_key": ("pair", self.position // 2)}

    def step(self, action):
        observation, reward, terminated, truncated, info = super().step(action)
        return observation, reward, terminated, truncated, {**info, "state_key": ("pair", self.position // 2)}


def one_code(features):
    return b"one"  # without the environment's key every state is counted as one


def test_counting_bonuses_count_under_the_environments_state_key_when_asked():
    """RIDE's code counts a state under its fully observed grid (envs.MiniGridView's state_key): with
    count_full_state the counting bonuses' scaler reads each step's key, both where a runner hands over rollouts
    and where a replay learner's acting steps; off, the observation's own key counts."""
    from acting import env_runner
    from test_runner import CountingPolicy, StubPredictor

    from constants import Config

    for unsup, counts in (("ride", True), ("counts", True), ("e3b", False), ("ngu", False)):
        with tf.Graph().as_default():
            module = curiosity.build(unsup, (6,), 3, "mlp")
            assert module.scaler(Config(), 1).keyed is counts  # count_full_state is on by default
            assert module.scaler(Config(count_full_state=False), 1).keyed is False
    # A3C's and IMPALA's runner: walking right, s_t+1 is cells 1..7, their keys 0 1 1 2 2 3 3
    walked = {}
    for keyed in (True, False):
        scaler = curiosity.MemoryScaler(lambda: curiosity.CountMemory(one_code), 1.0, 1, episodic=True, keyed=keyed)
        batches = env_runner([KeyedCorridor(8)], CountingPolicy(), None, 7, lambda stats: None, bonus=StubPredictor(),
                             scaler=scaler)
        [rollout] = next(batches)
        assert rollout.state_keys == [("pair", cell // 2) for cell in range(1, 8)]
        walked[keyed] = rollout.bonuses
    assert walked[True] == pytest.approx([1, 1, 2 ** -0.5, 1, 2 ** -0.5, 1, 2 ** -0.5])
    assert walked[False] == pytest.approx([n ** -0.5 for n in range(1, 8)])
    # a replay learner's acting: each step's keys reach the bonus with its observations
    import offpolicy

    seen = []

    class Recording(offpolicy.StepBonus):
        def __call__(self, observations, following, actions, keys=None):
            seen.append(keys)
            return np.zeros(len(observations))

    acting = offpolicy.Acting([KeyedCorridor(8), KeyedCorridor(8)], Config(), np.float32, seed=0)
    for _ in range(3):
        acting.step([1, 1], Recording())
    assert seen == [[("pair", 0), ("pair", 0)], [("pair", 1), ("pair", 1)], [("pair", 1), ("pair", 1)]]


MEMORY_BONUSES = ("e3b", "ride", "ngu", "ngu_rnd", "counts")
LEARNERS = {
    "a3c": ["--algo", "a3c", "--num-workers", "0", "--env-id", "Corridor-v0", "--set", "max_global_steps=400"],
    "dqn": ["--algo", "dqn", "--num-workers", "0", "--env-id", "Corridor-v0", "--set", "max_global_steps=400",
            "--set", "learning_starts=100", "--set", "replay_ratio=16", "--set", "batch_size=32"],
    "sac": ["--algo", "sac", "--env-id", "Pendulum-v1", "--set", "max_global_steps=400", "--set",
            "learning_starts=100", "--set", "batch_size=32", "--set", "replay_ratio=8"],
    "impala": ["--algo", "impala", "--num-workers", "0", "--env-id", "Corridor-v0", "--set", "max_global_steps=400"],
}


A3C_TWO_STREAMS = ("ride", "ngu_rnd")  # A3C's runs of these take the bonus on a value head of its own


def two_streams(algo, unsup):
    return ["--set", "two_streams=true"] if algo == "a3c" and unsup in A3C_TWO_STREAMS else []


@pytest.mark.parametrize("algo", LEARNERS)
def test_every_memory_bonus_trains_with_the_learner(algo, tmp_path):
    """Each bonus read from a memory, with the learner in one process (side by side; A3C's RIDE and NGU on two
    streams, the others on one): every episode gets a bonus; the lifelong counts' bonus a step falls as the
    corridor's states repeat (SAC's sac_classic preset asks to relabel the bonus: these are stored as acted, and the
    log says so)."""
    import csv
    import json

    from conftest import side_by_side

    results = side_by_side("train.py", *([*LEARNERS[algo], *two_streams(algo, unsup), "--unsup", unsup,
                                          "--log-dir", tmp_path / unsup] for unsup in MEMORY_BONUSES))
    for unsup, result in zip(MEMORY_BONUSES, results):
        assert result.returncode == 0, (unsup, result.stderr[-3000:])
        rows = list(csv.DictReader(open(tmp_path / unsup / "episodes_0.csv")))
        per_step = [float(row["bonus"]) / int(row["length"]) for row in rows]
        assert len(rows) >= 2 and all(value > 0 for value in per_step), (unsup, per_step)
        if unsup == "counts" and algo != "sac":
            assert per_step[-1] < per_step[0], per_step
        if algo == "sac":
            assert "relabel_bonus does not apply" in result.stderr
        config = json.load(open(tmp_path / unsup / "config.json"))
        assert config["hyperparameters"]["two_streams"] == bool(two_streams(algo, unsup)), unsup
