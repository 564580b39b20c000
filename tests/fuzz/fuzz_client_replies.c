/* libFuzzer target for libsnfs's reply decoders (src/client): the library
 * talks to a fake server, a thread on a loopback listener that answers
 * each call with the next reply taken from the input (its xid patched to
 * the call's), while the harness drives the public API (snfs.h) over NFSv3
 * or NFSv4.1/4.2: mount, stat, readlink, statvfs, a listing of many
 * entries, reads (pread, read_segments, SEEK), optionally writes, umount.
 * Every call must return, with an error or a result: a sanitizer report,
 * a leak or a timeout (libFuzzer -timeout) is a finding.
 *
 * Input: byte 0, then replies, each <u16 BE length><reply record without
 * the xid>:
 *   - byte 0 % 3: NFSv3, NFSv4.1, NFSv4.2;
 *     byte 0 & 4: READDIRPLUS / attributes in the listing;
 *     byte 0 & 8: write, mkdir, rename, unlink too;
 *     byte 0 & 16: no page cache;
 *     byte 0 & 32: the handle API (snfs_h_*: listing, create, link...);
 *     byte 0 & 64: ALLOCATE, DEALLOCATE, COPY, truncate, setattr;
 *   - length 0xffff: close that connection instead of answering (the
 *     library reconnects and resends); otherwise the top bit sends the
 *     reply as two record fragments, the rest is the length;
 *   - a reply the library ignores (not msg_type REPLY) is followed by the
 *     next one for the same call, so that no call waits for its timeout.
 * Once the input is used up, every call gets accept_stat SYSTEM_ERR.
 *
 * FUZZ_CLIENT_TRACE=1 prints, per input, how many calls the fake server
 * answered and how much of the input they used.
 *
 * Seeds: FUZZ_CLIENT_RECORD=PORT FUZZ_CLIENT_SEEDS=DIR makes the fake
 * server a proxy to a real snfsd on 127.0.0.1:PORT (exporting the fuzz
 * fixture tree) and writes one seed per script variant to DIR instead of
 * fuzzing (tests/fuzz/mkcorpus.sh does this). */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "snfs/snfs.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define EXPORT_PATH "/tmp/snfs-fuzz/export"
#define MAX_CONNS 16
#define MAX_CALL (4u << 20)
#define CLOSE_CONN 0xffffu
#define TWO_FRAGS 0x8000u
#define MAX_REPLY 0x7fffu

struct conn {
	int fd;
	int up; /* record mode: the connection to the real server */
	uint8_t *buf;
	size_t len, cap;
};

/* Global state is fine: one fuzz process, one input at a time; the
 * server thread and the harness share it under lock. */
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static const uint8_t *in;
static size_t in_len, in_pos;
static int listen_fd, wake[2];
static uint16_t port;
static struct conn conns[MAX_CONNS];
static uint16_t up_port;     /* record mode */
static unsigned long served; /* calls answered for this input */
static bool trace;           /* FUZZ_CLIENT_TRACE: print that count */
static uint8_t *rec_buf;     /* record mode: the seed being written */
static size_t rec_len, rec_cap;

static void die(const char *what)
{
	printf("fuzz_client_replies: %s: %s\n", what, strerror(errno));
	fflush(stdout);
	abort();
}

static uint32_t be32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 |
	       (uint32_t)p[2] << 8 | p[3];
}

static void put_be32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 24);
	p[1] = (uint8_t)(v >> 16);
	p[2] = (uint8_t)(v >> 8);
	p[3] = (uint8_t)v;
}

static bool write_all(int fd, const void *p, size_t n)
{
	const uint8_t *b = p;

	while (n > 0) {
		ssize_t w = send(fd, b, n, MSG_NOSIGNAL);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return false;
		b += w;
		n -= (size_t)w;
	}
	return true;
}

static bool read_all(int fd, void *p, size_t n)
{
	uint8_t *b = p;

	while (n > 0) {
		ssize_t r = read(fd, b, n);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return false;
		b += r;
		n -= (size_t)r;
	}
	return true;
}

