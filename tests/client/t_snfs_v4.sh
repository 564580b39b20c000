#!/bin/bash
# libsnfs and the snfs command over NFSv4.1 and NFSv4.2, against snfsd and
# nfs-ganesha: every command, copies both ways (checksums; hole maps where
# the server has SEEK; the hole figures of a known layout), READ_PLUS
# keeping holes NFS->local, write-then-read without READ, COPY, ALLOCATE,
# close-to-open, uid=/gid=/rsize=/wsize=, df against the export's file
# system, a 20,000-entry listing (each entry once, also while another
# client changes the directory, and then recovering from NOT_SAME), a
# server without READ_PLUS and COPY (fake_server4.py noplus: READ and
# read/write instead), and hostile NFSv4 replies from a fake server (the
# ASan build must fail cleanly). Prints the 1 GiB sparse-file numbers
# (READ_PLUS on 4.2 against READ on 4.1) as comments.
set -u
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/snfs_checks.sh"
SNFS=${SNFS:-$ROOT/build/asan/snfs}
SNFS_FAST=${SNFS_FAST:-$ROOT/build/snfs}
[ -x "$SNFS_FAST" ] || SNFS_FAST=$SNFS
V4TEST=${V4TEST:-$ROOT/build/tests/client/test_nfs4}
NENTRIES=${NENTRIES:-20000}
BIGFILE_MB=${BIGFILE_MB:-1024}
scratch
GPORT=
cleanup() {
	[ -n "${BGPID:-}" ] && kill "$BGPID" 2>/dev/null
	[ -n "${FAKEPID:-}" ] && kill "$FAKEPID" 2>/dev/null
	[ -n "$GPORT" ] && "$PEERS/ganesha.sh" stop "$T_DIR/gexp" "$GPORT" >/dev/null 2>&1
	snfsd_stop
	rm -rf "$T_DIR"
}
trap cleanup EXIT

EXP=$T_DIR/exp
mkdir -p "$EXP" "$T_DIR/local"
gcc -O2 -o "$T_DIR/mkfiles" "$PEERS/mkfiles.c" || notok "build mkfiles"

head -c 5000000 /dev/urandom >"$T_DIR/local/rand"
SP=$T_DIR/local/sparse
truncate -s 20M "$SP"
dd if=/dev/urandom of="$SP" bs=4096 seek=10 count=3 conv=notrunc status=none
dd if=/dev/urandom of="$SP" bs=1M seek=5 count=2 conv=notrunc status=none
dd if=/dev/urandom of="$SP" bs=4096 seek=3000 count=1 conv=notrunc status=none
make_layout "$T_DIR/local/layout"
head -c $((1 << 20)) /dev/urandom >"$T_DIR/local/mib"

quiet() { "$@" >/dev/null; }
sha() { sha256sum <"$1" | cut -d' ' -f1; }
holemap() { "$SNFS" holes "$1" | grep -v '^size'; }
holesummary() { "$SNFS" holes "$1" | grep '^size'; }
stat_of() { # URL-or-file FIELD: a number from snfs --stats
	grep -o "$2=[0-9]*" | cut -d= -f2
}

