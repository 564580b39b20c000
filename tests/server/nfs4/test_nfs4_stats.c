/* NFSv4 per-operation statistics: COMPOUNDs hand-encoded and sent through
 * rpc_service_handle() against one export; the counters of each op and
 * minor version (errors, ILLEGAL, ops not run after a failure), the error
 * line of a failed op (its name, status and handle, not the COMPOUND's),
 * and both renderings through the control socket's control_render(). */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../../test.h"
#include "compound_testlib.h"
#include "rpc/stats.h"
#include "server/control.h"
#include "server/exports.h"
#include "server/nfs4/nfs4.h"
#include "server/programs.h"
#include "server/snfsd.h"
#include "util/log.h"

static char base[64], expdir[96];

static void op_putfh(struct cbuf *b, const uint8_t *fh, uint32_t len)
{
	op(b, OP4_PUTFH);
	xdr_put_opaque(&b->x, fh, len);
}

static void op_getattr_type(struct cbuf *b)
{
	op(b, OP4_GETATTR);
	xdr_put_u32(&b->x, 1);
	xdr_put_u32(&b->x, 1u << FA4_TYPE);
}

/* ---- setup ---- */

static int setup(void)
{
	const char *specs[1];
	char spec[160], err[256];
	struct export_table *t;

	snprintf(base, sizeof(base), "/tmp/snfs-nfs4st-XXXXXX");
	if (!mkdtemp(base))
		return -errno;
	snprintf(expdir, sizeof(expdir), "%s/exp", base);
	mkdir(expdir, 0755);
	snprintf(spec, sizeof(spec), "%s:rw,insecure,no_root_squash", expdir);
	specs[0] = spec;
	if (exports_load(NULL, specs, 1, &t, err, sizeof(err))) {
		printf("# exports_load: %s\n", err);
		return -EINVAL;
	}
	S.cfg.listen_addr = "127.0.0.1";
	return testsrv_start(t, base);
}

/* ---- reading the counters ---- */

struct opcount {
	uint64_t calls, errors;
};

/* Calls and errors of op in minor (OP4_ILLEGAL: the ILLEGAL row). */
static struct opcount count_of(uint32_t minor, uint32_t opnum)
{
	struct rpc_stats_row *rows;
	struct opcount c = {0, 0};
	const char *want =
	    opnum == OP4_ILLEGAL ? "ILLEGAL" : nfs4_op_name(opnum);
	long n = rpc_stats_snapshot(rpc_service_stats(S.svc), &rows);

	for (long i = 0; i < n; i++) {
		const struct rpc_stats_row *r = &rows[i];
		if (r->optab && r->vers == minor && r->proc_name &&
		    !strcmp(r->proc_name, want)) {
			c.calls = r->calls;
			c.errors = r->errors;
		}
	}
	free(rows);
	return c;
}

/* Calls and errors of the COMPOUND procedure itself. */
static struct opcount compound_count(void)
{
	struct rpc_stats_row *rows;
	struct opcount c = {0, 0};
	long n = rpc_stats_snapshot(rpc_service_stats(S.svc), &rows);

	for (long i = 0; i < n; i++)
		if (!rows[i].optab && rows[i].prog == NFS_PROGRAM &&
		    rows[i].vers == 4 && rows[i].proc == 1)
			c = (struct opcount){rows[i].calls, rows[i].errors};
	free(rows);
	return c;
}

static uint64_t ops_total(void)
{
	struct rpc_stats_row *rows;
	uint64_t t = 0;
	long n = rpc_stats_snapshot(rpc_service_stats(S.svc), &rows);

	for (long i = 0; i < n; i++)
		if (rows[i].optab)
			t += rows[i].calls;
	free(rows);
	return t;
}

static bool grew(struct opcount before, struct opcount after, uint64_t calls,
                 uint64_t errors)
{
	return after.calls - before.calls == calls &&
	       after.errors - before.errors == errors;
}

