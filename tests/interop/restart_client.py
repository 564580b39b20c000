#!/usr/bin/env python3
"""Client side of t_restart.sh, one phase per invocation (the shell kills and
restarts snfsd between phases). State is kept in a JSON file.

  restart_client.py unstable PORT EXPORT STATE   MNT, CREATE, WRITE UNSTABLE
  restart_client.py recover PORT STATE           COMMIT after restart, resend
  restart_client.py filesync PORT STATE          WRITE FILE_SYNC (then SIGKILL)
  restart_client.py handles PORT STATE           old handles after a restart

Prints "ok - ..." / "not ok - ..." lines; exits 1 if any check failed.
"""

import hashlib
import json
import os
import random
import sys

sys.dont_write_bytecode = True  # keep the source tree clean
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import nfsrpc as N  # noqa: E402
from nfsrpc import check  # noqa: E402

CHUNK = 65536
NCHUNKS = 8


def chunk(i, gen):
    """Deterministic chunk i of data generation gen."""
    return random.Random(gen * 1000 + i).randbytes(CHUNK - 1000 * i % 4096)


def chunks(gen):
    out, off = [], 0
    for i in range(NCHUNKS):
        c = chunk(i, gen)
        out.append((off, c))
        off += len(c)
    return out


def contents(gen):
    return b"".join(c for _, c in chunks(gen))


def load(path):
    with open(path) as f:
        return json.load(f)


def save(path, st):
    with open(path, "w") as f:
        json.dump(st, f)


def write_chunks(c, fh, gen, stable, order=None):
    """Write the chunks (out of order if asked); return the verifiers and
    committed levels seen."""
    verfs, levels = set(), set()
    parts = chunks(gen)
    for i in order or range(len(parts)):
        off, data = parts[i]
        st, count, committed, verf = c.write(fh, off, data, stable)
        if not check("WRITE %s chunk %d at %d" % (("UNSTABLE", "DATA_SYNC", "FILE_SYNC")[stable], i, off),
                     st == N.NFS3_OK and count == len(data),
                     "status %d count %d of %d" % (st, count, len(data))):
            continue
        verfs.add(verf.hex())
        levels.add(committed)
    return verfs, levels


def phase_unstable(port, export, state):
    with N.Client("127.0.0.1", port) as c:
        root = c.mnt(export)
        check("MNT %s" % export, len(root) > 0)
        st, fh, attr = c.create(root, "unstable.dat", 0o644, N.UNCHECKED)
        check("CREATE unstable.dat", st == N.NFS3_OK and fh, "status %d" % st)
        # Out of order, as a client flushing dirty pages may do.
        verfs, levels = write_chunks(c, fh, 1, N.UNSTABLE, [3, 0, 7, 1, 2, 6, 5, 4])
        check("UNSTABLE writes all return one verifier", len(verfs) == 1, str(verfs))
        check("UNSTABLE writes are committed at a level >= UNSTABLE",
              levels <= {N.UNSTABLE, N.DATA_SYNC, N.FILE_SYNC} and levels, str(levels))
        st, attr = c.getattr(fh)
        check("GETATTR size after UNSTABLE writes",
              st == N.NFS3_OK and attr["size"] == len(contents(1)),
              "status %d size %s" % (st, attr and attr["size"]))
    save(state, {"root": root.hex(), "fh": fh.hex(), "verf": verfs.pop() if verfs else "",
                 "export": export})


