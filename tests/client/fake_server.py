#!/usr/bin/env python3
"""A hostile NFSv3/MOUNT server for client robustness tests.

fake_server.py PORT MODE [SEED]: listens on 127.0.0.1:PORT and answers every
ONC RPC call badly, by MODE:
  random     records of random bytes (half carry the call's xid)
(MOUNT calls are always answered properly, so the NFS side gets the abuse.)
  body       proper RPC headers; MOUNT works, FSINFO and GETATTR are valid,
             every other NFS result is status OK followed by random bytes
  truncated  like body, but each reply is cut short inside its record, or
             its record mark promises more than is sent before the close
  huge       a record mark of 2 GiB, then junk
  frag       valid-looking replies split into 1-byte fragments with a
             garbage tail
  silent     NFS calls (FSINFO aside) are never answered; the connection
             stays open
  stall      half a reply is sent, then nothing more; the connection stays
             open
Prints "listening" once ready.
"""
import os
import random
import socket
import struct
import sys
import threading

PORT, MODE = int(sys.argv[1]), sys.argv[2]
rng = random.Random(int(sys.argv[3]) if len(sys.argv) > 3 else os.getpid())
lock = threading.Lock()


def rnd(n):
    with lock:
        return bytes(rng.getrandbits(8) for _ in range(n))


def rint(a, b):
    with lock:
        return rng.randint(a, b)


def fattr(ftype=2, size=4096):
    return struct.pack(">IIIIIQQIIQQIIIIII", ftype, 0o755, 2, 0, 0, size,
                       size, 0, 0, 1, 2, 0, 0, 0, 0, 0, 0)


def header(xid):
    # REPLY, MSG_ACCEPTED, AUTH_NONE verifier, SUCCESS
    return struct.pack(">IIIIII", xid, 1, 0, 0, 0, 0)


def result(prog, proc):
    if prog == 100005:
        if proc == 5:  # EXPORT: one export "/export"
            return struct.pack(">II", 1, 7) + b"/export\0" + struct.pack(">II", 0, 0)
        if proc == 1:  # MNT: a handle, AUTH_SYS
            return struct.pack(">II", 0, 8) + b"fakefh!!" + struct.pack(">II", 1, 1)
        return b""
    if prog == 100003 and proc == 19:  # FSINFO
        return struct.pack(">II", 0, 1) + fattr() + struct.pack(
            ">IIIIIIIQIII", 1 << 20, 1 << 20, 4096, 1 << 20, 1 << 20, 4096,
            65536, 1 << 40, 0, 1, 0x1b)
    if prog == 100003 and proc == 1 and rint(0, 1):  # GETATTR
        return struct.pack(">I", 0) + fattr(rint(1, 2), rint(0, 1 << 30))
    body = struct.pack(">I", 0) + rnd(rint(0, 600))
    if rint(0, 2) == 0:  # a plausible start: attributes follow
        body = struct.pack(">II", 0, 1) + fattr(rint(0, 9), rint(0, 1 << 40)) + rnd(rint(0, 300))
    return body


def record(data):
    return struct.pack(">I", 0x80000000 | len(data)) + data


def read_exact(conn, n):
    buf = b""
    while len(buf) < n:
        chunk = conn.recv(n - len(buf))
        if not chunk:
            raise EOFError
        buf += chunk
    return buf


def read_call(conn):
    data = b""
    while True:
        (mark,) = struct.unpack(">I", read_exact(conn, 4))
        data += read_exact(conn, mark & 0x7FFFFFFF)
        if mark & 0x80000000:
            return data


def answer(conn, call):
    xid, _, _, prog, vers, proc = struct.unpack(">IIIIII", call[:24])
    if prog == 100005:  # let the mount succeed: the NFS side is the target
        conn.sendall(record(header(xid) + result(prog, proc)))
        return
    if MODE == "random":
        junk = rnd(rint(0, 512))
        if rint(0, 1) and len(junk) >= 4:
            junk = struct.pack(">I", xid) + junk[4:]
        conn.sendall(record(junk))
        return
    if MODE == "huge":
        conn.sendall(struct.pack(">I", 0xFFFFFFFF) + rnd(100))
        return
    if MODE == "silent" and prog == 100003 and proc != 19:
        return
    reply = header(xid) + result(prog, proc)
    if MODE == "stall" and prog == 100003 and proc != 19:
        conn.sendall(struct.pack(">I", 0x80000000 | len(reply)) + reply[: len(reply) // 2])
        return
    if MODE == "truncated" and prog == 100003 and proc != 19:
        if rint(0, 1):
            conn.sendall(record(reply[: rint(0, len(reply))]))
        else:
            conn.sendall(struct.pack(">I", 0x80000000 | (len(reply) + 100)) + reply)
            raise EOFError
        return
    if MODE == "frag" and prog == 100003 and proc != 19:
        reply += rnd(rint(0, 64))
        out = b"".join(struct.pack(">I", 1) + reply[i:i + 1] for i in range(len(reply) - 1))
        conn.sendall(out + record(reply[-1:]))
        return
    conn.sendall(record(reply))


def serve(conn):
    try:
        while True:
            call = read_call(conn)
            if len(call) < 24:
                return
            answer(conn, call)
    except (EOFError, OSError, struct.error):
        pass
    finally:
        conn.close()


def main():
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind(("127.0.0.1", PORT))
    s.listen(16)
    print("listening", flush=True)
    while True:
        conn, _ = s.accept()
        threading.Thread(target=serve, args=(conn,), daemon=True).start()


main()
