/* The control thread: `snfsd --stats` over a unix socket in the state
 * directory, and Prometheus text over HTTP/1.0 on 127.0.0.1. One thread
 * polls both listeners and answers each connection in turn; every socket
 * has short timeouts, so a client that stalls delays the others by a
 * second or two at most and never touches the RPC workers. */
#include "server/control.h"

#include <arpa/inet.h>
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "rpc/stats.h"
#include "server/nfs4/nfs4.h"
#include "server/snfsd.h"
#include "server/state.h"
#include "util/log.h"

#define IO_TIMEOUT_MS 2000
#define CLIENT_TIMEOUT_MS 10000
#define MAX_REQUEST 4096 /* an HTTP request head or a command line */

struct control {
	struct snfsd *s;
	int unix_fd; /* -1 when the control socket could not be made */
	int http_fd; /* -1 without --metrics-port */
	int wake_fd; /* eventfd: control_stop() wants the thread to end */
	uint16_t http_port;
	char path[sizeof(((struct sockaddr_un *)0)->sun_path)];
	ino_t ino; /* the socket file we made, so we remove only ours */
	pthread_t thread;
	bool started;
};

/* ---- answers ---- */

static uint64_t realtime_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* "3d04h05m06s" style uptime. */
static const char *fmt_uptime(uint64_t s, char *buf, size_t n)
{
	if (s >= 86400)
		snprintf(buf, n, "%llud%02lluh%02llum%02llus",
		         (unsigned long long)(s / 86400),
		         (unsigned long long)(s / 3600 % 24),
		         (unsigned long long)(s / 60 % 60),
		         (unsigned long long)(s % 60));
	else
		snprintf(buf, n, "%lluh%02llum%02llus",
		         (unsigned long long)(s / 3600),
		         (unsigned long long)(s / 60 % 60),
		         (unsigned long long)(s % 60));
	return buf;
}

static void write_stats_header(const struct snfsd *s, FILE *f)
{
	uint64_t now = realtime_ns();
	uint64_t up = now > s->boot_time_ns ? now - s->boot_time_ns : 0;
	char ubuf[48];

	fprintf(f, "snfsd pid %ld, up %s, listening on %s port %u\n",
	        (long)getpid(),
	        fmt_uptime(up / 1000000000u, ubuf, sizeof(ubuf)),
	        s->cfg.listen_addr ? s->cfg.listen_addr : "?", s->cfg.port);
	fprintf(f, "latency: mean, and p50/p99 estimated from log2 "
	           "microsecond buckets\n\n");
}

static void write_process_metrics(const struct snfsd *s, FILE *f)
{
	fprintf(f,
	        "# HELP snfsd_start_time_seconds When snfsd started, in "
	        "seconds since the epoch.\n"
	        "# TYPE snfsd_start_time_seconds gauge\n"
	        "snfsd_start_time_seconds %.3f\n",
	        (double)s->boot_time_ns / 1e9);
}

/* NFSv4.1 calls back (callback.c): none until a client used NFSv4. */
static void write_callbacks(const struct snfsd *s, FILE *f, bool table)
{
	struct nfs4_server *st = __atomic_load_n(&s->nfs4, __ATOMIC_ACQUIRE);
	uint64_t sent = 0, ok = 0, failed = 0;

	if (st)
		nfs4_cb_stats(st, &sent, &ok, &failed);
	if (table) {
		fprintf(f,
		        "\nNFSv4.1 calls back: %llu sent, %llu answered OK, "
		        "%llu failed\n",
		        (unsigned long long)sent, (unsigned long long)ok,
		        (unsigned long long)failed);
		return;
	}
	fprintf(f,
	        "# HELP snfsd_nfs4_callbacks_total NFSv4.1 calls back "
	        "(CB_COMPOUND) by outcome.\n"
	        "# TYPE snfsd_nfs4_callbacks_total counter\n"
	        "snfsd_nfs4_callbacks_total{result=\"sent\"} %llu\n"
	        "snfsd_nfs4_callbacks_total{result=\"ok\"} %llu\n"
	        "snfsd_nfs4_callbacks_total{result=\"failed\"} %llu\n",
	        (unsigned long long)sent, (unsigned long long)ok,
	        (unsigned long long)failed);
}

