#!/bin/bash
# bench/sparse_report.sh on a small hand-made CSV: the plot data (one .dat
# per file system) holds snfsd's medians per cache and protocol and
# ganesha's best warm READ (stop 24: that column was always 0, an awk
# array read before its membership test), and the report's target lines
# are computed from the rows. gnuplot is replaced by a stub that keeps
# its script, so nothing is installed.
ROOT=${ROOT:-$(cd "$(dirname "$0")/../.." && pwd)}
. "$ROOT/tests/lib.sh"
scratch
mkdir -p "$T_DIR/bin" "$T_DIR/out"
printf '#!/bin/sh\ncat >"%s/gnuplot.in"\n' "$T_DIR" >"$T_DIR/bin/gnuplot"
chmod +x "$T_DIR/bin/gnuplot"
CSV=$T_DIR/sparse.csv
cat >"$CSV" <<'CSV'
fs,file,cache,server,client,proto,min_s,median_s,mbps,server_cpu_s,rpcs,wire_bytes
limits,data,warm,loopback,tcpstream,raw-TCP,0.30,0.31,3500,0,0,1073741824
ext4,data,warm,snfsd,snfs,v3-READ,0.50,0.52,2000,0.4,1024,1073741824
ext4,data,warm,snfsd,snfs,v4.1-READ,0.34,0.35,3100,0.4,1024,1073852416
ext4,data,warm,snfsd,snfs,v4.2-READ_PLUS,0.345,0.36,3000,0.4,1024,1073868800
ext4,data,warm,ganesha,nfs-cat,v3-READ,0.47,0.48,2200,0,1024,1073741824
ext4,data,warm,ganesha,nfs-cat,v4.0-READ,0.71,0.78,1400,0,1024,1073741824
ext4,data,cold,ganesha,nfs-cat,v3-READ,0.20,0.21,5000,0,1024,1073741824
ext4,hole,warm,snfsd,snfs,v4.1-READ,0.30,0.31,3500,0.3,1024,1073852416
ext4,hole,warm,snfsd,snfs,v4.2-READ_PLUS,0.003,0.004,300000,0,2,236
ext4,mixed-4d,warm,snfsd,snfs,v4.1-READ,0.35,0.36,3000,0.4,1024,1073852416
ext4,mixed-4d,warm,snfsd,snfs,v4.2-READ_PLUS,0.21,0.22,5000,0.3,1024,541700096
ext4,mixed-4d,warm,ganesha,nfs-cat,v4.0-READ,0.60,0.61,1700,0,1024,1073741824
ext4,mixed-4d,warm,ganesha,nfs-cat,v3-READ,0.50,0.9,2100,0,1024,1073741824
CSV
PATH=$T_DIR/bin:$PATH bash "$ROOT/bench/sparse_report.sh" "$CSV" "$T_DIR/out" 1024 3 >"$T_DIR/report.log" 2>&1
check "sparse_report.sh runs on a small CSV" test $? = 0
dat=$T_DIR/out/sparse-ext4.dat
check_eq "data row: snfsd medians, no cold rows, ganesha's best warm READ" \
	"data 0.52 0.35 0.36 0 0 0.48" "$(awk '$1 == "data"' "$dat" 2>/dev/null)"
check_eq "mixed-4d row: ganesha's best warm READ is the lower median (0.61 < 0.9)" \
	"mixed-4d 0 0.36 0.22 0 0 0.61" "$(awk '$1 == "mixed-4d"' "$dat" 2>/dev/null)"
check "gnuplot got the plot of ext4" grep -q 'sparse-ext4.png' "$T_DIR/gnuplot.in"
check "report: mixed READ_PLUS/READ target line (minimums 0.21 / 0.35)" \
	grep -q 'ext4 mixed, warm: worst READ_PLUS/READ time ratio 0.60 (mixed-4d)' "$T_DIR/out/sparse.md"
check "report: all-hole line (0.30 / 0.003 = 100x, 236 bytes)" \
	grep -q 'ext4 all-hole, warm: READ_PLUS 0.003 s vs v4.1 READ 0.300 s = \*\*100.0x faster.*on the wire 236 bytes' "$T_DIR/out/sparse.md"
exit $((T_FAILS > 0))
