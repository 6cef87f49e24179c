"""Ape-X (Horgan et al. 2018) on TensorFlow's cluster: `train.py --algo dqn --num-workers N` runs one learner and
N actors (algorithms.DQN.roles), each a worker.py process; `--algo sac --num-workers N` the same with SAC's
learner, whose actors sample its policy (as the actors of Ape-X's DDPG played its policy with noise).

    actor i   plays its K environments with its own copy of the learner's acting network, each feeding an n-step
              buffer. DQN: epsilon-greedy on Q, environment k of actor i with epsilon_{iK+k} of
              replay.apex_epsilons(N K) (0.4 down to 0.4^8); every SEND_EVERY steps it computes the new
              transitions' priorities |R + d max_a Q(s', a) - Q(s, a)| with its copy. SAC: a sample of the policy,
              uniformly random actions until the global step reaches learning_starts; its transitions go in at the
              largest priority seen (it has no critic). It sends them in one enqueue_many, which adds its steps to
              the global step; every SYNC_EVERY steps it fetches the online weights
    learner   (the chief) drains the queue into replay.PrioritizedReplay, in its own memory, and trains the agent at
              the replay ratio (offpolicy.learn_step); it takes no transitions while it owes updates, so the queue
              fills and the actors wait on it: the ratio holds whatever the number of actors, within one receive
              (RECEIVE_MAX transitions) while the run goes, and exactly at its end, where the learner takes the
              last transitions and makes the updates they owe. It checkpoints every checkpoint_secs and ends the
              run at max_global_steps

The transitions travel through TensorFlow's own runtime: a FIFOQueue on the learner's device with a shared_name,
so that the queue op in every process's graph is the one queue, as DeepMind's TF1 IMPALA fed its learner. A
restarted learner restores the last checkpoint, not the replay: it refills to learning_starts before training
again, and the transitions in the queue die with the process. A restarted actor loses its unsent transitions.
"""
import logging
import time

import numpy as np
import tensorflow as tf

import cluster as roles
import curiosity
import logdir
import model
import offpolicy
import replay
import runs
import sessions
import acting
from acting import NetworkCopy
from constants import UsageError
from sessions import AbortRetrySession, Timings, retried_runs

tf1 = tf.compat.v1
logger = logging.getLogger("apex")

QUEUE_CAPACITY = 1024  # transitions the queue holds before an actor's send waits (84x84x4 frames: about 58 MB)
QUEUE_NAME = "apex_transitions"  # the shared_name: one queue for every process's graph
MAX_ACTORS = 1024  # the tokens the finished actors' queue holds
RECEIVE_MAX = 1024  # transitions the learner takes from the queue at once
RECEIVE_IDLE_SECS = 0.005  # the learner's pause when the queue was empty and no update was due
STARVED_SECS = 60.0  # a learner that received nothing this long says so (again each time as long)
SEND_EVERY = 50  # steps an actor plays between sends (Ape-X's local buffer: 50 transitions per actor)
SYNC_EVERY = 400  # steps an actor plays between weight fetches (Ape-X: every 400 frames)
FINISH_GRACE_SECS = 30.0  # after max_global_steps the learner serves until every actor has finished, this long at most
ACTOR_SCOPE = "acting"  # an actor's own copy of the acting network, on its own device (SAC's policy is "actor")


