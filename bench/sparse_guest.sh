#!/bin/bash
# READ_PLUS with the Linux kernel client (issue 5, the kernel rows of the
# seed matrix): ONE QEMU guest (../shared/tools/kvm, kernel 6.12, emulated
# CPU) runs snfsd (this tree's build/snfsd) and the kernel nfsd side by side,
# both exporting the same ext4 file system (a loop image on tmpfs inside the
# guest), and the guest's own NFS client reads each seed file over loopback:
#  proto  vers=4.2 (READ_PLUS) and vers=4.1 (READ);
#  reads  `dd bs=1M` and `dd iflag=direct bs=128K` to /dev/null, with
#         `echo 3 > drop_caches` before each run (client and server caches
#         cold; the image stays in RAM); modes buf-warm and direct-warm
#         then read the file locally first (server cache warm, the
#         client's still cold); each (server, policy, vers) stays
#         mounted, its counters read as deltas (a mount costs seconds);
#  counts READ / READ_PLUS RPCs, request and reply bytes, errors and other
#         RPCs during the dd, from /proc/self/mountstats deltas;
#  policy snfsd instances with readplus_min_hole=N (MIN_HOLES) read the
#         mixed files the same way with vers=4.2 (MIN_HOLES="": none);
#  placement  every dd on READER_CPUS (taskset), every snfsd on SNFSD_CPUS
#         (--cpus), knfsd's threads free: in this guest a vCPU that
#         switches between the reader's and the server's address space
#         flushes its whole TLB each time (TCG), which costs a user-space
#         server ~185 us of CPU per call that kernel threads never pay
#         (bench/results/stop34); empty values leave them free.
# Runs are interleaved (every server and policy in turn within a run, the
# order rotated from run to run) so the host's load hits them alike; times
# are guest-relative: compare them only within this report. Each (server,
# policy, vers, file) is also read once untimed and compared with the file
# on disk (cmp).
# Writes bench/results/sparse_kernel.{md,csv}; the raw guest output stays in
# WORKDIR/guest.out.
# usage: bench/sparse_guest.sh [WORKDIR]
#   SIZE_MIB=64 RUNS=3 FILES="data hole mixed-4d mixed-4h mixed-32d"
#   MIN_HOLES="0 4096 8192 16384 65536" MH_FILES="mixed-4d mixed-4h mixed-32d"
#   READER_CPUS=0 SNFSD_CPUS=1
#   VERS="4.2 4.1" MODES="buf direct buf-warm direct-warm"
#   SERVERS="snfsd knfsd" SNFSD_OPTS=""
#   GUEST_MEM=3G GUEST_TIMEOUT=5400
# (inside the guest it runs itself as: sparse_guest.sh --guest WORKDIR)
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
SHARED=${SNFS_SHARED:-$(cd "$ROOT/.." && pwd)/shared}
[ -d "$SHARED/tools" ] || SHARED=/work/shared
KVM_DIR=$SHARED/tools/kvm
SIZE_MIB=${SIZE_MIB:-64} RUNS=${RUNS:-3}
FILES=${FILES:-data hole mixed-4d mixed-4h mixed-32d}
MIN_HOLES=${MIN_HOLES-0 4096 8192 16384 65536}
READER_CPUS=${READER_CPUS-0} SNFSD_CPUS=${SNFSD_CPUS-1}
MH_FILES=${MH_FILES:-mixed-4d mixed-4h mixed-32d}
VERS=${VERS:-4.2 4.1} MODES=${MODES:-buf direct buf-warm direct-warm} SERVERS=${SERVERS:-snfsd knfsd}
SNFSD_OPTS=${SNFSD_OPTS:-} # more export options of the default snfsd (zerocopy)
SP=22149 # snfsd, default policy; the MIN_HOLES instances take SP+1...
EXP=/srv/sp M=/run/sp

# ---------------------------------------------------------------- guest side

# Per-op counters of the mount at $1: "rd_ops rd_sent rd_recv rd_err rp_ops
# rp_sent rp_recv rp_err all_ops" (mountstats: OP: ops trans timeouts
# bytes_sent bytes_recv queue rtt execute errors). %.0f, not %d: mawk
# clamps %d at 2^31-1, and a mount's byte counters pass that within a run.
opstats() { # mountpoint
	awk -v m="$1" '
	$1 == "device" { on = ($5 == m) }
	on && $1 ~ /^[A-Z_]+:$/ && NF >= 9 {
		all += $2
		if ($1 == "READ:") { r[1] = $2; r[2] = $5; r[3] = $6; r[4] = $10 + 0 }
		if ($1 == "READ_PLUS:") { p[1] = $2; p[2] = $5; p[3] = $6; p[4] = $10 + 0 }
	}
	END { printf "%.0f %.0f %.0f %.0f %.0f %.0f %.0f %.0f %.0f\n", r[1], r[2], r[3], r[4], p[1], p[2], p[3], p[4], all }' /proc/self/mountstats
}

