/* Peer addresses (src/rpc/peer.c): the printable forms in log lines, the
 * source port the `secure` option reads, and what counts as loopback
 * (only rpc.statd on this host may relay a client's restart: nsm.c). */
#include <arpa/inet.h>
#include <string.h>

#include "../test.h"
#include "rpc/rpc.h"

static struct sockaddr_storage v4(const char *a, uint16_t port)
{
	struct sockaddr_storage ss;
	struct sockaddr_in *in = (struct sockaddr_in *)&ss;

	memset(&ss, 0, sizeof(ss));
	in->sin_family = AF_INET;
	in->sin_port = htons(port);
	inet_pton(AF_INET, a, &in->sin_addr);
	return ss;
}

static struct sockaddr_storage v6(const char *a, uint16_t port)
{
	struct sockaddr_storage ss;
	struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)&ss;

	memset(&ss, 0, sizeof(ss));
	in6->sin6_family = AF_INET6;
	in6->sin6_port = htons(port);
	inet_pton(AF_INET6, a, &in6->sin6_addr);
	return ss;
}

#define SA(ss) ((const struct sockaddr *)&(ss))

static void test_loopback(void)
{
	struct sockaddr_storage a = v4("127.0.0.1", 1), b = v4("127.9.8.7", 1),
	                        c = v4("10.9.0.2", 1), d = v6("::1", 1),
	                        e = v6("::ffff:127.0.0.1", 1),
	                        f = v6("::ffff:10.0.0.1", 1),
	                        g = v6("fe80::1", 1), u;

	CHECK(rpc_addr_is_loopback(SA(a)), "127.0.0.1 is loopback");
	CHECK(rpc_addr_is_loopback(SA(b)), "all of 127/8 is loopback");
	CHECK(!rpc_addr_is_loopback(SA(c)), "10.9.0.2 is not");
	CHECK(rpc_addr_is_loopback(SA(d)), "::1 is loopback");
	CHECK(rpc_addr_is_loopback(SA(e)), "::ffff:127.0.0.1 is loopback");
	CHECK(!rpc_addr_is_loopback(SA(f)), "::ffff:10.0.0.1 is not");
	CHECK(!rpc_addr_is_loopback(SA(g)), "fe80::1 is not");
	memset(&u, 0, sizeof(u));
	u.ss_family = AF_UNIX;
	CHECK(!rpc_addr_is_loopback(SA(u)), "a unix socket address is not");
}

static void test_strings(void)
{
	struct sockaddr_storage a = v4("10.9.0.2", 812), d = v6("::1", 2049), u;
	char buf[80];

	CHECK(!strcmp(rpc_host_str(SA(a), buf, sizeof(buf)), "10.9.0.2"),
	      "host string of an IPv4 peer");
	CHECK(!strcmp(rpc_peer_str(SA(a), buf, sizeof(buf)), "10.9.0.2:812"),
	      "peer string of an IPv4 peer");
	CHECK(!strcmp(rpc_host_str(SA(d), buf, sizeof(buf)), "::1"),
	      "host string of an IPv6 peer");
	CHECK(rpc_peer_port(SA(a)) == 812 && rpc_peer_port(SA(d)) == 2049,
	      "source ports");
	memset(&u, 0, sizeof(u));
	u.ss_family = AF_UNIX;
	CHECK(!strcmp(rpc_host_str(SA(u), buf, sizeof(buf)), "?"),
	      "no host string for a unix socket");
	CHECK(!strcmp(rpc_host_str(NULL, buf, sizeof(buf)), "?"),
	      "nor for none");
}

int main(void)
{
	test_loopback();
	test_strings();
	TEST_EXIT();
}
