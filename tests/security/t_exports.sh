#!/bin/bash
# Export security (issue 7): forged and bit-flipped handles, non-exported
# directories, '..' at the export root, symlinks pointing outside, rename
# and link across exports, a ro export, root_squash and all_squash, a client
# address not allowed, the `secure` option, over-long names and paths,
# oversized requests and bad credentials. The cases themselves are in
# exports_cases.py (NFSv3 and MOUNT) and exports_cases4.py (the same over
# NFSv4.1 and 4.0, with the pseudo root, LOOKUPP and COMPOUND limits; its
# "pre" part runs before the v3 cases, its "post" part after their
# SIGHUP reload); this script builds the tree, runs snfsd (ASan build) and
# checks afterwards that nothing outside the exports was read or changed.
# Needs root (squashing, privileged source ports, file handles).
set -u
. "$(dirname "$0")/../lib.sh"
HERE=$(cd "$(dirname "$0")" && pwd)

if [ "$(id -u)" != 0 ]; then
	echo "ok - # SKIP export security suite needs root"
	exit 0
fi
if [ ! -x "$SNFSD" ]; then
	notok "snfsd binary $SNFSD missing"
	exit 1
fi

scratch
chmod 755 "$T_DIR"
S=$T_DIR/srv
mkdir -p "$S"/{wide,rw,rw2,ro,rsq,asq,sec,only9,gone} "$S"/rw/sub "$S"/ro/d "$T_DIR/secret" "$T_DIR/conf"

# Outside every export: a canary file next to the exports.
printf 'canary: must never be read or changed\n' >"$T_DIR/secret/canary"
chmod 600 "$T_DIR/secret/canary"
touch -d '2001-02-03 04:05:06' "$T_DIR/secret/canary"
echo sibling >"$S/not-exported-file"

echo data >"$S/rw/f"
echo data >"$S/rw/a"
ln -s ../../secret "$S/rw/out"
ln -s "$T_DIR/secret/canary" "$S/rw/abs"
ln -s / "$S/rw/dirlink"
head -c $((2 << 20)) /dev/urandom >"$S/rw/twomeg"
echo g >"$S/rw2/g"
printf 'read-only data\n' >"$S/ro/f"
chmod 666 "$S/ro/f"
chmod 777 "$S/ro" "$S/ro/d"
chmod 1777 "$S/rsq" "$S/asq"
printf 'root only\n' >"$S/rsq/rootfile"
chmod 600 "$S/rsq/rootfile"
echo h >"$S/gone/h"
echo s >"$S/only9/secretfile"
mkdir -p "$S/wide/public" "$S/wide/private"
echo public >"$S/wide/public/pfile"
echo private >"$S/wide/private/file"

common="$S/rw 127.0.0.1(rw,no_root_squash,insecure)
$S/rw2 127.0.0.1(rw,no_root_squash,insecure)
$S/ro 127.0.0.1(ro,no_root_squash,insecure)
$S/rsq 127.0.0.1(rw,root_squash,insecure)
$S/asq 127.0.0.1(rw,all_squash,anonuid=1234,anongid=4321,insecure)
$S/sec 127.0.0.1(rw,secure,no_root_squash)"
# Before the reload: "gone" is exported and only9 admits us (to get
# handles); exports.2 (swapped in by SIGHUP) drops "gone" and admits only
# 10.9.9.9 to only9.
# "wide" is narrowed to wide/public keeping its fsid.
printf '%s\n%s\n%s\n%s\n' "$common" "$S/only9 127.0.0.1(rw,insecure)" \
	"$S/gone 127.0.0.1(rw,insecure)" \
	"$S/wide 127.0.0.1(rw,insecure,no_root_squash,fsid=4242)" >"$T_DIR/conf/exports"
printf '%s\n%s\n%s\n' "$common" "$S/only9 10.9.9.9(rw,insecure)" \
	"$S/wide/public 127.0.0.1(rw,insecure,no_root_squash,fsid=4242)" \
	>"$T_DIR/conf/exports.2"

