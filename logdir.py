"""The log directory: its layout, the readers and writers of its records, and one run read from several
directories (a run across machines writes one per machine). Every other module names the run's files through
this one. No TensorFlow at import (the checkpoint helpers at the bottom import it when called).

    <log-dir>/config.json        the run's flags and hyper-parameters (constants.py, worker.py)
    <log-dir>/train/             the chief's checkpoints (TensorFlow's Saver; train/checkpoint is the index)
    <log-dir>/train_<i>/         worker i's TensorBoard events (train_learner/: a learner's)
    <log-dir>/episodes_<i>.csv   worker i's finished episodes, one row each (acting.EpisodeLogger)
    <log-dir>/visits_<i>.csv     Doom: the player's positions, VISITS_HEADER's columns
    <log-dir>/status_<i>.json    worker i's heartbeat (worker.Heartbeat)
    <log-dir>/eval.csv, eval/, best/                 evaluations (evaluation.py: demo.py --watch, a one-process
                                                     replay learner): a row each, their events, the best checkpoint
    <log-dir>/rewards.txt, eval_NNN/                 eval.csv's view "eval step mean" a line each; --eval-frames
    <log-dir>/supervised.json, supervisor.json, stopping   the supervisor's commands, its record, the stop marker
    <log-dir>/<name>.out, cmd.sh, kill.sh            each process's output; the launcher's scripts
    <log-dir>/train_episodes/, test_episodes/        the replay learners' episodes, one .npz each (EPISODE_KEYS)
    <log-dir>/rewound/                               rows logged and episodes stored past the checkpoint a run
                                                     resumed from
"""
import csv
import glob
import gzip
import io
import json
import logging
import os
import time
import uuid
import zipfile

import numpy as np

logger = logging.getLogger("logdir")

CONFIG = "config.json"
CHECKPOINTS = "train"
EVAL = "eval.csv"
EVAL_EVENTS = "eval"
BEST = "best"
SUPERVISED = "supervised.json"
SUPERVISOR = "supervisor.json"
STOP_MARKER = "stopping"
REWOUND = "rewound"
VISITS_HEADER = "global_step,worker,episode,x,y\n"  # visits_<i>.csv (workers) and visits.csv (demo.py)
PARTIAL_ROW_SCAN_BYTES = 4096  # cut_partial_line reads the CSV's tail back in steps of this many bytes


def episodes_csv(log_dir, task):
    return os.path.join(log_dir, f"episodes_{task}.csv")


def visits_csv(log_dir, task):
    return os.path.join(log_dir, f"visits_{task}.csv")


def heartbeat_json(log_dir, task):
    return os.path.join(log_dir, f"status_{task}.json")


def events_dir(log_dir, task):
    return os.path.join(log_dir, f"train_{task}")


def output(log_dir, name):
    """Where the process `name` (ps, w-0, supervisor, ...) writes its output."""
    return os.path.join(log_dir, f"{name}.out")


def checkpoints_dir(log_dir):
    return os.path.join(log_dir, CHECKPOINTS)


# ---------------------------------------------------------------- records

def read_rows(path):
    """The complete rows of a CSV the run writes, or of one compressed (`.csv.gz`, as archives keep them); a row cut
    short (a process killed mid-write) is left out."""
    try:
        with open_text(path) as handle:
            return [row for row in csv.DictReader(handle) if None not in row and None not in row.values()]
    except OSError:
        return []


def open_text(path):
    """A CSV the run writes, or its compressed copy (`.csv.gz`), open for reading."""
    return gzip.open(path, "rt", newline="") if path.endswith(".gz") else open(path, newline="")


def read_json(path):
    try:
        with open(path) as handle:
            return json.load(handle)
    except (OSError, json.JSONDecodeError):
        return None


RUN_LOCK = ".run.lock"  # held by a one-process run while it uses its log directory


def lock_run(log_dir):
    """The open lock file of `log_dir` if this process could take it (an exclusive flock: the kernel drops it when
    the process ends, however it ends; keep the file open while the run goes), else None: another process of ours
    holds it. The file says the pid of its holder."""
    import fcntl

    handle = open(os.path.join(log_dir, RUN_LOCK), "a+")
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        handle.close()
        return None
    handle.truncate(0)
    handle.write(f"{os.getpid()}\n")
    handle.flush()
    return handle


