/* The least a user-space RPC server can do: one thread, blocking read of
 * a call record, write of an accepted NULL reply. The floor for snfsd's
 * round trip in rpcping. usage: nullsrv PORT */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

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
	int one = 1, ls = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in sa = {.sin_family = AF_INET,
	                         .sin_port = htons((uint16_t)atoi(argv[1])),
	                         .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	(void)argc;
	setsockopt(ls, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(ls, (struct sockaddr *)&sa, sizeof(sa)) || listen(ls, 8))
		return 1;
	for (;;) {
		int fd = accept(ls, NULL, NULL);
		uint8_t buf[4096];
		uint32_t mark, rep[7] = {0};
		setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
		while (!read_full(fd, (uint8_t *)&mark, 4)) {
			size_t len = ntohl(mark) & 0x7fffffff;
			if (len > sizeof(buf) || read_full(fd, buf, len))
				break;
			rep[0] = htonl(0x80000000u | 24);
			rep[1] = ((uint32_t *)buf)[0]; /* xid */
			rep[2] = htonl(1);             /* REPLY */
			/* MSG_ACCEPTED, AUTH_NONE verifier, SUCCESS: zeros */
			if (write(fd, rep, sizeof(rep)) != sizeof(rep))
				break;
		}
		close(fd);
	}
}
