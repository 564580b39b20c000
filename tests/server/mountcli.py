#!/usr/bin/env python3
"""A tiny MOUNT v3 client (RFC 1813 appendix I over RFC 5531 RPC), stdlib
only, for the snfsd integration tests; the RPC side is tests/interop/nfsrpc.py.

usage: mountcli.py [--udp] HOST PORT export|dump|null
       mountcli.py [--udp] HOST PORT mnt|umnt PATH

export prints "PATH GROUP GROUP..." per export; mnt prints the mountstat3
and, on success, the handle in hex; dump prints "HOST PATH" per entry.
Exit status: 0 on an RPC success (whatever the mountstat3), 1 otherwise.
"""
import os
import sys

sys.dont_write_bytecode = True  # keep the source tree clean
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "interop"))
import nfsrpc as N  # noqa: E402

PROCS = ("null", "mnt", "dump", "umnt", "umntall", "export")


def run(c, op, arg):
    """Do op over client c and print its result."""
    if op == "export":
        for path, groups in c.mnt_export():
            print(path, *groups)
    elif op == "dump":
        for host, path in c.mnt_dump():
            print(host, path)
    elif op == "mnt":
        st, fh, flavors = c.mnt_raw(arg)
        if st == 0:
            print(st, fh.hex(), *flavors)
        else:
            print(st)
    elif op == "umnt":
        c.umnt(arg)
    elif op == "umntall":
        c.call(N.MOUNT_PROG, 3, N.MOUNTPROC3_UMNTALL)
    else:
        c.mnt_null()


def main(argv):
    proto = "tcp"
    if argv and argv[0] == "--udp":
        proto, argv = "udp", argv[1:]
    if len(argv) < 3 or argv[2] not in PROCS or (argv[2] in ("mnt", "umnt") and len(argv) < 4):
        print(__doc__, file=sys.stderr)
        return 2
    host, port, op = argv[0], int(argv[1]), argv[2]
    cred = N.auth_sys(os.getuid(), os.getgid(), machine="mountcli")
    try:
        with N.Client(host, port, proto, timeout=5, cred=cred) as c:
            run(c, op, argv[3] if len(argv) > 3 else None)
    except (OSError, EOFError, N.RpcError, N.XdrError) as e:
        print("mountcli: %s" % e, file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
