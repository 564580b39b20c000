# Helpers for integration suites (source this). A suite prints
# "ok - name" / "not ok - name" per check.
ROOT=${ROOT:-$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)}
SNFSD=${SNFSD:-$ROOT/build/asan/snfsd}
SHARED=${SNFS_SHARED:-$(cd "$ROOT/.." && pwd)/shared}
# a clone elsewhere (CI) still finds the team's tools
[ -d "$SHARED/tools" ] || SHARED=/work/shared
KVM=$SHARED/tools/kvm/run-guest.sh
PEERS=$SHARED/tools/peers
T_FAILS=0

ok() { echo "ok - $*"; }
notok() { echo "not ok - $*"; T_FAILS=$((T_FAILS + 1)); }
# check NAME CMD...: run CMD, ok if it succeeds
check() {
	local name=$1
	shift
	if "$@"; then ok "$name"; else notok "$name"; fi
}
# check_eq NAME EXPECTED ACTUAL
check_eq() {
	if [ "$2" = "$3" ]; then ok "$1"; else notok "$1 (expected '$2', got '$3')"; fi
}

# Run the guest (run-guest.sh's arguments after the first two) with its
# stdout to $1 and stderr to $2. A guest whose kernel panics before the
# command printed anything is booted once more: TCG with several vCPUs now
# and then dies at boot (seen in hrtimer code and at an int3 left by a
# cross-CPU text poke); that is the VM, not NFS.
kvm_run() {
	local out=$1 err=$2 rc attempt
	shift 2
	for attempt in 1 2; do
		"$KVM" "$@" >"$out" 2>"$err"
		rc=$?
		{ [ "$rc" != 0 ] && [ ! -s "$out" ] && grep -q 'Kernel panic' "$err"; } || return $rc
		echo "# guest kernel panicked at boot (attempt $attempt): $(grep -m1 'RIP:' "$err")"
	done
	return $rc
}

# A fresh scratch directory, removed at exit.
scratch() {
	T_DIR=$(mktemp -d /tmp/snfs-test.XXXXXX)
	trap 'snfsd_stop; rm -rf "$T_DIR"' EXIT
}

# A free TCP port on 127.0.0.1.
free_port() {
	python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}

# Two free consecutive TCP ports (nfs-ganesha puts MOUNT on PORT+1); tried
# again if python finds none (a clean CI run once got an empty answer).
free_port_pair() {
	local p i
	for i in 1 2 3 4 5; do
		p=$(free_port_pair_once)
		[ -n "$p" ] && echo "$p" && return 0
		echo "free_port_pair: no free pair (try $i)" >&2
		sleep 1
	done
	return 1
}
free_port_pair_once() {
	# Random pairs rather than bind(0): the kernel hands bind(0) odd ports
	# and keeps even ones for connect(), so PORT+1 of a bind(0) port is
	# often an outgoing connection's. SO_REUSEADDR, as servers set it,
	# lets a pair whose ports linger in TIME_WAIT count as free.
	python3 -c '
import random, socket
for _ in range(500):
    p = random.randrange(20000, 60000)
    socks = []
    try:
        for q in (p, p + 1):
            s = socket.socket()
            socks.append(s)
            s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            s.bind(("127.0.0.1", q))
        print(p)
        break
    except OSError:
        pass
    finally:
        for s in socks:
            s.close()
'
}

wait_port() { # port [seconds]
	local i
	for i in $(seq 1 $((${2:-20} * 10))); do
		(exec 3<>/dev/tcp/127.0.0.1/"$1") 2>/dev/null && return 0
		sleep 0.1
	done
	return 1
}

# snfsd_start PORT ARGS...: start snfsd in the background (state in
# $T_DIR/state, log in $T_DIR/snfsd.log) and wait until it listens.
snfsd_start() {
	local port=$1
	shift
	mkdir -p "$T_DIR/state"
	"$SNFSD" -l 127.0.0.1 -p "$port" -s "$T_DIR/state" "$@" >>"$T_DIR/snfsd.log" 2>&1 &
	SNFSD_PID=$!
	SNFSD_PORT=$port
	wait_port "$port" 20
}

snfsd_alive() { [ -n "${SNFSD_PID:-}" ] && [ -e /proc/$SNFSD_PID ] && ! grep -q '^[0-9]* ([^)]*) Z' /proc/$SNFSD_PID/stat 2>/dev/null; }

# Stop with SIGTERM (or the signal given) and reap. Returns the exit status.
snfsd_stop() {
	local sig=${1:-TERM} rc=0
	[ -n "${SNFSD_PID:-}" ] || return 0
	kill -"$sig" "$SNFSD_PID" 2>/dev/null
	wait "$SNFSD_PID" 2>/dev/null
	rc=$?
	SNFSD_PID=
	return $rc
}

# Fail if the server log shows a sanitizer report.
check_no_sanitizer_reports() {
	if grep -qE 'ERROR: AddressSanitizer|runtime error:|ERROR: LeakSanitizer' "$T_DIR/snfsd.log" 2>/dev/null; then
		notok "$1: sanitizer report in snfsd log"
		grep -E -A20 'ERROR: AddressSanitizer|runtime error:|ERROR: LeakSanitizer' "$T_DIR/snfsd.log" | head -40 >&2
	else
		ok "$1: no sanitizer report"
	fi
}
