#!/bin/bash
# fileops.sh DIR OUT: run a fixed sequence of file operations inside DIR
# (which should be empty) and write a normalised transcript to OUT.
# fileops.sh --summary DIR: print a listing of DIR (type, mode, size, link
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
# Only bash and coreutils/findutils are used, so the script also runs over
# NFSv4 and FUSE mounts. Env: FILEOPS_DROP_CACHES=1 drops the page cache
# (root only, e.g. in the test guest) before read-backs so data comes from
# the server; FILEOPS_NFILES (default 10000) sizes the big directory.
set -u
export LC_ALL=C TZ=UTC
umask 022

# One sha256 + size + link count listing of a tree, names relative to it.
summary() {
	(cd "$1" && find . -mindepth 1 | sort | while IFS= read -r p; do
		if [ -L "$p" ]; then
			echo "$p l $(readlink "$p")"
		elif [ -d "$p" ]; then
			echo "$p d $(stat -c %a "$p")"
		elif [ -f "$p" ]; then
			echo "$p f $(stat -c '%a %s %h' "$p") $(sha256sum <"$p" | cut -c1-64)"
		else
			echo "$p $(stat -c '%F %a' "$p")"
		fi
	done)
}

if [ "${1:-}" = --summary ]; then
	summary "$2"
	exit
fi
if [ $# -ne 2 ] || [ ! -d "$1" ]; then
	echo "usage: fileops.sh DIR OUT | fileops.sh --summary DIR" >&2
	exit 2
fi
D=$1
OUT=$(cd "$(dirname "$2")" && pwd)/$(basename "$2")
NFILES=${FILEOPS_NFILES:-10000}
: >"$OUT"
cd "$D" || exit 1
WORK=$(mktemp -d "${TMPDIR:-/tmp}/fileops.XXXXXX")
trap 'rm -rf "$WORK"' EXIT

rec() { printf '%s\n' "$*" >>"$OUT"; }
section() { rec "== $1"; }
# op NAME CMD...: run CMD; on failure record the error text (the part after
# the last ": " of the last stderr line, which is strerror for coreutils).
op() {
	local name=$1 err
	shift
	if "$@" 2>"$WORK/err"; then
		return 0
	fi
	err=$(tail -n 1 "$WORK/err")
	rec "FAIL $name: ${err##*: }"
	return 1
}
# Facts about one file that must survive the trip to a server and back.
hash() { rec "sha256 $1 $(sha256sum <"$1" | cut -c1-64)"; }
size() { rec "size $1 $(stat -c %s "$1")"; }
mode() { rec "mode $1 $(stat -c %a "$1")"; }
links() { rec "links $1 $(stat -c %h "$1")"; }
kind() { rec "type $1 $(stat -c %F "$1")"; }
exists() {
	if [ -e "$1" ] || [ -L "$1" ]; then rec "exists $1"; else rec "absent $1"; fi
}
drop_caches() {
	sync
	if [ "${FILEOPS_DROP_CACHES:-0}" = 1 ]; then
		echo 3 >/proc/sys/vm/drop_caches 2>/dev/null
	fi
}

# Deterministic pseudo-random bytes: a 32-bit LCG in awk (exact in doubles).
# mawk and gawk both print raw bytes with %c under LC_ALL=C.
prng() { # seed nbytes
	awk -v seed="$1" -v n="$2" 'BEGIN {
		x = seed
		for (i = 0; i < n; i++) {
			x = (x * 69069 + 1) % 4294967296
			printf "%c", int(x / 16777216)
		}
	}'
}
R=$WORK/random
prng 12345 1048576 >"$R"
# Three more MiB made of rotations of R, so no two MiB of the file are alike.
R3=$WORK/random3
{ tail -c +333334 "$R"; head -c 333333 "$R"; tail -c +700001 "$R"; head -c 700000 "$R"; tail -c +77 "$R"; head -c 76 "$R"; } >"$R3"

