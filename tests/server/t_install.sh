#!/bin/bash
# `make install` (Makefile, README): `make install DESTDIR=... PREFIX=/usr`
# puts every promised file in place with its mode (and nothing else), the
# installed binaries are the release build and run, the man pages render
# without warnings and have a NAME line, the systemd unit has its paths
# filled in, passes `systemd-analyze verify` (when there is one) and its
# ExecStart and ExecReload work with the installed snfsd, and a program
# built against the installed header and libsnfs.a alone links and runs.
# run.sh runs this after `make all asan`, so make only copies.
. "$(dirname "$0")/../lib.sh"

not_asan() { ! ldd "$1" 2>/dev/null | grep -q libasan && ! nm -D "$1" 2>/dev/null | grep -q __asan_init; }

scratch
D=$T_DIR/dest
U=$D/usr

# Under umask 077: installed modes must not depend on the caller's umask.
(umask 077 && make -C "$ROOT" install DESTDIR="$D" PREFIX=/usr) >"$T_DIR/install.log" 2>&1
rc=$?
check_eq "make install DESTDIR=... PREFIX=/usr succeeds" 0 "$rc"
[ "$rc" = 0 ] || tail -20 "$T_DIR/install.log" | sed 's/^/# /'

# ---- every file, with its mode, and nothing else
files="sbin/snfsd:755 bin/snfs:755 bin/snfs-mount:755 lib/libsnfs.a:644
include/snfs/snfs.h:644 share/man/man1/snfs.1:644
share/man/man1/snfs-mount.1:644 share/man/man8/snfsd.8:644
lib/systemd/system/snfsd.service:644"
for fm in $files; do
	f=${fm%:*} mode=${fm#*:}
	if [ -f "$U/$f" ] && [ ! -L "$U/$f" ]; then
		check_eq "installed $f mode $mode" "$mode" "$(stat -c %a "$U/$f")"
	else
		notok "installed $f (missing or not a regular file)"
	fi
done
want_list=$(for fm in $files; do echo "./usr/${fm%:*}"; done | LC_ALL=C sort)
got_list=$(cd "$D" 2>/dev/null && find . ! -type d | LC_ALL=C sort)
check_eq "nothing else is installed" "$(echo $want_list)" "$(echo $got_list)"
check_eq "installed directories are 755" "" "$(find "$D" -mindepth 1 -type d ! -perm 755 2>/dev/null)"

# ---- the copies are what the tree has
for pair in include/snfs/snfs.h:include/snfs/snfs.h doc/snfs.1:share/man/man1/snfs.1 \
	doc/snfs-mount.1:share/man/man1/snfs-mount.1 doc/snfsd.8:share/man/man8/snfsd.8 \
	build/snfsd:sbin/snfsd build/snfs:bin/snfs build/snfs-mount:bin/snfs-mount \
	build/libsnfs.a:lib/libsnfs.a; do
	check "installed ${pair#*:} is $ROOT/${pair%:*}" cmp -s "$ROOT/${pair%:*}" "$U/${pair#*:}"
done
for b in sbin/snfsd bin/snfs bin/snfs-mount; do
	check "$b is the release build (no ASan runtime)" not_asan "$U/$b"
done

# ---- the binaries run
version=$(sed -n 's/^#define SNFSD_VERSION "\(.*\)"/\1/p' "$ROOT/src/server/main.c")
out=$("$U/sbin/snfsd" --version 2>&1)
rc=$?
check_eq "installed snfsd --version" "0 snfsd $version" "$rc $out"
"$U/sbin/snfsd" --help >"$T_DIR/help.out" 2>&1
rc=$?
check_eq "installed snfsd --help exits 0" 0 "$rc"
check "snfsd --help says how to use it" grep -q '^Usage: snfsd' "$T_DIR/help.out"
missing=""
for o in $(grep -o -- '--[a-z][a-z-]*' "$T_DIR/help.out" | sort -u); do
	grep -qF -- "$(echo "$o" | sed 's/-/\\-/g')" "$U/share/man/man8/snfsd.8" || missing="$missing $o"
done
check_eq "every option of snfsd --help is in snfsd(8)" "" "${missing# }"
for b in bin/snfs bin/snfs-mount; do
	"$U/$b" --help >"$T_DIR/b.out" 2>&1
	check_eq "installed $b --help exits 0" 0 $?
	check "$b --help prints a usage line" grep -qi '^usage: ' "$T_DIR/b.out"
done

# ---- man pages: render without warnings, a NAME whatis can read, a
# .TH that matches the file name
for page in man1/snfs.1 man1/snfs-mount.1 man8/snfsd.8; do
	f=$U/share/man/$page
	name=$(basename "$page")
	sec=${name##*.} name=${name%.*}
	out=$(groff -man -ww -z "$f" 2>&1)
	check_eq "groff -man -ww: $page renders without warnings" "" "$out"
	if command -v man >/dev/null; then
		out=$(MANWIDTH=80 man --warnings -l "$f" 2>&1 >/dev/null)
		check_eq "man --warnings -l: $page renders without warnings" "" "$out"
	fi
	th=$(awk '$1 == ".TH" { gsub(/"/, ""); print $2, $3; exit }' "$f")
	check_eq "$page: .TH names it" "$(echo "$name" | tr a-z A-Z) $sec" "$(echo "$th" | tr a-z A-Z)"
	if command -v lexgrog >/dev/null; then
		check "$page: lexgrog finds a NAME line for $name" \
			sh -c 'lexgrog "$1" | grep -q "\"$2 - "' _ "$f" "$name"
	fi
done
if command -v man >/dev/null; then
	out=$(MANPATH=$U/share/man MANWIDTH=80 man 8 snfsd 2>/dev/null | grep -c 'snfsd')
	if [ "${out:-0}" -gt 0 ]; then ok "man 8 snfsd finds the installed page"; else notok "man 8 snfsd finds the installed page"; fi
fi

# ---- the systemd unit
unit=$U/lib/systemd/system/snfsd.service
check_eq "unit: no @...@ left" "" "$(grep -o '@[A-Z_]*@' "$unit" 2>/dev/null)"
check_eq "unit: DESTDIR is not in it" "" "$(grep -F "$D" "$unit" 2>/dev/null)"
exec_start=$(sed -n 's/^ExecStart=//p' "$unit")
check_eq "unit: ExecStart runs PREFIX/sbin/snfsd" /usr/sbin/snfsd "${exec_start%% *}"
check "unit: Documentation names snfsd(8), which is installed" \
	sh -c 'grep -q "^Documentation=.*man:snfsd(8)" "$1" && test -f "$2"' _ "$unit" "$U/share/man/man8/snfsd.8"
state_dir=$(sed -n 's/^StateDirectory=//p' "$unit")
case " $exec_start " in
*" -s /var/lib/$state_dir "*) ok "unit: snfsd -s is the StateDirectory= (/var/lib/$state_dir)" ;;
*) notok "unit: snfsd -s is the StateDirectory= ('$state_dir'; ExecStart: $exec_start)" ;;
esac