/* xid + body as one record, or as two fragments. */
static bool send_reply(int fd, uint32_t xid, const uint8_t *body, size_t n,
                       bool split)
{
	size_t total = 4 + n, first = split ? total / 2 : total;
	uint8_t *msg = malloc(total + 8);
	size_t m = 0;
	bool ok;

	if (!msg)
		abort();
	put_be32(msg, (uint32_t)first | (split ? 0 : 0x80000000u));
	put_be32(msg + 4, xid);
	memcpy(msg + 8, body, n);
	m = 4 + total;
	if (split) {
		/* Second mark goes between the two halves. */
		memmove(msg + 4 + first + 4, msg + 4 + first, total - first);
		put_be32(msg + 4 + first,
		         (uint32_t)(total - first) | 0x80000000u);
		m += 4;
	}
	ok = write_all(fd, msg, m);
	free(msg);
	return ok;
}

/* accept_stat SYSTEM_ERR: what every call gets once the input is used up. */
static const uint8_t sys_err[] = {0, 0, 0, 1, 0, 0, 0, 0, 0, 0,
                                  0, 0, 0, 0, 0, 0, 0, 0, 0, 5};

/* Would the library drop this reply body unread (transport.c takes only
 * records of at least 8 bytes with msg_type REPLY)? Then it would wait for
 * its timeout: the next reply goes to the same call instead. */
static bool ignored_reply(const uint8_t *body, size_t n)
{
	return n < 4 || be32(body) != 1;
}

/* Called locked. false: close the connection. */
static bool answer_from_input(struct conn *c, uint32_t xid)
{
	for (;;) {
		const uint8_t *body;
		uint32_t n;
		bool split;

		if (in_len - in_pos < 2)
			return send_reply(c->fd, xid, sys_err, sizeof(sys_err),
			                  false);
		n = (uint32_t)in[in_pos] << 8 | in[in_pos + 1];
		in_pos += 2;
		if (n == CLOSE_CONN)
			return false;
		split = n & TWO_FRAGS;
		n &= MAX_REPLY;
		if (n > in_len - in_pos)
			n = (uint32_t)(in_len - in_pos);
		body = in + in_pos;
		in_pos += n;
		if (!send_reply(c->fd, xid, body, n, split))
			return false;
		if (!ignored_reply(body, n))
			return true;
	}
}

static void rec_append(const void *p, size_t n)
{
	if (rec_len + n > rec_cap) {
		rec_cap = (rec_len + n) * 2;
		rec_buf = realloc(rec_buf, rec_cap);
		if (!rec_buf)
			abort();
	}
	memcpy(rec_buf + rec_len, p, n);
	rec_len += n;
}

/* Record mode: forward the call, keep the reply (without its xid). */
static bool answer_by_proxy(struct conn *c, const uint8_t *call, size_t n)
{
	uint8_t mark[4], len16[2], *reply = NULL;
	size_t rlen = 0;
	bool last = false, ok;

	put_be32(mark, (uint32_t)n | 0x80000000u);
	if (!write_all(c->up, mark, 4) || !write_all(c->up, call, n))
		return false;
	while (!last) {
		uint32_t m, fl;
		if (!read_all(c->up, mark, 4))
			return false;
		m = be32(mark);
		fl = m & 0x7fffffffu;
		last = m & 0x80000000u;
		reply = realloc(reply, rlen + fl + 1);
		if (!reply || !read_all(c->up, reply + rlen, fl))
			abort();
		rlen += fl;
	}
	if (rlen < 4 || rlen - 4 > MAX_REPLY) {
		fprintf(stderr,
		        "fuzz_client_replies: reply of %zu bytes "
		        "does not fit a seed\n",
		        rlen);
		abort();
	}
	len16[0] = (uint8_t)((rlen - 4) >> 8);
	len16[1] = (uint8_t)(rlen - 4);
	rec_append(len16, 2);
	rec_append(reply + 4, rlen - 4);
	ok = send_reply(c->fd, be32(call), reply + 4, rlen - 4, false);
	free(reply);
	return ok;
}

static void conn_close(struct conn *c)
{
	close(c->fd);
	if (c->up >= 0)
		close(c->up);
	free(c->buf);
	*c = (struct conn){.fd = -1, .up = -1};
}

