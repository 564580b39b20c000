#!/bin/bash
# libsnfs and the snfs command over NFSv3, against snfsd and nfs-ganesha:
# copies both ways (checksums, hole maps), every command (the hole figures
# of a known layout, df against the export's file system, the progress
# bar on a terminal, --help and the man page), uid=/gid=/rsize=/wsize=,
# write-then-read without READ, close-to-open against changes made
# elsewhere, a 200,000-entry listing while another client changes the
# directory (and its READDIR count, also over NFSv4.2), UNSTABLE writes
# across a SIGKILL of the server, and hostile replies from a fake server
# (the ASan build must fail cleanly).
set -u
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/snfs_checks.sh"
SNFS=${SNFS:-$ROOT/build/asan/snfs}
SNFS_FAST=${SNFS_FAST:-$ROOT/build/snfs}
[ -x "$SNFS_FAST" ] || SNFS_FAST=$SNFS
PCTEST=${PCTEST:-$ROOT/build/tests/client/test_pagecache}
NENTRIES=${NENTRIES:-200000}
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

# Local sources: random data, and a sparse file (data at 4 KiB-aligned
# spots, holes of several sizes, a trailing hole).
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

# suite NAME BASEURL-without-query QUERY EXPORTDIR
suite() {
	local n=$1 base=$2 q=$3 dir=$4 out
	local u="$base/t-$n"
	check "$n: mkdir -p" "$SNFS" mkdir -p "$base/t-$n/sub/deeper?$q"
	check "$n: cp local->nfs (random)" "$SNFS" -q cp "$T_DIR/local/rand" "$u/rand?$q"
	check_eq "$n: server copy checksum" "$(sha "$T_DIR/local/rand")" "$(sha "$dir/t-$n/rand")"
	check "$n: cp nfs->local (random)" "$SNFS" -q cp "$u/rand?$q" "$T_DIR/back-$n"
	check_eq "$n: round-trip checksum" "$(sha "$T_DIR/local/rand")" "$(sha "$T_DIR/back-$n")"
	check "$n: cp local->nfs (sparse)" "$SNFS" -q cp "$SP" "$u/sparse?$q"
	check_eq "$n: sparse checksum on server" "$(sha "$SP")" "$(sha "$dir/t-$n/sparse")"
	check "$n: cp nfs->local (sparse)" "$SNFS" -q cp "$u/sparse?$q" "$T_DIR/sparse-$n"
	check_eq "$n: sparse round-trip checksum" "$(sha "$SP")" "$(sha "$T_DIR/sparse-$n")"
	check_eq "$n: holes kept on nfs->local (SEEK_DATA maps)" "$(holemap "$SP")" "$(holemap "$T_DIR/sparse-$n")"
	check_eq "$n: holes kept on local->nfs (server file map)" "$(holemap "$SP")" "$(holemap "$dir/t-$n/sparse")"
	check_eq "$n: holes of the nfs file (zero-block scan on v3)" \
		"$(holesummary "$SP" | cut -d' ' -f1-4)" "$(holesummary "$u/sparse?$q" | cut -d' ' -f1-4)"
	check "$n: cp nfs->nfs" "$SNFS" -q cp "$u/rand?$q" "$u/sub/rand2?$q"
	check_eq "$n: nfs->nfs checksum" "$(sha "$T_DIR/local/rand")" "$(sha "$dir/t-$n/sub/rand2")"
	check "$n: cp into a directory" "$SNFS" -q cp "$T_DIR/local/rand" "$u/sub/deeper?$q"
	check_eq "$n: cp into a directory keeps the name" "$(sha "$T_DIR/local/rand")" "$(sha "$dir/t-$n/sub/deeper/rand")"
	out=$("$SNFS" cat "$u/rand?$q" | sha256sum | cut -d' ' -f1)
	check_eq "$n: cat" "$(sha "$T_DIR/local/rand")" "$out"
	# cat asks snfs_read_pieces for 1 GiB at a time; on NFSv3 each READ
	# reply is handed on as it stands (it was a malloc of the whole
	# request, then a 16 MiB buffer)
	out=$( (ulimit -v 400000; "$ROOT/build/snfs" cat "$u/rand?$q") | sha256sum | cut -d" " -f1)
	check_eq "$n: cat in 400 MB of address space" "$(sha "$T_DIR/local/rand")" "$out"
	# 1,221 READs of 4 KiB, 16 in flight: handed on in file order
	out=$("$SNFS" cat "$u/rand?$q&rsize=4096" | sha256sum | cut -d' ' -f1)
	check_eq "$n: cat with rsize=4096" "$(sha "$T_DIR/local/rand")" "$out"
	check "$n: cp nfs->nfs of the sparse file" "$SNFS" -q cp "$u/sparse?$q" "$u/sparse2?$q"
	check_eq "$n: cat of the sparse copy" "$(sha "$SP")" "$("$SNFS" cat "$u/sparse2?$q" | sha256sum | cut -d' ' -f1)"
	"$SNFS" rm "$u/sparse2?$q"
	: >"$T_DIR/empty"
	check "$n: cp of an empty file" "$SNFS" -q cp "$T_DIR/empty" "$u/empty?$q"
	check_eq "$n: cat of an empty file" "0" "$("$SNFS" cat "$u/empty?$q" | wc -c)"
	"$SNFS" rm "$u/empty?$q"
	out=$("$SNFS" ls "$u?$q" | tr '\n' ' ')
	check_eq "$n: ls" "rand sparse sub " "$out"
	out=$("$SNFS" ls -l "$u?$q" | awk '$NF=="rand"{print $1, $5}')
	check_eq "$n: ls -l" "-rw-r--r-- 5000000" "$out"
	out=$("$SNFS" ls -R "$u?$q" | grep -c 'rand')
	check_eq "$n: ls -R" "3" "$out"
	out=$("$SNFS" stat "$u/sparse?$q" | grep -o 'Size: [0-9]*')
	check_eq "$n: stat" "Size: 20971520" "$out"
	check "$n: df" quiet "$SNFS" df "$u?$q"
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
	check "$n: --help" quiet "$SNFS" --help
	check_eq "$n: unknown command exits 1" "1" "$("$SNFS" frob 2>/dev/null; echo $?)"
	SNFS_TEST_URL="$base?$q" SNFS_TEST_DIR="$dir" SNFS_TEST_SERVER="$n" "$PCTEST" | sed "s/^\(not \)\{0,1\}ok - /&$n: /"
	commands "$n" "$base" "$q" "$dir"
}

