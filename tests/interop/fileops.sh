#!/bin/bash
# fileops.sh DIR OUT: run a fixed sequence of file operations inside DIR
# (which should be empty) and write a normalised transcript to OUT.
# fileops.sh --summary DIR: print a listing of DIR (type, mode, size and link
# count of files, sha256 of regular files, symlink targets), to compare what a
# client sees with what the server's disk holds.
#
# The transcript holds only what must be identical on a local file system and
# on a network mount of one: no inode numbers, no creation-time clocks, no
# block counts, no directory sizes or directory link counts. It is split into
# sections ("== NAME") so a comparison can name the one that differs. Every
# failing command adds "FAIL <op>: <strerror text>"; the expected failures
# (error cases) therefore appear in both transcripts, unexpected ones in one.
#
# Only bash, coreutils and findutils are used, so the script also runs over
# NFSv4 and FUSE mounts. Process creation is expensive in the emulated test
# guest, so facts are gathered in batches (one stat or sha256sum for several
# files) and bash builtins are preferred.
# Env: FILEOPS_DROP_CACHES=1 drops the page cache (root only, e.g. in the
# test guest) before read-backs so data comes from the server;
# FILEOPS_NFILES (default 10000) sizes the big directory;
# FILEOPS_TIMES=FILE appends "section seconds" lines to FILE.
set -u
export LC_ALL=C TZ=UTC
umask 022

# Listing of a tree, names relative to it, sorted; three processes in all.
summary() {
	(
		cd "$1" || exit 1
		find . -mindepth 1 \( -type l -printf '%p l %l\n' \) -o \
			\( -type d -printf '%p d %m\n' \) -o \
			\( -type f -printf '%p f %m %s %n\n' \) -o \
			-printf '%p %y %m\n' | sort >"$2.list"
		find . -type f -exec sha256sum -- {} + >"$2.sha"
		declare -A sha
		local h n
		while read -r h n; do sha[$n]=$h; done <"$2.sha"
		while IFS= read -r l; do
			n=${l% f *}
			if [ "$n" != "$l" ] && [ -n "${sha[$n]:-}" ]; then
				echo "$l ${sha[$n]}"
			else
				echo "$l"
			fi
		done <"$2.list"
	)
}

if [ "${1:-}" = --summary ]; then
	W=$(mktemp -d "${TMPDIR:-/tmp}/fileops.XXXXXX")
	summary "$2" "$W/s"
	rc=$?
	rm -rf "$W"
	exit $rc
