#!/bin/bash
# Random file operations checked against a model (tests/interop/fsrand.c)
# through every client we have, against the ASan snfsd:
#   1. the checker itself on a local directory, and its negative control
#      (-C changes a byte behind the model's back: the run must fail);
#   2. snfs-mount (ASan, libsnfs's page cache) over NFSv4.2 and NFSv3,
#      then one file reached in turn through the 4.2 mount and the
#      server's directory, and through the 4.2 and the v3 mount (two
#      clients: close-to-open between them), four threads at once on
#      parts of one file, and snfs-mount over
#      nfs-ganesha (../shared/tools/peers) by NFSv3 and 4.1;
#   3. the Linux kernel client in one QEMU guest: vers=3, 4.1 and 4.2 at
#      once (fsrand_guest.sh), unaligned O_DIRECT included, one file
#      by the 4.2 and the v3 mount in turn, four threads on one file, and
#      a 4.2 mount of a second snfsd with readplus_min_hole=0 (every hole
#      a HOLE segment).
# After each run the server's copy of the file must hash to what the
# model says (size and FNV-1a of the bytes). Beside it, nsrand.py does
# random namespace operations (create, write, mkdir, symlink, link,
# rename, unlink, rmdir, truncate) checked against a model tree, locally
# (and its negative control), through snfs-mount v4.2 and v3 and through
# the kernel's three mounts in the guest. The seed is random per run
# and printed; FSRAND_SEED=N repeats one, FSRAND_OPS sets the length.
set -u
. "$(dirname "$0")/../lib.sh"
HERE=$ROOT/tests/interop
OPS=${FSRAND_OPS:-1500}
SEED=${FSRAND_SEED:-$(($(date +%s) % 100000 * 10))}
FSRAND=$ROOT/build/tests/interop/fsrand
echo "# seed $SEED, $OPS operations per run (FSRAND_SEED=$SEED repeats it)"
make -s -C "$ROOT" build/tests/interop/fsrand >/dev/null || notok "build fsrand"
scratch
cleanup() {
	local m
	for m in "$T_DIR"/mnt*; do
		mountpoint -q "$m" 2>/dev/null && fusermount3 -u -z "$m" 2>/dev/null
	done
	[ -n "${GPORT:-}" ] && "$PEERS/ganesha.sh" stop "$T_DIR/gexp" "$GPORT" >/dev/null 2>&1
	[ -n "${ZPID:-}" ] && kill -KILL "$ZPID" 2>/dev/null
	snfsd_stop KILL
	rm -rf "$T_DIR"
}
trap cleanup EXIT
chmod 755 "$T_DIR"
EXP=$T_DIR/export
mkdir -p "$EXP" "$T_DIR/local"

# run NAME FILE [fsrand options]: one run; ok when it passes and the
# file (or SERVER_COPY, when set) hashes as the model.
run() {
	local name=$1 file=$2 out=$T_DIR/$1.out
	shift 2
	"$FSRAND" "$@" "$file" >"$out" 2>&1
	local rc=$?
	if [ "$rc" = 0 ]; then
		ok "$name: $(grep '^fsrand: ok' "$out" | cut -d' ' -f3-)"
	else
		notok "$name: fsrand exit status $rc"
		head -60 "$out" | sed 's/^/#   /'
		return 1
	fi
	check_eq "$name: the server's copy is the model's" \
		"$(tail -1 "$out")" "$("$FSRAND" -H "${SERVER_COPY:-$file}" 2>&1)"
}

# ---- 1. the checker ----
run "local" "$T_DIR/local/f" -n "$OPS" -s "$SEED"
"$FSRAND" -C -n 300 -s "$SEED" "$T_DIR/local/c" >"$T_DIR/c.out" 2>&1
rc=$?
if [ "$rc" = 1 ] && grep -q 'final read of .* byte .* is 0x' "$T_DIR/c.out"; then
	ok "negative control: a byte changed behind the model is caught"
else
	notok "negative control: fsrand -C exited $rc"
	head -5 "$T_DIR/c.out" | sed 's/^/#   /'
fi

NSRAND=$HERE/nsrand.py
# nsrand_run NAME DIR SERVER_DIR [options]: one namespace run in the
# empty DIR; the server's copy (SERVER_DIR) must hash as the tree did.
nsrand_run() {
	local name=$1 dir=$2 sdir=$3 out=$T_DIR/$1.ns
	shift 3
	mkdir -p "$dir"
	if python3 "$NSRAND" "$@" "$dir" >"$out" 2>&1; then
		ok "$name: $(grep '^nsrand: ok' "$out" | cut -d' ' -f3-)"
		check_eq "$name: the server's tree is the model's" \
			"$(tail -1 "$out")" "$(python3 "$NSRAND" --hash "$sdir" 2>&1)"
	else
		notok "$name: nsrand failed"
		head -50 "$out" | sed 's/^/#   /'
	fi
}
nsrand_run "nsrand local" "$T_DIR/local/ns" "$T_DIR/local/ns" -n 600 -s "$SEED"
mkdir -p "$T_DIR/local/nsc"
python3 "$NSRAND" -C -n 100 -s "$SEED" "$T_DIR/local/nsc" >"$T_DIR/nsc.out" 2>&1
rc=$?
if [ "$rc" = 1 ] && grep -q 'tree walk: extra' "$T_DIR/nsc.out"; then
	ok "nsrand negative control: a name behind the model is caught"
