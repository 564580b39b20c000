/* NLM version 4 (the Network Lock Manager of NFSv3; X/Open XNFS, chapter
 * 10 and 14): program and procedure numbers, nlm4_stats, limits. */
#ifndef SNFS_PROTO_NLM4_CONST_H
#define SNFS_PROTO_NLM4_CONST_H

#define NLM_PROG 100021
#define NLM4_VERS 4
#define NLM_MAXNETOBJ 1024 /* cookie, fh, oh: netobj is opaque<1024> */
#define NLM_MAXSTRLEN 1024 /* caller_name: string<LM_MAXSTRLEN> */

enum nlm4_proc {
	NLMPROC4_NULL = 0,
	NLMPROC4_TEST = 1,
	NLMPROC4_LOCK = 2,
	NLMPROC4_CANCEL = 3,
	NLMPROC4_UNLOCK = 4,
	NLMPROC4_GRANTED = 5,
	/* The same calls as messages: the answer comes back as a call of
	 * the matching _RES procedure to the caller's lock manager (X_MSG
	 * + 5 = X_RES). */
	NLMPROC4_TEST_MSG = 6,
	NLMPROC4_LOCK_MSG = 7,
	NLMPROC4_CANCEL_MSG = 8,
	NLMPROC4_UNLOCK_MSG = 9,
	NLMPROC4_GRANTED_MSG = 10,
	NLMPROC4_TEST_RES = 11,
	NLMPROC4_LOCK_RES = 12,
	NLMPROC4_CANCEL_RES = 13,
	NLMPROC4_UNLOCK_RES = 14,
	NLMPROC4_GRANTED_RES = 15,
	/* Not in XNFS: the host's rpc.statd relays a monitored client's
	 * restart here (the number Linux's lockd registers with it). */
	NLMPROC4_NSM_NOTIFY = 16,
	NLMPROC4_NM_LOCK = 22,
	NLMPROC4_FREE_ALL = 23,
	NLMPROC4_COUNT = 24,
};

/* NSM, the status monitor (XNFS 11): a client that restarted says so
 * with SM_NOTIFY, and its locks go. */
#define NSM_PROG 100024
#define NSM_VERS 1
#define NSM_MAXSTRLEN 1024
enum nsm_proc {
	SM_NULL = 0,
	SM_MON = 2,
	SM_NOTIFY = 6,
	SM_COUNT = 7,
};
#define NSM_PRIV_SIZE 16 /* SM_MON's priv, handed back with a relay */
enum nsm_res { NSM_STAT_SUCC = 0, NSM_STAT_FAIL = 1 };

enum nlm4_stats {
	NLM4_GRANTED = 0,
	NLM4_DENIED = 1,
	NLM4_DENIED_NOLOCKS = 2,
	NLM4_BLOCKED = 3,
	NLM4_DENIED_GRACE_PERIOD = 4,
	NLM4_DEADLCK = 5,
	NLM4_ROFS = 6,
	NLM4_STALE_FH = 7,
	NLM4_FBIG = 8,
	NLM4_FAILED = 9,
};

#endif