def phase_recover(port, state):
    s = load(state)
    root, fh = bytes.fromhex(s["root"]), bytes.fromhex(s["fh"])
    with N.Client("127.0.0.1", port) as c:
        c.null()
        st, verf = c.commit(fh, 0, 0)
        check("COMMIT after restart succeeds", st == N.NFS3_OK, "status %d" % st)
        new = verf.hex() if verf else ""
        check("COMMIT after restart returns a new verifier",
              new and new != s["verf"], "before %s after %s" % (s["verf"], new))
        # The verifier changed: a client must assume the unstable data is
        # lost and send it again (RFC 1813 section 3.3.21).
        verfs, _ = write_chunks(c, fh, 1, N.UNSTABLE)
        check("resent writes carry the new verifier", verfs == {new}, "%s vs %s" % (verfs, new))
        st, verf2 = c.commit(fh, 0, 0)
        check("COMMIT after resend: same verifier", st == N.NFS3_OK and verf2 and verf2.hex() == new,
              "status %d verf %s" % (st, verf2 and verf2.hex()))
        data = c.read_all(fh)
        want = contents(1)
        check("READ back after restart matches (%d bytes)" % len(want), data == want,
              "got %d bytes" % len(data))
        st, attr = c.getattr(root)
        check("GETATTR of the root handle from before the restart", st == N.NFS3_OK and attr["type"] == 2,
              "status %d" % st)
        st, attr = c.getattr(fh)
        check("GETATTR of the file handle from before the restart",
              st == N.NFS3_OK and attr["size"] == len(want), "status %d" % st)
        st, fh2, _ = c.lookup(root, "unstable.dat")
        check("LOOKUP gives the same handle as before the restart", st == N.NFS3_OK and fh2 == fh,
              "status %d" % st)
    s["verf"] = new
    s["sha_unstable"] = hashlib.sha256(want).hexdigest()
    save(state, s)


def phase_filesync(port, state):
    s = load(state)
    root = bytes.fromhex(s["root"])
    with N.Client("127.0.0.1", port) as c:
        st, fh, _ = c.create(root, "sync.dat", 0o600, N.GUARDED)
        check("CREATE GUARDED sync.dat", st == N.NFS3_OK and fh, "status %d" % st)
        st, fh2, _ = c.create(root, "sync.dat", 0o600, N.GUARDED)
        check("CREATE GUARDED of an existing name fails with EXIST", st == N.NFS3ERR_EXIST, "status %d" % st)
        _, levels = write_chunks(c, fh, 2, N.FILE_SYNC)
        check("FILE_SYNC writes are committed FILE_SYNC", levels == {N.FILE_SYNC}, str(levels))
    s["sync_fh"] = fh.hex()
    s["sha_sync"] = hashlib.sha256(contents(2)).hexdigest()
    save(state, s)


def phase_handles(port, state):
    s = load(state)
    with N.Client("127.0.0.1", port) as c:
        for name, key in (("root", "root"), ("unstable.dat", "fh"), ("sync.dat", "sync_fh")):
            st, attr = c.getattr(bytes.fromhex(s[key]))
            check("GETATTR %s handle after a second restart" % name, st == N.NFS3_OK, "status %d" % st)
        data = c.read_all(bytes.fromhex(s["sync_fh"]))
        check("READ sync.dat after SIGKILL matches", data == contents(2), "got %d bytes" % len(data))
        bad = bytearray(bytes.fromhex(s["fh"]))
        bad[len(bad) // 2] ^= 1
        st, _ = c.getattr(bytes(bad))
        check("GETATTR of a bit-flipped handle is refused",
              st in (N.NFS3ERR_BADHANDLE, N.NFS3ERR_STALE), "status %d" % st)
        st, ents, eof, _ = c.readdirplus(bytes.fromhex(s["root"]))
        names = sorted(e[1] for e in ents)
        check("READDIRPLUS of the root lists both files",
              st == N.NFS3_OK and "sync.dat" in names and "unstable.dat" in names,
              "status %d names %s" % (st, names))
        st = c.remove(bytes.fromhex(s["root"]), "sync.dat")
        check("REMOVE sync.dat", st == N.NFS3_OK, "status %d" % st)
        st, attr = c.getattr(bytes.fromhex(s["sync_fh"]))
        check("GETATTR of a removed file's handle is STALE", st == N.NFS3ERR_STALE, "status %d" % st)


def main():
    what = sys.argv[1]
    try:
        if what == "unstable":
            phase_unstable(int(sys.argv[2]), sys.argv[3], sys.argv[4])
        elif what == "recover":
            phase_recover(int(sys.argv[2]), sys.argv[3])
        elif what == "filesync":
            phase_filesync(int(sys.argv[2]), sys.argv[3])
        elif what == "handles":
            phase_handles(int(sys.argv[2]), sys.argv[3])
        else:
            sys.exit("unknown phase " + what)
    except (OSError, EOFError, N.RpcError, N.XdrError, KeyError, ValueError) as e:
        check("phase %s ran to the end" % what, False, "%s: %s" % (type(e).__name__, e))
    sys.exit(1 if N.failures() else 0)


if __name__ == "__main__":
    main()
