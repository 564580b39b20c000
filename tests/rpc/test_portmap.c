/* The portmapper program: PMAP v2 and RPCBIND v3/v4 through
 * rpc_service_handle, and rpcinfo against it when port 111 is free. */
#include <arpa/inet.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "../test.h"
#include "rpc/portmap.h"
#include "rpc/rpc.h"
#include "rpc_testlib.h"
#include "server/snfsd.h"
#include "util/log.h"

#define TOY 200300

static int toy_null(struct rpc_call *call, struct xdr_out *res)
{
	(void)call;
	(void)res;
	return RPC_SUCCESS;
}
static const struct rpc_proc toy_procs[] = {{"NULL", toy_null}};
static const struct rpc_version toy_versions[] = {{1, toy_procs, 1},
                                                  {2, toy_procs, 1}};
static const struct rpc_program toy_prog = {
    .prog = TOY, .name = "toy", .versions = toy_versions, .nversions = 2};

static struct rpc_service *svc;

/* Call the portmapper; returns the parsed reply (body into out). */
static struct treply pcall(uint32_t vers, uint32_t proc,
                           const struct xdr_out *args, struct xdr_out *out)
{
	struct tcall c = {.xid = 7,
	                  .prog = PMAP_PROGRAM,
	                  .vers = vers,
	                  .proc = proc,
	                  .args = args ? args->buf : NULL,
	                  .args_len = args ? args->len : 0};
	struct xdr_out in;
	xdr_out_init(&in, 512, 8192);
	tcall_encode(&c, &in);
	xdr_out_init(out, 512, 65536);
	rpc_service_handle(svc, in.buf, in.len, NULL, 0, RPC_UDP, NULL, out);
	xdr_out_free(&in);
	return treply_parse(out->buf, out->len);
}

static uint32_t getport(uint32_t prog, uint32_t vers, uint32_t proto)
{
	struct xdr_out a, out;
	struct treply r;
	uint32_t port = 0xffffffff;
	xdr_out_init(&a, 256, 1024);
	xdr_put_u32(&a, prog);
	xdr_put_u32(&a, vers);
	xdr_put_u32(&a, proto);
	xdr_put_u32(&a, 0);
	r = pcall(2, 3, &a, &out);
	if (r.ok && r.accept_stat == RPC_SUCCESS)
		xdr_get_u32(&r.body, &port);
	xdr_out_free(&a);
	xdr_out_free(&out);
	return port;
}

/* RPCBIND GETADDR (proc 3) or GETVERSADDR (v4 proc 9) into ua. */
static bool getaddr(uint32_t vers, uint32_t proc, uint32_t prog, uint32_t pvers,
                    const char *netid, char *ua, size_t n)
{
	struct xdr_out a, out;
	struct treply r;
	bool ok = false;
	xdr_out_init(&a, 256, 1024);
	xdr_put_u32(&a, prog);
	xdr_put_u32(&a, pvers);
	xdr_put_string(&a, netid);
	xdr_put_string(&a, "");
	xdr_put_string(&a, "");
	r = pcall(vers, proc, &a, &out);
	if (r.ok && r.accept_stat == RPC_SUCCESS)
		ok = xdr_get_string(&r.body, ua, n, (uint32_t)n - 1);
	xdr_out_free(&a);
	xdr_out_free(&out);
	return ok;
}

