#!/bin/bash
# Random and mutated RPC records against the ASan snfsd: every record gets an
# answer or the connection is closed; the server stays up and clean.
# GARBAGE_CASES (default 1200) and GARBAGE_SEED (default: time) tune the run.
set -u
. "$(dirname "$0")/../lib.sh"
scratch
EXP=$T_DIR/export
mkdir -p "$EXP"
PORT=$(free_port)
if ! snfsd_start "$PORT" --no-portmap -e "$EXP:rw,insecure,no_root_squash"; then
	notok "snfsd listening on $PORT"
	tail -20 "$T_DIR/snfsd.log" >&2
	exit 1
fi
python3 "$ROOT/tests/stress/garbage.py" "$PORT" "$EXP" "${GARBAGE_CASES:-1200}" ${GARBAGE_SEED:+"$GARBAGE_SEED"}
check "snfsd alive after garbage" snfsd_alive
snfsd_stop TERM
check_eq "snfsd exits 0 on SIGTERM after garbage" 0 $?
check_no_sanitizer_reports garbage
[ "$T_FAILS" = 0 ]