/* NFSv4.1 read delegations (deleg.c). */
static void write_delegations(const struct snfsd *s, FILE *f, bool table)
{
	struct nfs4_server *st = __atomic_load_n(&s->nfs4, __ATOMIC_ACQUIRE);
	struct nfs4_deleg_stats d = {0};

	if (st)
		nfs4_deleg_stats(st, &d);
	if (table) {
		fprintf(f,
		        "NFSv4.1 delegations: %u held, %llu granted, %llu "
		        "recalled, %llu returned, %llu revoked\n",
		        d.held, (unsigned long long)d.granted,
		        (unsigned long long)d.recalled,
		        (unsigned long long)d.returned,
		        (unsigned long long)d.revoked);
		return;
	}
	fprintf(f,
	        "# HELP snfsd_nfs4_delegations Read delegations held now.\n"
	        "# TYPE snfsd_nfs4_delegations gauge\n"
	        "snfsd_nfs4_delegations %u\n"
	        "# HELP snfsd_nfs4_delegation_events_total Read delegations "
	        "by event.\n"
	        "# TYPE snfsd_nfs4_delegation_events_total counter\n"
	        "snfsd_nfs4_delegation_events_total{event=\"granted\"} %llu\n"
	        "snfsd_nfs4_delegation_events_total{event=\"recalled\"} "
	        "%llu\n"
	        "snfsd_nfs4_delegation_events_total{event=\"returned\"} "
	        "%llu\n"
	        "snfsd_nfs4_delegation_events_total{event=\"revoked\"} %llu\n",
	        d.held, (unsigned long long)d.granted,
	        (unsigned long long)d.recalled, (unsigned long long)d.returned,
	        (unsigned long long)d.revoked);
}

int control_render(const struct snfsd *s, const char *cmd, FILE *f)
{
	struct rpc_stats_row *rows;
	bool table = !strcmp(cmd, "stats");
	long n;

	if (!table && strcmp(cmd, "metrics"))
		return -EINVAL;
	n = rpc_stats_snapshot(rpc_service_stats(s->svc), &rows);
	if (n < 0)
		return (int)n;
	if (table) {
		write_stats_header(s, f);
		rpc_stats_write_table(f, rows, (size_t)n);
	} else {
		rpc_stats_write_prometheus(f, rows, (size_t)n);
		write_process_metrics(s, f);
	}
	write_callbacks(s, f, table);
	write_delegations(s, f, table);
	free(rows);
	return 0;
}

/* Render cmd into a malloc'd buffer. */
static int render_buf(const struct snfsd *s, const char *cmd, char **buf,
                      size_t *len)
{
	FILE *f = open_memstream(buf, len);
	int rc;

	if (!f)
		return -ENOMEM;
	rc = control_render(s, cmd, f);
	if (fclose(f) && !rc)
		rc = -ENOMEM;
	if (rc) {
		free(*buf);
		*buf = NULL;
	}
	return rc;
}

/* ---- socket helpers ---- */

static int64_t mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Wait until fd is ready for events or the deadline passes; false on
 * timeout or error. */
static bool wait_ready(int fd, short events, int64_t deadline)
{
	struct pollfd p = {.fd = fd, .events = events};
	int64_t left;
	int rc;

	for (;;) {
		left = deadline - mono_ms();
		if (left <= 0)
			return false;
		rc = poll(&p, 1, (int)left);
		if (rc > 0)
			return true;
		if (rc == 0 || errno != EINTR)
			return false;
	}
}

/* Send all n bytes before the deadline. 0 or -errno (-ETIMEDOUT). */
static int send_all(int fd, const void *p, size_t n, int64_t deadline)
{
	const char *c = p;

	while (n) {
		ssize_t k = send(fd, c, n, MSG_NOSIGNAL | MSG_DONTWAIT);
		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
			if (!wait_ready(fd, POLLOUT, deadline))
				return -ETIMEDOUT;
			continue;
		}
		if (k <= 0)
			return k < 0 ? -errno : -EPIPE;
		c += k;
		n -= (size_t)k;
	}
	return 0;
}