port_of() { # policy -> snfsd port
	local i=1 mh
	[ "$1" = default ] && { echo $SP; return; }
	for mh in $MIN_HOLES; do
		[ "$1" = "min$mh" ] && { echo $((SP + i)); return; }
		i=$((i + 1))
	done
}

# Each (server, policy, vers) stays mounted at $M/server-policy-vers for the
# whole run: caches are dropped before every read and the counters read as
# deltas, so mount and unmount (seconds each under TCG) stay out of it.
mnt() { echo "$M/$1-$2-$3"; }
mount_one() { # server policy vers
	local d port=2049 src=127.0.0.1:/ # knfsd-guest.sh: the export is the v4 root
	d=$(mnt "$@")
	[ "$1" = snfsd ] && port=$(port_of "$2") src=127.0.0.1:$EXP
	mkdir -p "$d"
	if ! mount -t nfs -o "vers=$3,port=$port,retry=0" "$src" "$d" 2>/tmp/mount.err; then
		echo "E|mount $1 $2 vers=$3: $(head -c 300 /tmp/mount.err)"
		return 1
	fi
	echo "I|mount $1 $2 vers=$3: $(awk -v m="$d" '$1 == "device" {on = ($5 == m)} on && $1 == "opts:" {print $2; exit}' /proc/self/mountstats |
		tr ',' '\n' | grep -E '^(vers|rsize)=' | tr '\n' ' ')"
}

# One timed read: R|server|policy|vers|file|mode|run|seconds|bytes|counters
read_one() { # server policy vers file mode run
	local d a b t0 t1 n how=bs=1M
	[ "${5%-warm}" = direct ] && how="iflag=direct bs=128K"
	d=$(mnt "$1" "$2" "$3")
	mountpoint -q "$d" || return 1
	sync
	sleep 0.25 # snfsd drops a file's mapping after 0.1 s unused (mapcache.c)
	echo 3 >/proc/sys/vm/drop_caches
	# warm: the server's page cache holds the file, the client's not
	[[ $5 == *-warm ]] && cat "$EXP/$4" >/dev/null
	a=$(opstats "$d")
	t0=$EPOCHREALTIME
	n=$(${READER_CPUS:+taskset -c $READER_CPUS} dd if="$d/$4" of=/dev/null $how 2>&1 | awk '/bytes/ {print $1}')
	t1=$EPOCHREALTIME
	b=$(opstats "$d")
	echo "R|$1|$2|$3|$4|$5|$6|$(awk -v a="$t1" -v b="$t0" 'BEGIN {printf "%.4f", a - b}')|${n:-0}|$(
		awk -v a="$a" -v b="$b" 'BEGIN {n = split(a, x, " "); split(b, y, " ")
			for (i = 1; i <= n; i++) printf "%s%.0f", (i > 1 ? "|" : ""), y[i] - x[i] }')"
}

# Untimed: the client reads what the disk holds. V|server|policy|vers|file|ok
verify_one() { # server policy vers file
	local d r=BAD
	d=$(mnt "$1" "$2" "$3")
	mountpoint -q "$d" || { echo "V|$1|$2|$3|$4|nomount"; return; }
	echo 3 >/proc/sys/vm/drop_caches
	cmp -s "$d/$4" "$EXP/$4" && r=ok
	echo "V|$1|$2|$3|$4|$r"
}

start_snfsd() { # port [options]
	mkdir -p "/run/snfsd-$1"
	"$W/snfsd" -e "$EXP:rw,insecure,no_root_squash${2:+,$2}" -p "$1" \
		-s "/run/snfsd-$1" --no-portmap -t 8 ${SNFSD_CPUS:+--cpus $SNFSD_CPUS} \
		2>>"/run/snfsd-$1.log" &
	echo "I|snfsd port $1 options '${2:-(defaults)}' pid $!"
}