# suite NAME BASEURL QUERY EXPORTDIR SEEK(1: the server has SEEK)
suite() {
	local n=$1 base=$2 q=$3 dir=$4 seek=$5 out st
	local u="$base/t-$n"
	check "$n: mkdir -p" "$SNFS" mkdir -p "$base/t-$n/sub/deeper?$q"
	check "$n: cp local->nfs (random)" "$SNFS" -q cp "$T_DIR/local/rand" "$u/rand?$q"
	check_eq "$n: server copy checksum" "$(sha "$T_DIR/local/rand")" "$(sha "$dir/t-$n/rand")"
	check "$n: cp nfs->local (random)" "$SNFS" -q cp "$u/rand?$q" "$T_DIR/back-$n"
	check_eq "$n: round-trip checksum" "$(sha "$T_DIR/local/rand")" "$(sha "$T_DIR/back-$n")"
	check "$n: cp local->nfs (sparse)" "$SNFS" -q cp "$SP" "$u/sparse?$q"
	check_eq "$n: sparse checksum on server" "$(sha "$SP")" "$(sha "$dir/t-$n/sparse")"
	st=$("$SNFS" -q --stats cp "$u/sparse?$q" "$T_DIR/sparse-$n" 2>&1)
	check_eq "$n: cp nfs->local (sparse) exits 0" 0 $?
	check_eq "$n: sparse round-trip checksum" "$(sha "$SP")" "$(sha "$T_DIR/sparse-$n")"
	check_eq "$n: holes kept on nfs->local" "$(holemap "$SP")" "$(holemap "$T_DIR/sparse-$n")"
	check_eq "$n: holes kept on local->nfs (server file map)" "$(holemap "$SP")" "$(holemap "$dir/t-$n/sparse")"
	if [ "$seek" = 1 ]; then
		check_eq "$n: SEEK hole map of the nfs file" "$(holemap "$SP")" "$(holemap "$u/sparse?$q")"
	else
		check_eq "$n: holes of the nfs file (zero-block scan)" \
			"$(holesummary "$SP" | cut -d' ' -f1-4)" "$(holesummary "$u/sparse?$q" | cut -d' ' -f1-4)"
	fi
	echo "# $n: sparse nfs->local: $(echo "$st" | grep -o 'read=[0-9]*\|read_plus=[0-9]*\|received=[0-9]*' | tr '\n' ' ')"
	check "$n: cp nfs->nfs" "$SNFS" -q cp "$u/rand?$q" "$u/sub/rand2?$q"
	check_eq "$n: nfs->nfs checksum" "$(sha "$T_DIR/local/rand")" "$(sha "$dir/t-$n/sub/rand2")"
	check "$n: cp into a directory" "$SNFS" -q cp "$T_DIR/local/rand" "$u/sub/deeper?$q"
	check_eq "$n: cp into a directory keeps the name" "$(sha "$T_DIR/local/rand")" "$(sha "$dir/t-$n/sub/deeper/rand")"
	out=$("$SNFS" cat "$u/rand?$q" | sha256sum | cut -d' ' -f1)
	check_eq "$n: cat" "$(sha "$T_DIR/local/rand")" "$out"
	out=$("$SNFS" cat "$u/sparse?$q" | sha256sum | cut -d' ' -f1)
	check_eq "$n: cat of the sparse file" "$(sha "$SP")" "$out"
	out=$("$SNFS" ls "$u?$q" | tr '\n' ' ')
	check_eq "$n: ls" "rand sparse sub " "$out"
	out=$("$SNFS" ls -l "$u?$q" | awk '$NF=="rand"{print $1, $5}')
	check_eq "$n: ls -l" "-rw-r--r-- 5000000" "$out"
	out=$("$SNFS" ls -l "$u?$q" | awk '$NF=="rand"{print $3}')
	check_eq "$n: ls -l owner (numeric or name mapped)" "$(stat -c %u "$dir/t-$n/rand")" "$out"
	out=$("$SNFS" ls -R "$u?$q" | grep -c 'rand')
	check_eq "$n: ls -R" "3" "$out"
	out=$("$SNFS" stat "$u/sparse?$q" | grep -o 'Size: [0-9]*')
	check_eq "$n: stat" "Size: 20971520" "$out"
	check "$n: df" quiet "$SNFS" df "$u?$q"
	check_df "$n" "$u?$q" "$dir"
	check "$n: mv" "$SNFS" mv "$u/sub/rand2?$q" "$u/moved?$q"
	[ -f "$dir/t-$n/moved" ] && [ ! -e "$dir/t-$n/sub/rand2" ]
	check "$n: mv renamed on the server" test $? = 0
	check "$n: mv into a directory" "$SNFS" mv "$u/moved?$q" "$u/sub?$q"
	check "$n: mv into a directory lands there" test -f "$dir/t-$n/sub/moved"
	out=$("$SNFS" cat "$u/nonexistent?$q" 2>&1 >/dev/null)
	check_eq "$n: cat of a missing file exits 1" "1" "$("$SNFS" cat "$u/nonexistent?$q" >/dev/null 2>&1; echo $?)"
	case "$out" in *"No such file or directory"*) ok "$n: coreutils-like message" ;; *) notok "$n: message: $out" ;; esac
	check_eq "$n: rm of a directory without -r fails" "1" "$("$SNFS" rm "$u/sub?$q" 2>/dev/null; echo $?)"
	check "$n: rm -r" "$SNFS" rm -r "$u?$q"
	check "$n: rm -r removed the tree" test ! -e "$dir/t-$n"
	check "$n: mkdir for the command checks" "$SNFS" mkdir "$base/c-$n?$q"
	check "$n: cp local->nfs (known layout)" "$SNFS" -q cp "$T_DIR/local/layout" "$base/c-$n/layout?$q"
	check_holes_exact "$n: nfs ($([ "$seek" = 1 ] && echo SEEK || echo zero-block scan))" "$base/c-$n/layout?$q"
	check_io_sizes "$n" "$base/c-$n/mib" "$q" "$T_DIR/local/mib"
	check_owner "$n" "$base" "$q" "$dir"
	check "$n: rm the command check directory" "$SNFS" rm -r "$base/c-$n?$q"
	check "$n: mkdir for the library tests" "$SNFS" mkdir "$base/lib-$n?$q"
	SNFS_TEST_URL="$base/lib-$n?$q" SNFS_TEST_DIR="$dir/lib-$n" SNFS_TEST_SERVER="$n" "$V4TEST" | sed "s/^\(not \)\{0,1\}ok - /&$n: /"
	check "$n: rm the library test directory" "$SNFS" rm -r "$base/lib-$n?$q"
}