class ApeXGraph:
    """What the learner and every actor build alike (between-graph replication): the agent of `algo` (dqn.DQN or
    sac.SAC), the curiosity's module (`unsup`) and the queue on the learner's device; on an actor's device
    (`actor_device`), its copies of the acting network and of the curiosity's, and the op that fetches the weights
    into them."""

    def __init__(self, observation_space, action_space, config, head, learner_device, actor_device=None,
                 unsup="none", algo="dqn"):
        shape, self.dtype = observation_space.shape, replay.stored_dtype(observation_space)
        actions = curiosity.action_spec(action_space)
        with tf1.device(learner_device):
            self.network = offpolicy.build_learner(algo, shape, action_space, config, head, self.dtype)
            self.curious = None if unsup == "none" else offpolicy.Curious(unsup, shape, actions, config, head,
                                                                          self.dtype)
            frames = tf.uint8 if self.dtype == np.uint8 else tf.float32
            # the transition's columns (replay.Transition's, s_t+1 only for the curiosity), then its priority
            self.columns = 6 if self.curious else 5
            action_dtype = tf.as_dtype(self.network.action_dtype)
            dtypes = [frames, action_dtype, tf.float32, tf.float32, frames, frames][:self.columns] + [tf.float32]
            shapes = [shape, list(self.network.action_shape), [], [], shape, shape][:self.columns] + [[]]
            self.queue = tf1.FIFOQueue(QUEUE_CAPACITY, dtypes, shapes=shapes, shared_name=QUEUE_NAME,
                                       name="transitions")
            self.sent = [tf1.placeholder(dtype, [None, *each], f"sent_{index}")
                         for index, (dtype, each) in enumerate(zip(dtypes, shapes))]
            self.steps = tf1.placeholder(tf.int64, [], "steps")
            with tf.control_dependencies([self.queue.enqueue_many(self.sent)]):
                self.send = self.network.global_step.assign_add(self.steps)  # the environment steps, counted
            self.received = self.queue.dequeue_many(tf.minimum(self.queue.size(), RECEIVE_MAX))
            # a token from each actor that has seen the end of the run: a queue needs no initialising and is not
            # checkpointed, so a restarted learner counts afresh
            finished = tf1.FIFOQueue(MAX_ACTORS, [tf.int32], shapes=[[]], shared_name=QUEUE_NAME + "_finished",
                                     name="finished_actors")
            self.finish = finished.enqueue(0)
            self.finished_actors = finished.size()
        self.shared_variables = tf1.global_variables()  # the learner's: checkpointed; the actors wait for them
        self.actor_variables = []
        if actor_device is not None:
            def actor_network():  # (its observations, its outputs), here and in its acting copy's graph
                observations = model.observation_placeholder(shape, self.dtype, "actor_observations")
                return observations, self.network.acting_network(observations, ACTOR_SCOPE)

            self.actor_network = actor_network
            with tf1.device(actor_device):
                self.observations, self.outputs = actor_network()
                self.acting_variables = tf1.get_collection(tf1.GraphKeys.TRAINABLE_VARIABLES, ACTOR_SCOPE + "/")
                pairs = list(zip(self.network.acting_variables, self.acting_variables))
                if self.curious is not None:
                    with tf1.variable_scope(ACTOR_SCOPE + "_curiosity"):
                        self.bonus = curiosity.build(unsup, shape, actions, head)
                    # the predictor, and the state of a bonus that has some (RND's target and statistics)
                    pairs += zip(self.curious.module.var_list + list(self.curious.module.state_variables),
                                 self.bonus.var_list + list(self.bonus.state_variables))
                    self.curious.track(self.bonus)  # the steps it acts on merge into the learner's statistics
                self.actor_variables = [variable for variable in tf1.global_variables()
                                        if variable not in self.shared_variables]
                syncs = [mine.assign(theirs) for theirs, mine in pairs]
                self.sync = tf.group(*syncs)
                self.synced_acting = syncs[:len(self.acting_variables)]  # its weights as the sync left them


def initial_priorities(q_values, count, actions, returns, discounts):
    """|R + d max_a Q(s', a) - Q(s, a)| of `count` transitions, from Q of their observations then their next
    observations, stacked ([2 count, A]): the actor's estimate of the TD error its learner would see."""
    now, later = q_values[:count], q_values[count:]
    return np.abs(returns + discounts * later.max(axis=1) - now[np.arange(count), actions]).astype(np.float32)