# commands NAME BASEURL QUERY EXPORTDIR: the figures the commands print
# and what the URL's options do, in a directory of their own.
commands() {
	local n=$1 base=$2 q=$3 dir=$4
	local u="$base/c-$n"
	check "$n: mkdir for the command checks" "$SNFS" mkdir "$u?$q"
	check "$n: cp local->nfs (known layout)" "$SNFS" -q cp "$T_DIR/local/layout" "$u/layout?$q"
	check_holes_exact "$n: nfs (zero-block scan)" "$u/layout?$q"
	check_holes_exact "$n: the export's file" "$dir/c-$n/layout"
	check_df "$n" "$u?$q" "$dir"
	check_io_sizes "$n" "$u/mib" "$q" "$T_DIR/local/mib"
	check_progress "$n" "$u/progress?$q" "$T_DIR/local/rand"
	check_owner "$n" "$base" "$q" "$dir"
	check "$n: rm the command check directory" "$SNFS" rm -r "$u?$q"
}

# ---- the command's own texts ----
check_holes_exact "local file" "$T_DIR/local/layout"
cmds=$(grep -o '{"[a-z]*", \(snfs_\)\{0,1\}cmd_[a-z]*}' "$ROOT/src/tools/snfs.c" | cut -d'"' -f2)
check "the command table lists cp ... bench" test "$(echo "$cmds" | wc -w)" -ge 10
help=$("$SNFS" --help)
man=$(MANWIDTH=200 man -l "$ROOT/doc/snfs.1" 2>/dev/null)
for c in $cmds; do
	case "$help" in *"
  $c "*) ok "--help mentions $c" ;; *) notok "--help does not mention $c" ;; esac
	if echo "$man" | grep -Eq "^       $c( |$)"; then ok "the man page describes $c"; else notok "the man page does not describe $c"; fi
done
for o in --stats -q --help; do
	if echo "$help" | grep -q -- "^  $o "; then ok "--help mentions $o"; else notok "--help does not mention $o"; fi
