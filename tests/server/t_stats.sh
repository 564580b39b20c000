#!/bin/bash
# Observability: per-operation counts, errors and latency from a running
# snfsd through `snfsd --stats` (control socket in the state directory) and
# the Prometheus endpoint (--metrics-port), and the structured error lines
# in the log. Runs the ASan build against libnfs's nfs-ls / nfs-cat.
. "$(dirname "$0")/../lib.sh"

if ! command -v nfs-ls >/dev/null || ! command -v nfs-cat >/dev/null; then
	echo "not ok - libnfs-utils not installed (make deps-test)"
	exit 1
fi

scratch
EXP=$T_DIR/export
STATE=$T_DIR/state
mkdir -p "$EXP/sub"
echo "hello stats" >"$EXP/hello.txt"
echo inner >"$EXP/sub/inner.txt"

# metrics: GET a URL from 127.0.0.1 (curl if present, else python3)
http_get() { # url
	if command -v curl >/dev/null; then
		curl -s --max-time 10 "$1"
	else
		python3 -c 'import sys, urllib.request
print(urllib.request.urlopen(sys.argv[1], timeout=10).read().decode(), end="")' "$1"
	fi
}
# metric VALUE of an exact series name+labels in a scrape
metric() { # scrape series
	grep -F "$2 " <<<"$1" | awk '{print $NF}' | head -1
}

# --stats without a server says so and fails
"$SNFSD" --stats -s "$T_DIR/nothing" >"$T_DIR/none.out" 2>&1
check_eq "--stats with no server: exit 1" 1 $?
check "--stats with no server: says why" grep -q 'cannot reach a running snfsd' "$T_DIR/none.out"
"$SNFSD" --metrics-port 0 -e "$EXP" >/dev/null 2>&1
check_eq "--metrics-port 0 refused" 2 $?
check "--help lists --stats and --metrics-port" \
	bash -c "'$SNFSD' --help | grep -q -- '--stats' && '$SNFSD' --help | grep -q -- '--metrics-port PORT'"

PORT=$(free_port)
MPORT=$(free_port)
while [ "$MPORT" = "$PORT" ]; do MPORT=$(free_port); done
if ! snfsd_start "$PORT" --no-portmap --metrics-port "$MPORT" \
	-e "$EXP:rw,insecure,no_root_squash"; then
	notok "snfsd starts"
	cat "$T_DIR/snfsd.log" >&2
	exit 1
fi
ok "snfsd starts"
check "metrics address logged" grep -q "metrics on http://127.0.0.1:$MPORT/metrics" "$T_DIR/snfsd.log"

# the control socket: in the state dir, a socket, mode 0600
SOCK=$STATE/control.sock
check "control socket exists" test -S "$SOCK"
check_eq "control socket mode 0600" 600 "$(stat -c %a "$SOCK")"
# the metrics endpoint is bound to loopback only
if command -v ss >/dev/null; then
	check "metrics bound to 127.0.0.1 only" \
		bash -c "ss -Hltn 'sport = :$MPORT' | awk '{print \$4}' | grep -qx '127.0.0.1:$MPORT'"
fi

Q="?version=3&nfsport=$PORT&mountport=$PORT"
URL="nfs://127.0.0.1$EXP"

scrape1=$(http_get "http://127.0.0.1:$MPORT/metrics")
check "first scrape answers" grep -q '^# TYPE snfsd_rpc_calls_total counter' <<<"$scrape1"

# traffic: listings, reads, and failing calls
for i in 1 2 3; do
	nfs-ls "$URL/$Q" >/dev/null 2>&1
	nfs-cat "$URL/hello.txt$Q" >/dev/null 2>&1
done
check_eq "nfs-cat still reads" "hello stats" "$(nfs-cat "$URL/hello.txt$Q" 2>&1)"
nfs-ls "$URL/sub$Q" >/dev/null 2>&1
for i in 1 2; do
	nfs-cat "$URL/missing-$i$Q" >/dev/null 2>&1 && notok "nfs-cat of a missing file fails"
done
# READ of a directory: NFS3ERR_ISDIR (libnfs opens it, then reads)
nfs-cat "$URL/sub$Q" >/dev/null 2>&1