/* ---- tests ---- */

static void test_counts(void)
{
	struct opcount root0 = count_of(0, OP4_PUTROOTFH);
	struct opcount look0 = count_of(0, OP4_LOOKUP);
	struct opcount getfh0 = count_of(0, OP4_GETFH);
	struct opcount attr0 = count_of(0, OP4_GETATTR);
	struct opcount ill0 = count_of(0, OP4_ILLEGAL);
	struct opcount root1 = count_of(1, OP4_PUTROOTFH);
	struct opcount root2 = count_of(2, OP4_PUTROOTFH);
	struct opcount comp = compound_count();
	uint64_t total;
	struct cbuf b;
	uint32_t nlook;

	c_begin(&b, 0);
	op(&b, OP4_PUTROOTFH);
	op_getattr_type(&b);
	CHECK(c_status(&b) == NFS4_OK, "4.0 PUTROOTFH, GETATTR: OK");
	CHECK(grew(root0, count_of(0, OP4_PUTROOTFH), 1, 0) &&
	          grew(attr0, count_of(0, OP4_GETATTR), 1, 0),
	      "each op of a good COMPOUND counted once, no error");

	c_begin(&b, 0);
	nlook = op_walk(&b, expdir);
	op(&b, OP4_GETFH);
	op_name(&b, OP4_LOOKUP, "missing");
	op_getattr_type(&b);
	CHECK(c_status(&b) == NFS4ERR_NOENT, "LOOKUP of a missing name: NOENT");
	CHECK(grew(look0, count_of(0, OP4_LOOKUP), nlook + 1, 1),
	      "LOOKUPs counted, the failed one as an error");
	CHECK(grew(getfh0, count_of(0, OP4_GETFH), 1, 0), "GETFH counted");
	CHECK(grew(attr0, count_of(0, OP4_GETATTR), 1, 0),
	      "the op after the failure did not run: not counted");

	c_begin(&b, 0);
	op(&b, 99);
	CHECK(c_status(&b) == NFS4ERR_OP_ILLEGAL, "op 99: OP_ILLEGAL");
	c_begin(&b, 0);
	op(&b, OP4_SEQUENCE);
	CHECK(c_status(&b) == NFS4ERR_OP_ILLEGAL,
	      "SEQUENCE in 4.0: OP_ILLEGAL");
	CHECK(grew(ill0, count_of(0, OP4_ILLEGAL), 2, 2),
	      "unknown op and 4.1 op in 4.0 counted as ILLEGAL errors");
	CHECK(count_of(0, OP4_SEQUENCE).calls == 0,
	      "4.0 has no SEQUENCE row to count");

	c_begin(&b, 0);
	op(&b, OP4_GETFH);
	CHECK(c_status(&b) == NFS4ERR_NOFILEHANDLE,
	      "GETFH alone: NOFILEHANDLE");
	CHECK(grew(getfh0, count_of(0, OP4_GETFH), 2, 1),
	      "a refusal by the COMPOUND loop counts as the op's error");

	c_begin(&b, 1);
	op(&b, OP4_PUTROOTFH);
	CHECK(c_status(&b) == NFS4ERR_OP_NOT_IN_SESSION,
	      "4.1 without SEQUENCE: OP_NOT_IN_SESSION");
	c_begin(&b, 2);
	op(&b, OP4_PUTROOTFH);
	c_status(&b);
	c_begin(&b, 2);
	op(&b, OP4_PUTROOTFH);
	c_status(&b);
	CHECK(grew(root1, count_of(1, OP4_PUTROOTFH), 1, 1) &&
	          grew(root2, count_of(2, OP4_PUTROOTFH), 2, 2) &&
	          grew(root0, count_of(0, OP4_PUTROOTFH), 2, 0),
	      "each minor version counted apart");

	total = ops_total();
	c_begin(&b, 3);
	op(&b, OP4_PUTROOTFH);
	CHECK(c_status(&b) == NFS4ERR_MINOR_VERS_MISMATCH,
	      "minor 3: MINOR_VERS_MISMATCH");
	CHECK(ops_total() == total, "a COMPOUND refused whole runs no op");
	CHECK(grew(comp, compound_count(), 9, 8),
	      "COMPOUND calls and errors still counted per call");
}