def run_lock_holder(log_dir):
    """The pid of the process that holds `log_dir`'s run lock, or None where none does."""
    path = os.path.join(log_dir, RUN_LOCK)
    if not os.path.exists(path):
        return None
    handle = lock_run(log_dir)
    if handle is not None:
        handle.close()  # free: nobody holds it
        return None
    with open(path) as holder:
        text = holder.read().strip()
    return int(text) if text.isdigit() else -1


def write_json_atomically(path, record):
    """Readers (status.py, a relaunch) see the old file or the new one, never half of one."""
    temporary = f"{path}.{os.getpid()}.tmp"
    with open(temporary, "w") as handle:
        json.dump(record, handle, indent=2, sort_keys=True)
    os.replace(temporary, path)


REWARDS_FILE = "rewards.txt"  # eval.csv's view, a line per evaluation: "{eval:3d} {step:8d} {mean return:.1f}"


def read_rewards(log_dir):
    """[(step, mean return)] of the run's evaluations in rewards.txt, in order ([] before the first)."""
    path = os.path.join(log_dir, REWARDS_FILE)
    if not os.path.exists(path):
        return []
    with open(path) as handle:
        return [(int(step), float(mean)) for _, step, mean in (line.split() for line in handle if line.strip())]


TRAIN_EPISODES, TEST_EPISODES = "train_episodes", "test_episodes"
PREDICTIONS = "predictions"  # a world model's open-loop predictions, a PNG each evaluation
# An episode of T steps as PlaNet stores it: T + 1 rows, the first the reset observation with a zero action, reward
# and the discount 1; discount 0 on the step that terminated it (a time limit's truncation keeps 1).
EPISODE_KEYS = ("observation", "action", "reward", "discount")


def write_episode(directory, episode):
    """One episode ({EPISODE_KEYS: arrays}) as a compressed .npz named by time, a unique id and its length (in
    steps), written whole or not at all; the path."""
    os.makedirs(directory, exist_ok=True)
    length = len(episode["reward"]) - 1
    name = f"{time.strftime('%Y%m%dT%H%M%S')}-{uuid.uuid4().hex}-{length}.npz"
    path = os.path.join(directory, name)
    temporary = f"{path}.tmp"
    with open(temporary, "wb") as handle:  # a file object: numpy would add .npz to a name
        import numpy as np

        np.savez_compressed(handle, **{key: episode[key] for key in EPISODE_KEYS})
    os.replace(temporary, path)
    return path


def set_aside_episodes_after(directory, since, log_dir):
    """A run resumed from a checkpoint written at time `since` (None: a run that starts afresh) plays again what
    came after it: the episodes of `directory` stored later, which it would otherwise train on and count a second
    time, are moved to <log-dir>/rewound/<directory's name>/. The paths they had."""
    late = [path for path in episode_files(directory) if since is None or os.path.getmtime(path) > since]
    if late:
        aside = os.path.join(log_dir, REWOUND, os.path.basename(os.path.normpath(directory)))
        os.makedirs(aside, exist_ok=True)
        for path in late:
            os.replace(path, os.path.join(aside, os.path.basename(path)))
    return late


def episode_files(directory):
    """The .npz episodes of `directory`, oldest first (their names begin with the time)."""
    return sorted(glob.glob(os.path.join(directory, "*.npz")))


def read_episode(path):
    """The episode in `path`, {EPISODE_KEYS: arrays}; None, with a warning, for a file that cannot be read whole
    (cut short, not an episode)."""
    import numpy as np

    try:
        with np.load(path) as data:
            return {key: data[key] for key in EPISODE_KEYS}
    except (OSError, ValueError, KeyError, EOFError, zipfile.BadZipFile) as error:
        logger.warning("skipping episode file %s: it cannot be read whole (%s)", path, error)
        return None


