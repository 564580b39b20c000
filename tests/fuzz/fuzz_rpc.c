/* libFuzzer target: one input is one whole RPC call record, handled by
 * rpc_service_handle() of a server serving NFSv3, MOUNT and portmap (and
 * whatever programs_register() adds later) over a scratch export.
 * Handle placeholders are replaced first (fuzz_srv.h). Calls whose xid has
 * the top bit set arrive as UDP, the others as TCP. */
#include <stddef.h>
#include <stdint.h>

#include "fuzz_srv.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	fuzz_srv_init();
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	enum rpc_transport t = size > 0 && (data[0] & 0x80) ? RPC_UDP : RPC_TCP;

	fuzz_srv_call(data, size, t);
	return 0;
}
