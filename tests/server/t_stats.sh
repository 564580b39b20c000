#!/bin/bash
# Observability: per-operation counts, errors and latency from a running
# snfsd through `snfsd --stats` (control socket in the state directory) and
# the Prometheus endpoint (--metrics-port), and the structured error lines
# in the log. Runs the ASan build against libnfs's nfs-ls / nfs-cat (NFSv3)
# and build/snfs over NFSv4.1/4.2 (the per-op NFSv4 table and series).
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

# ---- NFSv4: per-operation counters, errors, histograms and error lines ----
SNFS=${SNFS:-$ROOT/build/snfs}
[ -x "$SNFS" ] || SNFS=$ROOT/build/asan/snfs
V4="nfs://127.0.0.1:$PORT$EXP"
v4row() { # STATS-FILE VERS OP: "calls errors" of that NFSv4 operations row
	awk -v v="$2" -v op="$3" '/^NFSv4 operations$/ {f=1}
		f && $1 == v && $2 == op {print $3, $4}' "$1"
}
v4delta() { # VERS OP FIELD(1 calls, 2 errors): growth from v4a.out to v4b.out
	local a b
	a=$(v4row "$T_DIR/v4a.out" "$1" "$2" | cut -d' ' -f"$3")
	b=$(v4row "$T_DIR/v4b.out" "$1" "$2" | cut -d' ' -f"$3")
	echo $((${b:-0} - ${a:-0}))
}
m4() { # scrape op minor [errors]: snfsd_nfs4_ops_total (or _op_errors_total)
	local name=snfsd_nfs4_ops_total
	[ -n "${4:-}" ] && name=snfsd_nfs4_op_errors_total
	metric "$1" "$name{op=\"$2\",minor=\"$3\"}"
}
check "snfs binary for NFSv4 traffic ($SNFS)" test -x "$SNFS"
"$SNFSD" --stats -s "$STATE" >"$T_DIR/v4a.out"
m4a=$(http_get "http://127.0.0.1:$MPORT/metrics")
for i in 1 2 3; do
	out=$("$SNFS" cat "$V4/hello.txt?version=4.2" 2>&1)
done
check_eq "v4.2: snfs cat reads" "hello stats" "$out"
"$SNFS" cat "$V4/hello.txt?version=4.1" >/dev/null 2>&1
"$SNFS" stat "$V4/missing-v4?version=4.2" >/dev/null 2>&1 &&
	notok "v4.2: snfs stat of a missing name fails"
"$SNFSD" --stats -s "$STATE" >"$T_DIR/v4b.out"
m4b=$(http_get "http://127.0.0.1:$MPORT/metrics")

check "--stats: NFSv4 operations table" grep -q '^NFSv4 operations$' "$T_DIR/v4b.out"
check "--stats: NFSv4 table header" \
	grep -qE '^VERS +OPERATION +CALLS +ERRORS +MEAN +P50 +P99' "$T_DIR/v4b.out"
for op in OPEN READ_PLUS CLOSE; do
	check_eq "--stats: 4.2 $op grew by 3 (3 cats)" 3 "$(v4delta 4.2 $op 1)"
	check_eq "--stats: 4.2 $op no errors" 0 "$(v4delta 4.2 $op 2)"
done
check_eq "--stats: 4.1 READ grew by 1 (4.1 has no READ_PLUS)" 1 "$(v4delta 4.1 READ 1)"
check_eq "--stats: 4.1 OPEN apart from 4.2's" 1 "$(v4delta 4.1 OPEN 1)"
check_eq "--stats: no 4.1 READ_PLUS row" "" "$(v4row "$T_DIR/v4b.out" 4.1 READ_PLUS)"
depth=$(tr -cd / <<<"$EXP/hello.txt" | wc -c)
lk=$(v4delta 4.2 LOOKUP 1)
check "--stats: 4.2 LOOKUP grew by 3 walks of $depth names at least ($lk)" \
	test "$lk" -ge $((3 * depth))