/* Read until the request is complete (a blank line for HTTP, a newline
 * for a command, or the peer's EOF), the buffer is full or the deadline
 * passes. Returns the bytes read, NUL-terminated. */
static size_t read_request(int fd, char *buf, size_t cap, bool http,
                           int64_t deadline)
{
	size_t len = 0;

	buf[0] = '\0';
	while (len + 1 < cap && wait_ready(fd, POLLIN, deadline)) {
		ssize_t k = recv(fd, buf + len, cap - 1 - len, MSG_DONTWAIT);
		if (k < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		if (k <= 0)
			break;
		len += (size_t)k;
		buf[len] = '\0';
		if (http ? strstr(buf, "\r\n\r\n") || strstr(buf, "\n\n")
		         : memchr(buf, '\n', len) != NULL)
			break;
	}
	return len;
}

/* ---- the control socket ---- */

/* One command per connection: "stats" or "metrics". */
static void serve_command(struct control *c, int fd, int64_t deadline)
{
	char req[256], msg[128], *body = NULL;
	size_t len = 0;
	int rc, n;

	read_request(fd, req, sizeof(req), false, deadline);
	req[strcspn(req, "\r\n")] = '\0';
	rc = render_buf(c->s, req, &body, &len);
	if (rc) {
		n = rc == -EINVAL ? snprintf(msg, sizeof(msg),
		                             "error: unknown command '%.64s' "
		                             "(stats, metrics)\n",
		                             req)
		                  : snprintf(msg, sizeof(msg), "error: %s\n",
		                             strerror(-rc));
		send_all(fd, msg, (size_t)n, deadline);
		return;
	}
	send_all(fd, body, len, deadline);
	free(body);
}

/* An answer with a text body (HTTP/1.0, so the connection closes after). */
static void http_reply(int fd, int64_t deadline, const char *status,
                       const char *ctype, const char *body, size_t len,
                       bool head)
{
	char hdr[256];
	int n = snprintf(hdr, sizeof(hdr),
	                 "HTTP/1.0 %s\r\nContent-Type: %s\r\n"
	                 "Content-Length: %zu\r\nConnection: close\r\n\r\n",
	                 status, ctype, len);

	if (send_all(fd, hdr, (size_t)n, deadline) == 0 && !head)
		send_all(fd, body, len, deadline);
}

/* A short plain-text answer for a request that gets no metrics. */
static void http_error(int fd, int64_t deadline, const char *status,
                       const char *msg, bool head)
{
	http_reply(fd, deadline, status, "text/plain; charset=utf-8", msg,
	           strlen(msg), head);
}

/* GET (or HEAD) /metrics answers the Prometheus text; anything else is
 * an error. */
static void serve_http(struct control *c, int fd, int64_t deadline)
{
	char req[MAX_REQUEST], method[8], target[256], *body = NULL;
	size_t len = 0;
	bool head;

	read_request(fd, req, sizeof(req), true, deadline);
	if (sscanf(req, "%7s %255s", method, target) != 2) {
		http_error(fd, deadline, "400 Bad Request", "bad request\n",
		           false);
		return;
	}
	head = !strcmp(method, "HEAD");
	if (strcmp(method, "GET") && !head) {
		http_error(fd, deadline, "405 Method Not Allowed",
		           "only GET /metrics\n", false);
		return;
	}
	target[strcspn(target, "?")] = '\0';
	if (strcmp(target, "/metrics")) {
		http_error(fd, deadline, "404 Not Found", "try /metrics\n",
		           head);
		return;
	}
	if (render_buf(c->s, "metrics", &body, &len)) {
		http_error(fd, deadline, "500 Internal Server Error",
		           "out of memory\n", head);
		return;
	}
	http_reply(fd, deadline, "200 OK",
	           "text/plain; version=0.0.4; charset=utf-8", body, len, head);
	free(body);
}

/* Accept one connection on lfd and answer it. */
static void serve_one(struct control *c, int lfd)
{
	int fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
	int64_t deadline = mono_ms() + IO_TIMEOUT_MS;

	if (fd < 0)
		return;
	if (lfd == c->http_fd)
		serve_http(c, fd, deadline);
	else
		serve_command(c, fd, deadline);
	close(fd);
}

static void *control_thread(void *arg)
{
	struct control *c = arg;
	struct pollfd p[3] = {
	    {.fd = c->wake_fd, .events = POLLIN},
	    {.fd = c->unix_fd, .events = POLLIN},
	    {.fd = c->http_fd, .events = POLLIN},
	};

	for (;;) {
		if (poll(p, 3, -1) < 0) {
			if (errno == EINTR)
				continue;
			log_err("control: poll: %s", strerror(errno));
			return NULL;
		}
		if (p[0].revents)
			return NULL;
		for (int i = 1; i < 3; i++)
			if (p[i].revents & POLLIN)
				serve_one(c, p[i].fd);
	}
}

/* Is a server answering on the unix socket at path? */
static bool unix_socket_live(const struct sockaddr_un *sa)
{
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	bool live;

	if (fd < 0)
		return false;
	live = connect(fd, (const struct sockaddr *)sa, sizeof(*sa)) == 0;
	close(fd);
	return live;
}

/* Bind fd to sa. A socket file left by a server that died is replaced;
 * one a live server answers on is not (-EADDRINUSE), nor anything that is
 * not a socket. */
static int bind_unix(int fd, const struct sockaddr_un *sa)
{
	struct stat st;

	if (!bind(fd, (const struct sockaddr *)sa, sizeof(*sa)))
		return 0;
	if (errno != EADDRINUSE)
		return -errno;
	if (lstat(sa->sun_path, &st) || !S_ISSOCK(st.st_mode) ||
	    unix_socket_live(sa))
		return -EADDRINUSE;
	if (unlink(sa->sun_path) && errno != ENOENT)
		return -errno;
	return bind(fd, (const struct sockaddr *)sa, sizeof(*sa)) ? -errno : 0;
}

/* Listen on STATE_DIR/control.sock, mode 0600: the statistics name
 * clients and files, so only the server's user (and root) may ask. */
static int listen_unix(struct control *c, const char *dir)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	struct stat st;
	int fd, n, rc;

	n = snprintf(sa.sun_path, sizeof(sa.sun_path), "%s/%s", dir,
	             CONTROL_SOCKET);
	if (n < 0 || (size_t)n >= sizeof(sa.sun_path))
		return -ENAMETOOLONG;
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	/* Linux gives the socket file the mode of the socket inode, so the
	 * file is never more open than 0600, not even for a moment. */
	fchmod(fd, 0600);
	rc = bind_unix(fd, &sa);
	if (!rc && (chmod(sa.sun_path, 0600) || stat(sa.sun_path, &st) ||
	            listen(fd, 16)))
		rc = -errno;
	if (rc) {
		close(fd);
		return rc;
	}
	memcpy(c->path, sa.sun_path, sizeof(c->path));
	c->ino = st.st_ino;
	c->unix_fd = fd;
	return 0;
}

