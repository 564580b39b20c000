#!/bin/bash
# NFSv3 against libnfs: the libnfs-utils tools (nfs-ls, nfs-cp, nfs-cat)
# and, through python3 ctypes, the libnfs library calls that reach the
# procedures the tools never send (MKDIR, SYMLINK, READLINK, LINK, RENAME,
# SETATTR, ACCESS, FSSTAT, MKNOD, COMMIT, REMOVE, RMDIR).
. "$(dirname "$0")/../../lib.sh"

if ! command -v nfs-ls >/dev/null; then
	echo "not ok - libnfs-utils not installed (make deps-test)"
	exit 1
fi

scratch
EXP=$T_DIR/export
mkdir -p "$EXP"
PORT=$(free_port)
check "snfsd starts" snfsd_start "$PORT" --no-portmap \
	-e "$EXP:rw,insecure,no_root_squash"
Q="?version=3&nfsport=$PORT&mountport=$PORT"
URL="nfs://127.0.0.1$EXP"

# ---- nfs-ls: READDIRPLUS, LOOKUP, GETATTR, FSINFO ----
echo "hello over nfs" >"$EXP/hello.txt"
mkdir -p "$EXP/sub/deeper"
echo inner >"$EXP/sub/deeper/inner.txt"
ln -s hello.txt "$EXP/link"
out=$(nfs-ls "$URL/$Q" 2>&1)
check "nfs-ls lists hello.txt" grep -q 'hello.txt' <<<"$out"
check "nfs-ls lists sub" grep -q ' sub$' <<<"$out"
check "nfs-ls lists the symlink" grep -q 'link' <<<"$out"
out=$(nfs-ls -R "$URL/$Q" 2>&1)
check "nfs-ls -R reaches sub/deeper/inner.txt" grep -q 'inner.txt' <<<"$out"
out=$(nfs-ls "$URL/sub$Q" 2>&1)
check "nfs-ls of a subdirectory" grep -q 'deeper' <<<"$out"

# a directory bigger than one READDIRPLUS reply
mkdir "$EXP/many"
(cd "$EXP/many" && seq -f 'file-with-a-longish-name-%05g' 1 5000 | xargs touch)
n=$(nfs-ls "$URL/many$Q" 2>/dev/null | grep -c 'file-with-a-longish-name-')
check_eq "nfs-ls of 5000 entries" 5000 "$n"

# ---- nfs-cat: READ ----
check_eq "nfs-cat reads a file" "hello over nfs" "$(nfs-cat "$URL/hello.txt$Q" 2>&1)"
check "nfs-cat of a missing file fails" bash -c "! nfs-cat '$URL/missing$Q' >/dev/null 2>&1"

# ---- nfs-cp both ways: CREATE, WRITE, READ (5 MiB of random data) ----
head -c $((5 * 1024 * 1024)) /dev/urandom >"$T_DIR/random.bin"
want=$(sha256sum <"$T_DIR/random.bin" | cut -d' ' -f1)
check "nfs-cp local -> nfs" nfs-cp "$T_DIR/random.bin" "$URL/up.bin$Q"
check_eq "uploaded file matches" "$want" "$(sha256sum <"$EXP/up.bin" | cut -d' ' -f1)"
check "nfs-cp nfs -> local" nfs-cp "$URL/up.bin$Q" "$T_DIR/down.bin"
check_eq "downloaded file matches" "$want" "$(sha256sum <"$T_DIR/down.bin" | cut -d' ' -f1)"
# odd sizes cross the 4-byte XDR padding (nfs-cp will not overwrite a
# local file, so each round starts without one)
for size in 0 1 3 4097 1048577; do
	head -c "$size" /dev/urandom >"$T_DIR/odd.bin"
	rm -f "$T_DIR/odd-back.bin"
	nfs-cp "$T_DIR/odd.bin" "$URL/odd-$size.bin$Q" >/dev/null 2>&1
	nfs-cp "$URL/odd-$size.bin$Q" "$T_DIR/odd-back.bin" >/dev/null 2>&1
	check "round trip of $size bytes" cmp -s "$T_DIR/odd.bin" "$T_DIR/odd-back.bin"
done

# ---- libnfs library calls for the remaining procedures ----
if python3 -c 'import ctypes.util, sys; sys.exit(0 if ctypes.util.find_library("nfs") else 1)'; then
	python3 - "$URL/$Q" "$EXP" <<'EOF'
import ctypes, ctypes.util, os, stat, sys

url, exp = sys.argv[1], sys.argv[2]
lib = ctypes.CDLL(ctypes.util.find_library("nfs"))
vp = ctypes.c_void_p
lib.nfs_init_context.restype = vp
lib.nfs_parse_url_dir.restype = vp
lib.nfs_parse_url_dir.argtypes = [vp, ctypes.c_char_p]
lib.nfs_get_error.restype = ctypes.c_char_p
lib.nfs_get_error.argtypes = [vp]
for f in ("nfs_mkdir", "nfs_rmdir", "nfs_unlink"):
    getattr(lib, f).argtypes = [vp, ctypes.c_char_p]