class Actor:
    """One actor task: plays, computes its transitions' priorities (DQN's), sends them, fetches the weights."""

    def __init__(self, graph, envs, config, task, num_actors):
        self.graph, self.config, self.envs = graph, config, envs
        count = len(envs)
        self.epsilons = np.array(replay.apex_epsilons(num_actors * count)[task * count:(task + 1) * count])
        self.seed = config.seed + task * count
        self.acting = None  # built in run, after the curiosity's warm-up has played the environments
        self.rng = np.random.default_rng(config.seed + task)
        # its acting network in a session of its own (acting.NetworkCopy), loaded at each sync; None: it acts on
        # the cluster's
        self.copy = NetworkCopy(graph.actor_network, graph.acting_variables, self.seed) if config.acting_copy else None
        self.session = None  # its runs', once it runs (AbortRetrySession): retried when stuck or aborted
        self.pending = []  # transitions' columns not sent yet
        self.unsent_steps = 0
        # the heartbeat's fields (sessions.Heartbeat)
        self.last_global_step = self.steps_trained = self.updates = self.skipped_updates = 0
        self.timings = Timings()

    def run(self, session, stop_flag, heartbeat, episode_logger):
        """Play until the global step reaches max_global_steps or a stop is asked. Its runs are retried when the
        distributed runtime aborts or sticks them (sessions.AbortRetrySession), all but the sends (see send)."""
        graph, sender = self.graph, session
        self.session = session = AbortRetrySession(session)
        self.sync(session)
        since_sync = 0
        bonus = None
        if graph.curious is not None:
            graph.curious.warm_up(session, self.envs, graph.bonus)
            self.sync(session)  # the statistics just seeded, into the copy that acts
            bonus = graph.curious.acting_bonus(session, len(self.envs), graph.bonus)
        self.acting = offpolicy.Acting(self.envs, self.config, graph.dtype, self.seed)

        def choose(observations, step):  # its exploration: DQN's own epsilon, SAC's policy
            return graph.network.actor_actions(self.acting_outputs(session, observations), self.rng, step,
                                               self.epsilons)

        player = offpolicy.Player(self.acting, choose, episode_logger, bonus, self.timings)
        while not stop_flag.stop and self.last_global_step < self.config.max_global_steps:
            transitions, played = player.step(self.last_global_step)
            if transitions is not None:
                self.pending.append(transitions)
            self.unsent_steps += played
            since_sync += 1
            if self.unsent_steps >= SEND_EVERY * played:
                self.send(sender)
            if since_sync >= SYNC_EVERY:
                with self.timings.phase("sync"):
                    self.sync(session)
                since_sync = 0
            heartbeat.beat(self, episode_logger.episodes)
        self.send(sender)  # what it played since the last send

    def send(self, session):
        """The pending transitions with their priorities into the learner's queue, and the steps played into the
        global step, in one session.run (it waits while the queue is full). Never run again on a deadline: a
        FIFOQueue's enqueue_many puts in what fits as room comes, so a cancelled send may have put in part of its
        transitions; an actor stuck here is hung, and restarted (supervise.py)."""
        graph = self.graph
        if self.pending:
            columns = [np.concatenate(column) for column in list(zip(*self.pending))[:graph.columns]]
        else:
            columns = [np.zeros((0, *sent.shape[1:]), sent.dtype.as_numpy_dtype) for sent in graph.sent[:-1]]
        observations, actions, returns, discounts, next_observations = columns[:5]
        count = len(actions)
        priorities = np.zeros(count, np.float32)  # unread where the actors compute none (the learner's max)
        if count and graph.network.actor_priorities:
            q_values = self.acting_outputs(session, np.concatenate([observations, next_observations]))
            priorities = initial_priorities(q_values, count, actions, returns, discounts)
        with self.timings.phase("queue_put"):
            feed = dict(zip(graph.sent, [*columns, priorities]))
            feed[graph.steps] = self.unsent_steps
            self.last_global_step = int(session.run(graph.send, feed))
        self.steps_trained += self.unsent_steps
        self.pending, self.unsent_steps = [], 0

    def sync(self, session):
        """The learner's online weights (and the bonus's) into this actor's copies."""
        if self.copy is None:
            session.run(self.graph.sync)
        else:
            self.copy.load(session.run([self.graph.sync, self.graph.synced_acting])[1])

    def acting_outputs(self, session, observations):
        """Its acting network's outputs (DQN: Q(s, .)) for a batch of stored observations."""
        if self.copy is None:
            return session.run(self.graph.outputs, {self.graph.observations: observations})
        copy_observations, copy_outputs = self.copy.network
        return self.copy.session.run(copy_outputs, {copy_observations: observations})

    def close(self):
        if self.copy is not None:
            self.copy.close()

    def status(self):
        """The status view's figures of an actor: its exploration, as its learner describes it (DQN: the
        epsilons; SAC: random actions or its policy)."""
        return {**self.graph.network.actor_status(self.last_global_step, self.epsilons),
                **retried_runs(self.session)}