/* Lowercase hex of n bytes. */
static void hex(const uint8_t *p, size_t n, char *out)
{
	for (size_t i = 0; i < n; i++)
		sprintf(out + 2 * i, "%02x", p[i]);
	out[2 * n] = '\0';
}

static char logbuf[65536];

/* Run fn with stderr (the log) going to logbuf. */
static void capture(void (*fn)(void))
{
	FILE *tmp = tmpfile();
	int saved = dup(2);
	size_t n;

	fflush(stderr);
	dup2(fileno(tmp), 2);
	fn();
	fflush(stderr);
	dup2(saved, 2);
	close(saved);
	rewind(tmp);
	n = fread(logbuf, 1, sizeof(logbuf) - 1, tmp);
	logbuf[n] = '\0';
	fclose(tmp);
}

static struct nfs_fh root_fh, bad_fh;

static void failing_ops(void)
{
	struct cbuf b;

	c_begin(&b, 0); /* LOOKUP in the export's root */
	op_putfh(&b, root_fh.data, root_fh.len);
	op_name(&b, OP4_LOOKUP, "nothere");
	c_status(&b);
	c_begin(&b, 0); /* the second PUTFH's handle, not the first's */
	op_putfh(&b, root_fh.data, root_fh.len);
	op_putfh(&b, bad_fh.data, bad_fh.len);
	c_status(&b);
	c_begin(&b, 0);
	op(&b, OP4_GETFH);
	c_status(&b);
	c_begin(&b, 2);
	op(&b, 99);
	c_status(&b);
}

static void test_error_lines(void)
{
	struct export *ex = exports_by_path(S.exports, expdir);
	struct bk_handle bh;
	char want[512], h[2 * NFS_FH_MAX + 1];

	if (!ex || ex->ops->root(ex->bk, &bh) ||
	    fh_make(&S, ex, &bh, &root_fh)) {
		CHECK(0, "export root handle");
		return;
	}
	bad_fh = root_fh;
	bad_fh.data[bad_fh.len - 1] ^= 0x5a; /* its MAC no longer matches */
	log_set_level(LOG_DEBUG);            /* no rate limit: every line */
	capture(failing_ops);
	log_set_level(LOG_ERR);

	hex(root_fh.data, root_fh.len, h);
	snprintf(want, sizeof(want),
	         "op=LOOKUP prog=nfs vers=4 minor=0 client=127.0.0.1:800 "
	         "uid=0 fh=%s status=NFS4ERR_NOENT time_us=",
	         h);
	CHECK(strstr(logbuf, want) != NULL,
	      "LOOKUP line: op, minor, client, uid, current fh, status name");
	hex(bad_fh.data, bad_fh.len, h);
	snprintf(want, sizeof(want),
	         "op=PUTFH prog=nfs vers=4 minor=0 "
	         "client=127.0.0.1:800 uid=0 fh=%s status=NFS4ERR_",
	         h);
	CHECK(strstr(logbuf, want) != NULL,
	      "PUTFH line: the handle it was given");
	CHECK(strstr(logbuf, "op=GETFH prog=nfs vers=4 minor=0 "
	                     "client=127.0.0.1:800 uid=0 fh=- "
	                     "status=NFS4ERR_NOFILEHANDLE") != NULL,
	      "GETFH line: no current fh");
	CHECK(strstr(logbuf, "op=ILLEGAL prog=nfs vers=4 minor=2 ") &&
	          strstr(logbuf, "status=NFS4ERR_OP_ILLEGAL"),
	      "ILLEGAL line");
	CHECK(!strstr(logbuf, "op=COMPOUND"),
	      "no COMPOUND line beside the op's");
}