else
	notok "nsrand negative control: exited $rc"
fi

PORT=$(free_port)
if snfsd_start "$PORT" --no-portmap -e "$EXP:rw,insecure,no_root_squash"; then
	ok "snfsd listening on $PORT"
else
	notok "snfsd listening on $PORT"
	tail -20 "$T_DIR/snfsd.log" >&2
	exit 1
fi

# ---- 2. snfs-mount, over snfsd and over nfs-ganesha ----
# mounted NAME URL MNT: fuse_up (tests/lib.sh), a failure reported.
mounted() {
	fuse_up "$@" && return 0
	notok "$1: snfs-mount mounted"
	return 1
}
GPORT=
if [ -e /dev/fuse ] && command -v fusermount3 >/dev/null; then
	M42=$T_DIR/mnt42 M3=$T_DIR/mnt3
	if mounted v4.2 "nfs://127.0.0.1:$PORT$EXP?version=4.2" "$M42" &&
		mounted v3 "nfs://127.0.0.1:$PORT$EXP?version=3" "$M3"; then
		SERVER_COPY=$EXP/a run "snfs-mount v4.2" "$M42/a" -u -n "$OPS" -s "$((SEED + 5))"
		SERVER_COPY=$EXP/b run "snfs-mount v3" "$M3/b" -u -n "$OPS" -s "$((SEED + 6))"
		# close-to-open against other writers: reopens switch to the
		# server's own directory, or to the other mount (another client)
		SERVER_COPY=$EXP/c run "snfs-mount v4.2 and the server's directory" \
			"$M42/c" -u -n "$OPS" -s "$((SEED + 7))" -2 "$EXP/c"
		SERVER_COPY=$EXP/d run "snfs-mount v4.2 and snfs-mount v3" \
			"$M42/d" -u -n "$OPS" -s "$((SEED + 8))" -2 "$M3/d"
		# a file made longer by another writer while open here
		mkdir -p "$EXP/g42" "$EXP/g3"
		python3 "$HERE/growth.py" "$M42/g42" "$EXP/g42" | sed 's/growth:/snfs-mount v4.2:/'
		python3 "$HERE/growth.py" "$M3/g3" "$EXP/g3" | sed 's/growth:/snfs-mount v3:/'
		nsrand_run "nsrand snfs-mount v4.2" "$M42/ns42" "$EXP/ns42" -n 600 -s "$((SEED + 11))"
		nsrand_run "nsrand snfs-mount v3" "$M3/ns3" "$EXP/ns3" -n 600 -s "$((SEED + 12))"
		nsrand_run "nsrand snfs-mount v4.2, wide directories" "$M42/nsw" "$EXP/nsw" \
			-n 1500 -w 600 -c 100 -s "$((SEED + 13))"
		# four threads, each on its own part of one file, at once
		SERVER_COPY=$EXP/e run "snfs-mount v4.2, four threads" \
			"$M42/e" -u -t 4 -m 4194304 -n "$((OPS / 2))" -s "$((SEED + 10))"
	fi
	mountpoint -q "$M3" && fuse_down v3 "$M3"
	mountpoint -q "$M42" && fuse_down v4.2 "$M42"
	# libsnfs against another server (4.1: ganesha 4.3's READ_PLUS is
	# broken, ../shared/tools/peers/README.md).
	GPORT=$(free_port_pair)
	mkdir -p "$T_DIR/gexp"
	if "$PEERS/ganesha.sh" start "$T_DIR/gexp" "$GPORT" >"$T_DIR/ganesha.log" 2>&1 && wait_port "$GPORT" 30; then
		for v in 3 4.1; do
			q="version=$v&nfsport=$GPORT"
			[ "$v" = 3 ] && q="$q&mountport=$((GPORT + 1))"
			if mounted "ganesha-v$v" "nfs://127.0.0.1/export?$q" "$T_DIR/mntg$v"; then
				SERVER_COPY=$T_DIR/gexp/g$v run "snfs-mount v$v on nfs-ganesha" \
					"$T_DIR/mntg$v/g$v" -u -n "$OPS" -s "$((SEED + 9))"
				fuse_down "ganesha-v$v" "$T_DIR/mntg$v"
			fi
		done
	else
		notok "nfs-ganesha started"
		tail -20 "$T_DIR/ganesha.log" | sed 's/^/#   /'
	fi
	"$PEERS/ganesha.sh" stop "$T_DIR/gexp" "$GPORT" >/dev/null 2>&1
	GPORT=
else
	ok "snfs-mount part skipped: no /dev/fuse or fusermount3"
fi

