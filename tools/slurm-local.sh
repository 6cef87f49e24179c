#!/usr/bin/env bash
# Run examples/slurm.sbatch for real on a one-node Slurm made from Debian's packages, on this machine:
#   sudo tools/slurm-local.sh [ENV_ID] [MAX_STEPS]        (default CartPole-v1, 20000 steps; needs root)
# It installs slurm-wlm and munge (apt-get), writes a one-node slurm.conf (this host, 8 task slots however
# many cores it has: the example's parameter server and workers are mostly waiting), starts munged, slurmctld
# and slurmd, submits the example with 1 node and 3 tasks (the parameter server, the chief, one worker), waits
# for the job and prints its output and the run's status. The daemons are left running; `scancel` and
# `pkill slurmd slurmctld munged` end them. Not part of the test suite: it changes the machine.
set -euo pipefail
ENV_ID=${1:-CartPole-v1}
MAX_STEPS=${2:-20000}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
PYTHON=${PYTHON:-$ROOT/.venv/bin/python}
LOG_DIR=${LOG_DIR:-/tmp/slurm-local/run}
[ "$(id -u)" = 0 ] || { echo "slurm-local.sh: run as root (it installs and starts Slurm's daemons)" >&2; exit 2; }
[ -x "$PYTHON" ] || { echo "slurm-local.sh: no $PYTHON: run 'make venv' first, or set PYTHON" >&2; exit 2; }

if ! command -v slurmctld >/dev/null || ! command -v munged >/dev/null; then
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq slurm-wlm munge >/dev/null
fi
[ -s /etc/munge/munge.key ] || mungekey --create --keyfile=/etc/munge/munge.key
chown munge:munge /etc/munge/munge.key && chmod 400 /etc/munge/munge.key
mkdir -p /run/munge /var/spool/slurmctld /var/spool/slurmd /var/log/slurm && chown munge:munge /run/munge
pgrep -x munged >/dev/null || runuser -u munge -- munged

HOST=$(hostname -s)
cat > /etc/slurm/slurm.conf <<EOF
ClusterName=local
SlurmctldHost=$HOST
SlurmUser=root
AuthType=auth/munge
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
StateSaveLocation=/var/spool/slurmctld
SlurmdSpoolDir=/var/spool/slurmd
SlurmctldLogFile=/var/log/slurm/slurmctld.log
SlurmdLogFile=/var/log/slurm/slurmd.log
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SlurmdParameters=config_overrides
ReturnToService=2
NodeName=$HOST CPUs=8 State=UNKNOWN
PartitionName=local Nodes=ALL Default=YES MaxTime=INFINITE State=UP
EOF
pgrep -x slurmctld >/dev/null || slurmctld
pgrep -x slurmd >/dev/null || slurmd
for _ in $(seq 30); do sinfo -h -o %t 2>/dev/null | grep -q idle && break; sleep 1; done
sinfo -h -o %t | grep -q idle || { echo "slurm-local.sh: the node did not come up; see /var/log/slurm/" >&2; exit 1; }
sinfo

mkdir -p "$(dirname "$LOG_DIR")"
cd "$ROOT"
JOB=$(LOG_DIR=$LOG_DIR ENV_ID=$ENV_ID MAX_STEPS=$MAX_STEPS PYTHON=$PYTHON \
      sbatch --parsable --nodes=1 --ntasks=3 --cpus-per-task=1 --time=30 \
      --output="$(dirname "$LOG_DIR")/curiosity-%j.out" examples/slurm.sbatch)
echo "submitted job $JOB: $ENV_ID to $MAX_STEPS steps, log dir $LOG_DIR"
while squeue -h -j "$JOB" 2>/dev/null | grep -q .; do
  sleep 10
  "$PYTHON" status.py --log-dir "$LOG_DIR" 2>/dev/null | head -1 || true
done
echo "---- job $JOB: $(sacct -n -X -j "$JOB" -o State 2>/dev/null | xargs || echo over)"
cat "$(dirname "$LOG_DIR")/curiosity-$JOB.out"
echo "---- status.py --log-dir $LOG_DIR"
"$PYTHON" status.py --log-dir "$LOG_DIR"
