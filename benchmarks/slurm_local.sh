#!/usr/bin/env bash
# Run the workflow's small test study on a one-node SLURM cluster started on this machine, through
# Snakemake's SLURM executor plugin and the project's profile (workflow/profiles/slurm), and check
# that its run records equal those of a local run.
#
# Needs: Debian's slurm-wlm and munge (apt-get install -y slurm-wlm munge), the plugin
# (pip install 'screenbai[slurm]' or pip install snakemake-executor-plugin-slurm), root (the
# daemons run as root here; on a real cluster they are already running and you only submit).
#
# Usage (from anywhere):  bash benchmarks/slurm_local.sh [CONFIGFILE]
#   CONFIGFILE defaults to .test/config/config.yaml (the workflow's small test study).
# Everything it writes goes to a fresh temporary directory (printed); the daemons it starts are
# stopped on exit, by the pids they wrote.
set -euo pipefail

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
CONFIG="${1:-.test/config/config.yaml}"
for tool in slurmctld slurmd munged sbatch squeue snakemake; do
    command -v "$tool" >/dev/null || { echo "missing '$tool': apt-get install -y slurm-wlm munge; pip install snakemake-executor-plugin-slurm" >&2; exit 2; }
done
python -c "import snakemake_executor_plugin_slurm" 2>/dev/null \
    || { echo "missing the Snakemake SLURM plugin: pip install snakemake-executor-plugin-slurm" >&2; exit 2; }
case "$CONFIG" in /*) ;; *) CONFIG="$REPO/$CONFIG" ;; esac
[ -f "$CONFIG" ] || { echo "config $CONFIG not found" >&2; exit 2; }

WORK="$(mktemp -d /tmp/screenbai_slurm.XXXXXX)"
echo "work directory: $WORK"
mkdir -p "$WORK"/{state,spool,munge,local,cluster}
HOST="$(hostname -s)"
# the node as slurmd sees it (CPUs, memory), minus a little memory for the daemons
NODE="$(slurmd -C | head -1 | awk '{for (i = 1; i <= NF; i++) if ($i ~ /^RealMemory=/) {split($i, m, "="); $i = "RealMemory=" int(m[2] * 0.9)} print}')"

cat >"$WORK/slurm.conf" <<EOF
ClusterName=screenbai-local
SlurmctldHost=$HOST
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket=$WORK/munge/munge.socket
StateSaveLocation=$WORK/state
SlurmdSpoolDir=$WORK/spool
SlurmctldPidFile=$WORK/slurmctld.pid
SlurmdPidFile=$WORK/slurmd.pid
SlurmctldLogFile=$WORK/slurmctld.log
SlurmdLogFile=$WORK/slurmd.log
SlurmctldPort=16817
SlurmdPort=16818
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
SchedulerType=sched/backfill
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
MpiDefault=none
ReturnToService=2
MinJobAge=600
$NODE State=UNKNOWN
PartitionName=local Nodes=$HOST Default=YES MaxTime=INFINITE State=UP
EOF
export SLURM_CONF="$WORK/slurm.conf"
# The plugin's job steps call srun with SLURM_CONF removed from the environment, so srun reads the
# default /etc/slurm/slurm.conf: point it at ours for the run (never over a real cluster's file).
if [ -e /etc/slurm/slurm.conf ]; then
    echo "/etc/slurm/slurm.conf exists: this machine has a SLURM configuration; run the workflow with" \
         "the profile directly (docs/workflow.md) instead of this test cluster" >&2
    exit 2
fi
mkdir -p /etc/slurm
ln -s "$SLURM_CONF" /etc/slurm/slurm.conf

cleanup() {
    [ "$(readlink /etc/slurm/slurm.conf)" = "$SLURM_CONF" ] && rm -f /etc/slurm/slurm.conf
    for pidfile in "$WORK/slurmd.pid" "$WORK/slurmctld.pid" "$WORK/munge/munged.pid"; do
        [ -s "$pidfile" ] && kill "$(cat "$pidfile")" 2>/dev/null || true
    done
}
trap cleanup EXIT

# munge: a private daemon and socket (the host's key, a key of our own if there is none)
KEY=/etc/munge/munge.key
if [ ! -s "$KEY" ]; then KEY="$WORK/munge/munge.key"; dd if=/dev/urandom of="$KEY" bs=1024 count=1 status=none; chmod 400 "$KEY"; fi
munged --force --key-file="$KEY" --socket="$WORK/munge/munge.socket" --pid-file="$WORK/munge/munged.pid" \
    --log-file="$WORK/munge/munged.log" --seed-file="$WORK/munge/munged.seed"
slurmctld -f "$SLURM_CONF"
slurmd -f "$SLURM_CONF"
for _ in $(seq 60); do
    sinfo -h -o '%T' 2>/dev/null | grep -qE '^(idle|mixed)' && break
    sleep 1
done
sinfo -h -o '%T' | grep -qE '^(idle|mixed)' || { echo "SLURM node did not come up; see $WORK/slurm*.log" >&2; exit 1; }
echo "SLURM up: $(sinfo -h -o '%P %D %c %m %T')"

cd "$REPO"
export PYTHONPATH="$REPO${PYTHONPATH:+:$PYTHONPATH}"
TARGET="$(python -c "import yaml, sys; print(yaml.safe_load(open(sys.argv[1]))['target_name'])" "$CONFIG")"

echo "== local run"
start=$(date +%s)
snakemake --snakefile "$REPO/Snakefile" --configfile "$CONFIG" --directory "$WORK/local" --cores 2 --quiet rules
echo "local run: $(( $(date +%s) - start )) s"

echo "== SLURM run"
start=$(date +%s)
# the project's profile, plus what only this one-node test cluster needs: no account, squeue for
# job status (no accounting database here), quick first status check
snakemake --snakefile "$REPO/Snakefile" --configfile "$CONFIG" --directory "$WORK/cluster" \
    --workflow-profile "$REPO/workflow/profiles/slurm" \
    --slurm-no-account --slurm-status-command squeue --slurm-init-seconds-before-status-checks 2 \
    --seconds-between-status-checks 2 --quiet rules
echo "SLURM run: $(( $(date +%s) - start )) s"
echo "SLURM jobs submitted: $(cat "$WORK"/cluster/.snakemake/log/*.snakemake.log | grep -c 'submitted with SLURM jobid' || true)"

echo "== compare"
python - "$WORK/local/results/$TARGET/records.parquet" "$WORK/cluster/results/$TARGET/records.parquet" <<'EOF'
import sys

import pandas as pd

# every column but the measured wall time of each run
local, cluster = (pd.read_parquet(p).drop(columns="wall_time_s") for p in sys.argv[1:3])
pd.testing.assert_frame_equal(local, cluster)
print(f"records equal: {len(local)} runs x {local.shape[1]} columns (all but wall_time_s), local run = SLURM run")
EOF