# ---- 3. the Linux kernel client ----
# A second snfsd beside the first with every hole as a HOLE segment
# (readplus_min_hole=0: the most segments the Linux client decodes).
EXPZ=$T_DIR/exportz
mkdir -p "$EXPZ" "$T_DIR/statez"
PORTZ=$(free_port)
"$SNFSD" -l 127.0.0.1 -p "$PORTZ" -s "$T_DIR/statez" --no-portmap \
	-e "$EXPZ:rw,insecure,no_root_squash,readplus_min_hole=0" >>"$T_DIR/snfsdz.log" 2>&1 &
ZPID=$!
wait_port "$PORTZ" 20 || notok "second snfsd (readplus_min_hole=0) listening"
if [ -x "$KVM" ]; then
	cd "$ROOT" || exit 1
	t0=$(date +%s)
	kvm_run "$T_DIR/guest.out" "$T_DIR/guest.err" --mem 2G --timeout 1200 -- \
		bash "$HERE/fsrand_guest.sh" 10.0.2.2 "$PORT" "$EXP" "$FSRAND" "$OPS" "$SEED" \
		262144 "$PORTZ" "$EXPZ"
	rc=$?
	echo "# guest ran $(($(date +%s) - t0))s, exit status $rc"
	cp "$T_DIR/guest.out" "$ROOT/build/test-logs/fsrand_guest.out" 2>/dev/null
	check_eq "guest exit status" 0 "$rc"
	[ "$rc" = 0 ] || tail -30 "$T_DIR/guest.err" | sed 's/^/# guest: /'
	for s in mount-3 mount-41 mount-42 mount-42z umount-3 umount-41 umount-42 umount-42z; do
		check_eq "guest step $s" "$s 0" "$(grep "^R|$s " "$T_DIR/guest.out" | cut -c3-)"
	done
	for r in m42:f42a m42:f42b m41:f41 m3:f3 m42:f2c m42:f4t m42z:f42z; do
		IFS=: read -r m f <<<"$r"
		sdir=$EXP
		[ "$m" = m42z ] && sdir=$EXPZ
		line=$(grep "^F|$m $f " "$T_DIR/guest.out")
		name="kernel client ${m#m}, $f (seed $(echo "$line" | cut -d' ' -f3))"
		if [ -n "$line" ] && [ "${line##* }" = 0 ]; then
			ok "$name: $(grep "^O|$m $f fsrand: ok" "$T_DIR/guest.out" | cut -d' ' -f5-)"
			check_eq "$name: the server's copy is the model's" \
				"$(grep "^O|$m $f size " "$T_DIR/guest.out" | cut -d' ' -f3-)" \
				"$("$FSRAND" -H "$sdir/$f" 2>&1)"
		else
			notok "$name: fsrand failed ('$line')"
			grep "^O|$m $f " "$T_DIR/guest.out" | cut -d' ' -f3- | head -60 | sed 's/^/#   /'
		fi
	done
	for m in m3 m41 m42; do
		name="kernel client ${m#m}, nsrand"
		if grep -q "^N|$m nsrand: ok" "$T_DIR/guest.out"; then
			ok "$name: $(grep "^N|$m nsrand: ok" "$T_DIR/guest.out" | cut -d' ' -f4-)"
			check_eq "$name: the server's tree is the model's" \
				"$(grep "^N|$m entries " "$T_DIR/guest.out" | cut -d' ' -f2-)" \
				"$(python3 "$NSRAND" --hash "$EXP/ns-$m" 2>&1)"
		else
			notok "$name: nsrand failed"
			grep "^N|$m " "$T_DIR/guest.out" | cut -d' ' -f2- | sed 's/^/#   /'
		fi
	done
	echo "# 4.2 per-op counts (op: ops transmissions timeouts bytes_sent bytes_recv ...):"
	grep '^M|' "$T_DIR/guest.out" | cut -c3- | sed 's/^[[:space:]]*/#   /'
	for op in READ_PLUS SEEK ALLOCATE DEALLOCATE COPY; do
		check "kernel 4.2 mount sent $op calls" grep -qE "^M\|[[:space:]]*$op: [1-9]" "$T_DIR/guest.out"
	done
else
	notok "kernel client part: $KVM not found"
fi

if kill -0 "$ZPID" 2>/dev/null; then
	ok "second snfsd (readplus_min_hole=0) alive after the runs"
	kill -TERM "$ZPID"
	wait "$ZPID"
	check_eq "second snfsd exits 0 on SIGTERM" 0 $?
else
	notok "second snfsd (readplus_min_hole=0) alive after the runs"
fi
ZPID=
if grep -qE 'ERROR: AddressSanitizer|runtime error:|ERROR: LeakSanitizer' "$T_DIR/snfsdz.log"; then
	notok "second snfsd: sanitizer report"
	grep -E -A20 'ERROR: AddressSanitizer|runtime error:' "$T_DIR/snfsdz.log" | head -40 >&2
fi
check "snfsd alive after the runs" snfsd_alive
snfsd_stop TERM
check_eq "snfsd exits 0 on SIGTERM" 0 $?
check_no_sanitizer_reports fsrand
[ "$T_FAILS" = 0 ]
