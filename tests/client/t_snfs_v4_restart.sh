#!/bin/bash
# libsnfs over NFSv4.2 across restarts of snfsd (RFC 8881 section 8.4.2):
#  1. UNSTABLE writes in flight, snfsd SIGKILLed and its uncommitted data
#     lost: close succeeds after the restart, the data is intact and the
#     writes were sent again after the write verifier changed;
#  2. a read-mostly session: the open file is reclaimed (CLAIM_PREVIOUS)
#     and reads go on through it and through a new open;
#     and when the server lost its record of clients, the client opens
#     the file again by handle (CLAIM_FH) after RECLAIM_COMPLETE;
#  3. grace: a new OPEN during the grace period meets NFS4ERR_GRACE and is
#     retried until grace ends (another client of the record never comes
#     back, so grace runs its full lease); a fresh mount too;
#  4. 32 threads doing I/O on one mount while the server restarts: all
#     finish in bounded time with their data intact;
#  5. a client that unmounted (DESTROY_CLIENTID) leaves no grace behind:
#     snfsd SIGKILLed right after comes back without a grace period, and
#     a new client's OPEN is served at once.
# The server runs with SNFSD_NFS4_LEASE (5 s here) and -v, for the
# per-operation status lines (op=OPEN ... status=NFS4ERR_GRACE).
set -u
. "$(dirname "$0")/../lib.sh"
SNFS=${SNFS:-$ROOT/build/asan/snfs}
NTHREADS=${NTHREADS:-32}
export SNFSD_NFS4_LEASE=${SNFSD_NFS4_LEASE:-5}
SCENARIOS=${SCENARIOS:-12345} # which of the five to run
want() { case "$SCENARIOS" in *"$1"*) return 0 ;; esac; return 1; }

# the driver (tests/client/v4_restart_driver.c), built by the Makefile's
# client-test rule unless DRIVER names another build
if [ -z "${DRIVER:-}" ]; then
	DRIVER=$ROOT/build/asan/tests/client/v4_restart_driver
	make -s -C "$ROOT" build/asan/tests/client/v4_restart_driver >/dev/null || notok "build the driver"
fi
scratch
cleanup() {
	snfsd_stop KILL
	# drivers still running (a failed check): only our own children
	for p in $(jobs -p); do kill -KILL "$p" 2>/dev/null; done
	[ -n "${KEEP:-}" ] && echo "# kept $T_DIR" || rm -rf "$T_DIR"
}
trap cleanup EXIT

EXP=$T_DIR/exp
mkdir -p "$EXP"
PORT=$(free_port)
BASE="nfs://127.0.0.1$EXP"
Q="version=4.2&nfsport=$PORT&timeout=60"
sha() { sha256sum <"$1" | cut -d' ' -f1; }

# start WHAT: snfsd on the same port and state dir, holding none of our
# pipes (a pipe it inherited would never see EOF).
start() {
	{ snfsd_start "$PORT" --no-portmap -v \
		-e "$EXP:rw,insecure,no_root_squash,async" ||
		notok "snfsd start ($1)"; } 3>&- 4>&- 5>&- 6>&-
}
# restart WHAT: SIGKILL and start again; LOGMARK is the log line the new
# instance starts at.
restart() {
	snfsd_stop KILL
	LOGMARK=$(($(wc -l <"$T_DIR/snfsd.log") + 1))
	start "$1"
}
log_since() { tail -n +"$LOGMARK" "$T_DIR/snfsd.log"; }
# wait_ready FILE [seconds]: until a driver has printed "ready"
wait_ready() {
	local i
	for i in $(seq 1 $((${2:-60} * 10))); do
		grep -q '^ready' "$1" 2>/dev/null && return 0
		sleep 0.1
	done
	return 1
}
# wait_pid PID SECONDS: its exit status, or 124 after killing it when it
# is still running then (a hang)
wait_pid() {
	local i
	for i in $(seq 1 $(($2 * 10))); do
		[ -e /proc/"$1" ] && ! grep -q '^[0-9]* ([^)]*) Z' /proc/"$1"/stat 2>/dev/null || break
		sleep 0.1
	done
	if [ -e /proc/"$1" ] && ! grep -q '^[0-9]* ([^)]*) Z' /proc/"$1"/stat 2>/dev/null; then
		kill -KILL "$1" 2>/dev/null
		wait "$1" 2>/dev/null
		return 124
	fi
	wait "$1"
}
asan_clean() { # NAME FILE: no sanitizer report in a client's stderr
	if grep -qE 'AddressSanitizer|runtime error:|LeakSanitizer' "$2"; then
		notok "$1: sanitizer report"
		grep -E -A20 'AddressSanitizer|runtime error:|LeakSanitizer' "$2" | head -30 >&2
	else
		ok "$1: no sanitizer report"
	fi
}