for f in ("nfs_symlink", "nfs_link", "nfs_rename"):
    getattr(lib, f).argtypes = [vp, ctypes.c_char_p, ctypes.c_char_p]
lib.nfs_readlink.argtypes = [vp, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_int]
lib.nfs_chmod.argtypes = [vp, ctypes.c_char_p, ctypes.c_int]
lib.nfs_truncate.argtypes = [vp, ctypes.c_char_p, ctypes.c_uint64]
lib.nfs_access.argtypes = [vp, ctypes.c_char_p, ctypes.c_int]
lib.nfs_mknod.argtypes = [vp, ctypes.c_char_p, ctypes.c_int, ctypes.c_int]
lib.nfs_creat.argtypes = [vp, ctypes.c_char_p, ctypes.c_int, ctypes.POINTER(vp)]
lib.nfs_fsync.argtypes = [vp, vp]
lib.nfs_close.argtypes = [vp, vp]
lib.nfs_statvfs.argtypes = [vp, ctypes.c_char_p, ctypes.c_void_p]
lib.nfs_mount.argtypes = [vp, ctypes.c_char_p, ctypes.c_char_p]

class NfsUrl(ctypes.Structure):
    _fields_ = [("server", ctypes.c_char_p), ("path", ctypes.c_char_p),
                ("file", ctypes.c_char_p)]

fails = 0
def check(name, cond):
    global fails
    print(("ok - " if cond else "not ok - ") + "libnfs: " + name)
    fails += 0 if cond else 1

nfs = lib.nfs_init_context()
u = lib.nfs_parse_url_dir(nfs, url.encode())
check("parse url", bool(u))
if not u:
    sys.exit(1)
nu = ctypes.cast(u, ctypes.POINTER(NfsUrl)).contents
rc = lib.nfs_mount(nfs, nu.server, nu.path)
check("mount", rc == 0)
if rc:
    print("# " + str(lib.nfs_get_error(nfs)))
    sys.exit(1)

def P(p):
    return p.encode()

check("MKDIR", lib.nfs_mkdir(nfs, P("/newdir")) == 0 and os.path.isdir(exp + "/newdir"))
check("MKDIR of an existing name fails", lib.nfs_mkdir(nfs, P("/newdir")) != 0)
check("SYMLINK", lib.nfs_symlink(nfs, P("hello.txt"), P("/newlink")) == 0
      and os.readlink(exp + "/newlink") == "hello.txt")
buf = ctypes.create_string_buffer(256)
check("READLINK", lib.nfs_readlink(nfs, P("/newlink"), buf, 256) == 0
      and buf.value == b"hello.txt")
check("LINK", lib.nfs_link(nfs, P("/hello.txt"), P("/newdir/hard")) == 0
      and os.stat(exp + "/hello.txt").st_nlink == 2)
check("RENAME across directories", lib.nfs_rename(nfs, P("/newdir/hard"), P("/moved")) == 0
      and os.path.exists(exp + "/moved") and not os.path.exists(exp + "/newdir/hard"))
check("SETATTR mode", lib.nfs_chmod(nfs, P("/moved"), 0o600) == 0
      and stat.S_IMODE(os.stat(exp + "/moved").st_mode) == 0o600)
check("SETATTR size", lib.nfs_truncate(nfs, P("/moved"), 5) == 0
      and os.path.getsize(exp + "/moved") == 5)
check("ACCESS R_OK", lib.nfs_access(nfs, P("/moved"), os.R_OK) == 0)
sv = ctypes.create_string_buffer(256)
check("FSSTAT (statvfs)", lib.nfs_statvfs(nfs, P("/"), sv) == 0)
check("MKNOD fifo", lib.nfs_mknod(nfs, P("/fifo"), stat.S_IFIFO | 0o600, 0) == 0
      and stat.S_ISFIFO(os.lstat(exp + "/fifo").st_mode))
fh = vp()
ok = lib.nfs_creat(nfs, P("/synced"), 0o644, ctypes.byref(fh)) == 0
check("CREATE", ok and os.path.exists(exp + "/synced"))
if ok:
    check("COMMIT (fsync)", lib.nfs_fsync(nfs, fh) == 0)
    lib.nfs_close(nfs, fh)
check("REMOVE", lib.nfs_unlink(nfs, P("/moved")) == 0 and not os.path.exists(exp + "/moved"))
check("REMOVE of a missing name fails", lib.nfs_unlink(nfs, P("/moved")) != 0)
check("RMDIR of a non-empty directory fails", lib.nfs_rmdir(nfs, P("/sub")) != 0)
check("RMDIR", lib.nfs_rmdir(nfs, P("/newdir")) == 0 and not os.path.exists(exp + "/newdir"))
lib.nfs_destroy_context(vp(nfs))
sys.exit(1 if fails else 0)
EOF
	[ $? = 0 ] || T_FAILS=$((T_FAILS + 1))
else
	echo "# libnfs library not found by ctypes; skipping library calls"
fi

check "snfsd still alive" snfsd_alive
snfsd_stop
check_no_sanitizer_reports "nfs3 libnfs suite"
[ "$T_FAILS" = 0 ]
