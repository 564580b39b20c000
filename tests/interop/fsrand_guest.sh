#!/bin/bash
# Runs inside the test guest for t_fsrand.sh: the Linux kernel client
# mounts SERVER:EXPORT with vers=3 (MOUNT and NFS on PORT), 4.1 and 4.2,
# and fsrand runs on each mount at once (4.2 twice: two files), with
# unaligned direct I/O, and once on a file it reaches by the 4.2 and the
# v3 mount in turn (-2: two clients, close-to-open between them), and by
# four threads at once on the 4.2 mount (-t 4). Output lines, by prefix:
#   R|step rc    the guest's steps
#   F|MOUNT FILE SEED rc   one per fsrand run, then its last lines as
#   O|MOUNT FILE ...       (fsrand's "ok" and "size N hash H" lines, or
#                           what it printed when a byte was wrong)
#   N|MOUNT ...            nsrand.py's last lines on each mount (its
#                          directory ns-MOUNT)
#   M|op: ...    per-op counts of the 4.2 mount
# With PORT2 EXPORT2, a second server's export is mounted too (vers=4.2,
# /m42z) and one more run goes there.
# usage: fsrand_guest.sh SERVER PORT EXPORT FSRAND OPS SEED [MAXSIZE
#        [PORT2 EXPORT2]]
set -u
SERVER=$1 PORT=$2 EXPORT=$3 FSRAND=$4 OPS=$5 SEED=$6 MAX=${7:-262144}
PORT2=${8:-} EXPORT2=${9:-} # a second server (other export options)
NSRAND=$(cd "$(dirname "$0")" && pwd)/nsrand.py

. "$(dirname "$0")/guest_lib.sh"

mkdir -p /m3 /m41 /m42
step mount-3 mount -t nfs -o "vers=3,proto=tcp,mountproto=tcp,nolock,port=$PORT,mountport=$PORT,retry=0" \
	"$SERVER:$EXPORT" /m3 || exit 1
step mount-41 mount -t nfs -o "vers=4.1,port=$PORT,retry=0" "$SERVER:$EXPORT" /m41 || exit 1
step mount-42 mount -t nfs -o "vers=4.2,port=$PORT,retry=0" "$SERVER:$EXPORT" /m42 || exit 1
if [ -n "$PORT2" ]; then
	mkdir -p /m42z
	step mount-42z mount -t nfs -o "vers=4.2,port=$PORT2,retry=0" "$SERVER:$EXPORT2" /m42z || exit 1
fi

# mount file seed [fsrand options]: one run, its output kept for the host
run() {
	local m=$1 f=$2 seed=$3
	shift 3
	"$FSRAND" -u -m "$MAX" -n "$OPS" -s "$seed" "$@" "/$m/$f" >"/tmp/fsrand.$f" 2>&1
	echo $? >"/tmp/fsrand.$f.rc"
}
pids=()
run m42 f42a "$SEED" &
pids+=($!)
run m42 f42b "$((SEED + 1))" &
pids+=($!)
run m41 f41 "$((SEED + 2))" &
pids+=($!)
run m3 f3 "$((SEED + 3))" &
pids+=($!)
# two clients on one file: reopens switch between the 4.2 and the v3
# mount (close-to-open consistency between them)
run m42 f2c "$((SEED + 4))" -2 /m3/f2c &
pids+=($!)
# four threads on their own parts of one file at once
run m42 f4t "$((SEED + 5))" -t 4 -n "$((OPS / 4))" &
pids+=($!)
runs="m42:f42a:0 m42:f42b:1 m41:f41:2 m3:f3:3 m42:f2c:4 m42:f4t:5"
if [ -n "$PORT2" ]; then
	run m42z f42z "$((SEED + 6))" &
	pids+=($!)
	runs="$runs m42z:f42z:6"
fi
# random namespace operations (nsrand.py) on each mount, at once too
k=20
for m in m3 m41 m42; do
	mkdir -p "/$m/ns-$m"
	python3 "$NSRAND" -n "$((OPS / 3))" -s "$((SEED + k))" "/$m/ns-$m" >"/tmp/nsrand.$m" 2>&1 &
	pids+=($!)
	k=$((k + 1))
done
wait "${pids[@]}"
for m in m3 m41 m42; do
	tail -50 "/tmp/nsrand.$m" | sed "s/^/N|$m /"
done
for r in $runs; do
	IFS=: read -r m f k <<<"$r"
	echo "F|$m $f $((SEED + k)) $(cat "/tmp/fsrand.$f.rc")"
	tail -60 "/tmp/fsrand.$f" | sed "s/^/O|$m $f /"
done

awk '/^device / { on = index($0, " mounted on /m42 with ") > 0; ops = 0; next }
	on && /per-op statistics/ { ops = 1; next }
	on && ops && NF > 1 && $2 > 0 { print "M|" $0 }' /proc/self/mountstats
step umount-3 umount /m3
step umount-41 umount /m41
step umount-42 umount /m42
[ -n "$PORT2" ] && step umount-42z umount /m42z
