#!/usr/bin/env bash
# Job status for Snakemake's cluster-generic executor plugin (see submit.sh).
#
#   status.sh JOBID   ->  prints exactly one of: running | success | failed
#
# success/failed come from the exit code submit.sh's wrapper recorded in <state>/<id>.rc;
# a job whose process is gone without an exit code (killed, node lost) is failed. The
# process is checked BEFORE the exit-code file: the wrapper writes the file before it
# exits, so "gone" followed by "no file" really means it died without finishing. A zombie
# (exited, not yet reaped by its new parent) counts as gone.
set -euo pipefail

id="${1:?usage: status.sh JOBID}"
state="${AGENTMEM_CLUSTER_STATE:-.snakemake/local-cluster}"

alive=0
pid="$(cat "$state/$id.pid" 2>/dev/null || true)"
if [[ -n "$pid" && -r "/proc/$pid/stat" ]]; then
    # field 3 of /proc/<pid>/stat is the state; the command name (field 2) has no
    # spaces here ("(bash)"), so awk's field split is safe
    [[ "$(awk '{print $3}' "/proc/$pid/stat" 2>/dev/null)" != "Z" ]] && alive=1
fi

if [[ -f "$state/$id.rc" ]]; then
    if [[ "$(cat "$state/$id.rc")" == "0" ]]; then echo success; else echo failed; fi
elif [[ "$alive" == 1 ]]; then
    echo running
else
    echo failed
fi
