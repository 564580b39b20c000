# shellcheck shell=bash
# Checks of the snfs command shared by t_snfs.sh (NFSv3) and t_snfs_v4.sh
# (NFSv4.x); source after lib.sh, with SNFS set. Not a suite of its own.

MIB=$((1 << 20))

# stat_num FIELD: the number after FIELD= in snfs --stats output (stdin).
stat_num() { grep -o "\b$1=[0-9]*" | head -1 | cut -d= -f2; }

# make_layout FILE: data and holes at known places, some holes not on a
# 1 MiB boundary: data [0, 3M), hole to 8.5M, 4 KiB of data, hole to
# 12.25M, 64 KiB of data, hole to 14M + 100 (the end).
make_layout() {
	rm -f "$1"
	truncate -s $((14 * MIB + 100)) "$1"
	dd if=/dev/urandom of="$1" bs=1M count=3 conv=notrunc status=none
	dd if=/dev/urandom of="$1" bs=4096 seek=$((8 * 256 + 128)) count=1 conv=notrunc status=none
	dd if=/dev/urandom of="$1" bs=4096 seek=$((12 * 256 + 64)) count=16 conv=notrunc status=none
}
# What `snfs holes` must say of it: the size, the bytes in holes, and the
# bytes of the holes' whole 1 MiB-aligned blocks (3M-8M, 9M-12M, 13M-14M).
LAYOUT_SIZE=$((14 * MIB + 100))
LAYOUT_HOLES=$(((8 * MIB + MIB / 2 - 3 * MIB) + (12 * MIB + MIB / 4 - (8 * MIB + MIB / 2 + 4096)) + (14 * MIB + 100 - (12 * MIB + MIB / 4 + 65536))))
LAYOUT_ALIGNED=$((9 * MIB))
layout_expected() {
	awk -v s=$LAYOUT_SIZE -v h=$LAYOUT_HOLES -v a=$LAYOUT_ALIGNED \
		'BEGIN { printf "%d %d (%.1f%%) %d (%.1f%%)\n", s, h, 100 * h / s, a, 100 * a / s }'
}
# check_holes_exact NAME FILE-OR-URL
check_holes_exact() {
	local got
	got=$("$SNFS" holes "$2" | sed -n 's/^size \([0-9]*\) holes \([0-9]*\) \(([0-9.]*%)\) aligned-1MiB-holes \([0-9]*\) \(([0-9.]*%)\).*/\1 \2 \3 \4 \5/p')
	check_eq "$1: holes of the known layout: size, holes, aligned-1MiB-holes" "$(layout_expected)" "$got"
}

# check_df NAME URL DIR: snfs df's figures are the export file system's
# (df of DIR, read before and after: other processes write to it).
check_df() {
	local n=$1 url=$2 dir=$3 t u a t1 u1 a1 t2 u2 a2 slack=65536 good=
	for _ in 1 2 3; do
		read -r t1 u1 a1 < <(df -B1024 --output=size,used,avail "$dir" | tail -1)
		read -r t u a < <("$SNFS" df "$url" | awk 'NR == 2 { print $2, $3, $4 }')
		read -r t2 u2 a2 < <(df -B1024 --output=size,used,avail "$dir" | tail -1)
		if [ -n "$t" ] && [ "$t" = "$t1" ] && [ "$t" = "$t2" ] &&
			awk -v x="$u" -v p="$u1" -v q="$u2" -v s=$slack 'BEGIN { lo = p < q ? p : q; hi = p < q ? q : p; exit !(x >= lo - s && x <= hi + s) }' &&
			awk -v x="$a" -v p="$a1" -v q="$a2" -v s=$slack 'BEGIN { lo = p < q ? p : q; hi = p < q ? q : p; exit !(x >= lo - s && x <= hi + s) }'; then
			good=1
			break
		fi
	done
	if [ -n "$good" ]; then
		ok "$n: df figures are the export's file system's ($t $u $a 1K-blocks)"
	else
		notok "$n: df says '$t $u $a', df of the export '$t1 $u1 $a1' / '$t2 $u2 $a2'"
	fi
}

# check_owner NAME BASE QUERY DIR: a file made with uid=1234&gid=1234 in
# a directory anyone may write belongs to 1234:1234 on the export.
check_owner() {
	local n=$1 base=$2 q=$3 dir=$4
	if [ "$(id -u)" != 0 ]; then
		ok "$n: uid=/gid= (skipped: not root)"
		return
	fi
	mkdir -p "$dir/owner-$n"
	chmod 1777 "$dir/owner-$n"
	echo x >"$T_DIR/owner-src"
	check "$n: cp with uid=1234&gid=1234" "$SNFS" -q cp "$T_DIR/owner-src" "$base/owner-$n/f?$q&uid=1234&gid=1234"
	check_eq "$n: the file is 1234:1234 on the export" "1234:1234" "$(stat -c %u:%g "$dir/owner-$n/f" 2>&1)"
	rm -rf "${dir:?}/owner-$n"
}