# listing NAME BASEURL QUERY DIR: NENTRIES names, each exactly once, while
# another client adds and removes others (cookie verifiers change).
listing() {
	local n=$1 base=$2 q=$3 dir=$4 rc
	mkdir -p "$dir/big-$n"
	"$T_DIR/mkfiles" dir "$dir/big-$n" "$NENTRIES" >/dev/null
	out=$("$SNFS_FAST" --stats ls -f "$base/big-$n?$q&readdir-buffer=1048576" 2>&1 >"$T_DIR/listing")
	check_eq "$n: listing of $NENTRIES entries" "$NENTRIES" "$(grep -c '^f' "$T_DIR/listing")"
	check_eq "$n: no entry twice" "" "$(sort "$T_DIR/listing" | uniq -d | head -3)"
	echo "# $n: listing $NENTRIES entries, 1 MiB buffer: $(echo "$out" | grep -o 'readdir=[0-9]*')"
	echo x >"$T_DIR/small"
	(
		i=0
		while :; do
			"$SNFS_FAST" -q cp "$T_DIR/small" "$base/big-$n/zz-$i?$q" 2>/dev/null
			[ $i -ge 3 ] && "$SNFS_FAST" rm "$base/big-$n/zz-$((i - 3))?$q" 2>/dev/null
			i=$((i + 1))
			echo "$i" >>"$T_DIR/churn.log"
		done
	) &
	BGPID=$!
	sleep 0.5
	local before after
	before=$(wc -l <"$T_DIR/churn.log" 2>/dev/null || echo 0)
	"$SNFS" --stats ls -f "$base/big-$n?$q&readdir-buffer=32768" >"$T_DIR/listing" 2>"$T_DIR/listing.err"
	rc=$?
	after=$(wc -l <"$T_DIR/churn.log" 2>/dev/null || echo 0)
	kill "$BGPID" 2>/dev/null
	wait "$BGPID" 2>/dev/null
	BGPID=
	check_eq "$n: listing under churn exits 0" 0 "$rc"
	check_eq "$n: under churn each of $NENTRIES entries exactly once" "$NENTRIES" "$(grep '^f' "$T_DIR/listing" | sort -u | wc -l)"
	check_eq "$n: under churn no entry twice" "" "$(sort "$T_DIR/listing" | uniq -d | head -3)"
	# whether the other client's changes fall between two READDIRs of
	# the listing is luck; the paused listing below makes sure of one
	echo "# $n: under churn: $((after - before)) changes of the other client while ls ran; $(grep -o '\breaddir=[0-9]*\|readdir_resumes=[0-9]*\|readdir_restarts=[0-9]*' "$T_DIR/listing.err" | tr '\n' ' ')"
	rm -f "$dir/big-$n"/zz-*
	paused_listing "$n" "$base/big-$n?$q&readdir-buffer=32768" "$dir/big-$n"
	# snfsd answers the old verifier with NOT_SAME; the listing must
	# have recovered (resumed with the new one, or started over)
	case $n in
	snfsd*) check "$n: the paused listing recovered from NOT_SAME (counters: $PAUSED_RECOVERIES)" test "$PAUSED_RECOVERIES" -ge 1 ;;
	esac
	rm -rf "$dir/big-$n" "$T_DIR/churn.log"
}

# ---------------- snfsd ----------------
if [ "${SKIP_SNFSD:-0}" != 1 ]; then
PORT=$(free_port)
# readplus_min_hole=4k: the wide-call check below counts on 4 KiB holes
# going as holes, which the default does only where sendfile pays from a
# page (v42.c rp_min_hole; t_cp_segments reads the default export)
snfsd_start "$PORT" --no-portmap -e "$EXP:rw,insecure,no_root_squash,async,readplus_min_hole=4k" || notok "snfsd start"
BASE="nfs://127.0.0.1$EXP"
suite snfsd-4.1 "$BASE" "version=4.1&nfsport=$PORT" "$EXP" 0
suite snfsd-4.2 "$BASE" "version=4.2&nfsport=$PORT" "$EXP" 1
listing snfsd-4.2 "$BASE" "version=4.2&nfsport=$PORT" "$EXP"