/* Handle every whole record in c's buffer. false: close it. */
static bool conn_records(struct conn *c)
{
	for (;;) {
		size_t pos = 0, clen = 0;
		uint8_t *call;
		bool last = false, ok;

		/* Join fragments without moving the buffer until a record
		 * is complete. */
		while (!last) {
			uint32_t m, fl;
			if (c->len - pos < 4)
				return true;
			m = be32(c->buf + pos);
			fl = m & 0x7fffffffu;
			last = m & 0x80000000u;
			if (fl > MAX_CALL || clen + fl > MAX_CALL)
				return false; /* the library never sends that */
			if (c->len - pos - 4 < fl)
				return true;
			pos += 4 + fl;
			clen += fl;
		}
		call = malloc(clen ? clen : 1);
		if (!call)
			abort();
		for (size_t p = 0, q = 0; p < pos;) {
			uint32_t fl = be32(c->buf + p) & 0x7fffffffu;
			memcpy(call + q, c->buf + p + 4, fl);
			q += fl;
			p += 4 + fl;
		}
		memmove(c->buf, c->buf + pos, c->len - pos);
		c->len -= pos;
		if (clen < 4) {
			free(call);
			return false;
		}
		pthread_mutex_lock(&lock);
		served++;
		if (up_port)
			ok = answer_by_proxy(c, call, clen);
		else
			ok = answer_from_input(c, be32(call));
		pthread_mutex_unlock(&lock);
		free(call);
		if (!ok)
			return false;
	}
}

static bool conn_read(struct conn *c)
{
	ssize_t r;

	if (c->cap - c->len < 65536) {
		c->cap = c->cap * 2 + 65536;
		c->buf = realloc(c->buf, c->cap);
		if (!c->buf)
			abort();
	}
	r = read(c->fd, c->buf + c->len, c->cap - c->len);
	if (r < 0 && errno == EINTR)
		return true;
	if (r <= 0)
		return false;
	c->len += (size_t)r;
	return conn_records(c);
}

static int connect_up(void)
{
	struct sockaddr_in a = {.sin_family = AF_INET,
	                        .sin_port = htons(up_port)};
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (fd < 0 || connect(fd, (struct sockaddr *)&a, sizeof(a)))
		die("connect to the real server");
	return fd;
}

static void conn_accept(void)
{
	int fd = accept4(listen_fd, NULL, NULL, SOCK_CLOEXEC), one = 1;
	size_t i;

	if (fd < 0)
		return;
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	for (i = 0; i < MAX_CONNS && conns[i].fd >= 0; i++)
		;
	if (i == MAX_CONNS) {
		/* The library keeps a couple of connections per mount: this
		 * many means it leaks them. */
		printf("fuzz_client_replies: more than %d connections open\n",
		       MAX_CONNS);
		fflush(stdout);
		abort();
	}
	conns[i] = (struct conn){.fd = fd, .up = up_port ? connect_up() : -1};
}

static void *server_main(void *arg)
{
	struct pollfd pfd[MAX_CONNS + 2];
	size_t idx[MAX_CONNS + 2];

	(void)arg;
	for (;;) {
		nfds_t n = 0;

		pfd[n++] = (struct pollfd){.fd = listen_fd, .events = POLLIN};
		pfd[n++] = (struct pollfd){.fd = wake[0], .events = POLLIN};
		for (size_t i = 0; i < MAX_CONNS; i++) {
			if (conns[i].fd < 0)
				continue;
			idx[n] = i;
			pfd[n++] = (struct pollfd){.fd = conns[i].fd,
			                           .events = POLLIN};
		}
		if (poll(pfd, n, -1) < 0) {
			if (errno == EINTR)
				continue;
			die("poll");
		}
		if (pfd[1].revents)
			break;
		for (nfds_t k = 2; k < n; k++)
			if (pfd[k].revents && !conn_read(&conns[idx[k]]))
				conn_close(&conns[idx[k]]);
		if (pfd[0].revents & POLLIN)
			conn_accept();
	}
	return NULL;
}

static void server_start(void)
{
	struct sockaddr_in a = {.sin_family = AF_INET};
	socklen_t alen = sizeof(a);
	pthread_t t;

	for (size_t i = 0; i < MAX_CONNS; i++)
		conns[i] = (struct conn){.fd = -1, .up = -1};
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	listen_fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (listen_fd < 0 || bind(listen_fd, (struct sockaddr *)&a, alen) ||
	    listen(listen_fd, 16) ||
	    getsockname(listen_fd, (struct sockaddr *)&a, &alen) ||
	    pipe2(wake, O_CLOEXEC))
		die("listen");
	port = ntohs(a.sin_port);
	if (pthread_create(&t, NULL, server_main, NULL))
		die("server thread");
	pthread_detach(t);
}

/* ---- the API script ---- */

/* read_pieces sink: touches every byte, so a piece pointing outside the
 * reply is a sanitizer report. */