section create
op create-empty touch empty
op create-redirect sh -c 'echo hello >hello'
op create-spaces sh -c 'echo x >"name with spaces"'
op create-dash sh -c 'echo y >./-dash'
op create-utf8 sh -c 'printf "z\n" >"caf$(printf "\303\251")-$(printf "\342\202\254")"'
op create-255 touch "$(printf 'n%.0s' $(seq 1 255))"
op create-256 touch "$(printf 'm%.0s' $(seq 1 256))"
ls -f | sort >"$WORK/ls"
rec "ls $(sha256sum <"$WORK/ls" | cut -c1-64) $(wc -l <"$WORK/ls")"
size empty
size hello
hash hello
mode hello

section write
op write-1m dd if="$R" of=a bs=4096 status=none
op write-3m dd if="$R3" of=b bs=65537 status=none
op write-small dd if="$R" of=c bs=1000 count=7 status=none
op write-overwrite dd if="$R" of=b bs=4099 seek=100 skip=3 count=5 conv=notrunc status=none
op write-unaligned sh -c 'head -c 12345 "$1" | dd of=a bs=1 seek=777777 conv=notrunc status=none' _ "$R"
drop_caches
for f in a b c; do
	hash "$f"
	size "$f"
done
# Pieces read at odd offsets.
rec "piece b $(tail -c +1048570 b | head -c 100000 | sha256sum | cut -c1-64)"
rec "piece a $(tail -c +777770 a | head -c 20 | od -An -tx1 | tr -d ' \n')"

section append
op append-1 sh -c 'echo line1 >>hello'
op append-2 sh -c 'head -c 70000 "$1" >>c' _ "$R"
op append-3 sh -c 'printf "tail" >>c'
drop_caches
hash hello
hash c
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
op mkdir-d1 mkdir d1
op mkdir-d2 mkdir d2
op rename-same mv a a2
exists a
exists a2
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
mkdir dfull dempty
touch dfull/x
op rename-dir-over-empty mv -T dfull dempty
exists dfull
exists dempty/x
mkdir dfull2
touch dfull2/y dempty2
op rename-dir-over-file mv -T dfull2 dempty2
rm -f dempty2
mkdir dother
touch dother/z
op rename-dir-over-nonempty mv -T dfull2 dother
op rename-missing mv nosuch somewhere

section hardlink
echo linked >l1
links l1
op link ln l1 l2
links l1
links l2
op link-3 ln l1 d1/l3
links l1
echo more >>l2
hash l1
op link-unlink rm l2
links l1
links d1/l3
op link-existing ln l1 d1/l3
op link-dir ln d1 d1link

section symlink
op symlink ln -s hello sl
op symlink-dangling ln -s no/such/target dangling
op symlink-long ln -s "$(printf 'p%.0s' $(seq 1 1000))" longlink
op symlink-dir ln -s d1 sldir
rec "readlink sl $(readlink sl)"
rec "readlink dangling $(readlink dangling)"
rec "readlink longlink $(readlink longlink | sha256sum | cut -c1-64)"
kind sl
size sl
size longlink
hash sl
exists dangling
op cat-dangling cat dangling
rec "list-via-symlink $(ls sldir | tr '\n' ' ')"
op symlink-existing ln -s x sl

section chmod
touch m1
mkdir m2
for m in 600 755 444 000 4755 2750 1777 640; do
	op "chmod-$m" chmod "$m" m1
	mode m1
done
op chmod-dir chmod 1777 m2
mode m2
op chmod-dir2 chmod 700 m2
mode m2
op chmod-missing chmod 644 nosuch
if [ "$(id -u)" = 0 ]; then
	op chown chown 1234:5678 m1
	rec "owner m1 $(stat -c '%u:%g' m1)"
	op chown-dir chown 4321:8765 m2
	rec "owner m2 $(stat -c '%u:%g' m2)"
else
	rec "chown skipped (not root)"
fi