def read_episodes(directory, max_steps=None):
    """The newest episodes of `directory` whose steps add up to at most `max_steps` (all without it), oldest first;
    a file that cannot be read whole is skipped with a warning."""
    episodes, steps = [], 0
    for path in reversed(episode_files(directory)):
        episode = read_episode(path)
        if episode is None:
            continue
        length = len(episode["reward"]) - 1
        if max_steps is not None and steps + length > max_steps:
            break
        episodes.append(episode)
        steps += length
    return episodes[::-1]


def cut_partial_line(path):
    """A CSV whose writer was killed mid-row ends without a newline: cut that partial row before appending,
    or the next row would be glued to it. Complete rows are kept; only the file's tail is read."""
    if not os.path.exists(path):
        return
    with open(path, "rb+") as handle:
        end = handle.seek(0, os.SEEK_END)
        keep = end
        while keep > 0:
            start = max(0, keep - PARTIAL_ROW_SCAN_BYTES)
            handle.seek(start)
            chunk = handle.read(keep - start)
            if keep == end and chunk.endswith(b"\n"):
                return
            newline = chunk.rfind(b"\n")
            if newline >= 0:
                keep = start + newline + 1
                break
            keep = start
        handle.truncate(keep)
    logger.warning("%s ended in a partial row (the process was killed while writing it): cut %d bytes",
                   path, end - keep)


def rewound_rows_start(path, step):
    """The byte offset where a CSV's last rows, all with a first column (the global step) above `step`, begin: what
    a run that resumes from `step` logged past its checkpoint. The file's size if its last row is not above `step`.
    Read from the end in growing blocks: the cost is the tail's, not the file's."""
    with open(path, "rb") as handle:
        end = handle.seek(0, os.SEEK_END)
        block = PARTIAL_ROW_SCAN_BYTES
        while True:
            start = max(0, end - block)
            handle.seek(start)
            data = handle.read(end - start)
            first = 0 if start == 0 else data.find(b"\n") + 1  # a block's first line may begin before it
            if start > 0 and first == 0:
                block *= 2
                continue
            rows, offset = [], start + first
            for line in data[first:].split(b"\n")[:-1]:  # cut_partial_line made the file end in a newline
                rows.append((offset, line))
                offset += len(line) + 1
            for offset, line in reversed(rows):
                if not _step_above(line, step):
                    return offset + len(line) + 1
            if start == 0:
                return 0
            block *= 2


def _step_above(line, step):
    field = line.split(b",", 1)[0]
    return field.isdigit() and int(field) > step  # the header's is not a number


def set_aside_rows_after(path, step, log_dir):
    """A run resumed from `step` (its checkpoint) plays again the steps after it: the rows `path` ended with past
    `step`, from the play its checkpoint did not keep, are moved to <log-dir>/rewound/ (appended there under the
    same name), as TensorBoard purges the events past a restart's step. Returns how many rows were moved."""
    if not os.path.exists(path):
        return 0
    cut_partial_line(path)
    cut, size = rewound_rows_start(path, step), os.path.getsize(path)
    if cut == size:
        return 0
    with open(path, "rb") as handle:
        header = handle.readline()
        handle.seek(cut)
        moved = handle.read(size - cut)
    aside = os.path.join(log_dir, REWOUND, os.path.basename(path))
    os.makedirs(os.path.dirname(aside), exist_ok=True)
    is_new = not os.path.exists(aside)
    with open(aside, "ab") as handle:  # kept before the source is cut: a kill between the two loses nothing
        handle.write((header if is_new else b"") + moved)
        handle.flush()
        os.fsync(handle.fileno())
    with open(path, "rb+") as handle:
        handle.truncate(cut)
    return moved.count(b"\n")


def keep_earlier_format(path, columns):
    """A CSV written by an older version with other columns is moved aside (episodes_<i>.before-<n>.csv, still
    read by plots.py and status.py), so that appending cannot misalign its rows."""
    if not os.path.exists(path):
        return
    with open(path, newline="") as handle:
        header = next(csv.reader(handle), None)
    if header is not None and header != columns:
        stem, suffix = os.path.splitext(path)
        index = 1
        while os.path.exists(f"{stem}.before-{index}{suffix}"):
            index += 1
        os.replace(path, f"{stem}.before-{index}{suffix}")
        logger.info("%s had other columns; moved it to %s.before-%d%s", path, stem, index, suffix)


