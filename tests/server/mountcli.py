#!/usr/bin/env python3
"""A tiny MOUNT v3 client (RFC 1813 appendix I over RFC 5531 RPC), stdlib
only, for the snfsd integration tests.

usage: mountcli.py [--udp] HOST PORT export|dump|null
       mountcli.py [--udp] HOST PORT mnt|umnt PATH

export prints "PATH GROUP GROUP..." per export; mnt prints the mountstat3
and, on success, the handle in hex; dump prints "HOST PATH" per entry.
Exit status: 0 on an RPC success (whatever the mountstat3), 1 otherwise.
"""
import os
import socket
import struct
import sys

MOUNT_PROG, MOUNT_VERS = 100005, 3
PROCS = {"null": 0, "mnt": 1, "dump": 2, "umnt": 3, "umntall": 4, "export": 5}


def pack_string(s):
    b = s.encode()
    return struct.pack(">I", len(b)) + b + b"\0" * (-len(b) % 4)


class Reader:
    def __init__(self, data):
        self.data, self.pos = data, 0

    def u32(self):
        if self.pos + 4 > len(self.data):
            raise ValueError("short reply")
        (v,) = struct.unpack_from(">I", self.data, self.pos)
        self.pos += 4
        return v

    def opaque(self):
        n = self.u32()
        if self.pos + n > len(self.data):
            raise ValueError("short reply")
        b = self.data[self.pos:self.pos + n]
        self.pos += n + (-n % 4)
        return b

    def string(self):
        return self.opaque().decode(errors="replace")


def call(host, port, proc, args=b"", udp=False):
    xid = int.from_bytes(os.urandom(4), "big")
    body = struct.pack(">I", 0) + pack_string("mountcli") \
        + struct.pack(">III", os.getuid(), os.getgid(), 0)
    cred = struct.pack(">II", 1, len(body)) + body  # AUTH_SYS
    msg = struct.pack(">IIIIII", xid, 0, 2, MOUNT_PROG, MOUNT_VERS, proc) \
        + cred + struct.pack(">II", 0, 0) + args
    fam = socket.AF_INET6 if ":" in host else socket.AF_INET
    if udp:
        s = socket.socket(fam, socket.SOCK_DGRAM)
        s.settimeout(5)
        s.sendto(msg, (host, port))
        data = s.recv(65536)
    else:
        s = socket.create_connection((host, port), timeout=5)
        s.sendall(struct.pack(">I", 0x80000000 | len(msg)) + msg)
        data = b""
        last = False
        while not last:
            hdr = recv_all(s, 4)
            (mark,) = struct.unpack(">I", hdr)
            last = bool(mark & 0x80000000)
            data += recv_all(s, mark & 0x7FFFFFFF)
    s.close()
    r = Reader(data)
    if r.u32() != xid or r.u32() != 1:
        raise ValueError("not a reply to our call")
    if r.u32() != 0:
        raise ValueError("call denied")
    r.u32()
    r.opaque()  # verifier
    stat = r.u32()
    if stat != 0:
        raise ValueError("accept_stat %d" % stat)
    return r


def recv_all(s, n):
    b = b""
    while len(b) < n:
        chunk = s.recv(n - len(b))
        if not chunk:
            raise ValueError("connection closed")
        b += chunk
    return b


def main(argv):
    udp = False
    if argv and argv[0] == "--udp":
        udp, argv = True, argv[1:]
    if len(argv) < 3 or argv[2] not in PROCS:
        print(__doc__, file=sys.stderr)
        return 2
    host, port, op = argv[0], int(argv[1]), argv[2]
    args = pack_string(argv[3]) if op in ("mnt", "umnt") else b""
    try:
        r = call(host, port, PROCS[op], args, udp)
        if op == "export":
            while r.u32():
                path, groups = r.string(), []
                while r.u32():
                    groups.append(r.string())
                print(path, *groups)
        elif op == "dump":
            while r.u32():
                print(r.string(), r.string())
        elif op == "mnt":
            st = r.u32()
            if st == 0:
                fh = r.opaque()
                flavors = [r.u32() for _ in range(r.u32())]
                print(st, fh.hex(), *flavors)
            else:
                print(st)
    except (OSError, ValueError) as e:
        print("mountcli: %s" % e, file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