volatile uint8_t pieces_sum;

static int pieces_sink(void *arg, const struct snfs_piece *v, size_t n)
{
	uint8_t sum = 0;

	(void)arg;
	for (size_t i = 0; i < n; i++)
		for (uint64_t o = 0; v[i].data && o < v[i].len; o++)
			sum ^= ((const uint8_t *)v[i].data)[o];
	pieces_sum = sum;
	return 0;
}

static void do_listing(struct snfs_ctx *ctx, bool plus)
{
	struct snfs_dir *d;
	struct snfs_dirent e;
	int n = 0;

	if (snfs_opendir(ctx, "/many", plus ? SNFS_DIR_PLUS : 0, &d))
		return;
	/* Cut a server that keeps sending entries; the input runs out
	 * long before this for an honest one. */
	while (n++ < 100000 && snfs_readdir(d, &e) > 0)
		;
	snfs_telldir(d);
	snfs_closedir(d);
}

static void do_reads(struct snfs_ctx *ctx)
{
	static uint8_t buf[16384];
	struct snfs_segment segs[16];
	struct snfs_file *f;
	struct snfs_stat st;
	size_t nsegs;
	bool eof;

	if (!snfs_open(ctx, "/big", O_RDONLY, 0, &f)) {
		snfs_pread(f, buf, 4096, 0);
		snfs_pread(f, buf, 4096, 1 << 20);
		snfs_read_segments(f, buf, 8192, 4096, segs, 16, &nsegs, &eof);
		snfs_read_pieces(f, 0, 8192, pieces_sink, NULL, &eof);
		snfs_seek_data(f, 0);
		snfs_seek_hole(f, 0);
		snfs_fstat(f, &st);
		snfs_close(f);
	}
	if (!snfs_open(ctx, "/file", O_RDONLY, 0, &f)) {
		snfs_pread(f, buf, 100, 0);
		snfs_close(f);
	}
}

static void do_writes(struct snfs_ctx *ctx)
{
	static const char text[] = "written by fuzz_client_replies\n";
	struct snfs_file *f;

	if (!snfs_open(ctx, "/up.txt", O_WRONLY | O_CREAT | O_TRUNC, 0644,
	               &f)) {
		snfs_pwrite(f, text, sizeof(text) - 1, 0);
		snfs_fsync(f);
		snfs_close(f);
	}
	snfs_mkdir(ctx, "/newdir", 0755);
	snfs_rename(ctx, "/up.txt", "/newdir/moved");
	snfs_unlink(ctx, "/newdir/moved");
	snfs_rmdir(ctx, "/newdir");
}

/* The handle API (what snfs-mount uses): lookups, a listing by cookie,
 * creation of every kind of object, setattr. */
static void do_handles(struct snfs_ctx *ctx)
{
	struct snfs_handle root, dir, h, h2;
	struct snfs_setattr sa = {
	    .mask = SNFS_SET_SIZE | SNFS_SET_MODE, .size = 10, .mode = 0600};
	struct snfs_hdirent e;
	struct snfs_hdir *d;
	struct snfs_stat st;
	char buf[128];
	int n = 0;

	if (snfs_h_base(ctx, &root, &st))
		return;
	if (!snfs_h_opendir(ctx, &root, SNFS_DIR_PLUS, &d)) {
		uint64_t after = 0;
		while (n++ < 100000 && snfs_h_readdir(d, after, &e) > 0)
			after = e.cookie;
		snfs_h_closedir(d);
	}
	if (!snfs_h_lookup(ctx, &root, "link", &h, &st))
		snfs_h_readlink(ctx, &h, buf, sizeof(buf));
	if (snfs_h_lookup(ctx, &root, "dir", &dir, &st))
		dir = root;
	if (!snfs_h_create(ctx, &dir, "hc", 0644, true, &h, &st)) {
		snfs_h_setattr(ctx, &h, &sa, &st);
		snfs_h_getattr(ctx, &h, &st);
		snfs_h_link(ctx, &h, &root, "hl");
	}
	snfs_h_mkdir(ctx, &dir, "hd", 0755, &h2, &st);
	snfs_h_symlink(ctx, &dir, "hs", "hc", &h2, &st);
	snfs_h_mknod(ctx, &dir, "hf", SNFS_FIFO, 0644, 0, 0, &h2, &st);
	snfs_h_rename(ctx, &dir, "hc", &root, "hc2");
	snfs_h_unlink(ctx, &root, "hc2");
	snfs_h_rmdir(ctx, &dir, "hd");
}