guest_main() {
	local f v mode run s mh i
	echo "I|guest kernel $(uname -r), $(nproc) vCPUs, $(awk '/MemTotal/ {print $2 / 1024 " MiB"}' /proc/meminfo)"
	modprobe loop
	mkdir -p /srv/img $EXP $M
	mount -t tmpfs -o size=90% img /srv/img
	truncate -s $((SIZE_MIB * 12 + 256))M /srv/img/fs.img
	if ! mkfs.ext4 -q -F /srv/img/fs.img || ! mount -o loop /srv/img/fs.img $EXP; then
		echo "E|no ext4 image"
		return 1
	fi
	t0=$EPOCHREALTIME
	"$W/mkfiles" seed $EXP "$SIZE_MIB" >/dev/null
	for f in "$EXP"/*; do
		[[ " $FILES $MH_FILES " == *" ${f##*/} "* ]] || rm -f "$f"
	done
	echo "I|files made in $(awk -v a=$EPOCHREALTIME -v b="$t0" 'BEGIN {printf "%.1f", a - b}') s on ext4 (loop on tmpfs): $(cd $EXP && du -k --apparent-size -- * | awk '{printf "%s ", $2}')"
	for f in "$EXP"/*; do echo "I|allocated ${f##*/}: $(du -k "$f" | cut -f1) KiB of $(($(stat -c %s "$f") / 1024)) KiB"; done
	if [[ " $SERVERS " == *" knfsd "* ]]; then
		NFSD_THREADS=8 "$KVM_DIR/knfsd-guest.sh" $EXP 2>&1 | sed 's/^/I|/'
	fi
	# one vCPU: nothing to keep apart (and --cpus 1 would not start)
	[ "$(nproc)" -ge 2 ] || READER_CPUS= SNFSD_CPUS=
	echo "I|placement: dd on CPUs ${READER_CPUS:-(any)}, snfsd on CPUs ${SNFSD_CPUS:-(any)}, knfsd's threads on any"
	start_snfsd $SP "$SNFSD_OPTS"
	i=1
	for mh in $MIN_HOLES; do
		start_snfsd $((SP + i)) "readplus_min_hole=$mh"
		i=$((i + 1))
	done
	sleep 2
	for v in $VERS; do
		for s in $SERVERS; do mount_one "$s" default "$v"; done
	done
	for mh in $MIN_HOLES; do mount_one snfsd "min$mh" 4.2; done
	echo "I|start $(date -u +%FT%TZ)"

	# 1. The matrix: snfsd vs knfsd, READ_PLUS vs READ, both dd modes.
	local pairs=() mhs=($MIN_HOLES) s v k mh
	for v in $VERS; do
		for s in $SERVERS; do pairs+=("$s $v"); done
	done
	for f in $FILES; do
		for v in $VERS; do
			for s in $SERVERS; do verify_one "$s" default "$v" "$f"; done
		done
		for mode in $MODES; do
			for ((run = 1; run <= RUNS; run++)); do
				# each (server, vers) opens a run in turn: the one read
				# first after the previous run's last was measured
				# slower every time (bench/results/stop26)
				for ((k = 0; k < ${#pairs[@]}; k++)); do
					read -r s v <<<"${pairs[$(((k + run - 1) % ${#pairs[@]}))]}"
					read_one "$s" default "$v" "$f" "$mode" $run
				done
			done
		done
	done
	echo "I|matrix done $(date -u +%FT%TZ)"

	# 2. The tiny-hole policy: snfsd readplus_min_hole=N, vers=4.2.
	for f in $MH_FILES; do
		for mh in $MIN_HOLES; do verify_one snfsd "min$mh" 4.2 "$f"; done
		for mode in $MODES; do
			for ((run = 1; run <= RUNS; run++)); do
				for ((k = 0; k < ${#mhs[@]}; k++)); do
					mh=${mhs[$(((k + run - 1) % ${#mhs[@]}))]}
					read_one snfsd "min$mh" 4.2 "$f" "$mode" $run
				done
			done
		done
	done
	echo "I|policy done $(date -u +%FT%TZ)"
	dmesg | grep -iE 'nfs|rpc' | grep -viE 'registered|installing|grace|command line' | tail -20 | sed 's/^/I|dmesg: /'
	for l in /run/snfsd-*.log; do
		[ -s "$l" ] && grep -iE 'error|warn|fail' "$l" | head -5 | sed "s#^#I|${l##*/}: #"
	done
	# zerocopy=auto's choice (and so the Linux client's readplus_min_hole)
	grep -h 'sendfile: ' "/run/snfsd-$SP.log" 2>/dev/null | head -1 |
		sed 's/^.*sendfile: /I|snfsd sendfile: /'
	for d in "$M"/*; do umount "$d"; done
	return 0
}

# ----------------------------------------------------------------- host side

# guest.out -> $RES/sparse_kernel.{csv,md}
report() { # guest.out guest_seconds
	python3 - "$1" "$RES" "$SIZE_MIB" "$RUNS" "$2" "$MIN_HOLES" "$ROOT/src/server/exports.h" <<'PY'
import collections, datetime, math, os, re, sys

out, res, size, runs, gsec, mhs, hdr = sys.argv[1:8]
size, runs, nbytes = int(size), int(runs), int(size) << 20
MH = mhs.split()
rows = collections.defaultdict(list)  # (server, policy, vers, file, mode) -> runs
verify, info, errs = {}, [], []
for line in open(out, errors="replace"):
    t = line.rstrip("\n").split("|")
    if t[0] == "R" and len(t) == 18:
        rows[tuple(t[1:6])].append([float(t[7])] + [int(x) for x in t[8:18]])
    elif t[0] == "V" and len(t) == 6:
        verify[tuple(t[1:5])] = t[5]
    elif t[0] == "I":
        info.append("|".join(t[1:]))
    elif t[0] == "E":
        errs.append("|".join(t[1:]))


# The file size, run count and thresholds as the guest saw them (--report
# of an old run).
if rows:
    MH = sorted({k[1][3:] for k in rows if k[1].startswith("min")}, key=int) or MH
    nbytes = max(r[1] for rs in rows.values() for r in rs) or nbytes
    size = nbytes >> 20
    runs = max(len(rs) for rs in rows.values())


def lowmed(xs):
    xs = sorted(xs)
    return xs[(len(xs) - 1) // 2]


FIELDS = "bytes rd_ops rd_sent rd_recv rd_err rp_ops rp_sent rp_recv rp_err all".split()
agg = {}
for k, rs in rows.items():
    a = {"n": len(rs), "min": min(r[0] for r in rs), "med": lowmed([r[0] for r in rs]),
         "max": max(r[0] for r in rs)}
    for i, f in enumerate(FIELDS):
        a[f] = lowmed([r[i + 1] for r in rs])
    a["short"] = any(r[1] != nbytes for r in rs)
    a["rpcs"] = a["rd_ops"] + a["rp_ops"]
    a["sent"] = a["rd_sent"] + a["rp_sent"]
    a["recv"] = a["rd_recv"] + a["rp_recv"]
    a["err"] = a["rd_err"] + a["rp_err"]
    a["other"] = a["all"] - a["rpcs"]
    # Runs before the %.0f fix clamped counters at 2^31-1: the delta came out 0.
    a["recv_ok"] = not (a["rpcs"] > 0 and a["recv"] == 0)
    a["op"] = ("READ+READ_PLUS" if a["rd_ops"] and a["rp_ops"] else
               "READ_PLUS" if a["rp_ops"] else "READ" if a["rd_ops"] else "-")
    a["mbps"] = nbytes / a["med"] / 1e6 if a["med"] > 0 else float("nan")
    agg[k] = a

ORDER = ["data", "hole", "mixed-4d", "mixed-4h", "mixed-8d", "mixed-8h",
         "mixed-16d", "mixed-16h", "mixed-32d", "mixed-32h"]
files = [f for f in ORDER if any(k[3] == f for k in agg)]
modes = [m for m in ("buf", "direct", "buf-warm", "direct-warm") if any(k[4] == m for k in agg)]
MODE = {"buf": "dd bs=1M", "direct": "dd iflag=direct bs=128K",
        "buf-warm": "dd bs=1M, server warm", "direct-warm": "dd iflag=direct bs=128K, server warm"}
servers = [s for s in ("snfsd", "knfsd") if any(k[0] == s and k[1] == "default" for k in agg)]
vers = [v for v in ("4.2", "4.1") if any(k[2] == v for k in agg)]

with open(os.path.join(res, "sparse_kernel.csv"), "w") as c:
    c.write("server,policy,vers,op,file,mode,runs,min_s,median_s,max_s,mbps_median,rpcs,"
            "read_rpcs,read_plus_rpcs,bytes_sent,bytes_recv,other_rpcs,errors,short_read,verify\n")
    for k in sorted(agg, key=lambda k: (k[1] != "default", k[1], ORDER.index(k[3]) if k[3] in ORDER else 99, k[4], k[0], k[2])):
        a = agg[k]
        c.write(",".join(str(x) for x in [k[0], k[1], k[2], a["op"], k[3], k[4], a["n"],
                 "%.4f" % a["min"], "%.4f" % a["med"], "%.4f" % a["max"], "%.1f" % a["mbps"],
                 a["rpcs"], a["rd_ops"], a["rp_ops"], a["sent"], a["recv"] if a["recv_ok"] else "", a["other"], a["err"],
                 int(a["short"]), verify.get((k[0], k[1], k[2], k[3]), "-")]) + "\n")


def recv(a):
    return "%d" % a["recv"] if a["recv_ok"] else "n/a"


def recvf(a):
    return "%.3f" % (a["recv"] / nbytes) if a["recv_ok"] else "n/a"


def cell(k, what):
    a = agg.get(k)
    if not a:
        return "-"
    return {"min": "%.3f" % a["min"], "med": "%.3f" % a["med"]}[what]


def ratio(a, b):
    return a / b if b else float("nan")


L = []
P = L.append
guest = next((i for i in info if i.startswith("guest kernel")), "guest: ?")
P("# READ_PLUS with the Linux kernel client: snfsd vs knfsd, one guest")
P("")
P("Generated by `bench/sparse_guest.sh` on %s; host %d CPUs, load average at the end %s." % (
    datetime.datetime.utcnow().strftime("%Y-%m-%dT%H:%MZ"), os.cpu_count(),
    " ".join(open("/proc/loadavg").read().split()[:3])))
P("One QEMU guest (%s; CPU emulated by TCG), %s s in all. Both servers in the guest export the same"
  " ext4 file system (loop image on tmpfs); the guest's client mounts each over loopback." % (guest, gsec))
P("Files: %d MiB each. Each (server, policy, vers) is mounted once for the whole run (default options: the client"
  " takes the server's rsize, listed below); before every read `sync; echo 3 > /proc/sys/vm/drop_caches` (client and"
  " server page caches cold; the loop image itself stays in RAM; rows *server warm*: then the file read locally,"
  " so only the client's cache is cold), then dd to /dev/null; %d runs per row, interleaved over servers, versions and policies; seconds min / median"
  " (guest-relative: compare within this report only). RPCs and bytes: /proc/self/mountstats deltas over the"
  " dd (median run): READ + READ_PLUS calls, request bytes sent, reply bytes received (RPC headers included)."
  " *other* = any other RPC during the dd. verify = one more untimed read compared with the file on disk (cmp)." % (size, runs))
for i in info:
    if i.startswith(("mount ", "knfsd:", "allocated", "files made", "snfsd port", "placement")):
        P("- " + i)
seen = set()
for e in errs:
    if e not in seen:
        P("- **error**: " + e)
        seen.add(e)
P("")

P("## Does the 6.12 client send READ_PLUS?")
P("")
for s in servers:
    ks = [k for k in agg if k[0] == s and k[1] == "default" and k[2] == "4.2"]
    if not ks:
        continue
    rp = sum(agg[k]["rp_ops"] for k in ks)
    rd = sum(agg[k]["rd_ops"] for k in ks)
    er = sum(agg[k]["err"] for k in ks)
    P("- %s, vers=4.2: %d READ_PLUS and %d READ calls (median runs, all files and modes), %d errors. %s" % (
        s, rp, rd, er,
        "The client uses READ_PLUS throughout." if rp and not rd else
        "**The client fell back to READ.**" if rd and not rp else
        "**Mixed: READ_PLUS and READ.**" if rp and rd else "No reads recorded."))
ks41 = [k for k in agg if k[1] == "default" and k[2] == "4.1"]
if ks41:
    P("- vers=4.1: %d READ_PLUS calls (expected 0)." % sum(agg[k]["rp_ops"] for k in ks41))
bad = sorted(k for k, v in verify.items() if v != "ok")
P("- content check: %s" % ("all %d reads match the disk" % len(verify) if not bad else
                            "**mismatch** " + ", ".join("/".join(b) + "=" + verify[b] for b in bad)))
if any(not a["recv_ok"] for a in agg.values()):
    P("- n/a: reply bytes lost: this run's collector printed the counters with mawk's %d, which clamps at"
      " 2^31-1 (fixed since: %.0f)")
sr = [k for k in agg if agg[k]["short"]]
if sr:
    P("- **short reads**: " + ", ".join("/".join(k) for k in sr))
P("")

P("## snfsd vs knfsd, READ_PLUS (vers=4.2) vs READ (vers=4.1)")
P("")
P("| file | read | server | vers: op | min s | median s | MB/s | RPCs | bytes sent | bytes received | recv/file | other | errors |")
P("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
for f in files:
    for m in modes:
        for s in servers:
            for v in vers:
                k = (s, "default", v, f, m)
                a = agg.get(k)
                if not a:
                    continue
                P("| %s | %s | %s | %s: %s | %.3f | %.3f | %.0f | %d | %d | %s | %s | %d | %d |" % (
                    f, MODE[m], s, v, a["op"], a["min"], a["med"], a["mbps"], a["rpcs"], a["sent"],
                    recv(a), recvf(a), a["other"], a["err"]))
P("")
P("Ratios of median times (< 1: the first is faster) and of reply bytes:")
P("")
P("| file | read | snfsd 4.2/4.1 time | knfsd 4.2/4.1 time | 4.2 snfsd/knfsd time | 4.1 snfsd/knfsd time | 4.2 snfsd/knfsd bytes received |")
P("|---|---|---|---|---|---|---|")
for f in files:
    for m in modes:
        g = lambda s, v: agg.get((s, "default", v, f, m), {})
        def r(a, b, fld="med"):
            if not a or not b or (fld == "recv" and not (a["recv_ok"] and b["recv_ok"])):
                return "-"
            return "%.2f" % ratio(a[fld], b[fld])
        P("| %s | %s | %s | %s | %s | %s | %s |" % (f, MODE[m], r(g("snfsd", "4.2"), g("snfsd", "4.1")),
            r(g("knfsd", "4.2"), g("knfsd", "4.1")), r(g("snfsd", "4.2"), g("knfsd", "4.2")),
            r(g("snfsd", "4.1"), g("knfsd", "4.1")), r(g("snfsd", "4.2"), g("knfsd", "4.2"), "recv")))
P("")

pol = [k for k in agg if k[1].startswith("min")]
# the threshold snfsd gives this client unless the export sets one
# (readplus_min_hole=auto: EXP_READPLUS_MIN_HOLE_LINUX in exports.h, or
# EXP_READPLUS_MIN_HOLE_LINUX_ZC where zerocopy=auto found sendfile pays
# from a page)
zc = any(i.startswith("snfsd sendfile: ") and "from pieces of 4 KiB:" in i for i in info)
cur = "4096"
try:
    cur = re.search(r"#define EXP_READPLUS_MIN_HOLE_LINUX%s (\d+)" % ("_ZC" if zc else ""),
                    open(hdr).read()).group(1)
except (OSError, AttributeError):
    pass
# Not run as a policy of its own: the default instance is that policy when
# it runs with no export options (its rows stand in for it).
cur_alias = bool(pol) and cur not in MH and any(
    re.match(r"snfsd port \d+ options '\(defaults\)'", i) for i in info)
if cur_alias:
    for k in list(agg):
        if k[:3] == ("snfsd", "default", "4.2") and any(p[3:] == k[3:] for p in pol):
            agg[("snfsd", "min" + cur, "4.2") + k[3:]] = agg[k]
    MH = sorted(MH + [cur], key=int)
if pol:
    mfiles = [f for f in files if any(k[3] == f for k in pol)]
    P("## The tiny-hole policy: snfsd readplus_min_hole (vers=4.2, the kernel client)")
    P("")
    P("Holes shorter than readplus_min_hole go as zeros inside a DATA segment. In mixed-4d/4h every hole is"
      " 4 KiB (a HOLE segment at 0 and 4096, zeros from 8192 up); in mixed-32d 32 KiB (zeros at 65536)."
      " Reference rows: snfsd vers=4.1 READ and knfsd vers=4.2 from the matrix above (other mounts, same runs)." +
      (" The %s rows are the default instance's (readplus_min_hole=auto is %s for this client)." % (cur, cur)
       if cur_alias else ""))
    P("")
    P("| file | read | readplus_min_hole | min s | median s | max s | RPCs | bytes received | recv/file | median / best |")
    P("|---|---|---|---|---|---|---|---|---|---|")
    best = {}
    for f in mfiles:
        for m in modes:
            cand = [agg[("snfsd", "min" + h, "4.2", f, m)]["med"] for h in MH if ("snfsd", "min" + h, "4.2", f, m) in agg]
            if not cand:
                continue
            best[(f, m)] = min(cand)
            for h in MH:
                a = agg.get(("snfsd", "min" + h, "4.2", f, m))
                if a:
                    P("| %s | %s | %s | %.3f | %.3f | %.3f | %d | %s | %s | %.2f |" % (
                        f, MODE[m], h, a["min"], a["med"], a["max"], a["rpcs"], recv(a), recvf(a),
                        a["med"] / best[(f, m)]))
            for lab, k in (("(snfsd 4.1 READ)", ("snfsd", "default", "4.1", f, m)),
                           ("(knfsd 4.2)", ("knfsd", "default", "4.2", f, m))):
                a = agg.get(k)
                if a:
                    P("| %s | %s | %s | %.3f | %.3f | %.3f | %d | %s | %s | %.2f |" % (
                        f, MODE[m], lab, a["min"], a["med"], a["max"], a["rpcs"], recv(a), recvf(a),
                        a["med"] / best[(f, m)]))
    P("")
    # Choose by measurement: the threshold whose worst case (median / best
    # median of the same file and read) is smallest; the run-to-run spread
    # tells whether the differences mean anything.
    score = {}
    for h in MH:
        rs = [agg[("snfsd", "min" + h, "4.2", f, m)]["med"] / best[(f, m)]
              for (f, m) in best if ("snfsd", "min" + h, "4.2", f, m) in agg]
        if len(rs) == len(best) and rs:
            score[h] = (max(rs), math.exp(sum(math.log(x) for x in rs) / len(rs)))
    spread = lowmed([(agg[k]["max"] - agg[k]["min"]) / agg[k]["med"] for k in pol if agg[k]["med"] > 0])
    P("Per threshold over the %d (file, read) cases: worst and geometric mean of median / best;"
      " run-to-run spread (max - min) / median, median over the policy rows: %.0f%%." % (len(best), 100 * spread))
    P("")
    P("| readplus_min_hole | worst | geo. mean |")
    P("|---|---|---|")
    for h in MH:
        if h in score:
            P("| %s | %.2f | %.2f |" % (h, score[h][0], score[h][1]))
    P("")
    if score:
        pick = min(score, key=lambda h: (round(score[h][0], 2), score[h][1]))
        dflt = "the Linux client's default (readplus_min_hole=auto, here %s)" % cur
        P("### Recommendation")
        P("")
        txt = []
        same = lambda h: all(("snfsd", "min" + h, "4.2", f, m) in agg and ("snfsd", "min" + cur, "4.2", f, m) in agg and
                             abs(agg[("snfsd", "min" + h, "4.2", f, m)]["recv"] - agg[("snfsd", "min" + cur, "4.2", f, m)]["recv"]) < 1024
                             for (f, m) in best)
        twins = [h for h in MH if h != cur and same(h)]
        if twins:
            dev = max(max(x, 1 / x) - 1 for x in (
                agg[("snfsd", "min" + h, "4.2", f, m)]["med"] / agg[("snfsd", "min" + cur, "4.2", f, m)]["med"]
                for h in twins for (f, m) in best))
            txt.append("readplus_min_hole=%s send%s the same replies as %s here (the same reply bytes in every case),"
                       " so %s differences from it are run-to-run noise: up to %.0f%% between medians, which bounds"
                       " what these runs can resolve." % (
                           ", ".join(twins), "s" if len(twins) == 1 else "", cur, "its" if len(twins) == 1 else "their",
                           100 * dev))
        if cur in score and pick != cur and same(pick):
            txt.append("Keep %s: the best threshold by worst case, %s (worst %.2f, geo. mean %.2f),"
                       " sends what %s sends (worst %.2f, geo. mean %.2f)." % (
                           dflt, pick, score[pick][0], score[pick][1], cur, score[cur][0], score[cur][1]))
        elif cur in score and pick != cur and score[cur][0] - score[pick][0] <= spread:
            txt.append("Keep %s: the best threshold by worst case, %s (worst %.2f, geo. mean %.2f),"
                       " beats it (worst %.2f, geo. mean %.2f) by less than the run-to-run spread (%.0f%%)." % (
                           dflt, pick, score[pick][0], score[pick][1], score[cur][0], score[cur][1], 100 * spread))
        elif pick == cur:
            txt.append("Keep %s: it has the smallest worst case (%.2f x the best per case,"
                       " geo. mean %.2f)." % ((dflt,) + tuple(score[cur])))
        else:
            txt.append(("Change the Linux client's default to readplus_min_hole=%s: worst case %.2f x the best per case (geo. mean %.2f)"
                        " against %.2f (%.2f) for the current " + cur + ", more than the run-to-run spread (%.0f%%).") % (
                           pick, score[pick][0], score[pick][1], score.get(cur, (float("nan"),) * 2)[0],
                           score.get(cur, (float("nan"),) * 2)[1], 100 * spread))
        per = []
        for (f, m) in best:
            hb = min((h for h in MH if ("snfsd", "min" + h, "4.2", f, m) in agg),
                     key=lambda h: agg[("snfsd", "min" + h, "4.2", f, m)]["med"])
            kc = ("snfsd", "min" + cur, "4.2", f, m)
            k41 = ("snfsd", "default", "4.1", f, m)
            per.append("%s %s: best %s (%.2f s), %s %.2fx, 4.1 READ %.2fx" % (
                f, MODE[m], hb, best[(f, m)], cur, agg[kc]["med"] / best[(f, m)] if kc in agg else float("nan"),
                agg[k41]["med"] / best[(f, m)] if k41 in agg else float("nan")))
        txt.append("Per case (median / best): " + "; ".join(per) + ".")
        for f in mfiles:
            k0 = ("snfsd", "min0", "4.2", f, "buf")
            kb = ("snfsd", "min65536", "4.2", f, "buf")
            if k0 in agg and kb in agg:
                txt.append("%s on the wire: %d reply bytes with every hole a segment, %d with holes < 64 KiB as zeros." % (
                    f, agg[k0]["recv"], agg[kb]["recv"]))
        P(" ".join(txt))
        P("")
P("Raw per-run lines (`R|server|policy|vers|file|mode|run|s|bytes|READ ops,sent,recv,err|READ_PLUS ops,sent,recv,err|all ops`) are in the run's WORKDIR/guest.out.")
open(os.path.join(res, "sparse_kernel.md"), "w").write("\n".join(L) + "\n")
print("wrote %s/sparse_kernel.{md,csv} (%d rows)" % (res, len(agg)), file=sys.stderr)
PY
}

host_main() {
	W=$(realpath -m "${1:-/tmp/snfs-sparse-guest}")
	RES=${RES:-$ROOT/bench/results}
	mkdir -p "$W" "$RES"
	[ -x "$KVM_DIR/run-guest.sh" ] || {
		echo "sparse_guest: $KVM_DIR/run-guest.sh not found" >&2
		exit 1
	}
	make -s -C "$ROOT" build/snfsd >/dev/null 2>&1 ||
		echo "sparse_guest: make build/snfsd failed, using the existing binary" >&2
	[ -x "$ROOT/build/snfsd" ] || exit 1
	# Copies: a rebuild while the guest runs must not change what it runs.
	cp "$ROOT/build/snfsd" "$W/snfsd"
	[[ $W/mkfiles -nt $SHARED/tools/peers/mkfiles.c ]] || cc -O2 -o "$W/mkfiles" "$SHARED/tools/peers/mkfiles.c" || exit 1
	t0=$(date +%s)
	# NFS_KVM_KNFSD=1: run-guest's setup installs nfs-kernel-server if missing.
	NFS_KVM_KNFSD=1 "$KVM_DIR/run-guest.sh" --mem "${GUEST_MEM:-3G}" --timeout "${GUEST_TIMEOUT:-5400}" -- \
		SIZE_MIB="$SIZE_MIB" RUNS="$RUNS" FILES="'$FILES'" MIN_HOLES="'$MIN_HOLES'" MH_FILES="'$MH_FILES'" \
		VERS="'$VERS'" MODES="'$MODES'" SERVERS="'$SERVERS'" SNFSD_OPTS="'$SNFSD_OPTS'" \
		READER_CPUS="'$READER_CPUS'" SNFSD_CPUS="'$SNFSD_CPUS'" \
		bash "$ROOT/bench/sparse_guest.sh" --guest "$W" \
		>"$W/guest.out" 2>"$W/guest.err"
	rc=$?
	echo "sparse_guest: guest ran $(($(date +%s) - t0)) s, exit status $rc" >&2
	grep -c '^R|' "$W/guest.out" >/dev/null || {
		echo "sparse_guest: no results; see $W/guest.out and $W/guest.err" >&2
		tail -20 "$W/guest.err" >&2
		exit 1
	}
	report "$W/guest.out" "$(($(date +%s) - t0))" || exit 1
	[ "$rc" = 0 ]
}

# Everything runs from functions: bash has read the whole file before it
# starts, so editing it during a (long) run cannot derail that run.
case ${1:-} in
--guest)
	W=$2
	guest_main
	exit $?
	;;
--report) # regenerate the report from a kept guest.out
	RES=${RES:-$ROOT/bench/results}
	report "$2" "${3:-0}"
	exit $?
	;;
*)
	host_main "$@"
	exit $?
	;;
esac
