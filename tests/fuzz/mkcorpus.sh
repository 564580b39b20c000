#!/bin/bash
# Record the fuzz seed corpora from real traffic.
#
# Builds the fuzz targets and snfsd, lays out the fuzz fixture's tree in
# /tmp/snfs-fuzz (FUZZ_FHMAP=create), starts build/snfsd on it with the
# fixture's fixed file handle key, and runs libnfs's tools (nfs-ls, nfs-cat,
# nfs-cp both ways) plus tests/fuzz/traffic.py (the procedures libnfs never
# calls) through recproxy.py, which keeps every call record. mkseeds.py then
# swaps handles for placeholders and writes tests/fuzz/corpus/<target>/.
#
# Usage: tests/fuzz/mkcorpus.sh [OUTDIR]   (default tests/fuzz/corpus)
set -eu
cd "$(dirname "$0")/../.."
ROOT=$PWD
OUT=${1:-$ROOT/tests/fuzz/corpus}
FZ=$ROOT/build/fuzz
HERE=$ROOT/tests/fuzz

for t in nfs-ls nfs-cp nfs-cat python3 flock; do
	command -v $t >/dev/null || {
		echo "mkcorpus: $t not found (make deps-test)" >&2
		exit 1
	}
done
make -s build/snfsd build/snfs fuzz-build

# The fixture's tree is shared with the fuzz targets: one user at a time.
exec 9>/tmp/snfs-fuzz.lock
flock 9

W=$(mktemp -d /tmp/snfs-mkcorpus.XXXXXX)
# MKCORPUS_KEEP=1 keeps the raw records and logs for a look.
SNFSD_PID= PROXY_PID=
cleanup() {
	[ -n "$PROXY_PID" ] && kill "$PROXY_PID" 2>/dev/null
	[ -n "$SNFSD_PID" ] && kill "$SNFSD_PID" 2>/dev/null
	wait 2>/dev/null
	[ -n "${MKCORPUS_KEEP:-}" ] && echo "mkcorpus: kept $W" >&2 || rm -rf "$W"
}
trap cleanup EXIT

free_port() {
	python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}
wait_port() {
	for _ in $(seq 1 100); do
		(exec 3<>/dev/tcp/127.0.0.1/"$1") 2>/dev/null && return 0
		sleep 0.1
	done
	echo "mkcorpus: nothing listens on port $1" >&2
	return 1
}

FUZZ_FHMAP=create "$FZ/fuzz_rpc" >"$W/fixture.create" 2>/dev/null
mapfile -t SPECS < <(sed -n 's/^export //p' "$W/fixture.create")
KEY=$(sed -n 's/^key //p' "$W/fixture.create")
EXP=${SPECS[0]%%:*}
RO=${SPECS[1]%%:*}

# snfsd loads dir/fh.key (16 raw bytes) when it exists (src/server/state.c).
mkdir -m 700 "$W/state"
printf '%s' "$KEY" >"$W/state/fh.key"
chmod 600 "$W/state/fh.key"

PORT=$(free_port)
"$ROOT/build/snfsd" -l 127.0.0.1 -p "$PORT" -s "$W/state" --no-portmap \
	-e "${SPECS[0]}" -e "${SPECS[1]}" >"$W/snfsd.log" 2>&1 &
SNFSD_PID=$!
wait_port "$PORT"
PPORT=$(free_port)
python3 "$HERE/recproxy.py" "$PPORT" "$PORT" "$W/raw" &
PROXY_PID=$!
wait_port "$PPORT"

URL="nfs://127.0.0.1$EXP"
Q="?version=3&nfsport=$PPORT&mountport=$PPORT"
head -c 3000 /dev/urandom >"$W/up.bin"
printf 'uploaded text\n' >"$W/up.txt"
run() { "$@" >/dev/null 2>&1 || true; }
run nfs-ls "$URL/$Q"
run nfs-ls -R "$URL/$Q"
run nfs-ls "$URL/many$Q"
run nfs-ls "nfs://127.0.0.1$RO/$Q"
run nfs-cat "$URL/file$Q"
run nfs-cat "$URL/dir/inner$Q"
run nfs-cat "$URL/big$Q"
run nfs-cat "$URL/missing$Q"
run nfs-cp "$URL/file$Q" "$W/file.copy"
run nfs-cp "$W/up.bin" "$URL/up.bin$Q"
run nfs-cp "$W/up.txt" "$URL/up.txt$Q"
run nfs-cp "$W/up.txt" "nfs://127.0.0.1$RO/new$Q"
# NFSv4 too, for whatever the server answers of it already.
run nfs-ls "$URL/?version=4&nfsport=$PPORT"
run nfs-cat "$URL/file?version=4&nfsport=$PPORT"
run python3 "$HERE/traffic.py" "$PPORT" "$EXP" "$RO"
# libsnfs itself over NFSv4.1/4.2 (the 4.1+ COMPOUNDs libnfs never sends).
SURL="nfs://127.0.0.1$EXP"
run "$ROOT/build/snfs" ls -lR "$SURL/?version=4.2&nfsport=$PPORT"
run "$ROOT/build/snfs" holes "$SURL/big?version=4.2&nfsport=$PPORT"
run "$ROOT/build/snfs" df "$SURL/?version=4.1&nfsport=$PPORT"
run "$ROOT/build/snfs" mkdir "$SURL/newdir?version=4.2&nfsport=$PPORT"
run "$ROOT/build/snfs" mv "$SURL/newdir?version=4.2&nfsport=$PPORT" \
	"$SURL/newdir2?version=4.2&nfsport=$PPORT"
run "$ROOT/build/snfs" rm -r "$SURL/newdir2?version=4.2&nfsport=$PPORT"
run "$ROOT/build/snfs" cat "$SURL/file?version=4.1&nfsport=$PPORT"
run "$ROOT/build/snfs" cp "$W/up.txt" "$SURL/up.txt?version=4.2&nfsport=$PPORT"
# fuzz_client_replies: snfsd's replies to the harness's own API script,
# recorded by the harness acting as a proxy (see its header).
rm -rf "$OUT/fuzz_client_replies"
mkdir -p "$OUT/fuzz_client_replies"
FUZZ_CLIENT_RECORD=$PORT FUZZ_CLIENT_SEEDS=$OUT/fuzz_client_replies \
	"$FZ/fuzz_client_replies" >"$W/client-record.log" 2>&1
sleep 1 # let the proxy save the last connections
kill "$PROXY_PID"
wait "$PROXY_PID" 2>/dev/null || true
PROXY_PID=

# Handles as they are now too (the traffic may have made new objects).
FUZZ_FHMAP=print "$FZ/fuzz_rpc" >"$W/fixture.print" 2>/dev/null
cat "$W/fixture.create" "$W/fixture.print" >"$W/fixture"
rm -rf "$OUT/fuzz_rpc" "$OUT/fuzz_nfs3_args" "$OUT/fuzz_record" \
	"$OUT/fuzz_nfs4_compound"
mkdir -p "$OUT"
python3 "$HERE/mkseeds.py" "$W/raw" "$W/fixture" "$OUT"
python3 "$HERE/mkseeds4.py" "$OUT"
echo "mkcorpus: $(ls "$W/raw" | grep -c '\.rec$') records from" \
	"$(ls "$W/raw" | grep -c '\.stream$') connections;" \
	"$(cat "$OUT"/fuzz_*/* | wc -c) bytes in $OUT"