start "first"
LOGMARK=1

# ---- 1. UNSTABLE writes in flight; the server's uncommitted data lost ----
if want 1; then
head -c 24000000 /dev/urandom >"$T_DIR/unstable.src"
mkfifo "$T_DIR/fifo"
"$SNFS" -q --stats cp "$T_DIR/fifo" "$BASE/unstable?$Q" 2>"$T_DIR/unstable.err" &
CPPID=$!
exec 3>"$T_DIR/fifo"
cat "$T_DIR/unstable.src" >&3
sleep 2
snfsd_stop KILL
# What the server had not committed is gone (as after a crash).
: >"$EXP/unstable"
LOGMARK=$(($(wc -l <"$T_DIR/snfsd.log") + 1))
start "unstable"
exec 3>&-
wait_pid "$CPPID" 120
check_eq "unstable: close after the server restart succeeds" 0 $?
check_eq "unstable: data intact after the restart" "$(sha "$T_DIR/unstable.src")" "$(sha "$EXP/unstable")"
case "$(cat "$T_DIR/unstable.err")" in
*"write_resends=0"*) notok "unstable: the lost writes were sent again" ;;
*write_resends=*) ok "unstable: the lost writes were sent again ($(grep -o 'write_resends=[0-9]*' "$T_DIR/unstable.err"))" ;;
*) notok "unstable: no stats: $(head -3 "$T_DIR/unstable.err")" ;;
esac
check "unstable: the server saw the client reclaim its open" \
	grep -q 'reclaims open state' <(log_since)
asan_clean "unstable" "$T_DIR/unstable.err"
fi

# ---- 2. a read-mostly session survives a restart ----
head -c 6000000 /dev/urandom >"$EXP/readme"
if want 2; then
mkfifo "$T_DIR/ctl2"
"$DRIVER" read "$BASE?$Q&pagecache=off" readme "$T_DIR/rd" <"$T_DIR/ctl2" >"$T_DIR/rd.out" 2>"$T_DIR/rd.err" &
RDPID=$!
exec 4>"$T_DIR/ctl2"
check "read: first read done" wait_ready "$T_DIR/rd.out"
restart "read"
(echo go >&4) 2>/dev/null # SIGPIPE here if the driver died
exec 4>&-
wait_pid "$RDPID" 120
check_eq "read: the driver succeeds across the restart" 0 $?
check_eq "read: first read" "$(sha "$EXP/readme")" "$(sha "$T_DIR/rd.1")"
check_eq "read: read again through the open file" "$(sha "$EXP/readme")" "$(sha "$T_DIR/rd.2")"
check_eq "read: read through a new open" "$(sha "$EXP/readme")" "$(sha "$T_DIR/rd.3")"
check "read: the open was reclaimed (CLAIM_PREVIOUS)" grep -q 'reclaims open state' <(log_since)
check "read: RECLAIM_COMPLETE ended grace early" \
	grep -q 'every client reclaimed; grace period over' <(log_since)
echo "# read: $(grep -E 'reread_ms|stats' "$T_DIR/rd.out" | tr '\n' ' ')"
asan_clean "read" "$T_DIR/rd.err"
fi