/* Listen on 127.0.0.1:port for the metrics endpoint (never on other
 * addresses: the statistics are for the host's own monitoring). */
static int listen_http(struct control *c, uint16_t port)
{
	struct sockaddr_in sa = {.sin_family = AF_INET,
	                         .sin_port = htons(port),
	                         .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t sl = sizeof(sa);
	int one = 1, fd;

	fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) || listen(fd, 16) ||
	    getsockname(fd, (struct sockaddr *)&sa, &sl)) {
		int e = errno;
		close(fd);
		return -e;
	}
	c->http_fd = fd;
	c->http_port = ntohs(sa.sin_port);
	return 0;
}

static void control_close(struct control *c)
{
	struct stat st;

	if (c->unix_fd >= 0) {
		/* Remove the file only while it is still the one we made. */
		if (!stat(c->path, &st) && st.st_ino == c->ino)
			unlink(c->path);
		close(c->unix_fd);
	}
	if (c->http_fd >= 0)
		close(c->http_fd);
	if (c->wake_fd >= 0)
		close(c->wake_fd);
	free(c);
}

int control_start(struct snfsd *s, struct control **out)
{
	struct control *c = calloc(1, sizeof(*c));
	const char *dir =
	    s->cfg.state_dir ? s->cfg.state_dir : SNFSD_STATE_DIR_DEFAULT;
	int rc;

	*out = NULL;
	if (!c)
		return -ENOMEM;
	c->s = s;
	c->unix_fd = c->http_fd = -1;
	c->wake_fd = eventfd(0, EFD_CLOEXEC);
	if (c->wake_fd < 0) {
		rc = -errno;
		goto err;
	}
	rc = listen_unix(c, dir);
	if (rc)
		log_warn("control socket %s/%s: %s; snfsd --stats will not "
		         "reach this server",
		         dir, CONTROL_SOCKET,
		         rc == -EADDRINUSE ? "another snfsd is using it"
		                           : strerror(-rc));
	if (s->cfg.metrics_port) {
		rc = listen_http(c, s->cfg.metrics_port);
		if (rc) {
			log_err("metrics: cannot listen on 127.0.0.1:%u: %s",
			        s->cfg.metrics_port, strerror(-rc));
			goto err;
		}
		log_info("metrics on http://127.0.0.1:%u/metrics",
		         c->http_port);
	}
	rc = -pthread_create(&c->thread, NULL, control_thread, c);
	if (rc)
		goto err;
	c->started = true;
	*out = c;
	return 0;
err:
	control_close(c);
	return rc;
}