# check_io_sizes NAME URL-OF-A-FILE QUERY LOCAL-1MiB-FILE: rsize=65536
# reads 1 MiB in 16 READs (or READ_PLUS), wsize=65536 writes it in 16.
check_io_sizes() {
	local n=$1 u=$2 q=$3 src=$4 st r rp w
	st=$("$SNFS" --stats -q cp "$src" "$u?$q&wsize=65536" 2>&1)
	w=$(echo "$st" | stat_num write)
	check_eq "$n: wsize=65536: 1 MiB in 16 WRITEs" 16 "$w"
	st=$("$SNFS" --stats cat "$u?$q&rsize=65536" 2>&1 >"$T_DIR/io.out")
	check "$n: rsize=65536: cat reads the file" cmp -s "$src" "$T_DIR/io.out"
	r=$(echo "$st" | stat_num read)
	rp=$(echo "$st" | stat_num read_plus)
	# READ_PLUS, READ, or one refused READ_PLUS and then READ
	case "${rp:-0} ${r:-0}" in
	"16 0" | "0 16" | "1 16") ok "$n: rsize=65536: 1 MiB in 16 reads (read_plus=${rp:-0} read=${r:-0})" ;;
	*) notok "$n: rsize=65536: read_plus=${rp:-0} read=${r:-0}, not 16 reads of 64 KiB" ;;
	esac
}

# check_progress NAME URL-OF-A-NEW-FILE LOCAL-FILE: on a terminal cp shows
# a progress bar with a rate and the time left; -q silences it.
check_progress() {
	local n=$1 u=$2 src=$3 cmd out
	if ! command -v script >/dev/null; then
		ok "$n: progress bar (skipped: no script(1))"
		return
	fi
	cmd=$(printf '%q ' "$SNFS" cp "$src" "$u")
	out=$(script -qec "$cmd" /dev/null 2>&1 | tr '\r' '\n')
	if echo "$out" | grep -Eq '\] +100% +[0-9.]+ MiB +[0-9]+\.[0-9] MiB/s ETA [0-9]+:[0-9]{2}'; then
		ok "$n: cp on a terminal shows rate and ETA"
	else
		notok "$n: cp on a terminal: no progress bar with rate and ETA: $(echo "$out" | tail -2)"
	fi
	echo "$out" | grep -Eq ' 0\.0 MiB/s' && notok "$n: cp progress rate is 0"
	for quiet in "-q cp" "cp -q"; do
		# shellcheck disable=SC2086
		cmd=$(printf '%q ' "$SNFS" $quiet "$src" "$u")
		out=$(script -qec "$cmd" /dev/null 2>&1)
		if echo "$out" | grep -q 'MiB/s\|ETA'; then
			notok "$n: snfs $quiet on a terminal still shows progress"
		else
			ok "$n: snfs $quiet on a terminal shows no progress"
		fi
	done
}

# paused_listing NAME URL DIR: `snfs --stats ls -f URL` (DIR its local
# path) blocks on a full pipe part way (the directory must hold more
# than 64 KiB of names), the directory changes meanwhile, then the
# listing goes on: every name of DIR exactly once (the new one may or may
# not be in it). Sets PAUSED_RECOVERIES to the listing's resumes and
# restarts (counters).
paused_listing() {
	local n=$1 url=$2 dir=$3 want
	want=$(find "$dir" -mindepth 1 -maxdepth 1 -printf '%f\n' | sort)
	"$SNFS" --stats ls -f "$url" 2>"$T_DIR/paused.err" | {
		IFS= read -r first
		echo "$first"
		sleep 1 # ls fills the pipe and waits in write(2)
		touch "$dir/zz-paused"
		cat
	} >"$T_DIR/paused.out"
	check_eq "$n: a listing paused while the directory changed: every entry exactly once" \
		"$want" "$(grep -v '^zz-paused$\|^\.\.\{0,1\}$' "$T_DIR/paused.out" | sort)"
	# shellcheck disable=SC2034 # for the caller
	PAUSED_RECOVERIES=$(($(stat_num readdir_resumes <"$T_DIR/paused.err") + $(stat_num readdir_restarts <"$T_DIR/paused.err")))
	echo "# $n: paused listing: $(grep -o '\breaddir=[0-9]*\|readdir_resumes=[0-9]*\|readdir_restarts=[0-9]*' "$T_DIR/paused.err" | tr '\n' ' ')"
	rm -f "$dir/zz-paused"
}