# ---- 2b. the server lost its record of clients: no reclaim possible ----
# CLAIM_PREVIOUS is refused (NFS4ERR_NO_GRACE); the client says
# RECLAIM_COMPLETE and opens the file again by handle (CLAIM_FH).
if want 2; then
rm -f "$T_DIR/ctl2"
mkfifo "$T_DIR/ctl2"
"$DRIVER" read "$BASE?$Q&pagecache=off" readme "$T_DIR/rn" <"$T_DIR/ctl2" >"$T_DIR/rn.out" 2>"$T_DIR/rn.err" &
RDPID=$!
exec 4>"$T_DIR/ctl2"
check "no record: first read done" wait_ready "$T_DIR/rn.out"
snfsd_stop KILL
rm -f "$T_DIR/state/nfs4_clients"
restart "no record"
(echo go >&4) 2>/dev/null # SIGPIPE here if the driver died
exec 4>&-
wait_pid "$RDPID" 60
check_eq "no record: the driver succeeds across the restart" 0 $?
check_eq "no record: read again through the open file" "$(sha "$EXP/readme")" "$(sha "$T_DIR/rn.2")"
check_eq "no record: read through a new open" "$(sha "$EXP/readme")" "$(sha "$T_DIR/rn.3")"
check "no record: CLAIM_PREVIOUS refused with NFS4ERR_NO_GRACE" \
	grep -qE '^.*op=OPEN .* status=NFS4ERR_NO_GRACE ' <(log_since)
check_eq "no record: no other OPEN or CLOSE refused" "" \
	"$(log_since | grep -E 'op=(OPEN|CLOSE) .* status=' | grep -v ' status=NFS4ERR_NO_GRACE ')"
echo "# no record: $(grep -E 'reread_ms|stats' "$T_DIR/rn.out" | tr '\n' ' ')"
asan_clean "no record" "$T_DIR/rn.err"
fi

# ---- 3. grace: new OPENs wait for the end of the grace period ----
if want 3; then
mkfifo "$T_DIR/ctl3h" "$T_DIR/ctl3g"
# a client that will never come back: its record keeps grace going
"$DRIVER" read "$BASE?$Q" readme "$T_DIR/holder" <"$T_DIR/ctl3h" >"$T_DIR/holder.out" 2>"$T_DIR/holder.err" &
HPID=$!
exec 5>"$T_DIR/ctl3h"
"$DRIVER" grace "$BASE?$Q" graced 1000000 <"$T_DIR/ctl3g" >"$T_DIR/gr.out" 2>"$T_DIR/gr.err" &
GPID=$!
exec 6>"$T_DIR/ctl3g"
check "grace: the clients are mounted" wait_ready "$T_DIR/holder.out"
wait_ready "$T_DIR/gr.out"
kill -KILL "$HPID"
wait "$HPID" 2>/dev/null
exec 5>&-
restart "grace"
t0=$(date +%s%N)
(echo go >&6) 2>/dev/null # SIGPIPE here if the driver died
exec 6>&-
echo x >"$T_DIR/small"
"$SNFS" -q cp "$T_DIR/small" "$BASE/graced-fresh?$Q" 2>"$T_DIR/grfresh.err"
check_eq "grace: a fresh mount's cp during grace succeeds" 0 $?
fresh_ms=$((($(date +%s%N) - t0) / 1000000))
wait_pid "$GPID" 120
check_eq "grace: the create during grace succeeds" 0 $?
python3 -c 'import sys; sys.stdout.buffer.write(bytes((i * 7 + 3) & 255 for i in range(1000000)))' >"$T_DIR/graced.want"
check_eq "grace: its data" "$(sha "$T_DIR/graced.want")" "$(sha "$EXP/graced")"
check_eq "grace: the fresh mount's data" "x" "$(cat "$EXP/graced-fresh")"
open_ms=$(grep -o 'open_ms=[0-9]*' "$T_DIR/gr.out" | cut -d= -f2)
echo "# grace: create took ${open_ms:-?} ms, the fresh cp $fresh_ms ms (lease ${SNFSD_NFS4_LEASE} s)"
check "grace: the server was in grace for a client that never came back" \
	grep -q "grace period of ${SNFSD_NFS4_LEASE}s" <(log_since)
