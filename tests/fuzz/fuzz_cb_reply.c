/* libFuzzer target for the decoder of a client's answer to an NFSv4.1
 * call back (nfs4_cb_decode_reply, src/server/nfs4/callback.c): the
 * input is the RPC reply record as it arrives on the back channel.
 *
 * Invariants: an accepted answer is at least the nine words before the
 * results (xid, REPLY, MSG_ACCEPTED, an empty verifier, SUCCESS, the
 * status, an empty tag, the count), its message type REPLY; CB_SEQUENCE
 * counts as answered only with two more words there. */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "server/nfs4/state_int.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static uint32_t be32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 |
	       (uint32_t)p[2] << 8 | p[3];
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	/* a copy of exactly size bytes: ASan sees any read past it */
	uint8_t *rec = malloc(size ? size : 1);
	struct nfs4_cb_result r;

	if (!rec)
		return 0;
	memcpy(rec, data, size);
	memset(&r, 0, sizeof(r));
	if (nfs4_cb_decode_reply(rec, size, &r)) {
		if (size < 36 || be32(rec + 4) != 1 || be32(rec + 8) != 0)
			abort();
		if (r.seq_answered && size < 44)
			abort();
	} else if (r.seq_answered) {
		abort();
	}
	free(rec);
	return 0;
}