done
check_eq "the man page renders without warnings (groff -ww)" "" "$(groff -ww -z -man "$ROOT/doc/snfs.1" 2>&1)"
check_eq "the man page renders without warnings (man --warnings)" "" \
	"$(MANWIDTH=80 man --warnings -l "$ROOT/doc/snfs.1" 2>&1 >/dev/null)"

# ---------------- snfsd ----------------
if [ "${SKIP_SNFSD:-0}" != 1 ]; then
PORT=$(free_port)
snfsd_start "$PORT" --no-portmap -e "$EXP:rw,insecure,no_root_squash,async" || notok "snfsd start"
BASE="nfs://127.0.0.1:$PORT$EXP"
suite snfsd "$BASE" "version=3" "$EXP"

# ---- 200,000 entries while another client adds and removes others ----
BIG=$EXP/big
mkdir -p "$BIG"
"$T_DIR/mkfiles" dir "$BIG" "$NENTRIES" >/dev/null
echo x >"$T_DIR/small"
(
	i=0
	while :; do
		"$SNFS_FAST" -q cp "$T_DIR/small" "$BASE/big/zz-$i" 2>/dev/null
		[ $i -ge 3 ] && "$SNFS_FAST" rm "$BASE/big/zz-$((i - 3))" 2>/dev/null
		i=$((i + 1))
		echo "$i" >>"$T_DIR/churn.log"
	done
) &
BGPID=$!
sleep 0.5
churn_before=$(cat "$T_DIR/churn.log" 2>/dev/null | wc -l)
"$SNFS" ls -f "$BASE/big?readdir-buffer=65536" >"$T_DIR/listing" 2>"$T_DIR/listing.err"
rc=$?
churn_after=$(cat "$T_DIR/churn.log" 2>/dev/null | wc -l)
kill "$BGPID" 2>/dev/null
wait "$BGPID" 2>/dev/null
BGPID=
check_eq "listing under churn exits 0" 0 "$rc"
check_eq "each of $NENTRIES entries exactly once" "$NENTRIES" "$(grep '^f' "$T_DIR/listing" | sort -u | wc -l)"
check_eq "no entry twice" "" "$(sort "$T_DIR/listing" | uniq -d | head -3)"
# Whether the listing meets one of the three zz- entries alive at a time
# is luck (a fast listing passes their places while none is there); that
# the other client added and removed entries while it ran is not.
check "the other client changed the directory during the listing" \
	test "$churn_after" -gt "$churn_before"
echo "# the listing saw $(grep -c '^zz-' "$T_DIR/listing") of the other client's entries"
rm -f "$BIG"/zz-*
# A listing paused while the directory changes: each entry once. Whether
# it had to recover (BAD_COOKIE for the old cookie verifier) is the
# server's choice on NFSv3, so the counters are only printed.
paused_listing "v3" "$BASE/big?readdir-buffer=65536" "$BIG"

# Numbers: seconds and RPCs per buffer size (plain build), beside ls -f.
# Each reply fills the buffer, so a listing costs no more READDIRs than
# its bytes on the wire fill buffers, and one more (the last, short one).
readdir_bound() { # NAME BUFFER STATS
	local calls rx
	calls=$(echo "$3" | stat_num "$4")
	rx=$(echo "$3" | stat_num received)
	if [ -n "$calls" ] && [ -n "$rx" ] && [ "$calls" -le $(((rx + $2 - 1) / $2 + 1)) ]; then
		ok "$1: $calls $4 calls for $rx bytes, buffer $2"
	else
		notok "$1: $calls $4 calls for $rx bytes, more than ceil(bytes / $2) + 1"
	fi
}
for b in 32768 262144 1048576; do
	s=$(date +%s.%N)
	st=$("$SNFS_FAST" --stats ls -f "$BASE/big?readdir-buffer=$b" 2>&1 >/dev/null)
	e=$(date +%s.%N)
	echo "# listing $NENTRIES entries, buffer $b: $(echo "$e - $s" | bc) s, $(echo "$st" | grep -o 'readdir=[0-9]*')"
	readdir_bound "listing $NENTRIES entries over v3" "$b" "$st" readdir
	st=$("$SNFS_FAST" --stats ls -lf "$BASE/big?readdir-buffer=$b" 2>&1 >/dev/null)
	echo "# listing -l (READDIRPLUS), buffer $b: $(echo "$st" | grep -o 'readdirplus=[0-9]*')"
	readdir_bound "listing -l $NENTRIES entries over v3" "$b" "$st" readdirplus
