#!/usr/bin/env bash
# Run a 4-shard percsim campaign and its merge through a real single-node
# Slurm (Debian's slurmctld, slurmd, slurm-client and munge, installed when
# absent), then compare the merge with one unsharded run of the same seeds:
# the same exit code, verdicts, counters and failures. Also re-runs one array
# index alone and checks that it ran that shard's seeds again. Stops the
# daemons it started by their PIDs.
#
#   deploy/slurm/test.sh        (as root; skips with a message otherwise)
set -euo pipefail
cd "$(dirname "$0")/../.."
repo="$(pwd)"

skip() { echo "Slurm test skipped: $*"; exit 0; }

if [ "$(id -u)" -ne 0 ]; then
    skip "not root (it installs packages and starts slurmctld, slurmd and munged)"
fi
if ! command -v slurmctld > /dev/null || ! command -v slurmd > /dev/null \
    || ! command -v sbatch > /dev/null || ! command -v munged > /dev/null; then
    echo "installing Debian's slurmctld, slurmd, slurm-client and munge"
    if ! { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
        slurmctld slurmd slurm-client munge > /dev/null; }; then
        skip "apt-get could not install slurmctld, slurmd, slurm-client and munge"
    fi
fi

unset RUSTFLAGS
target="${CARGO_TARGET_DIR:-$repo/target}"
cargo build --release --quiet --bin percsim
bin_dir="$target/release"

tmp="$(mktemp -d /tmp/percsim-slurm.XXXXXX)"
pids=()
stop() {
    local p
    for p in "${pids[@]}"; do kill "$p" 2> /dev/null || true; done
    for p in "${pids[@]}"; do wait "$p" 2> /dev/null || true; done
}
trap stop EXIT

host="$(hostname -s)"
cpus="$(nproc)"
mkdir -p "$tmp/state" "$tmp/spool" "$tmp/results"
cat > "$tmp/slurm.conf" << CONF
ClusterName=percsim-test
SlurmctldHost=$host
SlurmUser=root
SlurmdUser=root
SlurmctldPort=16817
SlurmdPort=16818
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$tmp/munge.socket
StateSaveLocation=$tmp/state
SlurmdSpoolDir=$tmp/spool
SlurmctldPidFile=$tmp/slurmctld.pid
SlurmdPidFile=$tmp/slurmd.pid
SlurmctldLogFile=$tmp/slurmctld.log
SlurmdLogFile=$tmp/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SchedulerType=sched/builtin
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
MpiDefault=none
ReturnToService=2
JobCompType=jobcomp/none
AccountingStorageType=accounting_storage/none
NodeName=$host CPUs=$cpus State=UNKNOWN
PartitionName=test Nodes=$host Default=YES MaxTime=INFINITE State=UP
CONF
export SLURM_CONF="$tmp/slurm.conf"

start_s=$(date +%s)
munged -F --force --socket="$tmp/munge.socket" --pid-file="$tmp/munged.pid" \
    --log-file="$tmp/munged.log" --seed-file="$tmp/munge.seed" > "$tmp/munged.out" 2>&1 &
pids+=($!)
for _ in $(seq 50); do [ -S "$tmp/munge.socket" ] && break; sleep 0.1; done
slurmctld -D -f "$SLURM_CONF" > "$tmp/slurmctld.out" 2>&1 &
pids+=($!)
slurmd -D -f "$SLURM_CONF" > "$tmp/slurmd.out" 2>&1 &
pids+=($!)
state=""
for _ in $(seq 60); do
    state="$(sinfo -h -o %t 2> /dev/null || true)"
    [ "$state" = "idle" ] && break
    sleep 0.5
done
if [ "$state" != "idle" ]; then
    echo "FAIL: the Slurm node did not come up (state '${state}'); logs in $tmp"
    tail -5 "$tmp"/slurmctld.log "$tmp"/slurmd.log "$tmp"/munged.log 2> /dev/null || true
    exit 1
fi
echo "Slurm up in $(($(date +%s) - start_s)) s"

# Wait until job $1 has left the queue. Arg: JOB_ID.
wait_job() {
    for _ in $(seq 1200); do
        [ -z "$(squeue -h -j "$1" 2> /dev/null)" ] && return 0
        sleep 0.5
    done
    echo "FAIL: job $1 did not finish in 10 minutes"
    return 1
}

# A broken protocol, so that the comparison covers failures (the shards exit 1).
flags=(--system percolator --ablate wall-clock-start-ts --shrink-budget 0)
seeds=0..40
out="$(PATH="$bin_dir:$PATH" deploy/slurm/campaign.sh 4 "$seeds" "$tmp/results" "${flags[@]}")"
echo "$out"
merge_id="$(echo "$out" | sed -n 's/.*, merge \([0-9]*\);.*/\1/p')"
wait_job "$merge_id"
merge_out="$(ls "$tmp"/results/percsim-merge-*.out)"
merge_code="$(sed -n 's/^merge exit //p' "$merge_out")"

# The unsharded run, in a directory of its own with the same relative
# capsule paths (failures/...) as the shards'.
whole_code=0
mkdir -p "$tmp/whole"
(cd "$tmp/whole" && "$bin_dir/percsim" fuzz --seeds "$seeds" --shard 1/1 "${flags[@]}" --quiet \
    --out failures --jsonl whole.jsonl > "$tmp/whole.txt") || whole_code=$?
# The summary without what differs between runs (the header and wall time).
# Capsule paths are absolute (a replay works from anywhere), so the two runs'
# failure lines differ in their directory only: compare from failures/ on.
body() { grep -v '^percsim fuzz:\|^seeds \|^merge exit ' "$1" | sed 's#replay /.*/failures/#replay failures/#'; }
failed=0
if [ "$merge_code" != "$whole_code" ]; then
    echo "FAIL: merge exit '$merge_code', the unsharded run's $whole_code"
    failed=1
fi
if ! diff <(body "$tmp/whole.txt") <(body "$tmp/results/summary.txt"); then
    echo "FAIL: the merged summary differs from the unsharded run's (above)"
    failed=1
fi

# Re-run array index 2 alone: it must run shard 3/4 again, not the whole range.
seed_lines() { grep '"seed"' "$1" | sed 's/"wall_ms":[0-9]*,//'; }
mv "$tmp/results/shard-3-of-4.jsonl" "$tmp/shard-3-first.jsonl"
rerun="$(PATH="$bin_dir:$PATH" PERCSIM_SHARDS=4 PERCSIM_SEEDS="$seeds" PERCSIM_DIR="$tmp/results" \
    PERCSIM_FUZZ_ARGS="${flags[*]}" sbatch --parsable --chdir="$tmp/results" --array=2 \
    --export=ALL deploy/slurm/shard.sbatch)"
wait_job "${rerun%%;*}"
if ! diff <(seed_lines "$tmp/shard-3-first.jsonl") <(seed_lines "$tmp/results/shard-3-of-4.jsonl") > /dev/null; then
    echo "FAIL: re-running array index 2 did not run shard 3/4's seeds again"
    failed=1
fi
if [ "$failed" -ne 0 ]; then
    echo "files kept in $tmp"
    exit 1
fi
echo "ok: 4 Slurm shards merged equal the unsharded run (exit $whole_code); a re-run of index 2 ran shard 3/4"
rm -rf "$tmp"
