#!/bin/bash
# Turn bench/sparse.sh's CSV into a Markdown report (the table and the
# issue's target ratios) and PNG plots.
# usage: bench/sparse_report.sh CSV OUTDIR SIZE_MIB RUNS
set -euo pipefail
CSV=$1 OUT=$2 SIZE=$3 RUNS=$4
MD=$OUT/sparse.md
{
	echo "# READ_PLUS seed matrix ($SIZE MiB files, min/median of $RUNS runs)"
	echo
	echo "Host: $(nproc) CPUs, $(uname -r), $(date -u +%Y-%m-%dT%H:%MZ). Load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)."
	echo "snfs cat = libsnfs (host timing client); server CPU = snfsd user+sys per run (median)."
	echo "rpcs / wire = RPC count and RPC reply bytes of one read with 1 MiB requests (nfs42probe for v4.1/v4.2; file size for READ)."
	echo
	echo "## Targets (ratios from this run)"
	echo
	awk -F, -v size="$SIZE" '
	NR == 1 { next }
	{ k = $1 "|" $2 "|" $3 "|" $4 "|" $5 "|" $6; mn[k] = $7; md[k] = $8; cpu[k] = $10; rpcs[k] = $11; wire[k] = $12 }
	$1 == "limits" && $6 == "raw-TCP" { tcp = $9 }
	$1 != "limits" && $4 == "snfsd" && $2 == "data" && $3 == "warm" && $6 ~ /READ$/ && $9 + 0 > best { best = $9; bestk = $5 " " $6 }
	END {
		n = split("ext4 xfs btrfs", fs, " ")
		for (i = 1; i <= n; i++) {
			f = fs[i]
			# the same from the interleaved pairs (snfsd-ab): medians
			worst = 0; wf = ""; wmin = 0
			for (k in md) {
				split(k, a, "|")
				if (a[1] != f || a[2] !~ /^mixed/ || a[4] != "snfsd-ab" || a[6] != "v4.2-READ_PLUS") continue
				rd = f "|" a[2] "|warm|snfsd-ab|snfs|v4.1-READ"
				r = md[k] / md[rd]
				if (r > worst) { worst = r; wf = a[2]; wmin = mn[k] / mn[rd] }
			}
			if (wf != "") printf "- %s mixed, warm, READ and READ_PLUS in turn: worst READ_PLUS/READ ratio of medians %.2f (%s; of minimums %.2f) (target <= 0.6)\n", f, worst, wf, wmin
			for (c = 0; c < 2; c++) {
				cache = c ? "cold" : "warm"
				rp = f "|data|" cache "|snfsd-ab|snfs|v4.2-READ_PLUS"; rd = f "|data|" cache "|snfsd-ab|snfs|v4.1-READ"
				if (rp in md) printf "- %s data-only, %s, in turn: READ_PLUS/READ ratio of medians %.3f (of minimums %.3f) (target <= 1.03)\n", f, cache, md[rp] / md[rd], mn[rp] / mn[rd]
			}
			rp = f "|hole|warm|snfsd|snfs|v4.2-READ_PLUS"; rd = f "|hole|warm|snfsd|snfs|v4.1-READ"
			if (!(rp in mn)) continue
			# CPU times come in 10 ms ticks: under one, no ratio
			cr = cpu[rp] > 0 ? sprintf("%.1fx", cpu[rd] / cpu[rp]) : "READ_PLUS under one 10 ms tick"
			printf "- %s all-hole, warm: READ_PLUS %.3f s vs v4.1 READ %.3f s = **%.1fx faster** (snfsd CPU %.3f vs %.3f s: %s); on the wire %s bytes = %.2g%% of the file (target >= 25x, < 0.1%%)\n", f, mn[rp], mn[rd], mn[rd] / mn[rp], cpu[rp], cpu[rd], cr, wire[rp], 100 * wire[rp] / (size * 1048576)
			worst = 0; wf = ""
			for (k in mn) {
				split(k, a, "|")
				if (a[1] != f || a[2] !~ /^mixed/ || a[3] != "warm" || a[4] != "snfsd" || a[5] != "snfs" || a[6] != "v4.2-READ_PLUS") continue
				r = mn[k] / mn[f "|" a[2] "|warm|snfsd|snfs|v4.1-READ"]
				if (r > worst) { worst = r; wf = a[2] }
			}
			if (wf != "") printf "- %s mixed, warm: worst READ_PLUS/READ time ratio %.2f (%s) (target <= 0.6)\n", f, worst, wf
			worst = 0; wf = ""
			for (k in mn) {
				split(k, a, "|")
				if (a[1] != f || a[2] !~ /^mixed/ || a[4] != "snfsd-copy" || a[6] != "v4.2-READ_PLUS") continue
				r = mn[k] / mn[f "|" a[2] "|warm|snfsd-copy|snfs|v4.1-READ"]
				if (r > worst) { worst = r; wf = a[2] }
			}
			if (wf != "") printf "- %s mixed, warm, no_zerocopy (both copied, the default here until stop 29): worst READ_PLUS/READ %.2f (%s)\n", f, worst, wf
			for (c = 0; c < 2; c++) {
				cache = c ? "cold" : "warm"
				rp = f "|data|" cache "|snfsd|snfs|v4.2-READ_PLUS"; rd = f "|data|" cache "|snfsd|snfs|v4.1-READ"
				if (rp in mn) printf "- %s data-only, %s: READ_PLUS/READ = %.3f (target <= 1.03)\n", f, cache, mn[rp] / mn[rd]
			}
		}
		if (tcp > 0 && best > 0) printf "- cached data, best snfsd READ client (%s): %d MB/s = **%.0f%%** of raw loopback TCP %d MB/s (target >= 80%%)\n", bestk, best, 100 * best / tcp, tcp
	}' "$CSV"
	if [ -s "$OUT/sparse_kernel.md" ]; then
		echo
		echo "## Linux kernel client"
		echo
		echo "The kernel client rows (snfsd vs knfsd in one QEMU guest, dd bs=1M and iflag=direct bs=128K," \
			"RPC counts and wire bytes from mountstats, the readplus_min_hole policy) are in" \
			"[sparse_kernel.md](sparse_kernel.md) (bench/sparse_guest.sh; guest times are CPU-emulated and compare only among themselves)."
	fi
	echo
	echo "## All rows"
	echo
	echo "| fs | file | cache | server | client | proto | min s | median s | MB/s | server CPU s | RPCs | reply bytes |"
	echo "|---|---|---|---|---|---|---|---|---|---|---|---|"
	tail -n +2 "$CSV" | tr ',' '|' | sed 's/^/| /; s/$/ |/'
} >"$MD"

