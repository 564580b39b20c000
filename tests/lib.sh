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

# ---- snfs-mount (FUSE) in the background ----
MOUNT_BIN=${MOUNT_BIN:-$ROOT/build/asan/snfs-mount}
declare -A FUSE_PID
# fuse_up NAME URL MNT [ARGS...]: start $MOUNT_BIN -f on MNT with ARGS,
# its log in $T_DIR/NAME.mlog and its pid in FUSE_PID[NAME]. 0 once MNT
# is mounted; 1 if snfs-mount died or MNT was not mounted within 10 s.
fuse_up() {
	local name=$1 url=$2 mnt=$3 pid
	shift 3
	mkdir -p "$mnt"
	"$MOUNT_BIN" "$url" "$mnt" -f "$@" >>"$T_DIR/$name.mlog" 2>&1 &
	pid=$!
	FUSE_PID[$name]=$pid
	for _ in $(seq 1 100); do
		mountpoint -q "$mnt" && return 0
		[ -e "/proc/$pid" ] || return 1
		sleep 0.1
	done
	return 1
}
# fuse_down NAME MNT [umount]: unmount (fusermount3 -u, or plain umount),
# wait for snfs-mount; it must exit 0 and its log hold no sanitizer report.
fuse_down() {
	local name=$1 mnt=$2 how=${3:-fusermount3} rc
	if [ "$how" = umount ]; then
		umount "$mnt" || fusermount3 -u -z "$mnt"
	else
		fusermount3 -u "$mnt" || fusermount3 -u -z "$mnt"
	fi
	wait "${FUSE_PID[$name]}"
	rc=$?
	check_eq "$name: snfs-mount exits 0 after $how" 0 "$rc"
	if grep -qE 'ERROR: AddressSanitizer|runtime error:|ERROR: LeakSanitizer' "$T_DIR/$name.mlog"; then
		notok "$name: sanitizer report in snfs-mount log"
		grep -E -A30 'ERROR: AddressSanitizer|runtime error:|ERROR: LeakSanitizer' "$T_DIR/$name.mlog" | head -40 >&2
	else
		ok "$name: no sanitizer report in snfs-mount"
	fi
}

# A fresh scratch directory, removed at exit.
scratch() {
	T_DIR=$(mktemp -d /tmp/snfs-test.XXXXXX)
	trap 'snfsd_stop; rm -rf "$T_DIR"' EXIT
}

# scratch, but a failed run keeps the directory (the server's log, a
# guest's output) for a look.
scratch_keep() {
	scratch
	trap 'snfsd_stop; if [ "$T_FAILS" = 0 ]; then rm -rf "$T_DIR"; else echo "# kept $T_DIR (snfsd.log, guest.out, guest.err)"; fi' EXIT
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

port_busy() { # port: something listens on 127.0.0.1:port (tcp)
	(exec 3<>/dev/tcp/127.0.0.1/"$1") 2>/dev/null
}

wait_port() { # port [seconds]
	local i
	for i in $(seq 1 $((${2:-20} * 10))); do
		port_busy "$1" && return 0
		sleep 0.1
	done
	return 1
}

# guest_results OUT EXPECTED: one ok/not ok line per "name|what it shows"
# line of EXPECTED, from the guest's "R|name rc" line in OUT (rc 0: as
# expected; the guest's "G|name: ..." lines follow a failure), and a not
# ok line for each result EXPECTED does not list (a scenario that crashed
# or was renamed): a missing or unknown result fails.
guest_results() {
	local out=$1 expected=$2 name what got
	while IFS='|' read -r name what; do
		[ -n "$name" ] || continue
		got=$(grep -m1 "^R|$name " "$out" | cut -c3-)
		if [ "$got" = "$name 0" ]; then
			ok "$what"
		else
			notok "$what (${got:-no result from the guest})"
			grep "^G|$name: " "$out" | head -5 | sed 's/^G|/#   /'
		fi
	done <<<"$expected"
	while read -r name; do
		echo "$expected" | grep -q "^$name|" ||
			notok "guest reported an unexpected result: $(grep -m1 "^R|$name " "$out" | cut -c3-)"
	done < <(grep '^R|' "$out" | cut -c3- | cut -d' ' -f1 | sort -u)
}

# snfsd_start PORT ARGS...: start snfsd in the background (state in
# $T_DIR/state, log in $T_DIR/snfsd.log) and wait until it listens.
# T_EXPORT_OPTS (say "delegations") goes onto every -e export: any suite
# runs again with an option on.
snfsd_start() {
	local port=$1 a prev= args=()
	shift
	for a in "$@"; do
		[ "$prev" = -e ] && [ -n "${T_EXPORT_OPTS:-}" ] && a="$a,$T_EXPORT_OPTS"
		args+=("$a")
		prev=$a
	done
	mkdir -p "$T_DIR/state"
	"$SNFSD" -l 127.0.0.1 -p "$port" -s "$T_DIR/state" "${args[@]}" >>"$T_DIR/snfsd.log" 2>&1 &
	SNFSD_PID=$!
	SNFSD_PORT=$port
	wait_port "$port" 20
}

# guest_server NAME EXPORT [OPTS [SNFSD ARGS...]]: for a guest suite
# whose kernel client mounts 10.0.2.2 without port options: wait (up to
# 60 s) for ports 111 and 2049 to come free, check the guest tool, start
# snfsd on 2049 exporting EXPORT (rw,insecure,no_root_squash and OPTS)
# and whatever more ARGS give, with its own portmapper on 111, and check
# that it answers there. Prints the ok/not ok lines; false when the suite
# cannot go on.
guest_server() {
	local name=$1 exp=$2 opts=${3:-}
	shift 2
	[ $# -gt 0 ] && shift
	for _ in $(seq 1 60); do
		port_busy 111 || port_busy 2049 || break
		sleep 1
	done
	if port_busy 111; then
		notok "$name: port 111 already in use on the host (a portmapper?); snfsd cannot answer portmap there, skipping"
		return 1
	fi
	if port_busy 2049; then
		notok "$name: port 2049 already in use on the host, skipping"
		return 1
	fi
	if [ ! -x "$KVM" ]; then
		notok "$name: $KVM not found, skipping"
		return 1
	fi
	if snfsd_start 2049 -e "$exp:rw,insecure,no_root_squash${opts:+,$opts}" "$@"; then
		ok "snfsd listening on 2049"
	else
		notok "snfsd listening on 2049"
		tail -20 "$T_DIR/snfsd.log" >&2
		return 1
	fi
	# The portmapper comes up with the server; give it a moment.
	for _ in $(seq 1 50); do port_busy 111 && break; sleep 0.1; done
	check "snfsd answers on port 111" port_busy 111
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