void control_stop(struct control *c)
{
	uint64_t one = 1;

	if (!c)
		return;
	if (c->started) {
		if (write(c->wake_fd, &one, sizeof(one)) != sizeof(one))
			log_err("control: cannot wake the thread: %s",
			        strerror(errno));
		pthread_join(c->thread, NULL);
	}
	control_close(c);
}

uint16_t control_metrics_port(const struct control *c)
{
	return c ? c->http_port : 0;
}

/* ---- the client side (snfsd --stats) ---- */

int control_client(const char *state_dir, const char *cmd, FILE *out)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	struct timeval tv = {.tv_sec = CLIENT_TIMEOUT_MS / 1000};
	char buf[8192];
	ssize_t k;
	int fd, n;

	if (!state_dir)
		state_dir = SNFSD_STATE_DIR_DEFAULT;
	n = snprintf(sa.sun_path, sizeof(sa.sun_path), "%s/%s", state_dir,
	             CONTROL_SOCKET);
	if (n < 0 || (size_t)n >= sizeof(sa.sun_path)) {
		fprintf(stderr, "snfsd: %s/%s: path too long\n", state_dir,
		        CONTROL_SOCKET);
		return 1;
	}
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof(sa))) {
		fprintf(stderr,
		        "snfsd: cannot reach a running snfsd at %s: %s "
		        "(is it running with -s %s?)\n",
		        sa.sun_path, strerror(errno), state_dir);
		if (fd >= 0)
			close(fd);
		return 1;
	}
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	n = snprintf(buf, sizeof(buf), "%s\n", cmd);
	if (send_all(fd, buf, (size_t)n, mono_ms() + CLIENT_TIMEOUT_MS)) {
		fprintf(stderr, "snfsd: %s: %s\n", sa.sun_path,
		        strerror(errno));
		close(fd);
		return 1;
	}
	shutdown(fd, SHUT_WR);
	while ((k = recv(fd, buf, sizeof(buf), 0)) > 0 ||
	       (k < 0 && errno == EINTR))
		if (k > 0)
			fwrite(buf, 1, (size_t)k, out);
	n = k < 0 ? errno : 0;
	close(fd);
	if (n) {
		fprintf(stderr, "snfsd: %s: %s\n", sa.sun_path, strerror(n));
		return 1;
	}
	return fflush(out) ? 1 : 0;
}
