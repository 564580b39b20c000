# shellcheck shell=bash
# Checks of the snfs command shared by t_snfs.sh (NFSv3) and t_snfs_v4.sh
# (NFSv4.x); source after lib.sh, with SNFS set. Not a suite of its own.

# stat_num FIELD: the number after FIELD= in snfs --stats output (stdin).
stat_num() { grep -o "\b$1=[0-9]*" | head -1 | cut -d= -f2; }

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
