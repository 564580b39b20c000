#!/usr/bin/env python3
"""A TCP proxy that records RPC calls (stdlib only), for seed corpora.

    recproxy.py LISTEN_PORT SERVER_PORT OUTDIR

Forwards every connection on 127.0.0.1:LISTEN_PORT to 127.0.0.1:SERVER_PORT
unchanged. The client-to-server byte stream of connection N is kept whole
as OUTDIR/cN.stream and split into RPC records (RFC 5531 section 11 record
marking, fragments joined) as OUTDIR/cN-M.rec. Stops on SIGTERM.
"""

import os
import signal
import socket
import struct
import sys
import threading


def split_records(data):
    """Yield the complete records of a record-marked stream."""
    pos, cur = 0, b""
    while pos + 4 <= len(data):
        (mark,) = struct.unpack(">I", data[pos:pos + 4])
        flen = mark & 0x7FFFFFFF
        if pos + 4 + flen > len(data):
            return
        cur += data[pos + 4:pos + 4 + flen]
        pos += 4 + flen
        if mark & 0x80000000:
            yield cur
            cur = b""


class Conn:
    def __init__(self, n, client, outdir, server_port):
        self.n = n
        self.client = client
        self.outdir = outdir
        self.server = socket.create_connection(("127.0.0.1", server_port))
        self.stream = bytearray()
        self.lock = threading.Lock()

    def pump(self, src, dst, record):
        try:
            while True:
                b = src.recv(65536)
                if not b:
                    break
                if record:
                    with self.lock:
                        self.stream += b
                dst.sendall(b)
        except OSError:
            pass
        for s in (src, dst):
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def save(self):
        data = bytes(self.stream)
        with open(os.path.join(self.outdir, "c%d.stream" % self.n), "wb") as f:
            f.write(data)
        for m, rec in enumerate(split_records(data)):
            path = os.path.join(self.outdir, "c%d-%d.rec" % (self.n, m))
            with open(path, "wb") as f:
                f.write(rec)

    def run(self):
        up = threading.Thread(target=self.pump,
                              args=(self.client, self.server, True))
        up.start()
        self.pump(self.server, self.client, False)
        up.join()
        self.save()
        self.client.close()
        self.server.close()


def main():
    port, server_port, outdir = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
    os.makedirs(outdir, exist_ok=True)
    ls = socket.socket()
    ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    ls.bind(("127.0.0.1", port))
    ls.listen(16)
    signal.signal(signal.SIGTERM, lambda *a: os._exit(0))
    n = 0
    while True:
        c, _ = ls.accept()
        conn = Conn(n, c, outdir, server_port)
        n += 1
        threading.Thread(target=conn.run, daemon=True).start()


if __name__ == "__main__":
    main()