static void test_handlers(void)
{
	struct xdr_out a, out;
	struct treply r;
	char ua[128];
	uint32_t v, count = 0, t;
	bool more;

	CHECK(getport(TOY, 1, 6) == 2049, "GETPORT toy v1 tcp");
	CHECK(getport(TOY, 1, 17) == 0, "GETPORT toy udp: not served");
	CHECK(getport(TOY, 9, 6) == 2049,
	      "GETPORT unknown version falls back like rpcbind");
	CHECK(getport(424242, 1, 6) == 0, "GETPORT unknown program");
	CHECK(getport(PMAP_PROGRAM, 2, 17) == 111, "GETPORT portmapper");

	CHECK(getaddr(3, 3, TOY, 2, "tcp", ua, sizeof(ua)) &&
	          strcmp(ua, "127.0.0.1.8.1") == 0,
	      "GETADDR v3 universal address");
	CHECK(getaddr(4, 3, TOY, 1, "tcp", ua, sizeof(ua)) &&
	          strcmp(ua, "127.0.0.1.8.1") == 0,
	      "GETADDR v4");
	CHECK(getaddr(4, 3, TOY, 1, "udp", ua, sizeof(ua)) && ua[0] == 0,
	      "GETADDR udp for a TCP-only program is empty");
	CHECK(getaddr(4, 9, TOY, 3, "tcp", ua, sizeof(ua)) && ua[0] == 0,
	      "GETVERSADDR missing version is empty");
	CHECK(getaddr(4, 9, TOY, 2, "tcp", ua, sizeof(ua)) &&
	          strcmp(ua, "127.0.0.1.8.1") == 0,
	      "GETVERSADDR exact version");
	CHECK(getaddr(3, 3, PMAP_PROGRAM, 3, "udp", ua, sizeof(ua)) &&
	          strcmp(ua, "127.0.0.1.0.111") == 0,
	      "GETADDR portmapper udp");

	/* DUMP v2: toy v1,v2 tcp + pmap v2,v3,v4 tcp and udp = 8 */
	r = pcall(2, 4, NULL, &out);
	while (xdr_get_bool(&r.body, &more) && more) {
		uint32_t m[4];
		for (int i = 0; i < 4; i++)
			xdr_get_u32(&r.body, &m[i]);
		count++;
	}
	CHECK(!r.body.err && count == 8, "PMAP DUMP lists every mapping");
	xdr_out_free(&out);

	count = 0;
	r = pcall(3, 4, NULL, &out);
	while (xdr_get_bool(&r.body, &more) && more) {
		char s[3][64];
		xdr_get_u32(&r.body, &v);
		xdr_get_u32(&r.body, &v);
		for (int i = 0; i < 3; i++)
			xdr_get_string(&r.body, s[i], 64, 63);
		count++;
	}
	CHECK(!r.body.err && count == 8, "RPCBIND DUMP lists every mapping");
	xdr_out_free(&out);

	r = pcall(3, 6, NULL, &out);
	CHECK(xdr_get_u32(&r.body, &t) && (long)t - (long)time(NULL) < 5 &&
	          (long)time(NULL) - (long)t < 5,
	      "GETTIME");
	xdr_out_free(&out);

	xdr_out_init(&a, 256, 1024);
	for (int i = 0; i < 4; i++)
		xdr_put_u32(&a, 1);
	r = pcall(2, 1, &a, &out);
	CHECK(xdr_get_u32(&r.body, &v) && v == 0, "PMAP SET answers false");
	xdr_out_free(&out);
	r = pcall(2, 5, &a, &out);
	CHECK(r.accept_stat == RPC_PROC_UNAVAIL, "CALLIT unavailable");
	xdr_out_free(&out);
	r = pcall(2, 3, NULL, &out);
	CHECK(r.accept_stat == RPC_GARBAGE_ARGS, "GETPORT without args");
	xdr_out_free(&out);
	xdr_out_free(&a);
}

static struct rpc_server *srv;

static void *run_thread(void *arg)
{
	(void)arg;
	rpc_server_run(srv);
	return NULL;
}

/* With the real rpcinfo, when we can serve port 111 for a moment. */
static void test_rpcinfo(void)
{
	struct rpc_server_config cfg = {.nthreads = 2};
	pthread_t th;
	char line[256];
	int rc, lines = 0;
	bool found_toy = false;
	FILE *p;

	if (access("/usr/sbin/rpcinfo", X_OK) != 0) {
		printf("ok - rpcinfo: skipped, not installed\n");
		return;
	}
	srv = rpc_server_new(svc, &cfg);
	rc = rpc_server_listen(srv, "127.0.0.1", 111, SOCK_STREAM);
	if (rc == 0)
		rc = rpc_server_listen(srv, "127.0.0.1", 111, SOCK_DGRAM);
	if (rc < 0) {
		printf("ok - rpcinfo: skipped, port 111 busy\n");
		rpc_server_free(srv);
		return;
	}
	rpc_server_listen(srv, "127.0.0.1", 0, SOCK_STREAM);
	pmap_set_local(svc, rpc_server_port(srv, SOCK_STREAM), 0, "127.0.0.1");
	pthread_create(&th, NULL, run_thread, NULL);

	CHECK(pmap_probe() == 1, "pmap_probe finds our portmapper");
	p = popen("timeout 10 /usr/sbin/rpcinfo -p 127.0.0.1 2>&1", "r");
	while (p && fgets(line, sizeof(line), p)) {
		lines++;
		if (strstr(line, "200300") && strstr(line, "tcp"))
			found_toy = true;
	}
	CHECK(p && pclose(p) == 0 && lines == 9 && found_toy,
	      "rpcinfo -p lists our programs");
	p = popen("timeout 10 /usr/sbin/rpcinfo -T tcp 127.0.0.1 200300 2 2>&1",
	          "r");
	found_toy = false;
	while (p && fgets(line, sizeof(line), p))
		if (strstr(line, "ready and waiting"))
			found_toy = true;
	CHECK(p && pclose(p) == 0 && found_toy,
	      "rpcinfo -T tcp finds and calls the program via GETADDR");
	CHECK(pmap_register_all(svc, 2049) < 0,
	      "pmap_register_all reports a refusal");

	rpc_server_stop(srv);
	pthread_join(th, NULL);
	rpc_server_free(srv);
}

int main(void)
{
	log_set_level(LOG_ERR);
	svc = rpc_service_new(NULL);
	rpc_service_add(svc, &toy_prog);
	rpc_service_add(svc, &pmap_program);
	pmap_set_local(svc, 2049, 2049, "127.0.0.1");
	test_handlers();
	test_rpcinfo();
	rpc_service_free(svc);
	TEST_EXIT();
}
