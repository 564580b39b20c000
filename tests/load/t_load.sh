#!/bin/bash
# Load under the sanitizer build (issue 7, "Load"): LOAD_IDLE (1,000) idle
# connections sending a NULL every ~5 s, plus LOAD_CLIENTS (64) concurrent
# clients running a mixed workload (LOOKUP/GETATTR/CREATE/WRITE/COMMIT/READ/
# READDIRPLUS/REMOVE, each in its own directory; LOAD_SNFS (8) of them use
# the libsnfs command build/snfs when it exists) for LOAD_SECONDS (30).
# No protocol error, no leak (LeakSanitizer at SIGTERM), peak VmHWM of the
# server below LOAD_RSS_MIB (512), operations/s reported.
set -u
. "$(dirname "$0")/../lib.sh"
SECONDS_=${LOAD_SECONDS:-30}
CLIENTS=${LOAD_CLIENTS:-64}
IDLE=${LOAD_IDLE:-1000}
NSNFS=${LOAD_SNFS:-8}
BOUND=${LOAD_RSS_MIB:-512}
SNFS=${SNFS:-$ROOT/build/snfs}
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1}
case $ASAN_OPTIONS in *detect_leaks=1*) ;; *) ASAN_OPTIONS=$ASAN_OPTIONS:detect_leaks=1 ;; esac
scratch
EXP=$T_DIR/export
mkdir -p "$EXP"
PORT=$(free_port)
# Descriptors for 1,000+ connections, here and in the server.
ulimit -n "$(ulimit -Hn)" 2>/dev/null
if [ "$(ulimit -n)" -lt $((IDLE + CLIENTS + 100)) ]; then
	notok "load: descriptor limit $(ulimit -n) too low for $IDLE connections"
	exit 1
fi
if ! snfsd_start "$PORT" --no-portmap -e "$EXP:rw,insecure,no_root_squash"; then
	notok "snfsd listening on $PORT"
	tail -20 "$T_DIR/snfsd.log" >&2
	exit 1
fi
ok "snfsd ($SNFSD) listening on $PORT"
extra=()
if [ "$NSNFS" -gt 0 ] && [ -x "$SNFS" ]; then
	# A private copy: build/snfs may be relinked while the load runs.
	cp "$SNFS" "$T_DIR/snfs"
	extra=("$NSNFS" "$T_DIR/snfs")
else
	echo "# no libsnfs clients ($SNFS missing or LOAD_SNFS=0)"
fi
python3 "$ROOT/tests/load/load.py" "$PORT" "$EXP" "$SNFSD_PID" "$SECONDS_" "$CLIENTS" "$IDLE" "${extra[@]}"
check_eq "load.py exit status" 0 $?
check "snfsd alive after the load" snfsd_alive
hwm=$(awk '/^VmHWM/ {print $2}' /proc/"$SNFSD_PID"/status)
echo "# peak RSS (VmHWM) of snfsd $((hwm / 1024)) MiB"
check "peak RSS $((hwm / 1024)) MiB below $BOUND MiB" test "$((hwm / 1024))" -lt "$BOUND"
snfsd_stop TERM
check_eq "snfsd exits 0 on SIGTERM" 0 $?
check "no LeakSanitizer report at exit (detect_leaks=1)" \
	bash -c "! grep -q 'ERROR: LeakSanitizer' '$T_DIR/snfsd.log'"
check_no_sanitizer_reports load
[ "$T_FAILS" = 0 ]
