#!/bin/bash
# Restart acceptance: unstable writes lost to a SIGKILL are detected through
# a new write verifier and recovered by resending; file handles survive
# restarts (same state dir); FILE_SYNC data survives a SIGKILL.
set -u
. "$(dirname "$0")/../lib.sh"
HERE=$ROOT/tests/interop
scratch
EXP=$T_DIR/export
mkdir -p "$EXP"
PORT=$(free_port)
ST=$T_DIR/client.json
start() {
	if snfsd_start "$PORT" --no-portmap -e "$EXP:rw,insecure,no_root_squash,async"; then
		ok "snfsd listening on $PORT ($1)"
	else
		notok "snfsd listening on $PORT ($1)"
		tail -20 "$T_DIR/snfsd.log" >&2
		exit 1
	fi
}
# SIGKILL and restart with the same state dir; a kill -9 is what a crash
# looks like to clients (nothing flushed, no goodbye).
crash_restart() {
	local pid=$SNFSD_PID
	snfsd_stop KILL
	check "snfsd pid $pid gone after SIGKILL" test ! -e /proc/"$pid"
	start "$1"
}

start "first start"
python3 "$HERE/restart_client.py" unstable "$PORT" "$EXP" "$ST"
crash_restart "after SIGKILL before COMMIT"
python3 "$HERE/restart_client.py" recover "$PORT" "$ST"
want=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1])).get("sha_unstable",""))' "$ST")
check_eq "unstable.dat on disk after recovery" "$want" "$(sha256sum <"$EXP/unstable.dat" | cut -c1-64)"

python3 "$HERE/restart_client.py" filesync "$PORT" "$ST"
crash_restart "after SIGKILL following FILE_SYNC writes"
want=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1])).get("sha_sync",""))' "$ST")
check_eq "sync.dat on disk intact after SIGKILL" "$want" "$(sha256sum <"$EXP/sync.dat" 2>/dev/null | cut -c1-64)"
check_eq "sync.dat mode" 600 "$(stat -c %a "$EXP/sync.dat" 2>/dev/null)"
python3 "$HERE/restart_client.py" handles "$PORT" "$ST"

check "snfsd alive at the end" snfsd_alive
snfsd_stop TERM
check_eq "snfsd exits 0 on SIGTERM" 0 $?
check_no_sanitizer_reports restart
[ "$T_FAILS" = 0 ]