# ---- snfsd --stats ----
"$SNFSD" --stats -s "$STATE" >"$T_DIR/stats.out" 2>"$T_DIR/stats.err"
check_eq "--stats exits 0" 0 $?
check "--stats table header" grep -qE '^PROGRAM +VERS +OPERATION +CALLS +ERRORS +MEAN +P50 +P99' "$T_DIR/stats.out"
row() { # OP: "calls errors" of the nfs v3 row
	awk -v op="$1" '$1 == "nfs" && $2 == 3 && $3 == op {print $4, $5}' "$T_DIR/stats.out"
}
calls() { row "$1" | cut -d' ' -f1; }
errors() { row "$1" | cut -d' ' -f2; }
for op in LOOKUP READ GETATTR; do
	c=$(calls $op)
	check "--stats: $op counted ($c calls)" test "${c:-0}" -gt 0
done
c=$(calls READ)
check "--stats: READ at least 4 calls ($c)" test "${c:-0}" -ge 4
e=$(errors LOOKUP)
check "--stats: LOOKUP errors from the missing files ($e)" test "${e:-0}" -ge 2
check "--stats: mount MNT counted" \
	awk '$1 == "mountd" && $3 == "MNT" && $4 > 0 {f=1} END {exit !f}' "$T_DIR/stats.out"
check "--stats: latency columns have units" \
	awk '$1 == "nfs" && $3 == "READ" && $6 ~ /(us|ms|s)$/ && $7 ~ /(us|ms|s)$/ && $8 ~ /(us|ms|s)$/ {f=1} END {exit !f}' "$T_DIR/stats.out"
check "--stats: total line" grep -qE '^total +[0-9]+ +[0-9]+' "$T_DIR/stats.out"
check "--stats: header names the uptime" grep -q '^snfsd pid [0-9]*, up ' "$T_DIR/stats.out"

# ---- Prometheus ----
scrape2=$(http_get "http://127.0.0.1:$MPORT/metrics")
R='snfsd_rpc_calls_total{prog="nfs",vers="3",proc="READ"}'
L='snfsd_rpc_calls_total{prog="nfs",vers="3",proc="LOOKUP"}'
LE='snfsd_rpc_errors_total{prog="nfs",vers="3",proc="LOOKUP"}'
r1=$(metric "$scrape1" "$R")
r2=$(metric "$scrape2" "$R")
check "metrics: READ calls line" test -n "$r2"
check "metrics: READ calls grew between scrapes ($r1 -> $r2)" test "${r2:-0}" -gt "${r1:-0}"
check "metrics: LOOKUP calls grew" test "$(metric "$scrape2" "$L")" -gt "$(metric "$scrape1" "$L")"
check "metrics: LOOKUP errors >= 2" test "$(metric "$scrape2" "$LE")" -ge 2
check_eq "metrics: --stats and metrics agree on READ errors" \
	"$(errors READ)" "$(metric "$scrape2" 'snfsd_rpc_errors_total{prog="nfs",vers="3",proc="READ"}')"
check "metrics: histogram TYPE" grep -q '^# TYPE snfsd_rpc_duration_seconds histogram' <<<"$scrape2"
check "metrics: READ histogram buckets" \
	grep -q '^snfsd_rpc_duration_seconds_bucket{prog="nfs",vers="3",proc="READ",le="0.000001"} [0-9]' <<<"$scrape2"
inf=$(metric "$scrape2" 'snfsd_rpc_duration_seconds_bucket{prog="nfs",vers="3",proc="READ",le="+Inf"}')
cnt=$(metric "$scrape2" 'snfsd_rpc_duration_seconds_count{prog="nfs",vers="3",proc="READ"}')
check_eq "metrics: READ +Inf bucket == _count" "$cnt" "$inf"
check "metrics: READ _count == calls" test "$cnt" = "$r2"
check "metrics: READ _sum present" \
	grep -qE '^snfsd_rpc_duration_seconds_sum\{prog="nfs",vers="3",proc="READ"\} [0-9.]+$' <<<"$scrape2"
mono=$(grep -F 'snfsd_rpc_duration_seconds_bucket{prog="nfs",vers="3",proc="READ",' <<<"$scrape2" |
	awk '{v=$NF; if (v < p) bad=1; p=v; n++} END {print (bad ? "no" : "yes") n}')