# A second install with a PREFIX that exists here, so that systemd-analyze
# finds ExecStart's binary and Documentation's page.
PFX=$T_DIR/pfx
make -C "$ROOT" install PREFIX="$PFX" >"$T_DIR/install2.log" 2>&1
check_eq "make install PREFIX=$PFX (no DESTDIR) succeeds" 0 $?
check_eq "unit: ExecStart follows PREFIX" "$PFX/sbin/snfsd" \
	"$(sed -n 's/^ExecStart=\([^ ]*\).*/\1/p' "$PFX/lib/systemd/system/snfsd.service")"
if command -v systemd-analyze >/dev/null; then
	out=$(MANPATH=$PFX/share/man systemd-analyze verify "$PFX/lib/systemd/system/snfsd.service" 2>&1)
	rc=$?
	check_eq "systemd-analyze verify accepts the unit (status, output)" "0 " "$rc $out"
else
	echo "# systemd-analyze not installed: unit verification skipped"
fi

# ExecStart's command line, with the unit's files moved into the scratch
# directory and the address and port made local, starts the installed
# snfsd; ExecReload re-reads the exports; SIGTERM (systemctl stop) exits 0.
mkdir -p "$T_DIR/export" "$T_DIR/unit-state"
echo "$T_DIR/export 127.0.0.1(rw)" >"$T_DIR/exports"
port=$(free_port)
read -ra argv <<<"$exec_start"
argv[0]=$U/sbin/snfsd
for i in "${!argv[@]}"; do
	case ${argv[$i]} in
	/etc/exports.snfsd) argv[$i]=$T_DIR/exports ;;
	"/var/lib/$state_dir") argv[$i]=$T_DIR/unit-state ;;
	0.0.0.0) argv[$i]=127.0.0.1 ;;
	esac
done
"${argv[@]}" -p "$port" --no-portmap >"$T_DIR/unit.log" 2>&1 &
SNFSD_PID=$!
up=no
for _ in $(seq 200); do
	(exec 3<>/dev/tcp/127.0.0.1/"$port") 2>/dev/null && up=yes && break
	snfsd_alive || break
	sleep 0.1