CHECKPOINT_PATH_KEYS = ("model_checkpoint_path", "all_model_checkpoint_paths")


def checkpoint_entry(line):
    """(key, value) of a line of TensorFlow's `checkpoint` list, e.g. `model_checkpoint_path: "model.ckpt-5"`."""
    key, _, value = line.partition(":")
    return key.strip(), value.strip().strip('"')


def latest_checkpoint(log_dir):
    """(path prefix, bytes of its files) of the checkpoint the run would resume from, or (None, 0); read
    from TensorFlow's `checkpoint` index file without TensorFlow, for the supervisor and the launcher."""
    train_dir = checkpoints_dir(log_dir)
    try:
        with open(os.path.join(train_dir, "checkpoint")) as handle:
            first = handle.readline()
    except OSError:
        return None, 0
    key, listed = checkpoint_entry(first)
    if key != "model_checkpoint_path":
        return None, 0
    prefix = os.path.join(train_dir, os.path.basename(listed))
    try:
        size = sum(os.path.getsize(os.path.join(train_dir, name)) for name in os.listdir(train_dir)
                   if name.startswith(os.path.basename(prefix) + "."))
    except OSError:
        return None, 0
    return prefix, size


def relocate_checkpoints(train_dir):
    """Make TensorFlow's `checkpoint` list in `train_dir` name the checkpoints there by file name. Before the
    workers saved with relative paths the list held absolute ones, so a run directory copied or moved elsewhere
    resumed from the original's checkpoints, and the saver's clean-up would have deleted the original's files.
    Entries naming another directory are renamed to this one, except older ones whose file is not here, which
    are dropped (the saver would delete them there); True if the list was rewritten."""
    path = os.path.join(train_dir, "checkpoint")
    try:
        with open(path) as handle:
            lines = handle.read().splitlines()
    except FileNotFoundError:
        return False
    here = os.path.realpath(train_dir)
    rewritten = []
    for line in lines:
        key, name = checkpoint_entry(line)
        if key in CHECKPOINT_PATH_KEYS and os.path.isabs(name) and os.path.realpath(os.path.dirname(name)) != here:
            if key == "all_model_checkpoint_paths" and not os.path.exists(
                    os.path.join(train_dir, os.path.basename(name) + ".index")):
                continue
            line = f'{key}: "{os.path.basename(name)}"'  # a missing latest: the chief then refuses in one line
        rewritten.append(line)
    if rewritten == lines:
        return False
    temporary = f"{path}.{os.getpid()}.tmp"
    with open(temporary, "w") as handle:
        handle.write("\n".join(rewritten) + "\n")
    os.replace(temporary, path)
    return True


# ---------------------------------------------------------------- one run, one or several directories

def as_dirs(log_dirs):
    """A run's directories as a list: one path, a list of them, or 'machine-a/run+machine-b/run'."""
    if isinstance(log_dirs, (str, os.PathLike)):
        return [part for part in str(log_dirs).split("+") if part]
    return [str(log_dir) for log_dir in log_dirs]


def paths_of(log_dirs, pattern):
    """The files named `pattern` in the run's directories, in order; a CSV pattern also finds its compressed copies
    (`.csv.gz`, as archives keep them)."""
    patterns = [pattern, pattern + ".gz"] if pattern.endswith(".csv") else [pattern]
    return [path for log_dir in as_dirs(log_dirs)
            for path in sorted(found for each in patterns for found in glob.glob(os.path.join(log_dir, each)))]


def rows_of(log_dirs, pattern):
    """Every complete row of the CSVs named `pattern` in the run's directories."""
    return [row for path in paths_of(log_dirs, pattern) for row in read_rows(path)]