check "grace: OPEN was refused with NFS4ERR_GRACE" \
	grep -qE 'op=OPEN .* status=NFS4ERR_GRACE ' <(log_since)
check "grace: grace ended by time, not by reclaims" grep -q 'nfs4: grace period over' <(log_since)
# (how long the create waited depends on how long recovery took, so it
# is printed above, not checked: the NFS4ERR_GRACE lines and the success
# show the retry)
asan_clean "grace" "$T_DIR/gr.err"
asan_clean "grace (fresh mount)" "$T_DIR/grfresh.err"
fi

# ---- 4. many threads doing I/O while the server restarts ----
if want 4; then
mkdir -p "$EXP/threads" "$T_DIR/tout"
mkfifo "$T_DIR/ctl4"
"$DRIVER" threads "$BASE/threads?$Q" "$NTHREADS" "$T_DIR/tout" <"$T_DIR/ctl4" >"$T_DIR/th.out" 2>"$T_DIR/th.err" &
TPID=$!
exec 4>"$T_DIR/ctl4"
check "threads: $NTHREADS threads under way" wait_ready "$T_DIR/th.out" 120
sleep 1
snfsd_stop KILL
sleep 1 # calls fail and reconnect meanwhile
LOGMARK=$(($(wc -l <"$T_DIR/snfsd.log") + 1))
start "threads"
sleep 3 # and go on after the restart
(echo go >&4) 2>/dev/null # SIGPIPE here if the driver died
exec 4>&-
wait_pid "$TPID" 180
rc=$?
check_eq "threads: all $NTHREADS finish without error or hang (124: hang)" 0 "$rc"
[ "$rc" = 0 ] || head -20 "$T_DIR/th.err" >&2
same=0
for i in $(seq 0 $((NTHREADS - 1))); do
	[ -f "$T_DIR/tout/t$i" ] && [ "$(sha "$T_DIR/tout/t$i")" = "$(sha "$EXP/threads/t$i")" ] && same=$((same + 1))
done
check_eq "threads: every file holds what its thread wrote" "$NTHREADS" "$same"
check "threads: the opens were reclaimed" grep -q 'reclaims open state' <(log_since)
echo "# threads: $(grep -E 'joined_ms|stats' "$T_DIR/th.out" | tr '\n' ' ')"
asan_clean "threads" "$T_DIR/th.err"
fi

# ---- 5. an unmounted client leaves no grace behind ----
# DESTROY_CLIENTID takes the client out of the record before it answers
# (stop 32 tried leaving the line for the next rewrite: then a SIGKILL
# right after the last unmount brought the server back in grace for a
# client that will never reclaim, every OPEN refused for a whole lease).
if want 5; then
echo five >"$EXP/five"
snfsd_stop KILL
rm -f "$T_DIR/state/nfs4_clients" # no client of earlier scenarios
LOGMARK=$(($(wc -l <"$T_DIR/snfsd.log") + 1))
start "unmount"
check_eq "unmount: a client reads and unmounts" "five" \
	"$(timeout 60 "$SNFS" cat "$BASE/five?$Q" 2>"$T_DIR/five.err")"
restart "after the unmount"
check_eq "unmount: a new client reads at once after the restart" "five" \
	"$(timeout 60 "$SNFS" cat "$BASE/five?$Q" 2>>"$T_DIR/five.err")"
check_eq "unmount: no grace period after the restart" 0 \
	"$(log_since | grep -c 'grace period of')"
check_eq "unmount: no OPEN refused with NFS4ERR_GRACE" 0 \
	"$(log_since | grep -c 'NFS4ERR_GRACE')"
asan_clean "unmount" "$T_DIR/five.err"
fi

check_no_sanitizer_reports "snfsd"
snfsd_stop
[ "$T_FAILS" = 0 ]