done
if [ "$up" = yes ]; then ok "unit's ExecStart command line starts the installed snfsd"; else notok "unit's ExecStart command line starts the installed snfsd"; fi
check "... exporting what the exports file says" grep -q "export $T_DIR/export " "$T_DIR/unit.log"
reload=$(sed -n 's/^ExecReload=//p' "$unit")
reload=${reload//\$MAINPID/$SNFSD_PID}
if [ -n "$reload" ] && $reload 2>/dev/null; then ok "unit's ExecReload runs"; else notok "unit's ExecReload runs ('$reload')"; fi
for _ in $(seq 50); do
	grep -q 'exports reloaded' "$T_DIR/unit.log" && break
	sleep 0.1
done
check "... and snfsd re-reads the exports" grep -q 'exports reloaded' "$T_DIR/unit.log"
snfsd_stop TERM
check_eq "SIGTERM (systemctl stop): exit status 0" 0 $?

# ---- libsnfs: a program built against the installed header and archive
# alone (strict C99, and C++ if there is a compiler) links and runs
cat >"$T_DIR/prog.c" <<'EOF'
#include <snfs/snfs.h>

#include <errno.h>
#include <stdio.h>
#include <string.h>

int main(void)
{
	struct snfs_url u;
	struct snfs_ctx *ctx = NULL;
	int rc;

	if (snfs_url_parse("nfs://127.0.0.1:2050/srv/x?version=4.2", &u) != 0)
		return 10;
	if (strcmp(u.host, "127.0.0.1") || strcmp(u.path, "/srv/x") ||
	    u.port != 2050 || u.version != SNFS_V42)
		return 11;
	snfs_url_free(&u);
	if (!snfs_is_url("nfs://h/x") || snfs_is_url("/local/path"))
		return 12;
	rc = snfs_url_parse("http://h/x", &u);
	if (rc != -EINVAL || !snfs_last_error() || !*snfs_last_error())
		return 13;
	/* the mount path, failing before any network: a bad URL */
	rc = snfs_mount("nfs://", NULL, &ctx);
	if (rc >= 0 || ctx)
		return 14;
	printf("mount: %s (%s)\n", strerror(-rc), snfs_last_error());
	return 0;
}
EOF
CC=${CC:-cc}
$CC -std=c99 -Wall -Wextra -Werror -pedantic -I"$U/include" -o "$T_DIR/prog" \
	"$T_DIR/prog.c" "$U/lib/libsnfs.a" -pthread >"$T_DIR/cc.log" 2>&1
rc=$?
check_eq "prog.c builds with -I\$DESTDIR/usr/include and libsnfs.a -pthread only" 0 "$rc"
[ "$rc" = 0 ] || sed 's/^/# /' "$T_DIR/cc.log" | head -20
out=$("$T_DIR/prog" 2>&1)
rc=$?
check_eq "prog runs: URL parsing, snfs_is_url, errors (status)" 0 "$rc"
check "prog: a bad mount URL fails with a message" grep -q '^mount: .* (.\+)' <<<"$out"
if command -v c++ >/dev/null; then
	printf '#include <snfs/snfs.h>\nint main() { return snfs_is_url("nfs://h/x") ? 0 : 1; }\n' >"$T_DIR/prog.cc"
	c++ -Wall -Wextra -Werror -I"$U/include" -o "$T_DIR/progxx" "$T_DIR/prog.cc" \
		"$U/lib/libsnfs.a" -pthread >"$T_DIR/cxx.log" 2>&1
	rc=$?
	check_eq "the header works from C++ (extern \"C\"): builds and links" 0 "$rc"
	[ "$rc" = 0 ] || sed 's/^/# /' "$T_DIR/cxx.log" | head -10
	check "... and runs" "$T_DIR/progxx"
fi
check_eq "libsnfs.a has no main and no server code" "" \
	"$(nm "$U/lib/libsnfs.a" 2>/dev/null | grep -E ' T (main|rpc_server_new|nfs4_server_free)$' | head -3)"

# ---- installing again over an installed tree changes nothing
before=$(cd "$D" && find . -type f -exec md5sum {} + | sort)
make -C "$ROOT" install DESTDIR="$D" PREFIX=/usr >"$T_DIR/install3.log" 2>&1
check_eq "make install again succeeds" 0 $?
check_eq "... and leaves the same files" "$before" "$(cd "$D" && find . -type f -exec md5sum {} + | sort)"
[ "$T_FAILS" = 0 ]
