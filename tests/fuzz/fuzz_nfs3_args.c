/* libFuzzer target for the argument decoders: the first input byte picks a
 * procedure from the fixture's table (NFS v3, MOUNT v3 and v1, portmap v2,
 * RPCBIND v3 and v4, then any version added later; see fuzz_srv.h), the
 * rest is that procedure's arguments. The harness supplies a valid call
 * header with AUTH_SYS credentials, so every mutation lands in the decoders
 * and the procedures behind them. The same byte divided by the table size
 * picks the user: root (what seeds use), uid 1000, or nobody. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_srv.h"
#include "xdr/xdr.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static uint32_t xid;

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	fuzz_srv_init();
	return 0;
}

static void put_header(struct xdr_out *r, const struct fuzz_proc *p,
                       uint32_t user)
{
	static const uint32_t uids[] = {0, 1000, 65534};
	static const uint32_t gids[] = {0, 1, 100};
	uint32_t uid = uids[user % 3];

	xdr_put_u32(r, ++xid & 0x7fffffffu);
	xdr_put_u32(r, 0); /* CALL */
	xdr_put_u32(r, 2); /* RPC version */
	xdr_put_u32(r, p->prog);
	xdr_put_u32(r, p->vers);
	xdr_put_u32(r, p->proc);
	xdr_put_u32(r, 1);  /* AUTH_SYS */
	xdr_put_u32(r, 36); /* body: stamp, "fuzz", uid, gid, 3 gids */
	xdr_put_u32(r, 0);
	xdr_put_string(r, "fuzz");
	xdr_put_u32(r, uid);
	xdr_put_u32(r, uid);
	xdr_put_u32(r, 3);
	for (int i = 0; i < 3; i++)
		xdr_put_u32(r, gids[i]);
	xdr_put_u32(r, 0); /* verifier AUTH_NONE */
	xdr_put_u32(r, 0);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const struct fuzz_proc *procs;
	size_t n = fuzz_srv_procs(&procs);
	struct xdr_out rec;

	if (size < 1 || n == 0)
		return 0;
	if (xdr_out_init(&rec, 4096, 128 + size)) /* header: 76 bytes */
		abort();
	put_header(&rec, &procs[data[0] % n], (uint32_t)(data[0] / n));
	/* Raw bytes, not an opaque: no length word, no padding. */
	if (size > 1 && !xdr_out_ensure(&rec, size - 1))
		abort();
	memcpy(rec.buf + rec.len, data + 1, size - 1);
	rec.len += size - 1;
	fuzz_srv_call(rec.buf, rec.len, RPC_TCP);
	xdr_out_free(&rec);
	return 0;
}