def played_once_order(workers, wall_times, steps):
    """The indices of the rows played once, in played_once's order (workers by their first row in time, each
    worker's rows in time order): per worker, in time order, a row whose step is below the one before it marks a run
    that went back to its checkpoint, and the rows before it past its step are dropped, as EpisodeLogger.resume_from
    sets them aside when it resumes (runs of older versions did not). A row stays when no later row of its worker
    has a lower step."""
    workers, steps = np.asarray(workers), np.asarray(steps, dtype=np.int64)
    by_time = np.argsort(np.asarray(wall_times, dtype=np.float64), kind="stable")  # the file's order on ties
    names, first = np.unique(workers[by_time], return_index=True)
    kept = []
    for name in names[np.argsort(first)]:
        rows = by_time[workers[by_time] == name]
        lowest_after = np.append(np.minimum.accumulate(steps[rows][::-1])[::-1][1:], np.iinfo(np.int64).max)
        kept.append(rows[steps[rows] <= lowest_after])
    return np.concatenate(kept) if kept else np.zeros(0, dtype=np.int64)


def played_once(rows):
    """Episode rows without those of play a resume went over again (played_once_order)."""
    order = played_once_order([row.get("worker") or "" for row in rows],
                              [float(row.get("wall_time") or 0) for row in rows],
                              [int(row["global_step"]) for row in rows])
    return [rows[index] for index in order]


def episode_rows(log_dirs, column="global_step"):
    """The run's episode rows that have a value in `column`, each step's once (played_once), ordered by global step
    (then by time)."""
    rows = [row for path in paths_of(log_dirs, "episodes_*.csv") for row in played_once(read_rows(path))
            if row.get(column, "") != ""]
    rows.sort(key=lambda row: (int(row["global_step"]), float(row["wall_time"])))
    return rows


def read_columns(path):
    """{column: its strings} of the complete rows of a CSV the run writes (read_rows' rows as columns; a reader of
    lists rather than DictReader's dicts: a long run's episodes in about half the time)."""
    try:
        with open_text(path) as handle:
            reader = csv.reader(io.StringIO(handle.read()))  # read whole: a compressed file's lines one by one cost more
    except OSError:
        return {}
    header = next(reader, [])
    rows = [row for row in reader if len(row) == len(header)]
    return dict(zip(header, zip(*rows))) if rows else {}


def numbers(strings):
    """(floats, which were given) of a column's strings, NaN where empty."""
    given = np.array([text != "" for text in strings], dtype=bool)
    return np.array([float(text) if text else np.nan for text in strings], dtype=np.float64), given


def episode_columns(log_dirs, *columns):
    """For each of `columns`, (global steps, values as floats) of the run's episodes that have a value in it, each
    step's once and ordered as episode_rows orders them."""
    steps, wall_times, values, given = [], [], {column: [] for column in columns}, {column: [] for column in columns}
    for path in paths_of(log_dirs, "episodes_*.csv"):
        table = read_columns(path)
        if not table:
            continue
        count = len(table["global_step"])
        step = np.array([int(text) for text in table["global_step"]], dtype=np.int64)
        wall = numbers(table.get("wall_time", ("",) * count))[0]
        wall[np.isnan(wall)] = 0.0
        order = played_once_order(np.array(table.get("worker", ("",) * count)), wall, step)
        steps.append(step[order])
        wall_times.append(wall[order])
        for column in columns:
            floats, having = numbers(table.get(column, ("",) * count))
            values[column].append(floats[order])
            given[column].append(having[order])
    if not steps:
        return [(np.zeros(0, dtype=np.int64), np.zeros(0)) for _ in columns]
    steps, wall_times = np.concatenate(steps), np.concatenate(wall_times)
    order = np.lexsort((wall_times, steps))  # stable, as episode_rows' sort
    steps = steps[order]
    result = []
    for column in columns:
        having = np.concatenate(given[column])[order]
        result.append((steps[having], np.concatenate(values[column])[order][having]))
    return result


def visit_rows(log_dirs):
    return rows_of(log_dirs, "visits*.csv")


SUMMARIES = "summaries_all.csv"  # an archive's sample of the tasks' TensorBoard scalars (benchmarks/reproduce.py)
SUMMARY_COLUMNS = ("source", "tag", "global_step", "value")