check_eq "metrics: 28 cumulative READ buckets" "yes28" "$mono"

# a third scrape after more traffic: counts only grow
nfs-cat "$URL/hello.txt$Q" >/dev/null 2>&1
scrape3=$(http_get "http://127.0.0.1:$MPORT/metrics")
check "metrics: READ grew again" test "$(metric "$scrape3" "$R")" -gt "$r2"

# HTTP edge cases
code=$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$MPORT/nope" 2>/dev/null || echo none)
[ "$code" = none ] || check_eq "metrics: other paths are 404" 404 "$code"
code=$(curl -s -o /dev/null -w '%{http_code}' -X POST "http://127.0.0.1:$MPORT/metrics" 2>/dev/null || echo none)
[ "$code" = none ] || check_eq "metrics: POST is 405" 405 "$code"
ctype=$(curl -s -o /dev/null -w '%{content_type}' "http://127.0.0.1:$MPORT/metrics" 2>/dev/null || echo none)
[ "$ctype" = none ] || check "metrics: Prometheus text content type" grep -q 'text/plain; version=0.0.4' <<<"$ctype"
# a client that connects and says nothing must not wedge the endpoint
exec 7<>/dev/tcp/127.0.0.1/"$MPORT"
check "metrics: answers while another client stalls" \
	bash -c "$(declare -f http_get); http_get http://127.0.0.1:$MPORT/metrics | grep -q snfsd_rpc_calls_total"
exec 7>&-
# the control socket answers "metrics" too, and refuses other commands
out=$(python3 - "$SOCK" <<'EOF'
import socket, sys
for cmd in (b"metrics\n", b"frobnicate\n"):
    s = socket.socket(socket.AF_UNIX); s.connect(sys.argv[1]); s.sendall(cmd)
    s.shutdown(socket.SHUT_WR); data = b""
    while True:
        b = s.recv(65536)
        if not b: break
        data += b
    print(data.decode().splitlines()[0] if data else "EMPTY")
EOF
)
check "control socket: metrics command" grep -q '^# HELP snfsd_rpc_calls_total' <<<"$out"
check "control socket: unknown command refused" grep -q "^error: unknown command 'frobnicate'" <<<"$out"

# ---- structured error log ----
check "log: LOOKUP error line with client, handle and status" \
	grep -qE "op=LOOKUP prog=nfs vers=3 client=127\.0\.0\.1:[0-9]+ uid=[0-9-]+ fh=[0-9a-f]+ status=NFS3ERR_NOENT" "$T_DIR/snfsd.log"
check "log: READ of a directory logged as NFS3ERR_ISDIR or INVAL" \
	grep -qE "op=READ .* status=NFS3ERR_(ISDIR|INVAL)" "$T_DIR/snfsd.log"
check "log: no error line for successful READs" \
	bash -c "! grep -E 'op=READ .*status=NFS3_OK' '$T_DIR/snfsd.log'"

# ---- a second server on the same state dir must not steal the socket ----
PORT2=$(free_port)
"$SNFSD" -l 127.0.0.1 -p "$PORT2" -s "$STATE" --no-portmap -e "$EXP" >"$T_DIR/second.log" 2>&1 &
P2=$!
wait_port "$PORT2" 20
check "second server warns the control socket is taken" grep -q 'another snfsd is using it' "$T_DIR/second.log"
kill "$P2"
wait "$P2"
check "first server's socket survives the second's exit" test -S "$SOCK"
check "--stats still reaches the first server" bash -c "'$SNFSD' --stats -s '$STATE' | grep -q '^nfs '"

# ---- shutdown removes the socket; a stale one is replaced at start ----
snfsd_stop
check_eq "clean exit" 0 $?
check "socket removed at exit" test ! -e "$SOCK"
python3 -c 'import socket, sys; s = socket.socket(socket.AF_UNIX); s.bind(sys.argv[1])' "$SOCK"
check "stale socket file planted" test -S "$SOCK"
PORT=$(free_port)
check "restart with a stale socket" snfsd_start "$PORT" --no-portmap -e "$EXP"
check "--stats reaches the restarted server" bash -c "'$SNFSD' --stats -s '$STATE' | grep -q '^PROGRAM'"
snfsd_stop
check_no_sanitizer_reports "t_stats"
[ "$T_FAILS" = 0 ]