done
st=$("$SNFS_FAST" --stats ls -f "nfs://127.0.0.1$BIG?version=4.2&nfsport=$PORT&readdir-buffer=1048576" 2>&1 >"$T_DIR/listing")
check_eq "v4.2 listing of $NENTRIES entries" "$NENTRIES" "$(grep -c '^f' "$T_DIR/listing")"
echo "# v4.2 listing $NENTRIES entries, buffer 1048576: $(echo "$st" | grep -o 'readdir=[0-9]*\|received=[0-9]*' | tr '\n' ' ')"
readdir_bound "listing $NENTRIES entries over v4.2" 1048576 "$st" readdir
s=$(date +%s.%N)
ls -f "$BIG" >/dev/null
e=$(date +%s.%N)
echo "# local ls -f: $(echo "$e - $s" | bc) s"
rm -rf "$BIG"

# ---- UNSTABLE writes in flight; server SIGKILLed, its unstable data lost ----
head -c 24000000 /dev/urandom >"$T_DIR/unstable.src"
mkfifo "$T_DIR/fifo"
"$SNFS" -q --stats cp "$T_DIR/fifo" "$BASE/unstable?timeout=60" 2>"$T_DIR/unstable.err" &
CPPID=$!
exec 3>"$T_DIR/fifo"
cat "$T_DIR/unstable.src" >&3
sleep 2
snfsd_stop KILL
# What the server had not committed is gone (as after a crash).
: >"$EXP/unstable"
# (the server must not inherit the pipe's write end)
{ snfsd_start "$PORT" --no-portmap -e "$EXP:rw,insecure,no_root_squash,async" || notok "snfsd restart"; } 3>&-
exec 3>&-
wait "$CPPID"
check_eq "close after the server restart succeeds" 0 $?
check_eq "data intact after the restart" "$(sha "$T_DIR/unstable.src")" "$(sha "$EXP/unstable")"
case "$(cat "$T_DIR/unstable.err")" in
*"write_resends=0"*) notok "the lost writes were sent again" ;;
*write_resends=*) ok "the lost writes were sent again" ;;
*) notok "no stats: $(head -3 "$T_DIR/unstable.err")" ;;
esac
check_no_sanitizer_reports "snfsd"
snfsd_stop

# ---- a hostile server ----
FPORT=$(free_port)
# silent and stall: a call must end at its timeout (2 s here; the stall
# mid-reply breaks the connection after it), not hang
for mode in random body truncated huge frag silent stall; do
	seeds="1 2 3" tmo=60
	case $mode in silent | stall) seeds=1 tmo=20 ;; esac
	for seed in $seeds; do
		python3 "$ROOT/tests/client/fake_server.py" "$FPORT" "$mode" "$seed" >"$T_DIR/fake.out" &
		FAKEPID=$!
		for i in $(seq 50); do grep -q listening "$T_DIR/fake.out" && break; sleep 0.1; done
		for cmd in "ls -l" "cat" "stat" "df" "holes" "cp"; do
			args=("nfs://127.0.0.1:$FPORT/export/d/f?timeout=2&mountport=$FPORT")
			[ "$cmd" = cp ] && args+=("$T_DIR/fake-copy")
			# shellcheck disable=SC2086
			timeout $tmo "$SNFS" $cmd "${args[@]}" >/dev/null 2>"$T_DIR/fake.err"
			rc=$?
			if grep -qE 'AddressSanitizer|runtime error' "$T_DIR/fake.err" || [ $rc -gt 2 ]; then
				notok "fake server ($mode, seed $seed): $cmd crashed or hung (rc $rc)"
				head -20 "$T_DIR/fake.err" >&2
			elif [ $rc = 0 ] && [ "$cmd" != df ] && [ "$cmd" != stat ] && [ "$cmd" != "ls -l" ]; then
				notok "fake server ($mode, seed $seed): $cmd claimed success"
			else
				ok "fake server ($mode, seed $seed): $cmd fails cleanly (rc $rc)"
			fi
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
		suite ganesha "nfs://127.0.0.1/export" "version=3&nfsport=$GPORT&mountport=$((GPORT + 1))" "$T_DIR/gexp"
	else
		notok "ganesha start"
		tail -20 "$T_DIR/ganesha.log" >&2
	fi
fi

[ "$T_FAILS" = 0 ]