# What lies outside the exports, to compare afterwards.
outside() {
	(
		cd "$T_DIR" || exit 1
		find . -path ./srv/rw -prune -o -path ./srv/rw2 -prune -o \
			-path ./srv/ro -prune -o -path ./srv/rsq -prune -o \
			-path ./srv/asq -prune -o -path ./srv/sec -prune -o \
			-path ./srv/only9 -prune -o -path ./srv/gone -prune -o -path ./srv/wide/public -prune -o \
			-path ./state -prune -o -name snfsd.log -prune -o -name 'cases*.out' -prune -o \
			-name cases4.json -prune -o \
			-path ./conf -prune -o \
			-mindepth 1 -printf '%p %y %m %u %g %s %T@\n' | sort
	)
}
# Read with O_NOATIME so that only the server could move the canary's atime.
canary_sum() {
	python3 -c 'import hashlib, os, sys
fd = os.open(sys.argv[1], os.O_RDONLY | os.O_NOATIME)
print(hashlib.sha256(os.read(fd, 1 << 20)).hexdigest())' "$T_DIR/secret/canary"
}
canary_mtime() { stat -c %Y "$T_DIR/secret/canary"; }
mkdir -p "$T_DIR/state" && : >>"$T_DIR/snfsd.log" # made before the snapshot
BEFORE=$(outside)
SUM0=$(canary_sum)
MT0=$(canary_mtime)
AT0=$(stat -c %X "$T_DIR/secret/canary")

PORT=$(free_port)
if ! snfsd_start "$PORT" --no-portmap -f "$T_DIR/conf/exports"; then
	notok "snfsd starts with the security exports"
	cat "$T_DIR/snfsd.log" >&2
	exit 1
fi

# run_cases OUT SECONDS SCRIPT ARGS...: a case script exits with its number
# of failures; any other non-zero exit (a traceback during setup, the
# timeout) is a failure of its own.
run_cases() {
	local out=$1 tmo=$2 rc
	shift 2
	timeout "$tmo" python3 "$@" | tee "$out"
	rc=${PIPESTATUS[0]}
	if [ "$rc" != 0 ] && [ "$rc" != "$(grep -c '^not ok' "$out")" ]; then
		notok "$(basename "$1") $5 crashed or timed out (status $rc)"
	fi
}
run_cases "$T_DIR/cases4-pre.out" 60 "$HERE/exports_cases4.py" "$PORT" "$SNFSD_PID" "$T_DIR" pre
run_cases "$T_DIR/cases.out" 120 "$HERE/exports_cases.py" "$PORT" "$SNFSD_PID" "$T_DIR"
run_cases "$T_DIR/cases4-post.out" 30 "$HERE/exports_cases4.py" "$PORT" "$SNFSD_PID" "$T_DIR" post

check_eq "canary outside the exports: content unchanged (sha256)" "$SUM0" "$(canary_sum)"
check_eq "canary outside the exports: mtime unchanged" "$MT0" "$(canary_mtime)"
# The atime is from 2001, so under relatime any read by snfsd moves it.
check_eq "canary outside the exports: atime unchanged (never read)" "$AT0" \
	"$(stat -c %X "$T_DIR/secret/canary")"
AFTER=$(outside)
if [ "$BEFORE" = "$AFTER" ]; then
	ok "nothing new or changed outside the exports"
else
	notok "nothing new or changed outside the exports"
	diff <(echo "$BEFORE") <(echo "$AFTER") | head -20 >&2
fi
check "server still alive after all cases" snfsd_alive
check "server still answers NULL" python3 -c "
import sys; sys.path.insert(0, '$HERE')
import secrpc; secrpc.Client('127.0.0.1', $PORT).null()"
check "server stops cleanly on SIGTERM" snfsd_stop
check_no_sanitizer_reports "export security"
[ "$T_FAILS" = 0 ]
