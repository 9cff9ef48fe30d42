#!/usr/bin/env bash
# Submit a sharded percsim campaign to Slurm: a job array of SHARDS tasks
# (deploy/slurm/shard.sbatch, 2 CPUs each) and a merge job that runs after
# every task has ended, however it ended (deploy/slurm/merge.sbatch,
# --dependency=afterany).
#
#   PATH=/path/to/percsim/dir:$PATH deploy/slurm/campaign.sh SHARDS SEEDS DIR [FUZZ FLAGS...]
#   e.g. deploy/slurm/campaign.sh 16 0..1000000 /shared/percsim-run --system all
#
# DIR must be on a file system every node sees. Prints the array's and the
# merge job's ids; the summary lands in DIR/summary.txt.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
if [ $# -lt 3 ]; then
    echo "usage: $0 SHARDS SEEDS(A..B) DIR [FUZZ FLAGS...]" >&2
    exit 2
fi
shards="$1" seeds="$2" dir="$3"
shift 3
case "$shards" in
    '' | *[!0-9]* | 0) echo "error: SHARDS must be a whole number >= 1, not '$shards'" >&2; exit 2 ;;
esac
if ! command -v percsim > /dev/null; then
    echo "error: percsim is not on PATH; the jobs find it on the PATH sbatch exports" >&2
    exit 2
fi
mkdir -p "$dir"
dir="$(cd "$dir" && pwd)"
export PERCSIM_SHARDS="$shards" PERCSIM_SEEDS="$seeds" PERCSIM_DIR="$dir" PERCSIM_FUZZ_ARGS="$*"
array=$(sbatch --parsable --chdir="$dir" --array="0-$((shards - 1))" --export=ALL "$here/shard.sbatch")
array="${array%%;*}"
merge=$(sbatch --parsable --chdir="$dir" --dependency="afterany:$array" --export=ALL "$here/merge.sbatch")
merge="${merge%%;*}"
echo "array $array ($shards shards of $seeds), merge $merge; summary: $dir/summary.txt"