section times
touch t1
mkdir t2
op touch-both touch -d '2001-02-03 04:05:06.123456789' t1
rec "times t1 $(stat -c '%.9X %.9Y' t1)"
op touch-mtime touch -m -d '1999-12-31 23:59:59.5' t1
rec "times t1 $(stat -c '%.9X %.9Y' t1)"
op touch-atime touch -a -d '2010-10-10 10:10:10' t1
rec "times t1 $(stat -c '%.9X %.9Y' t1)"
op touch-dir touch -d '2005-05-05 05:05:05' t2
rec "times t2 $(stat -c '%.9X %.9Y' t2)"
op touch-old touch -d '1970-01-02 00:00:00' t1
rec "mtime t1 $(stat -c '%.9Y' t1)"
op touch-future touch -d '2100-01-01 00:00:00' t1
rec "mtime t1 $(stat -c '%.9Y' t1)"
op touch-symlink touch -h -d '2002-02-02 02:02:02' sl
rec "mtime sl $(stat -c '%.9Y' sl)"
# A write moves mtime forward from an explicit old time.
echo w >>t1
if [ "$(stat -c %Y t1)" -gt 1000000000 ] && [ "$(stat -c %Y t1)" != 4102444800 ]; then
	rec "mtime t1 moved on write"
else
	rec "mtime t1 did not move on write ($(stat -c %Y t1))"
fi

section remove
touch r1 r2
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
op create-in-missing-dir bash -c ': >nosuchdir/x'
op create-under-file bash -c ': >r2/x'
op ls-file-as-dir ls r2/
op rm-rf-tree rm -rf n1
exists n1

section bigdir
mkdir big
cd big || exit 1
for i in $(seq 1 "$NFILES"); do : >"f$i"; done
cd ..
ls -f big | sort >"$WORK/ls"
rec "ls big $(sha256sum <"$WORK/ls" | cut -c1-64) $(wc -l <"$WORK/ls")"
drop_caches
rec "count big $(ls -f big | wc -l)"
rec "find big $(find big -type f | wc -l)"
op rm-big-half sh -c 'rm -f big/f*5'
rec "count big after half $(ls -f big | wc -l)"
op rm-big rm -rf big
exists big

section sparse
op sparse-create truncate -s 16M sp
op sparse-write1 dd if="$R" of=sp bs=1000 count=3 conv=notrunc status=none
op sparse-write2 sh -c 'printf abc | dd of=sp bs=1 seek=4194307 conv=notrunc status=none'
op sparse-write3 sh -c 'head -c 5000 "$1" | dd of=sp bs=5000 seek=1000 conv=notrunc status=none' _ "$R"
op sparse-write4 sh -c 'head -c 65536 "$1" | dd of=sp bs=65536 seek=200 conv=notrunc status=none' _ "$R3"
op sparse-write-end sh -c 'printf end | dd of=sp bs=1 seek=16777213 conv=notrunc status=none'
drop_caches
hash sp
size sp
op sparse-extend sh -c 'printf X | dd of=sp bs=1 seek=33554431 conv=notrunc status=none'
drop_caches
hash sp
size sp
if [ "$(tail -c +8000001 sp | head -c 1000000 | tr -d '\000' | wc -c)" = 0 ]; then
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
printf '' >tree/sub/deeper/empty
ln -s ../one tree/sub/link
chmod 640 tree/one
chmod 700 tree/sub/deeper
touch -h -d '2003-03-03 03:03:03.3' tree/sub/link
touch -d '2004-04-04 04:04:04.4' tree/one tree/sub/two tree/sub/deeper/empty
touch -d '2006-06-06 06:06:06' tree/sub/deeper tree/sub tree
op cp-a cp -a tree tree2
drop_caches
(cd tree2 && find . ! -type d -printf '%p %y %m %s %T@\n' | sort) >"$WORK/l1"
(cd tree2 && find . -type d -printf '%p %y %m %T@\n' | sort) >"$WORK/l2"
while IFS= read -r l; do rec "copy $l"; done <"$WORK/l1"
while IFS= read -r l; do rec "copydir $l"; done <"$WORK/l2"
op cmp-copy cmp tree/sub/two tree2/sub/two
hash tree2/sub/two

section final
find . | sort >"$WORK/find"
while IFS= read -r l; do rec "find $l"; done <"$WORK/find"
drop_caches
summary . >"$WORK/sum"
while IFS= read -r l; do rec "sum $l"; done <"$WORK/sum"
