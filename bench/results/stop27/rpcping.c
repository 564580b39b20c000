/* RPC NULL-call ping-pong over TCP: one call outstanding, as a direct-I/O
 * reader keeps. Prints the round trip's min / median / p90 in us.
 * usage: rpcping HOST PORT PROG VERS COUNT */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static double now_us(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1e6 + t.tv_nsec / 1e3;
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

static int read_full(int fd, uint8_t *p, size_t n)
{
	while (n) {
		ssize_t r = read(fd, p, n);
		if (r <= 0)
			return -1;
		p += r, n -= (size_t)r;
	}
	return 0;
}

int main(int argc, char **argv)
{
	if (argc != 6) {
		fprintf(stderr, "usage: rpcping HOST PORT PROG VERS COUNT\n");
		return 2;
	}
	int n = atoi(argv[5]), one = 1;
	struct sockaddr_in sa = {.sin_family = AF_INET,
	                         .sin_port = htons((uint16_t)atoi(argv[2]))};
	inet_pton(AF_INET, argv[1], &sa.sin_addr);
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	/* a privileged port: knfsd wants one by default (secure) */
	struct sockaddr_in me = {.sin_family = AF_INET};
	for (int p = 1023; p > 600; p--) {
		me.sin_port = htons((uint16_t)p);
		if (bind(fd, (struct sockaddr *)&me, sizeof(me)) == 0)
			break;
	}
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) != 0) {
		perror("connect");
		return 1;
	}
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	uint32_t call[11] = {0};
	double *t = calloc((size_t)n, sizeof(*t));
	uint8_t buf[4096];
	for (int i = 0; i < n; i++) {
		call[0] = htonl(0x80000000u | 40); /* last fragment, 40 bytes */
		call[1] = htonl((uint32_t)i + 1);  /* xid */
		call[2] = 0;                       /* CALL */
		call[3] = htonl(2);                /* RPC version */
		call[4] = htonl((uint32_t)atoi(argv[3]));
		call[5] = htonl((uint32_t)atoi(argv[4]));
		call[6] = 0;              /* NULL procedure */
		call[7] = call[8] = 0;    /* AUTH_NONE, empty */
		call[9] = call[10] = 0;   /* verifier AUTH_NONE, empty */
		double t0 = now_us();
		if (write(fd, call, sizeof(call)) != sizeof(call))
			return 1;
		uint32_t mark;
		if (read_full(fd, (uint8_t *)&mark, 4))
			return 1;
		size_t len = ntohl(mark) & 0x7fffffff;
		if (len > sizeof(buf) || read_full(fd, buf, len))
			return 1;
		t[i] = now_us() - t0;
	}
	qsort(t, (size_t)n, sizeof(*t), cmp);
	printf("rpcping %s:%s %d calls: min %.1f median %.1f p90 %.1f us\n",
	       argv[1], argv[2], n, t[0], t[n / 2], t[n * 9 / 10]);
	return 0;
}
