set -u
EXP=/srv/sp; modprobe loop; mkdir -p /srv/img $EXP /run/sp/s /run/sp/k /run/st
mount -t tmpfs -o size=90% img /srv/img; truncate -s 512M /srv/img/fs.img
mkfs.ext4 -q -F /srv/img/fs.img && mount -o loop /srv/img/fs.img $EXP
/tmp/g1/w/mkfiles seed $EXP 8 >/dev/null
NFSD_THREADS=8 /work/shared/tools/kvm/knfsd-guest.sh $EXP >/dev/null 2>&1
/tmp/g/snfsd.head -e "$EXP:rw,insecure,no_root_squash" -p 22149 -s /run/st --no-portmap -t 8 2>/run/s.log & SP=$!; mkdir -p /run/st2 /run/sp/n; /tmp/g/snfsd.new -e "$EXP:rw,insecure,no_root_squash" -p 22150 -s /run/st2 --no-portmap -t 8 2>/run/n.log & NP2=$!
sleep 2
mount -t nfs -o vers=4.2,port=22149 127.0.0.1:$EXP /run/sp/s; mount -t nfs -o vers=4.2,port=22150 127.0.0.1:$EXP /run/sp/n; mount -t nfs -o vers=4.2 127.0.0.1:/ /run/sp/k
cat $EXP/data >/dev/null; cat /run/sp/s/data /run/sp/n/data /run/sp/k/data >/dev/null
cpu() { # pids -> "utime stime minflt vcsw nvcsw" summed over tasks
  for p in "$@"; do for t in /proc/$p/task/*; do awk '{print $14, $15, $10}' $t/stat; done; done | awk '{u+=$1;s+=$2;f+=$3} END {printf "%d %d %d", u, s, f}'; }
NP=$(pgrep -x nfsd | tr '\n' ' ')
for r in 1 2 3 4; do for n in s n k; do
  case $n in s) a=$(cpu $SP);; n) a=$(cpu $NP2);; k) a=$(cpu $NP);; esac
  t0=$EPOCHREALTIME; dd if=/run/sp/$n/data of=/dev/null iflag=direct bs=4K count=2000 2>/dev/null; t1=$EPOCHREALTIME
  case $n in s) b=$(cpu $SP);; n) b=$(cpu $NP2);; k) b=$(cpu $NP);; esac
  echo "R $n $(awk -v a=$t1 -v b=$t0 'BEGIN {printf "%.4f", a-b}') cpu_before $a after $b"
done; done
grep -h "ctxt\|^cpu " /proc/stat
