#!/usr/bin/env bash
# A local "batch scheduler" for Snakemake's cluster-generic executor plugin, used by
# tests/test_cluster.py to prove every job runs on its own, as it would on a cluster node.
#
#   snakemake --executor cluster-generic \
#       --cluster-generic-submit-cmd tests/cluster/submit.sh \
#       --cluster-generic-status-cmd tests/cluster/status.sh \
#       --cluster-generic-cancel-cmd tests/cluster/cancel.sh --jobs 2 ...
#
# Snakemake calls `submit.sh JOBSCRIPT` once per job. The jobscript runs as its own
# detached process in a new session (setsid: no controlling terminal, own process group,
# nothing inherited from Snakemake but the environment and the working directory), with
# stdin closed and its output in a per-job log. Like `sbatch --parsable`, the script
# prints one job id and returns at once. When the job ends, its exit code is written to
# <state>/<id>.rc, which status.sh reads (the "scheduler's accounting").
#
# State directory: $AGENTMEM_CLUSTER_STATE, default .snakemake/local-cluster (relative to
# the working directory Snakemake runs in). Files per job: <id>.pid, <id>.log, <id>.rc,
# <id>.jobscript (a copy of what ran, for debugging).
set -euo pipefail

if [[ $# -lt 1 ]]; then
    echo "usage: submit.sh [ignored options ...] JOBSCRIPT" >&2
    exit 2
fi
jobscript="${!#}"  # Snakemake appends the jobscript as the last argument
if [[ ! -r "$jobscript" ]]; then
    echo "submit.sh: cannot read jobscript $jobscript" >&2
    exit 2
fi
state="${AGENTMEM_CLUSTER_STATE:-.snakemake/local-cluster}"
mkdir -p "$state"
state="$(cd "$state" && pwd)"

# unique, sortable job id: nanosecond clock plus this submitter's pid
id="job-$(date +%s%N)-$$"
cp "$jobscript" "$state/$id.jobscript"

# The wrapper records the exit code atomically (write, then rename) after the job ends.
# setsid runs it in a new session; it is not a process-group leader here, so setsid
# execs in place and $! is the job's pid (and its process-group id, used by cancel.sh).
setsid bash -c 'bash "$1"; rc=$?; echo "$rc" > "$2.rc.tmp"; mv "$2.rc.tmp" "$2.rc"' \
    job-wrapper "$state/$id.jobscript" "$state/$id" \
    </dev/null >"$state/$id.log" 2>&1 &
echo "$!" > "$state/$id.pid"
echo "$id"
