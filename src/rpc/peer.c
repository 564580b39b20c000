/* Printable peer addresses for log lines and the `secure` export check. */
#include "rpc/rpc.h"

#include <arpa/inet.h>
#include <stdio.h>

const char *rpc_host_str(const struct sockaddr *sa, char *buf, size_t n)
{
	const void *a = NULL;

	if (n == 0)
		return buf;
	if (sa && sa->sa_family == AF_INET)
		a = &((const struct sockaddr_in *)(const void *)sa)->sin_addr;
	else if (sa && sa->sa_family == AF_INET6)
		a = &((const struct sockaddr_in6 *)(const void *)sa)->sin6_addr;
	if (!a || !inet_ntop(sa->sa_family, a, buf, (socklen_t)n))
		snprintf(buf, n, "?");
	return buf;
}

bool rpc_addr_is_loopback(const struct sockaddr *sa)
{
	const struct sockaddr_in6 *in6 = (const void *)sa;

	if (sa->sa_family == AF_INET)
		return ntohl(((const struct sockaddr_in *)(const void *)sa)
		                 ->sin_addr.s_addr) >>
		           24 ==
		       127;
	if (sa->sa_family != AF_INET6)
		return false;
	return IN6_IS_ADDR_LOOPBACK(&in6->sin6_addr) ||
	       (IN6_IS_ADDR_V4MAPPED(&in6->sin6_addr) &&
	        in6->sin6_addr.s6_addr[12] == 127);
}

/* "a.b.c.d:port", "[v6]:port", "local" or "?" into buf; returns buf. */
const char *rpc_peer_str(const struct sockaddr *sa, char *buf, size_t n)
{
	char host[INET6_ADDRSTRLEN];

	if (n == 0)
		return buf;
	if (!sa) {
		snprintf(buf, n, "?");
	} else if (sa->sa_family == AF_INET) {
		const struct sockaddr_in *in = (const void *)sa;
		inet_ntop(AF_INET, &in->sin_addr, host, sizeof(host));
		snprintf(buf, n, "%s:%u", host, ntohs(in->sin_port));
	} else if (sa->sa_family == AF_INET6) {
		const struct sockaddr_in6 *in6 = (const void *)sa;
		inet_ntop(AF_INET6, &in6->sin6_addr, host, sizeof(host));
		snprintf(buf, n, "[%s]:%u", host, ntohs(in6->sin6_port));
	} else if (sa->sa_family == AF_UNIX) {
		snprintf(buf, n, "local");
	} else {
		snprintf(buf, n, "?");
	}
	return buf;
}

/* The peer's source port, 0 when it has none. */
uint16_t rpc_peer_port(const struct sockaddr *sa)
{
	if (!sa)
		return 0;
	if (sa->sa_family == AF_INET)
		return ntohs(
		    ((const struct sockaddr_in *)(const void *)sa)->sin_port);
	if (sa->sa_family == AF_INET6)
		return ntohs(
		    ((const struct sockaddr_in6 *)(const void *)sa)->sin6_port);
	return 0;
}
