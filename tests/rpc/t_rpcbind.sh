#!/bin/bash
# snfsd with a running rpcbind (src/rpc/pmap_client.c, src/server/main.c):
# it registers NFS (100003 v3, v4; TCP only) and MOUNT (100005 v1, v3; TCP
# and UDP) at its port, a stock client (libnfs's nfs-ls, no port options)
# finds it through port 111, SIGTERM and SIGINT unregister, and what a
# SIGKILL leaves behind is replaced at the next start. Also: -p 0,
# --no-portmap, PMAP v2 over TCP when the local socket is gone or is the
# rpcbind of another network namespace, and
# registrations refused in full or in part (nothing of ours stays behind,
# and a start that fails leaves a running server's mappings alone).
#
# Port 111 on the host belongs to other suites (t_kernel_v3.sh has snfsd
# answer portmap itself there), so rpcbind and snfsd run in a private
# network namespace (ip netns) and mount namespace with a tmpfs on /run
# (rpcbind's socket and lock files): the host is untouched. The script runs
# itself again inside the namespaces (SNFS_RPCBIND_INNER=1); the outer run
# removes the namespace and kills whatever is left in it, also on failure.
. "$(dirname "$0")/../lib.sh"

# ---------------------------------------------------------------- outside
if [ "${SNFS_RPCBIND_INNER:-}" != 1 ]; then
	for c in rpcbind rpcinfo ip unshare nfs-ls; do
		if ! command -v "$c" >/dev/null; then
			echo "not ok - $c not installed (make deps-test)"
			exit 1
		fi
	done
	if [ "$(id -u)" != 0 ]; then
		echo "not ok - needs root (ip netns, mount)"
		exit 1
	fi
	T_DIR=$(mktemp -d /tmp/snfs-test.XXXXXX)
	chmod 755 "$T_DIR" # rpcbind drops to _rpc; nothing of it lives here
	NS=snfs-rpcbind-$$
	INNER=
	host_run_before=$(ls -d /run/rpcbind* 2>/dev/null | xargs -r stat -c '%n %i %Y' 2>/dev/null)
	ns_kill_all() { # every process in the namespace is one of ours
		local p
		for p in $(ip netns pids "$NS" 2>/dev/null); do
			kill -KILL "$p" 2>/dev/null
		done
	}
	cleanup() {
		trap - EXIT INT TERM
		[ -n "$INNER" ] && kill -TERM "$INNER" 2>/dev/null
		ns_kill_all
		[ -n "$INNER" ] && wait "$INNER" 2>/dev/null
		ip netns del "$NS" 2>/dev/null
		rm -rf "$T_DIR"
	}
	trap cleanup EXIT
	trap 'echo "not ok - interrupted"; exit 1' INT TERM
	if ! ip netns add "$NS"; then
		echo "not ok - ip netns add $NS"
		exit 1
	fi
	# In the background so a TERM (run.sh's timeout) reaches the trap now.
	SNFS_RPCBIND_INNER=1 T_DIR=$T_DIR ip netns exec "$NS" \
		unshare -m --propagation private bash "$0" &
	INNER=$!
	wait "$INNER"
	rc=$?
	INNER=
	[ "$rc" != 0 ] && [ "$rc" != 1 ] && notok "inner run exited with status $rc"
	check_eq "nothing left running in the namespace" "" "$(ip netns pids "$NS" 2>/dev/null)"
	ns_kill_all
	check "namespace removed" ip netns del "$NS"
	check_eq "host /run untouched (no rpcbind socket or lock appeared or changed)" \
		"$host_run_before" \
		"$(ls -d /run/rpcbind* 2>/dev/null | xargs -r stat -c '%n %i %Y' 2>/dev/null)"
	[ "$rc" = 0 ] && [ "$T_FAILS" = 0 ]
	exit
fi

# ----------------------------------------------------------------- inside
RPCB_PID=
SRV_WRAP=()
inner_cleanup() {
	snfsd_stop KILL
	[ -n "$RPCB_PID" ] && kill -KILL "$RPCB_PID" 2>/dev/null && wait "$RPCB_PID" 2>/dev/null
	RPCB_PID=
}
trap inner_cleanup EXIT

EXP=$T_DIR/export
mkdir -p "$EXP"
echo "through rpcbind" >"$EXP/hello.txt"
P1=20490 # not 2049: libnfs must learn the ports from rpcbind
P2=20500