/* NFSv4.2's space and copy operations (emulated or refused on v3),
 * truncation and setattr by path. */
static void do_space(struct snfs_ctx *ctx)
{
	struct snfs_setattr sa = {.mask = SNFS_SET_MTIME_NOW | SNFS_SET_GID,
	                          .gid = 100};
	struct snfs_file *a, *b;

	if (!snfs_open(ctx, "/file", O_RDWR, 0, &a)) {
		snfs_allocate(a, 0, 8192);
		snfs_punch_hole(a, 0, 4096);
		if (!snfs_open(ctx, "/copy", O_RDWR | O_CREAT, 0644, &b)) {
			snfs_copy(a, 0, b, 0, 100);
			snfs_ftruncate(b, 1);
			snfs_close(b);
		}
		snfs_close(a);
	}
	snfs_truncate(ctx, "/empty", 0);
	snfs_setattr(ctx, "/empty", &sa);
	snfs_symlink(ctx, "file", "/sym");
	snfs_link(ctx, "/file", "/hard");
}

static void run_script(uint8_t b)
{
	static const char *const vers[] = {"3", "4.1", "4.2"};
	struct snfs_mount_opts o = {
	    .rsize = 4096,
	    .wsize = 4096,
	    .readdir_buffer = 2048,
	    .timeout_ms = 500,
	};
	struct snfs_ctx *ctx;
	struct snfs_stat st;
	struct snfs_statvfs sv;
	char url[256], link[256];

	if (b & 16)
		o.pagecache = SNFS_PC_OFF;
	snprintf(url, sizeof(url),
	         "nfs://127.0.0.1" EXPORT_PATH
	         "?version=%s&nfsport=%u&mountport=%u&uid=0&gid=0",
	         vers[b % 3], port, port);
	if (snfs_mount(url, &o, &ctx))
		return;
	snfs_stat(ctx, "/file", &st);
	snfs_lstat(ctx, "/link", &st);
	snfs_readlink(ctx, "/link", link, sizeof(link));
	snfs_statvfs(ctx, "/", &sv);
	do_listing(ctx, b & 4);
	do_reads(ctx);
	if (b & 8)
		do_writes(ctx);
	if (b & 32)
		do_handles(ctx);
	if (b & 64)
		do_space(ctx);
	snfs_umount(ctx);
}

/* Record mode: one seed per script variant, then exit. */
static void record_seeds(const char *dir)
{
	static const uint8_t variants[] = {0,  1,  2,  4,  5,  6,  8,  9, 10,
	                                   16, 18, 32, 33, 34, 64, 65, 66};

	for (size_t i = 0; i < sizeof(variants); i++) {
		char path[512];
		FILE *f;

		pthread_mutex_lock(&lock);
		rec_len = 0;
		rec_append(&variants[i], 1);
		pthread_mutex_unlock(&lock);
		run_script(variants[i]);
		snprintf(path, sizeof(path), "%s/rec-%02x", dir, variants[i]);
		pthread_mutex_lock(&lock);
		f = fopen(path, "wb");
		if (!f || fwrite(rec_buf, 1, rec_len, f) != rec_len ||
		    fclose(f))
			die(path);
		printf("fuzz_client_replies: %s: %zu bytes\n", path, rec_len);
		pthread_mutex_unlock(&lock);
	}
	exit(0);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	const char *rec = getenv("FUZZ_CLIENT_RECORD");
	const char *dir = getenv("FUZZ_CLIENT_SEEDS");

	(void)argc;
	(void)argv;
	signal(SIGPIPE, SIG_IGN);
	trace = getenv("FUZZ_CLIENT_TRACE") != NULL;
	if (rec && dir)
		up_port = (uint16_t)atoi(rec);
	server_start();
	if (up_port)
		record_seeds(dir);
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	pthread_mutex_lock(&lock);
	in = data;
	in_len = size;
	in_pos = 1;
	served = 0;
	pthread_mutex_unlock(&lock);
	run_script(data[0]);
	pthread_mutex_lock(&lock);
	if (trace)
		printf("trace: %lu calls, %zu of %zu input bytes used\n",
		       served, in_pos, in_len);
	in = NULL;
	in_len = in_pos = 0;
	pthread_mutex_unlock(&lock);
	return 0;
}