le=$(v4delta 4.2 LOOKUP 2)
check "--stats: 4.2 LOOKUP errors from the missing name ($le)" test "$le" -ge 1
nlines=$(grep -c 'op=LOOKUP prog=nfs vers=4 minor=2 .*status=NFS4ERR_NOENT' "$T_DIR/snfsd.log")
check_eq "log: one LOOKUP NOENT line per counted LOOKUP error" \
	"$(v4row "$T_DIR/v4b.out" 4.2 LOOKUP | cut -d' ' -f2)" "$nlines"
check "--stats: 4.2 latency columns have units" \
	awk '/^NFSv4 operations$/ {f=1} f && $1 == "4.2" && $2 == "READ_PLUS" && $5 ~ /(us|ms|s)$/ && $7 ~ /(us|ms|s)$/ {g=1} END {exit !g}' "$T_DIR/v4b.out"
check "--stats: NFSv4 total line" \
	awk '/^NFSv4 operations$/ {f=1} f && /^total +[0-9]+ +[0-9]+/ {g=1} END {exit !g}' "$T_DIR/v4b.out"

check "metrics: nfs4 ops TYPE" grep -q '^# TYPE snfsd_nfs4_ops_total counter' <<<"$m4b"
check_eq "metrics: READ_PLUS minor 2 grew by 3" 3 $(($(m4 "$m4b" READ_PLUS 2) - $(m4 "$m4a" READ_PLUS 2)))
check_eq "metrics: OPEN minor 2 grew by 3" 3 $(($(m4 "$m4b" OPEN 2) - $(m4 "$m4a" OPEN 2)))
check_eq "metrics: READ minor 1 grew by 1" 1 $(($(m4 "$m4b" READ 1) - $(m4 "$m4a" READ 1)))
check_eq "metrics: --stats and metrics agree on 4.2 LOOKUP calls" \
	"$(v4row "$T_DIR/v4b.out" 4.2 LOOKUP | cut -d' ' -f1)" "$(m4 "$m4b" LOOKUP 2)"
check_eq "metrics: --stats and metrics agree on 4.2 LOOKUP errors" \
	"$(v4row "$T_DIR/v4b.out" 4.2 LOOKUP | cut -d' ' -f2)" "$(m4 "$m4b" LOOKUP 2 errors)"
check_eq "metrics: no READ_PLUS series for minor 1" 0 \
	"$(grep -cF 'op="READ_PLUS",minor="1"' <<<"$m4b")"
check "metrics: nfs4 histogram TYPE" \
	grep -q '^# TYPE snfsd_nfs4_op_duration_seconds histogram' <<<"$m4b"
H=snfsd_nfs4_op_duration_seconds
for op in READ_PLUS LOOKUP; do
	L="{op=\"$op\",minor=\"2\""
	inf=$(metric "$m4b" "${H}_bucket$L,le=\"+Inf\"}")
	cnt=$(metric "$m4b" "${H}_count$L}")
	check_eq "metrics: $op +Inf bucket == _count" "$cnt" "$inf"
	check_eq "metrics: $op _count == ops_total" "$(m4 "$m4b" $op 2)" "$cnt"
	check "metrics: $op _sum present" grep -qE "^${H}_sum\\{op=\"$op\",minor=\"2\"\\} [0-9.]+\$" <<<"$m4b"
	mono=$(grep -F "${H}_bucket$L," <<<"$m4b" |
		awk '{v=$NF; if (v < p) bad=1; p=v; n++} END {print (bad ? "no" : "yes") n}')
	check_eq "metrics: 28 cumulative $op buckets" "yes28" "$mono"
done

check "log: NFSv4 LOOKUP error line names the op, status, client and handle" \
	grep -qE "op=LOOKUP prog=nfs vers=4 minor=2 client=127\.0\.0\.1:[0-9]+ uid=[0-9-]+ fh=[0-9a-f]+ status=NFS4ERR_NOENT time_us=[0-9]+" "$T_DIR/snfsd.log"
check "log: no COMPOUND line beside the op's" \
	bash -c "! grep -q 'op=COMPOUND .*status=NFS4ERR_NOENT' '$T_DIR/snfsd.log'"
check "log: no line for NFSv4 ops that succeeded" \
	bash -c "! grep -qE 'op=(OPEN|READ_PLUS|CLOSE) prog=nfs vers=4' '$T_DIR/snfsd.log'"

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