# ---- a 1 GiB sparse file: READ_PLUS (4.2) against READ (4.1) ----
truncate -s "${BIGFILE_MB}M" "$EXP/allhole"
for v in 4.2 4.1; do
	s=$(date +%s.%N)
	st=$("$SNFS_FAST" --stats cat "$BASE/allhole?version=$v&nfsport=$PORT" 2>&1 >"$T_DIR/allhole.out")
	e=$(date +%s.%N)
	check_eq "cat of the ${BIGFILE_MB} MiB hole over $v: size" "$((BIGFILE_MB << 20))" "$(stat -c %s "$T_DIR/allhole.out")"
	echo "# snfs cat ${BIGFILE_MB} MiB all-hole file, version=$v: $(echo "$e - $s" | bc) s, $(echo "$st" | grep -o 'calls=[0-9]*\|read=[0-9]*\|read_plus=[0-9]*\|received=[0-9]*' | tr '\n' ' ')"
	rm -f "$T_DIR/allhole.out"
done
rm -f "$EXP/allhole"

# ---- READ_PLUS calls wider than rsize over a sparse file ----
# 8 MiB of 4 KiB data and 4 KiB holes read with rsize 64 KiB: 128 calls
# of rsize each, but snfsd covers a READ_PLUS's whole count, and libsnfs
# sizes its calls so that data and headers fill the reply: about 75.
python3 -c '
import sys
with open(sys.argv[1], "wb") as f:
    for k in range(2048):
        if k % 2 == 0:
            f.seek(k * 4096)
            f.write(bytes((k * 13 + i) & 255 or 1 for i in range(4096)))
    f.truncate(8 << 20)' "$EXP/mixed4"
st=$("$SNFS" --stats cat "$BASE/mixed4?version=4.2&nfsport=$PORT&rsize=65536" 2>&1 >"$T_DIR/mixed4.out")
check "READ_PLUS with wide calls: the sparse 8 MiB file reads right" cmp "$EXP/mixed4" "$T_DIR/mixed4.out"
n=$(echo "$st" | grep -o ' read_plus=[0-9]*' | cut -d= -f2)
echo "# sparse 8 MiB, rsize 64 KiB: ${n:-?} READ_PLUS calls (128 of rsize each)"
check "READ_PLUS with wide calls: at most 88 calls for 128 rsizes of a half-hole file (${n:-none})" test "${n:-999}" -le 88
rm -f "$EXP/mixed4" "$T_DIR/mixed4.out"

check_no_sanitizer_reports "snfsd"
snfsd_stop

# ---- a server without READ_PLUS and COPY: READ, and read/write ----
FPORT=$(free_port)
python3 "$ROOT/tests/client/fake_server4.py" "$FPORT" noplus >"$T_DIR/fake.out" &
FAKEPID=$!
for i in $(seq 50); do grep -q listening "$T_DIR/fake.out" && break; sleep 0.1; done
SNFS_TEST_FAKE_NOPLUS="nfs://127.0.0.1/export/d?version=4.2&nfsport=$FPORT&timeout=10" "$V4TEST" | sed "s/^\(not \)\{0,1\}ok - /&fake noplus: /"
st=$("$SNFS" --stats cat "nfs://127.0.0.1/export/d/f?version=4.2&nfsport=$FPORT&timeout=10&rsize=65536" 2>&1 >"$T_DIR/noplus.out")
check_eq "fake noplus: snfs cat gets the file by READ" \
	"$(python3 -c 'import sys; sys.stdout.buffer.write(bytes((i * 7 + i // 4096) & 255 for i in range(300 << 10)))' | sha256sum)" \
	"$(sha256sum <"$T_DIR/noplus.out")"
check_eq "fake noplus: snfs cat: one READ_PLUS refused, then a READ per 64 KiB" "read=5 read_plus=1" \
	"$(echo "$st" | grep -o ' read_plus=[0-9]*\| read=[0-9]*' | tr -d ' ' | sort | paste -sd' ')"
kill "$FAKEPID" 2>/dev/null
wait "$FAKEPID" 2>/dev/null
FAKEPID=