# One plot per file system: median seconds per file, READ vs READ_PLUS
# (snfs cat, warm and cold), and ganesha's best READ.
for fs in $(tail -n +2 "$CSV" | cut -d, -f1 | grep -v limits | sort -u); do
	dat=$OUT/sparse-$fs.dat
	awk -F, -v fs="$fs" 'NR > 1 && $1 == fs && $4 !~ /min|dz|zc|copy/ {
		k = $2; files[k] = 1
		if ($4 == "snfsd" && $5 == "snfs") v[k, $3 " " $6] = $8
		# (k in g) first: reading g[k] would create it, empty, and no
		# number compares below "" as a string, so no bar was drawn
		if ($4 == "ganesha" && $3 == "warm" && (!(k in g) || $8 + 0 < g[k] + 0)) g[k] = $8
	} END {
		print "file warm-v3 warm-v4.1 warm-v4.2RP cold-v4.1 cold-v4.2RP ganesha-best-warm"
		split("data hole mixed-4d mixed-4h mixed-8d mixed-8h mixed-16d mixed-16h mixed-32d mixed-32h", order, " ")
		for (i = 1; i <= 10; i++) { k = order[i]; if (!(k in files)) continue
			printf "%s %s %s %s %s %s %s\n", k, v[k, "warm v3-READ"] + 0, v[k, "warm v4.1-READ"] + 0, v[k, "warm v4.2-READ_PLUS"] + 0, v[k, "cold v4.1-READ"] + 0, v[k, "cold v4.2-READ_PLUS"] + 0, g[k] + 0 }
	}' "$CSV" >"$dat"
	gnuplot <<GP
set terminal pngcairo size 1100,500 noenhanced
set output "$OUT/sparse-$fs.png"
set title "$fs: $SIZE MiB files, median seconds (lower is better)"
set style data histograms
set style histogram clustered gap 1
set style fill solid 0.8 border -1
set key top right
set ylabel "seconds"
set xtics rotate by -30
plot "$dat" using 2:xtic(1) title columnheader, '' using 3 title columnheader, '' using 4 title columnheader, '' using 5 title columnheader, '' using 6 title columnheader, '' using 7 title columnheader
GP
done
echo "wrote $MD and plots in $OUT" >&2
