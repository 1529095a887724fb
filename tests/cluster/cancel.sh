#!/usr/bin/env bash
# Cancel jobs for Snakemake's cluster-generic executor plugin (see submit.sh).
#
#   cancel.sh JOBID [JOBID ...]
#
# Sends SIGTERM to each job's process group (submit.sh started every job in its own
# session, so the group id is the job's pid): the job's Snakemake and whatever it
# started (e.g. an embedded PostgreSQL stopping on exit) get the signal, nothing else.
set -uo pipefail

state="${AGENTMEM_CLUSTER_STATE:-.snakemake/local-cluster}"
for id in "$@"; do
    pid="$(cat "$state/$id.pid" 2>/dev/null || true)"
    [[ -n "$pid" ]] && kill -TERM -- "-$pid" 2>/dev/null || true
done
exit 0