def event_scalars(log_dir, skip_prefixes=()):
    """{(source, tag): (global steps, values)} of every scalar summary in the tasks' TensorBoard events
    (<log-dir>/train_<task>/, the source being that folder's name), in the order written; tags that begin with one
    of `skip_prefixes` left out. Imports TensorBoard's reader (and with it TensorFlow) when called."""
    from tensorboard.backend.event_processing.event_file_loader import LegacyEventFileLoader

    series, skip_prefixes = {}, tuple(skip_prefixes)
    for path in sorted(glob.glob(os.path.join(log_dir, "train_*", "events.out.tfevents.*"))):
        source = os.path.basename(os.path.dirname(path))
        for event in LegacyEventFileLoader(path).Load():
            for value in event.summary.value:
                if value.HasField("simple_value") and not value.tag.startswith(skip_prefixes):
                    steps, values = series.setdefault((source, value.tag), ([], []))
                    steps.append(int(event.step))
                    values.append(float(value.simple_value))
    return series


def summary_rows(log_dirs):
    """The rows (SUMMARY_COLUMNS) of the run's archived sample of its TensorBoard scalars."""
    return rows_of(log_dirs, SUMMARIES)


def eval_rows(log_dirs):
    return rows_of(log_dirs, EVAL)


def heartbeats(log_dirs):
    """Every worker's last heartbeat in the run's directories, by task."""
    found = {}
    for log_dir in as_dirs(log_dirs):
        for path in glob.glob(os.path.join(log_dir, "status_*.json")):
            beat = read_json(path)
            if beat and "task" in beat:
                found[beat.get("name", beat["task"])] = beat
    return sorted(found.values(), key=heartbeat_order)


def heartbeat_order(beat):
    """The learner first, then the tasks by index (a worker's heartbeat of an older run has no name)."""
    return (beat.get("name") != "learner", beat["task"] if isinstance(beat["task"], int) else 0)


def run_config(log_dirs):
    """The run's config.json (the first of its directories that has one), or {}."""
    for log_dir in as_dirs(log_dirs):
        config = read_json(os.path.join(log_dir, CONFIG))
        if config:
            return config
    return {}


def supervisor_records(log_dirs):
    """The records of the supervisors of the run's directories (one per machine; {} where there is none)."""
    return [read_json(os.path.join(log_dir, SUPERVISOR)) or {} for log_dir in as_dirs(log_dirs)]


def has_run_files(log_dir):
    return bool(paths_of(log_dir, "episodes_*.csv") or paths_of(log_dir, "visits*.csv"))


# ---------------------------------------------------------------- checkpoints (TensorFlow, imported when called)

class UnreadableCheckpoint(ValueError):
    """A checkpoint that cannot be read; the message says which and what to do."""


# How every process of ours runs TensorFlow; set before it is first imported (tf_environment), and a value the
# user set is kept.
TF_ENVIRONMENT = {
    "TF_CPP_MIN_LOG_LEVEL": "2",
    "CUDA_VISIBLE_DEVICES": "",  # CPU only, even where a GPU exists
    # oneDNN's kernels: TensorFlow turns them on by itself only on CPUs with AVX512-VNNI/BF16, AVX-VNNI or AMX. On the
    # project's AVX2 machines they made Doom training 1.5x faster (the learner alone 1.4x) and CartPole's 1.2x
    # (docs/history/2026-11-24-speed.md).
    "TF_ENABLE_ONEDNN_OPTS": "1",
}


def tf_environment():
    """Apply TF_ENVIRONMENT to this process (and so to the processes it starts); call before TensorFlow is
    imported."""
    for name, value in TF_ENVIRONMENT.items():
        os.environ.setdefault(name, value)


def import_tf():
    """TensorFlow's v1 API in graph mode, with its Python logging quiet."""
    tf_environment()
    import tensorflow as tf

    tf.get_logger().setLevel(logging.ERROR)
    tf.compat.v1.disable_eager_execution()
    return tf.compat.v1


def checkpoint_shapes(tf1, path, advice):
    """{variable name: shape} of the checkpoint at `path`; a damaged one raises UnreadableCheckpoint ending in
    `advice`."""
    try:
        return tf1.train.NewCheckpointReader(path).get_variable_to_shape_map()
    except Exception as error:  # TF raises several types for a damaged file
        first_line = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
        raise UnreadableCheckpoint(f"checkpoint {path} is corrupt ({first_line}); {advice}") from None