# A private /run: rpcbind's socket, lock and warm-start files (and /var/run,
# a link to it on Debian; a real directory gets its own tmpfs).
if ! mount -t tmpfs -o size=1m,mode=755 snfs-rpcbind-run /run; then
	echo "not ok - tmpfs on /run in the private mount namespace"
	exit 1
fi
[ -L /var/run ] || mount -t tmpfs -o size=1m,mode=755 snfs-rpcbind-run /var/run
check_eq "private /run is empty" "" "$(ls -A /run)"
ip link set lo up

# rpcbind_start [ARGS]: rpcbind -f -w (no -h: Debian's 1.2.6 crashes with
# a double free on -h 127.0.0.1) until rpcinfo gets an answer.
rpcbind_start() {
	local i
	rpcbind -f -w "$@" </dev/null >>"$T_DIR/rpcbind.log" 2>&1 &
	RPCB_PID=$!
	for i in $(seq 100); do
		rpcinfo -p 127.0.0.1 >/dev/null 2>&1 && return 0
		sleep 0.05
	done
	return 1
}
rpcbind_stop() {
	[ -n "$RPCB_PID" ] || return 0
	kill -TERM "$RPCB_PID" 2>/dev/null
	wait "$RPCB_PID" 2>/dev/null
	RPCB_PID=
	rm -f /run/rpcbind/*.xdr # no warm start into the next case
}

# srv_start NAME ARGS...: snfsd (under "${SRV_WRAP[@]}", which execs it), log in $T_DIR/NAME.log; waits for its
# "listening on" line, which comes after the registration (the port
# accepts connections before that). Fails if snfsd exits first.
srv_start() {
	local name=$1 i
	shift
	mkdir -p "$T_DIR/state"
	SRV_LOG=$T_DIR/$name.log
	"${SRV_WRAP[@]}" "$SNFSD" -l 127.0.0.1 -s "$T_DIR/state" -e "$EXP:rw,insecure" "$@" >"$SRV_LOG" 2>&1 &
	SNFSD_PID=$!
	for i in $(seq 400); do
		grep -q ' listening on ' "$SRV_LOG" 2>/dev/null && return 0
		snfsd_alive || return 1
		sleep 0.05
	done
	return 1
}

# The NFS and MOUNT mappings rpcbind has, "prog vers proto port" sorted,
# space separated; "rpcinfo failed" when rpcbind does not answer.
regs() {
	local out
	out=$(rpcinfo -p 127.0.0.1 2>&1) || {
		echo "rpcinfo failed: $out"
		return
	}
	awk '$1 == 100003 || $1 == 100005 || $1 == 100021 { print $1, $2, $3, $4 }' <<<"$out" |
		LC_ALL=C sort | tr '\n' ' ' | sed 's/ $//'
}
want() { # port: what snfsd serves there
	local p=$1
	echo "100003 3 tcp $p 100003 4 tcp $p 100005 1 tcp $p 100005 1 udp $p 100005 3 tcp $p 100005 3 udp $p 100021 4 tcp $p 100021 4 udp $p"
}
ready() { # netid prog vers: rpcinfo's own call through rpcbind's mapping
	rpcinfo -T "$1" 127.0.0.1 "$2" "$3" 2>&1 | grep -q "program [0-9]* version $3 ready and waiting"
}
not() { ! "$@"; }
# check_ls NAME [QUERY]: nfs-ls of the export lists hello.txt; with no
# QUERY a stock client with no port options, so through rpcbind's mappings
check_ls() {
	local out
	out=$(timeout 20 nfs-ls "nfs://127.0.0.1$EXP?version=3${2:-}" 2>&1)
	if grep -q 'hello.txt' <<<"$out"; then ok "$1"; else notok "$1 (nfs-ls: $(echo $out | head -c 300))"; fi
}

# pmap2_call PROC PROG VERS PROT PORT: a PMAP v2 SET (1) or UNSET (2) over
# TCP from a reserved port, as another root server would; prints the result
pmap2_call() {
	python3 - "$@" <<'PY'
import socket, struct, sys
proc, prog, vers, prot, port = map(int, sys.argv[1:])
for lport in range(990, 900, -1): # a port of a closed call may linger
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        s.bind(("127.0.0.1", lport))
        s.connect(("127.0.0.1", 111))
        break
    except OSError:
        s.close()
body = struct.pack(">6I", 1, 0, 2, 100000, 2, proc) + struct.pack(">4I", 0, 0, 0, 0)
body += struct.pack(">4I", prog, vers, prot, port)
s.sendall(struct.pack(">I", 0x80000000 | len(body)) + body)
r = b""
while len(r) < 32:
    c = s.recv(100)
    if not c:
        break
    r += c
print(struct.unpack(">I", r[28:32])[0] if len(r) >= 32 else "short reply")
PY
}

# ---- rpcbind alone
if ! rpcbind_start; then
	notok "rpcbind starts in the namespace"
	cat "$T_DIR/rpcbind.log" >&2
	exit 1
fi
ok "rpcbind starts in the namespace"
check "rpcbind's socket is in the private /run" test -S /run/rpcbind.sock
check_eq "no NFS or MOUNT mapping before snfsd starts" "" "$(regs)"

# ---- registration
if srv_start reg -p "$P1"; then ok "snfsd starts next to rpcbind"; else notok "snfsd starts next to rpcbind"; fi
check "log: registered with rpcbind" grep -q 'registered nfs, mountd and nlockmgr with rpcbind' "$SRV_LOG"
check_eq "rpcinfo -p: nfs v3+v4 on tcp, mountd v1+v3 and nlockmgr v4 on tcp and udp, at snfsd's port" "$(want "$P1")" "$(regs)"
check "rpcinfo -T tcp nfs 3 answers" ready tcp nfs 3
check "rpcinfo -T tcp nfs 4 answers" ready tcp nfs 4
check "rpcinfo -T tcp mountd 1 answers" ready tcp mountd 1
check "rpcinfo -T tcp mountd 3 answers" ready tcp mountd 3
check "rpcinfo -T udp mountd 1 answers" ready udp mountd 1
check "rpcinfo -T udp mountd 3 answers" ready udp mountd 3
check "rpcinfo -T tcp nlockmgr 4 answers" ready tcp nlockmgr 4
check "rpcinfo -T udp nlockmgr 4 answers" ready udp nlockmgr 4
check_eq "status (NSM) is left to rpc.statd: not registered" "" \
	"$(rpcinfo -p 127.0.0.1 2>&1 | awk '$1 == 100024')"
owners=$(rpcinfo 127.0.0.1 | awk '$1 == 100003 || $1 == 100005 { print $6 }' | sort -u)
check_eq "registered as owner superuser" superuser "$owners"
check_ls "nfs-ls nfs://127.0.0.1$EXP?version=3 (no ports) lists the export"
check "snfsd does not answer portmap itself" not grep -q 'answering portmap' "$SRV_LOG"

# ---- a second snfsd that cannot start leaves the first one's mappings
"$SNFSD" -l 127.0.0.1 -p "$P1" -s "$T_DIR/state-b" -e "$EXP" >"$T_DIR/b-busy.log" 2>&1
check_eq "second snfsd on the same port fails" 1 $?
check_eq "... and leaves the running server's mappings" "$(want "$P1")" "$(regs)"

# ---- SIGTERM unregisters
snfsd_stop TERM
check_eq "SIGTERM: exit status 0" 0 $?
check_eq "SIGTERM: nfs and mountd unregistered" "" "$(regs)"
check "SIGTERM: no warning about unregistering" not grep -q 'cannot unregister' "$SRV_LOG"

# ---- SIGINT unregisters
srv_start int -p "$P1" || notok "snfsd starts (SIGINT case)"
check_eq "registered again after a clean stop" "$(want "$P1")" "$(regs)"
snfsd_stop INT
check_eq "SIGINT: exit status 0" 0 $?
check_eq "SIGINT: nfs and mountd unregistered" "" "$(regs)"

# ---- SIGKILL leaves stale mappings; the next start replaces them
srv_start kill -p "$P1" || notok "snfsd starts (SIGKILL case)"
snfsd_stop KILL
check_eq "SIGKILL: the mappings stay behind (stale)" "$(want "$P1")" "$(regs)"
srv_start after-kill -p "$P2" || notok "snfsd starts after a SIGKILL"
check_eq "next start on another port: only its own mappings, none stale" "$(want "$P2")" "$(regs)"
check_ls "nfs-ls through the replaced mappings"
snfsd_stop TERM
check_eq "... and SIGTERM removes them" "" "$(regs)"

# ---- -p 0: the port the kernel chose is the one registered
srv_start p0 -p 0 || notok "snfsd -p 0 starts"
port=$(sed -n 's/.* listening on 127\.0\.0\.1 port \([0-9]*\) .*/\1/p' "$SRV_LOG")
if [ -n "$port" ] && [ "$port" != 0 ]; then ok "-p 0: log names the chosen port ($port)"; else notok "-p 0: log names the chosen port ('$port')"; fi
check_eq "-p 0: registered at the chosen port" "$(want "$port")" "$(regs)"
check_ls "-p 0: nfs-ls finds it through rpcbind"
snfsd_stop TERM
check_eq "-p 0: unregistered at exit" "" "$(regs)"

# ---- --no-portmap: no registration
srv_start noport -p "$P1" --no-portmap || notok "snfsd --no-portmap starts"
check_eq "--no-portmap: nothing registered" "" "$(regs)"
snfsd_stop TERM

# ---- a start that fails after registering (its metrics port is taken)
# must not take the running server's mappings with it
srv_start first -p "$P1" --metrics-port 20600 || notok "snfsd with --metrics-port starts"
"$SNFSD" -l 127.0.0.1 -p "$P2" -s "$T_DIR/state-b" -e "$EXP" --metrics-port 20600 >"$T_DIR/b-metrics.log" 2>&1
check_eq "second snfsd whose metrics port is taken fails" 1 $?
check_eq "... and leaves the running server's mappings" "$(want "$P1")" "$(regs)"
check_ls "... which a client still finds"
snfsd_stop TERM
check_eq "first server's SIGTERM unregisters" "" "$(regs)"

# ---- snfsd in a network namespace of its own, with its own rpcbind on
# its 127.0.0.1:111, but this /run, whose rpcbind.sock is the other
# rpcbind's (as under `ip netns exec` on a host running rpcbind):
# registering through that socket would put our programs in the wrong
# rpcbind, over its host's (a lockd's NLM). It registers over TCP.
unshare -n -m --propagation private sh -c 'ip link set lo up &&
	mount -t tmpfs -o size=1m,mode=755 snfs-rpcbind-run2 /run && exec rpcbind -f -w' \
	</dev/null >>"$T_DIR/rpcbind.log" 2>&1 &
RPCB2_PID=$!
in_ns2() { nsenter --net=/proc/$RPCB2_PID/ns/net "$@"; }
for _ in $(seq 100); do in_ns2 rpcinfo -p 127.0.0.1 >/dev/null 2>&1 && break; sleep 0.05; done
SRV_WRAP=(nsenter --net=/proc/$RPCB2_PID/ns/net)
srv_start netns2 -p "$P1" || notok "snfsd starts in the second network namespace"
SRV_WRAP=()
check "netns2: log: the local socket is another namespace's" grep -q 'serves another network namespace' "$SRV_LOG"
check_eq "netns2: registered with the rpcbind of its namespace" "$(want "$P1")" "$(in_ns2 bash -c "$(declare -f regs); regs")"
check_eq "netns2: nothing in the rpcbind behind /run/rpcbind.sock" "" "$(regs)"
snfsd_stop TERM
check_eq "netns2: SIGTERM unregisters there" "" "$(in_ns2 bash -c "$(declare -f regs); regs")"
kill "$RPCB2_PID" 2>/dev/null
wait "$RPCB2_PID" 2>/dev/null

# ---- without the local socket: PMAP v2 over TCP from a reserved port on
# the loopback, which rpcbind trusts (Debian's 1.2.6 without -L as well)
mv /run/rpcbind.sock /run/rpcbind.sock.hidden
srv_start v2 -p "$P1" || notok "snfsd starts (no local socket)"
check "v2: log: registered with rpcbind" grep -q 'registered nfs, mountd and nlockmgr with rpcbind' "$SRV_LOG"
check_eq "v2: registered over TCP" "$(want "$P1")" "$(regs)"
check_ls "v2: nfs-ls finds it"
snfsd_stop TERM
check_eq "v2: SIGTERM unregisters" "" "$(regs)"
srv_start v2-kill -p "$P1" || notok "snfsd starts (v2, SIGKILL case)"
snfsd_stop KILL
check_eq "v2: SIGKILL leaves the mappings (stale)" "$(want "$P1")" "$(regs)"
srv_start v2-after-kill -p "$P2" || notok "snfsd starts after a SIGKILL (v2)"
check_eq "v2: next start replaces what a SIGKILL left" "$(want "$P2")" "$(regs)"
snfsd_stop TERM
check_eq "v2: and SIGTERM removes it" "" "$(regs)"

# ---- no reserved port either (root without CAP_NET_BIND_SERVICE, as
# under a unit that drops it): rpcbind takes the mappings as owner unknown
if command -v setpriv >/dev/null; then
	NOBIND=(setpriv --inh-caps=-net_bind_service --bounding-set=-net_bind_service)
	SRV_WRAP=("${NOBIND[@]}")
	srv_start unpriv -p "$P1" || notok "snfsd without CAP_NET_BIND_SERVICE starts"
	check_eq "unprivileged v2: registered" "$(want "$P1")" "$(regs)"
	owners=$(rpcinfo 127.0.0.1 | awk '$1 == 100003 || $1 == 100005 { print $6 }' | sort -u)
	check_eq "unprivileged v2: owner unknown" unknown "$owners"
	snfsd_stop TERM
	check_eq "unprivileged v2: SIGTERM unregisters" "" "$(regs)"

	# ---- rpcbind refuses: what a SIGKILLed root snfsd left belongs to
	# superuser, which an unknown caller cannot replace. snfsd says so,
	# registers nothing, and serves clients given the ports.
	SRV_WRAP=()
	srv_start root-kill -p "$P1" || notok "snfsd starts (refused case)"
	snfsd_stop KILL
	SRV_WRAP=("${NOBIND[@]}")
	srv_start refused -p "$P2" || notok "snfsd starts when rpcbind refuses it"
	SRV_WRAP=()
	check "refused: log says it cannot register, and which ports to give" \
		grep -q "cannot register with rpcbind: .*port=$P2,mountport=$P2" "$SRV_LOG"
	check_eq "refused: the old mappings stay, none at its port" "$(want "$P1")" "$(regs)"
	check_ls "refused: still serves clients given the ports" "&nfsport=$P2&mountport=$P2"
	snfsd_stop TERM
	check_eq "refused: exit status 0" 0 $?
	check_eq "refused: exit leaves the mappings it did not make" "$(want "$P1")" "$(regs)"
	srv_start cleanup -p "$P1" || notok "snfsd starts (to clear the stale mappings)"
	snfsd_stop TERM
	check_eq "a root snfsd's start and stop clear them" "" "$(regs)"

	# ---- refused part way: another (root) server holds mountd v3 udp.
	# The mappings snfsd did make before the refusal must not stay behind
	# (it does not unregister at exit when it could not register).
	check_eq "PMAP v2 SET of mountd 3 udp as superuser (reserved port)" 1 \
		"$(pmap2_call 1 100005 3 17 4242)"
	SRV_WRAP=("${NOBIND[@]}")
	srv_start partial -p "$P2" || notok "snfsd starts when rpcbind refuses one mapping"
	SRV_WRAP=()
	check "partly refused: log says it cannot register" grep -q "cannot register with rpcbind" "$SRV_LOG"
	check_eq "partly refused: what it set is taken back, the other server's mapping stays" \
		"100005 3 udp 4242" "$(regs)"
	snfsd_stop TERM
	check_eq "partly refused: the same after exit" "100005 3 udp 4242" "$(regs)"
	pmap2_call 2 100005 3 17 0 >/dev/null
	check_eq "(the other server's mapping removed)" "" "$(regs)"
else
	echo "# setpriv missing: the cases without a reserved port are skipped"
fi
mv /run/rpcbind.sock.hidden /run/rpcbind.sock
rpcbind_stop

for f in "$T_DIR"/*.log; do
	[ "$f" = "$T_DIR/rpcbind.log" ] && continue
	cat "$f"
done >"$T_DIR/all-snfsd"
mv "$T_DIR/all-snfsd" "$T_DIR/snfsd.log"
check_no_sanitizer_reports "t_rpcbind"
[ "$T_FAILS" = 0 ]