# ---- a server whose READ_PLUS covers no more than its maxread ----
# (knfsd caps the count): libsnfs's wide calls come back short, get the
# rest asked for at once, and after the first window it asks rsize again.
# 8 MiB of 4 KiB data and holes at rsize 64 KiB is 128 calls; widening
# blind would be about 152.
python3 "$ROOT/tests/client/fake_server4.py" "$FPORT" capplus >"$T_DIR/fake.out" 2>"$T_DIR/fake.err" &
FAKEPID=$!
for i in $(seq 50); do grep -q listening "$T_DIR/fake.out" && break; sleep 0.1; done
st=$("$SNFS" --stats cat "nfs://127.0.0.1/export/d/s?version=4.2&nfsport=$FPORT&timeout=10&rsize=65536" 2>&1 >"$T_DIR/capplus.out")
check_eq "fake capplus: snfs cat of the sparse file has every byte" \
	"$(python3 -c 'import sys; p = bytes((i * 7 + i // 4096) & 255 for i in range(4096)); sys.stdout.buffer.write(b"".join(p if k % 2 == 0 else bytes(4096) for k in range(2048)))' | sha256sum)" \
	"$(sha256sum <"$T_DIR/capplus.out")"
n=$(echo "$st" | grep -o ' read_plus=[0-9]*' | cut -d= -f2)
echo "# fake capplus: ${n:-?} READ_PLUS calls; counts asked: $(awk '{print $3}' "$T_DIR/fake.err" | sort -n | uniq -c | tr -s ' \n' ' ')"
check "fake capplus: at most 145 READ_PLUS calls for 128 rsizes (${n:-none})" test "${n:-999}" -le 145
kill "$FAKEPID" 2>/dev/null
wait "$FAKEPID" 2>/dev/null
FAKEPID=

# ---- hostile NFSv4 replies ----
for mode in random body truncated huge frag; do
	for seed in 1 2 3; do
		python3 "$ROOT/tests/client/fake_server4.py" "$FPORT" "$mode" "$seed" >"$T_DIR/fake.out" &
		FAKEPID=$!
		for i in $(seq 50); do grep -q listening "$T_DIR/fake.out" && break; sleep 0.1; done
		for v in 4.1 4.2; do
			for cmd in "ls -l" "cat" "stat" "df" "holes" "cp"; do
				args=("nfs://127.0.0.1/export/d/f?version=$v&nfsport=$FPORT&timeout=2")
				[ "$cmd" = cp ] && args+=("$T_DIR/fake-copy")
				# shellcheck disable=SC2086
				timeout 60 "$SNFS" $cmd "${args[@]}" >/dev/null 2>"$T_DIR/fake.err"
				rc=$?
				if grep -qE 'AddressSanitizer|runtime error|LeakSanitizer' "$T_DIR/fake.err" || [ $rc -gt 2 ]; then
					notok "fake v4 server ($mode, seed $seed, $v): $cmd crashed or hung (rc $rc)"
					head -20 "$T_DIR/fake.err" >&2
				elif [ $rc = 0 ] && [ "$cmd" != df ] && [ "$cmd" != stat ] && [ "$cmd" != "ls -l" ]; then
					notok "fake v4 server ($mode, seed $seed, $v): $cmd claimed success"
				else
					ok "fake v4 server ($mode, seed $seed, $v): $cmd fails cleanly (rc $rc)"
				fi
			done
		done
		kill "$FAKEPID" 2>/dev/null
		wait "$FAKEPID" 2>/dev/null
		FAKEPID=
	done
done
fi # SKIP_SNFSD

# ---------------- nfs-ganesha ----------------
if [ "${SKIP_GANESHA:-0}" != 1 ]; then
	GPORT=$(free_port_pair)
	mkdir -p "$T_DIR/gexp"
	if "$PEERS/ganesha.sh" start "$T_DIR/gexp" "$GPORT" >"$T_DIR/ganesha.log" 2>&1 && wait_port "$GPORT" 30; then
		suite ganesha-4.1 "nfs://127.0.0.1/export" "version=4.1&nfsport=$GPORT" "$T_DIR/gexp" 0
		suite ganesha-4.2 "nfs://127.0.0.1/export" "version=4.2&nfsport=$GPORT" "$T_DIR/gexp" 1
		listing ganesha-4.1 "nfs://127.0.0.1/export" "version=4.1&nfsport=$GPORT" "$T_DIR/gexp"
	else
		notok "ganesha start"
		tail -20 "$T_DIR/ganesha.log" >&2
	fi
fi

[ "$T_FAILS" = 0 ]