fi
if [ $# -ne 2 ] || [ ! -d "$1" ]; then
	echo "usage: fileops.sh DIR OUT | fileops.sh --summary DIR" >&2
	exit 2
fi
D=$1
OUT=$(cd "$(dirname "$2")" && pwd)/${2##*/}
NFILES=${FILEOPS_NFILES:-10000}
: >"$OUT"
cd "$D" || exit 1
WORK=$(mktemp -d "${TMPDIR:-/tmp}/fileops.XXXXXX")
trap 'rm -rf "$WORK"' EXIT

rec() { printf '%s\n' "$*" >>"$OUT"; }
T_LAST=
T_START=${EPOCHREALTIME:-0}
section() {
	local now=${EPOCHREALTIME:-0}
	if [ -n "${FILEOPS_TIMES:-}" ] && [ -n "$T_LAST" ]; then
		echo "$T_LAST ${now%.*}.${now#*.} - ${T_START%.*}.${T_START#*.}" |
			awk '{ printf "%s %.1f\n", $1, $2 - $4 }' >>"$FILEOPS_TIMES"
	fi
	T_START=$now
	T_LAST=$1
	rec "== $1"
}
# op NAME CMD...: run CMD; on failure record the error text (the part after
# the last ": " of the last stderr line, which is strerror for coreutils).
op() {
	local name=$1 err="" line ef=$WORK/err.$BASHPID
	shift
	if "$@" 2>"$ef"; then
		return 0
	fi
	while IFS= read -r line; do err=$line; done <"$ef"
	rec "FAIL $name: ${err##*: }"
	return 1
}
# Facts about files, one process per call whatever the number of files.
hash() { # FILE...: "sha256 FILE HASH"
	local h n
	sha256sum -- "$@" >"$WORK/h" 2>/dev/null
	while read -r h n; do rec "sha256 $n $h"; done <"$WORK/h"
}
hash_as() { # LABEL FILE: "sha256 LABEL HASH" for a file under another name
	local h
	sha256sum <"$2" >"$WORK/h"
	read -r h _ <"$WORK/h"
	rec "sha256 $1 $h"
}
facts() { # WHAT FORMAT FILE...: "WHAT FILE VALUE" per file (stat -c FORMAT)
	local what=$1 fmt=$2 l
	shift 2
	stat -c "%n|$fmt" -- "$@" >"$WORK/s" 2>/dev/null
	while IFS= read -r l; do rec "$what ${l%%|*} ${l#*|}"; done <"$WORK/s"
}
size() { facts size %s "$@"; }
mode() { facts mode %a "$@"; }
links() { facts links %h "$@"; }
kind() { facts type %F "$@"; }
exists() {
	local f
	for f; do
		if [ -e "$f" ] || [ -L "$f" ]; then rec "exists $f"; else rec "absent $f"; fi
	done
}
drop_caches() {
	sync
	if [ "${FILEOPS_DROP_CACHES:-0}" = 1 ]; then
		echo 3 >/proc/sys/vm/drop_caches 2>/dev/null
	fi
}
# Bytes [off, off+len) of a file into WORK/piece.
piece() { dd if="$1" of="$WORK/piece" iflag=skip_bytes,count_bytes skip="$2" count="$3" bs=65536 status=none; }
# dd wrapper writing bytes of SRC into DST at offset, without truncating.
put() { # SRC SRCOFF LEN DST DSTOFF
	dd if="$1" iflag=skip_bytes,count_bytes skip="$2" count="$3" of="$4" oflag=seek_bytes seek="$5" \
		conv=notrunc bs=65536 status=none
}
repeat() { # CHAR N: a string of N CHARs, no process
	local s
	printf -v s '%*s' "$2" ''
	printf '%s' "${s// /$1}"
}

# Deterministic pseudo-random bytes: a 32-bit LCG in awk (exact in doubles);
# mawk and gawk both print raw bytes with %c under LC_ALL=C.
R=$WORK/random
awk -v seed=12345 -v n=1048576 'BEGIN {
	x = seed
	for (i = 0; i < n; i++) {
		x = (x * 69069 + 1) % 4294967296
		printf "%c", int(x / 16777216)
	}
}' >"$R"
# Three MiB made of rotations of R, so no two MiB of the file are alike.
R3=$WORK/random3
{
	dd if="$R" bs=333333 skip=1 status=none
	dd if="$R" bs=333333 count=1 status=none
	dd if="$R" bs=700000 skip=1 status=none
	dd if="$R" bs=700000 count=1 status=none
	dd if="$R" bs=76 skip=1 status=none
	dd if="$R" bs=76 count=1 status=none
} >"$R3"

section create
op create-empty touch empty
echo hello >hello
echo x >"name with spaces"
echo y >./-dash
printf 'z\n' >$'caf\303\251-\342\202\254'
op create-255 touch "$(repeat n 255)"
op create-256 touch "$(repeat m 256)"
ls -f >"$WORK/ls"
sort "$WORK/ls" >"$WORK/ls.sorted"
hash_as "ls -f | sort" "$WORK/ls.sorted"
size empty hello
hash hello
mode hello

section write
op write-1m dd if="$R" of=a bs=4096 status=none
op write-3m dd if="$R3" of=b bs=65537 status=none
op write-small dd if="$R" of=c bs=1000 count=7 status=none
op write-overwrite dd if="$R" of=b bs=4099 seek=100 skip=3 count=5 conv=notrunc status=none
op write-unaligned put "$R" 0 12345 a 777777
drop_caches
hash a b c
size a b c
# A piece read at an odd offset.
piece b 1048570 100000
hash_as "b[1048570..+100000]" "$WORK/piece"

section append
echo line1 >>hello
op append-big dd if="$R" of=c bs=70000 count=1 oflag=append conv=notrunc status=none
printf 'tail' >>c
drop_caches
hash hello c
size c

section truncate
op truncate-shrink truncate -s 1000001 b
hash b
size b
op truncate-grow truncate -s 2500000 b
drop_caches
hash b
size b
op truncate-zero truncate -s 0 c
size c
op truncate-grow-empty truncate -s 4097 c
hash c
size c

section rename
op mkdir-d1-d2 mkdir d1 d2
op rename-same mv a a2
exists a a2
hash a2
op rename-across mv a2 d1/a3
op rename-across2 mv d1/a3 d2/a4
exists d1/a3
hash d2/a4
op rename-dir mv d2 d1/d2moved
hash d1/d2moved/a4
echo old >victim
echo new >newer
op rename-over mv -f newer victim
exists newer
hash victim
op rename-self mv -f victim victim
op mkdir-dirs mkdir dfull dempty dfull2 dother
: >dfull/x
: >dfull2/y
: >dempty2
: >dother/z
op rename-dir-over-empty mv -T dfull dempty
exists dfull dempty/x
op rename-dir-over-file mv -T dfull2 dempty2
op rename-dir-over-nonempty mv -T dfull2 dother
op rename-missing mv nosuch somewhere
op rename-into-self mv dother dother/sub

section hardlink
echo linked >l1
links l1
op link ln l1 l2
links l1 l2
op link-3 ln l1 d1/l3
links l1
echo more >>l2
hash l1
op link-unlink rm l2
links l1 d1/l3
op link-existing ln l1 d1/l3
op link-dir ln d1 d1link

section symlink
op symlink ln -s hello sl
op symlink-dangling ln -s no/such/target dangling
op symlink-long ln -s "$(repeat p 1000)" longlink
op symlink-dir ln -s d1 sldir
rec "readlink sl $(readlink sl)"
rec "readlink dangling $(readlink dangling)"
t=$(readlink longlink)
if [ "$t" = "$(repeat p 1000)" ]; then
	rec "readlink longlink ok"
else
	rec "readlink longlink differs (${#t} bytes)"
fi
kind sl
size sl longlink
hash sl
exists dangling
op cat-dangling cat dangling
ls sldir/ >"$WORK/ls"
rec "list-via-symlink" $(<"$WORK/ls")
op symlink-existing ln -s x sl

section chmod
: >m1
op mkdir-m2 mkdir m2
# One file per mode, then a single stat (process creation is slow in the
# emulated guest).
for m in 600 755 444 000 4755 2750 1777 640; do
	: >"m1.$m"
	op "chmod-$m" chmod "$m" "m1.$m"
done
mode m1.600 m1.755 m1.444 m1.000 m1.4755 m1.2750 m1.1777 m1.640
op chmod-twice chmod 640 m1
op chmod-twice2 chmod u+x,g-r m1
mode m1
op chmod-dir chmod 1777 m2
mode m2
op chmod-dir2 chmod 700 m2
mode m2
op chmod-missing chmod 644 nosuch
if [ "$(id -u)" = 0 ]; then
	op chown chown 1234:5678 m1
	op chown-dir chown 4321:8765 m2
	facts owner %u:%g m1 m2
else
	rec "chown skipped (not root)"
fi

section times
: >t1
op mkdir-t2 mkdir t2
op touch-both touch -d '2001-02-03 04:05:06.123456789' t1
facts times '%.9X %.9Y' t1
op touch-mtime touch -m -d '1999-12-31 23:59:59.5' t1
facts times '%.9X %.9Y' t1
op touch-atime touch -a -d '2010-10-10 10:10:10' t1
facts times '%.9X %.9Y' t1
op touch-dir touch -d '2005-05-05 05:05:05' t2
facts times '%.9X %.9Y' t2
op touch-old touch -d '1970-01-02 00:00:00' t1
facts mtime '%.9Y' t1
op touch-future touch -d '2100-01-01 00:00:00' t1
facts mtime '%.9Y' t1
op touch-symlink touch -h -d '2002-02-02 02:02:02' sl
facts mtime '%.9Y' sl
# A write moves mtime back from 2100 to about now.
echo w >>t1
m=$(stat -c %Y t1)
if [ "$m" -gt 1000000000 ] && [ "$m" -lt 4102444800 ]; then
	rec "mtime t1 moved on write"
else
	rec "mtime t1 did not move on write ($m)"
fi

section remove
: >r1
: >r2
op rm rm r1
exists r1
op rm-missing rm nosuch
op rm-dir-unlink unlink d1
op rmdir-nonempty rmdir d1
op rmdir-file rmdir r2
op rmdir-missing rmdir nosuch
op mkdir-existing mkdir d1
op mkdir-over-file mkdir r2
op mkdir-nested mkdir -p n1/n2/n3
op rmdir-nested rmdir n1/n2/n3 n1/n2
exists n1/n2
op cat-missing cat nosuch
create_in() { : >"$1"; }
op create-in-missing-dir create_in nosuchdir/x
op create-under-file create_in r2/x
op ls-file-as-dir ls r2/
op rm-rf-tree rm -rf n1
exists n1

section bigdir
op mkdir-big mkdir big
# The last 100 names with noclobber: O_EXCL creates (NFSv3 CREATE EXCLUSIVE,
# then SETATTR); only a few, as bash stats each name first. (Creating from
# several processes at once gains nothing: the kernel holds the directory's
# lock across each create's round trip.)
n=$((NFILES > 100 ? NFILES - 100 : 0))
for i in $(seq 1 "$n"); do : >"big/f$i"; done
set -C
for i in $(seq $((n + 1)) "$NFILES"); do : >"big/f$i"; done
set +C
ls -f big >"$WORK/big"
sort "$WORK/big" >"$WORK/big.sorted"
hash_as "ls -f big | sort" "$WORK/big.sorted"
n=0
while read -r _; do n=$((n + 1)); done <"$WORK/big"
rec "count big $n"
drop_caches
op rm-big-tenth rm -f big/f*5
ls -f big >"$WORK/big"
n=0
while read -r _; do n=$((n + 1)); done <"$WORK/big"
rec "count big after removing a tenth $n"
op rm-big rm -rf big
exists big

section sparse
op sparse-create truncate -s 16M sp
op sparse-write1 put "$R" 0 3000 sp 0
op sparse-write2 put "$R" 5 3 sp 4194307
op sparse-write3 put "$R" 0 5000 sp 5000000
op sparse-write4 put "$R3" 0 65536 sp 13107200
op sparse-write-end put "$R" 100 3 sp 16777213
drop_caches
hash sp
size sp
op sparse-extend put "$R" 9 1 sp 33554431
drop_caches
hash sp
size sp
piece sp 8000000 1000000
if cmp -s -n 1000000 "$WORK/piece" /dev/zero; then
	rec "hole reads as zeros"
else
	rec "hole does not read as zeros"
fi

section fifo
op mkfifo mkfifo fifo1
kind fifo1
mode fifo1
op mkfifo-existing mkfifo fifo1
op mkfifo-mode mkfifo -m 600 fifo2
mode fifo2

section copy
mkdir -p tree/sub/deeper
echo one >tree/one
head -c 100000 "$R" >tree/sub/two
: >tree/sub/deeper/empty
ln -s ../one tree/sub/link
chmod 640 tree/one
chmod 700 tree/sub/deeper
touch -h -d '2003-03-03 03:03:03.3' tree/sub/link
touch -d '2004-04-04 04:04:04.4' tree/one tree/sub/two tree/sub/deeper/empty
touch -d '2006-06-06 06:06:06' tree/sub/deeper tree/sub tree
op cp-a cp -a tree tree2
drop_caches
(cd tree2 && find . \( -type d -printf '%p %y %m %T@\n' \) -o -printf '%p %y %m %s %T@\n') >"$WORK/l"
sort "$WORK/l" >"$WORK/l.sorted"
while IFS= read -r l; do rec "copy $l"; done <"$WORK/l.sorted"
op cmp-copy cmp tree/sub/two tree2/sub/two
hash tree2/sub/two

section final
find . >"$WORK/find"
sort "$WORK/find" >"$WORK/find.sorted"
while IFS= read -r l; do rec "find $l"; done <"$WORK/find.sorted"
drop_caches
summary . "$WORK/sum" >"$WORK/sum.out"
while IFS= read -r l; do rec "sum $l"; done <"$WORK/sum.out"
section end
