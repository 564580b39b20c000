#!/bin/bash
# 1,000 simultaneous TCP connections, each doing NULL and GETATTR of the
# root handle: all served correctly, server alive and clean afterwards.
set -u
. "$(dirname "$0")/../lib.sh"
scratch
EXP=$T_DIR/export
mkdir -p "$EXP"
PORT=$(free_port)
# The server needs descriptors for all of them too (it inherits our limit).
ulimit -n "$(ulimit -Hn)" 2>/dev/null
if ! snfsd_start "$PORT" --no-portmap -e "$EXP:rw,insecure,no_root_squash"; then
	notok "snfsd listening on $PORT"
	tail -20 "$T_DIR/snfsd.log" >&2
	exit 1
fi
python3 "$ROOT/tests/stress/connections.py" "$PORT" "$EXP" "${CONNECTIONS:-1000}"
check "snfsd alive after the connections" snfsd_alive
snfsd_stop TERM
check_eq "snfsd exits 0 on SIGTERM" 0 $?
check_no_sanitizer_reports connections
[ "$T_FAILS" = 0 ]