static void minor_mismatch(void)
{
	struct cbuf b;

	c_begin(&b, 7);
	op(&b, OP4_PUTROOTFH);
	c_status(&b);
}

static void test_compound_line(void)
{
	log_set_level(LOG_DEBUG);
	capture(minor_mismatch);
	log_set_level(LOG_ERR);
	CHECK(strstr(logbuf, "op=COMPOUND prog=nfs vers=4 ") &&
	          strstr(logbuf, "status=NFS4ERR_MINOR_VERS_MISMATCH"),
	      "a COMPOUND refused whole: its own line");
}

/* control_render(cmd) into a malloc'd string. */
static char *render(const char *cmd)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	int rc = control_render(&S, cmd, f);

	fclose(f);
	if (rc) {
		free(buf);
		return NULL;
	}
	return buf;
}

static void test_renderings(void)
{
	struct opcount look = count_of(0, OP4_LOOKUP);
	struct opcount ill = count_of(0, OP4_ILLEGAL);
	char *t = render("stats"), *m = render("metrics"), *p;
	unsigned long long calls = 0, errors = 0;
	char want[160];

	p = t ? strstr(t, "\nNFSv4 operations\n") : NULL;
	CHECK(p && strstr(t, "COMPOUND") < p,
	      "--stats: NFSv4 operations table after the procedures'");
	p = p ? strstr(p, "\n4.0    LOOKUP ") : NULL;
	CHECK(p && sscanf(p, "\n4.0 LOOKUP %llu %llu", &calls, &errors) == 2 &&
	          calls == look.calls && errors == look.errors,
	      "--stats: 4.0 LOOKUP calls and errors");
	CHECK(t && strstr(t, "\n4.2    PUTROOTFH "), "--stats: a 4.2 row");
	snprintf(want, sizeof(want),
	         "\nsnfsd_nfs4_ops_total{op=\"LOOKUP\",minor=\"0\"} %llu\n",
	         (unsigned long long)look.calls);
	CHECK(m && strstr(m, want), "metrics: ops_total with op and minor");
	snprintf(want, sizeof(want),
	         "\nsnfsd_nfs4_op_errors_total{op=\"ILLEGAL\",minor=\"0\"} "
	         "%llu\n",
	         (unsigned long long)ill.errors);
	CHECK(m && strstr(m, want), "metrics: op_errors_total");
	CHECK(m && strstr(m, "{op=\"SEQUENCE\",minor=\"1\"} 0\n") &&
	          !strstr(m, "{op=\"SEQUENCE\",minor=\"0\"}"),
	      "metrics: an op is listed only for the minors that have it");
	snprintf(want, sizeof(want),
	         "\nsnfsd_nfs4_op_duration_seconds_count{op=\"LOOKUP\","
	         "minor=\"0\"} %llu\n",
	         (unsigned long long)look.calls);
	CHECK(m && strstr(m, want) &&
	          strstr(m,
	                 "snfsd_nfs4_op_duration_seconds_bucket{op=\"LOOKUP\","
	                 "minor=\"0\",le=\"+Inf\"}"),
	      "metrics: op latency histogram");
	CHECK(m && strstr(m, "snfsd_rpc_calls_total{prog=\"nfs\",vers=\"4\","
	                     "proc=\"COMPOUND\"}"),
	      "metrics: the RPC series stay");
	free(t);
	free(m);
}

int main(void)
{
	int rc;

	log_set_level(LOG_ERR); /* the error lines of test_counts */
	rc = setup();
	CHECK(rc == 0, "setup: export and service");
	if (rc)
		TEST_EXIT();
	test_counts();
	test_error_lines();
	test_compound_line();
	test_renderings();
	testsrv_stop(base);
	TEST_EXIT();
}