class Learner:
    """The learner task: the replay, fed from the queue; updates at the replay ratio; the run's end."""

    def __init__(self, graph, config, memory, writer):
        self.graph, self.config, self.memory = graph, config, memory
        self.timings = Timings()
        self.learning = offpolicy.Learning(graph.network, memory, writer, graph.curious, self.timings)
        self.last_global_step = self.steps_trained = self.skipped_updates = 0
        self.session = None  # its runs', once it runs (AbortRetrySession), as the actor's
        self.started = time.time()

    @property
    def updates(self):
        """This incarnation's; the run's count is the `updates` variable."""
        return self.learning.updates

    def run(self, session, stop_flag, heartbeat):
        """Receive and train until the global step reaches max_global_steps or a stop is asked (its runs retried as
        the actor's are: a retried update cancelled after it was applied is one update more)."""
        self.session = session = AbortRetrySession(session)
        self.learning.start(session)
        self.receive(session)
        fed = time.time()  # when transitions last came, or the last warning that none did
        while not stop_flag.stop and self.last_global_step < self.config.max_global_steps:
            if self.train_due(session, stop_flag, heartbeat) or self.receive(session):
                fed = time.time()
            else:
                time.sleep(RECEIVE_IDLE_SECS)
                if time.time() - fed > STARVED_SECS:
                    fed = time.time()
                    logger.warning("no transitions from the actors for %.0f s at global step %d of %d: is any "
                                   "actor running? (a finished actor does not come back by itself)", STARVED_SECS,
                                   self.last_global_step, self.config.max_global_steps)
            heartbeat.beat(self, 0)

    def train_due(self, session, stop_flag, heartbeat):
        """The updates the replay ratio owes for the transitions received; how many were made."""
        return self.learning.train_due(session, self.last_global_step, stop=lambda: stop_flag.stop,
                                       beat=lambda: heartbeat.beat(self, 0))

    def receive(self, session):
        """What the queue holds, into the replay; the number of transitions received."""
        with self.timings.phase("queue_get"):
            received, step = session.run([self.graph.received, self.graph.network.global_step])
        self.last_global_step = int(step)
        count = len(received[1])
        if count:
            self.learning.add(received, priorities=received[-1] if self.graph.network.actor_priorities else None,
                              following=received[5] if self.graph.curious else None)
            self.steps_trained += count
        return count

    def finish(self, actors, stop_flag, heartbeat):
        """Serve the `actors` until each has learnt that the run is over and finished by itself (FINISH_GRACE_SECS
        at most), so that no actor's last send waits on a full queue, or on a learner that is gone; then make the
        updates their last transitions owe: the run ends at the replay ratio. After `run`, on its session."""
        session = self.session
        deadline = time.time() + FINISH_GRACE_SECS
        while time.time() < deadline and session.run(self.graph.finished_actors) < actors:
            if not self.receive(session):
                time.sleep(RECEIVE_IDLE_SECS * 20)
            heartbeat.beat(self, 0, state="finishing")  # the grace is as long as the supervisor's patience
        while self.receive(session):  # what the last sends left in the queue
            pass
        self.train_due(session, stop_flag, heartbeat)

    def close(self):
        self.learning.close()

    def status(self):
        return {**offpolicy.replay_status(self.memory, self.updates, self.started),
                **retried_runs(self.session)}


def devices(job, task):
    learner = f"/job:{roles.LEARNER.job}/task:0/cpu:0"
    return learner, (None if job == roles.LEARNER.job else f"/job:{job}/task:{task}/cpu:0")


def learner_replay(config, space, graph, one_step):
    """The learner's replay, in its memory."""
    return replay.PrioritizedReplay(config.replay_capacity, space.shape, graph.dtype, config.priority_alpha,
                                    uniform=not config.prioritized, seed=config.seed, one_step=one_step,
                                    action_shape=graph.network.action_shape, action_dtype=graph.network.action_dtype)


def run_task(args):
    """An Ape-X learner or actor (worker.py --job-name learner|actor): the algorithms' table's entry point for DQN
    and SAC on a cluster. The chief (the learner) initialises or restores the variables and checkpoints them; an
    actor waits for it."""
    logdir.import_tf()
    job, task, is_learner, spec, first, config = runs.start_task(args)
    stop_flag = sessions.StopFlag()
    actor_envs = [] if is_learner else [first] + [runs.make_env(args) for _ in range(config.envs_per_worker - 1)]
    space, action_space = first.observation_space, first.action_space
    if is_learner:
        first.close()  # the learner plays no game: the first environment told it the shapes
    sessions.seed_task(tf1, config.seed + task)
    try:
        head = model.choose_head(space.shape, args.design_head)
        graph = ApeXGraph(space, action_space, config, head, *devices(job, task), unsup=args.unsup, algo=args.algo)
    except ValueError as error:  # an impossible head/observation combination
        raise UsageError(str(error)) from None

    def learn(session, writer, heartbeat):
        trainer = Learner(graph, config, learner_replay(config, space, graph, one_step=graph.curious is not None),
                          writer)
        try:
            trainer.run(session, stop_flag, heartbeat)
            if not stop_flag.stop:
                trainer.finish(len(spec[roles.ACTOR.job]), stop_flag, heartbeat)
        finally:
            trainer.close()
        return trainer

    acting.run_learner_or_actor(
        tf1, args, spec, config, stop_flag, actor_envs, graph.shared_variables, graph.network.global_step,
        graph.finish, learn, lambda writer, episode_logger: Actor(graph, actor_envs, config, task,
                                                                  len(spec[roles.ACTOR.job])),
        init_fn=graph.network.initialise, local_variables=graph.actor_variables,
        resume_note=f"; the replay refills first ({config.learning_starts} transitions)")
