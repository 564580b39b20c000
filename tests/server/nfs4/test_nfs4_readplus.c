/* NFSv4.2 READ_PLUS and SEEK end to end (RFC 7862 15.10, 15.11): COMPOUNDs
 * sent through rpc_service_handle() to three exports that differ only in
 * their READ_PLUS policy, the segments decoded and compared with the
 * file's real SEEK_DATA/SEEK_HOLE map and contents:
 *   rp0  readplus_min_hole=0      every hole a HOLE segment
 *   rpbig readplus_min_hole=64k   holes under 64 KiB sent as zeros
 *   rpdz detect_zeroes            allocated zero blocks sent as holes
 *   rpzc zerocopy,zerocopy_min=4k every data piece sent in place
 *   rpmap mapped (every hole)     data sent from a mapping in calls of
 *                                 mapped_min (64 KiB) or more
 *   rpauto (no option)            by the client: 4096, or
 *                                 EXP_READPLUS_MIN_HOLE_LINUX for a
 *                                 session of a Linux kernel client;
 *                                 zerocopy=auto: pieces from the size
 *                                 where sendfile pays by sendfile, the
 *                                 smaller ones copied
 *   rpmapauto mapped            as rpauto, the smaller pieces from a
 *                                 mapping */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../../test.h"
#include "compound_testlib.h"
#include "rpc/rpc.h"
#include "server/exports.h"
#include "server/nfs4/nfs4.h"
#include "server/programs.h"
#include "server/snfsd.h"
#include "util/log.h"

#define FSIZE (1u << 20) /* the test files; plus a tail for some */
#define MAXSEG 4096

static char base[64];
static uint8_t sessionid[16];
static uint32_t slot_seq;

/* ---- COMPOUND plumbing ---- */

static void put_chan(struct xdr_out *x, uint32_t maxresp)
{
	xdr_put_u32(x, 0);
	xdr_put_u32(x, 1 << 20);
	xdr_put_u32(x, maxresp);
	xdr_put_u32(x, 8192);
	xdr_put_u32(x, 16);
	xdr_put_u32(x, 8);
	xdr_put_u32(x, 0);
}

/* A session of client owner (its implementation id impl_name in domain
 * impl_domain, or none when NULL); it becomes the one compounds use. */
static uint32_t make_session_as(const char *owner, const char *impl_domain,
                                const char *impl_name)
{
	struct reply rep = {0};
	struct cbuf b;
	uint64_t clientid;
	uint32_t seq, st;

	c_begin(&b, 2);
	op(&b, OP4_EXCHANGE_ID);
	xdr_put_fixed(&b.x, "verifie2", 8);
	xdr_put_string(&b.x, owner);
	xdr_put_u32(&b.x, 0);
	xdr_put_u32(&b.x, 0); /* SP4_NONE */
	xdr_put_u32(&b.x, impl_domain ? 1 : 0);
	if (impl_domain) {
		xdr_put_string(&b.x, impl_domain);
		xdr_put_string(&b.x, impl_name);
		xdr_put_u64(&b.x, 0); /* nii_date */
		xdr_put_u32(&b.x, 0);
	}
	slot_seq = 0;
	st = c_send(&b, &rep);
	if (st == 0) {
		res_next(&rep, OP4_EXCHANGE_ID);
		xdr_get_u64(&rep.res, &clientid);
		xdr_get_u32(&rep.res, &seq);
		c_begin(&b, 2);
		op(&b, OP4_CREATE_SESSION);
		xdr_put_u64(&b.x, clientid);
		xdr_put_u32(&b.x, seq);
		xdr_put_u32(&b.x, 0);
		put_chan(&b.x, (1 << 20) + 8192);
		put_chan(&b.x, 4096);
		xdr_put_u32(&b.x, 0x40000000);
		xdr_put_u32(&b.x, 1);
		xdr_put_u32(&b.x, RPC_AUTH_NONE);
		st = c_send(&b, &rep);
		if (st == 0) {
			res_next(&rep, OP4_CREATE_SESSION);
			xdr_get_fixed(&rep.res, sessionid, 16);
		}
	}
	rep_free(&rep);
	return st;
}

static uint32_t make_session(void)
{
	return make_session_as("readplus-test", NULL, NULL);
}

/* SEQUENCE, then PUTROOTFH and a LOOKUP per component of path; returns
 * how many LOOKUPs. */
static uint32_t begin_on(struct cbuf *b, const char *path)
{
	c_begin(b, 2);
	op(b, OP4_SEQUENCE);
	xdr_put_fixed(&b->x, sessionid, 16);
	xdr_put_u32(&b->x, ++slot_seq);
	xdr_put_u32(&b->x, 0);
	xdr_put_u32(&b->x, 0);
	xdr_put_bool(&b->x, false);
	return op_walk(b, path);
}

/* Skip the results of begin_on's ops (nlook LOOKUPs); false if one
 * failed. */
static bool skip_prefix(struct reply *rep, uint32_t nlook)
{
	uint32_t v;

	if (res_next(rep, OP4_SEQUENCE) != 0 || !xdr_skip(&rep->res, 16))
		return false;
	for (int i = 0; i < 5; i++)
		xdr_get_u32(&rep->res, &v);
	if (res_next(rep, OP4_PUTROOTFH) != 0)
		return false;
	for (uint32_t i = 0; i < nlook; i++)
		if (res_next(rep, OP4_LOOKUP) != 0)
			return false;
	return true;
}

static void put_anon_stateid(struct xdr_out *x)
{
	static const uint8_t zero[12];

	xdr_put_u32(x, 0);
	xdr_put_fixed(x, zero, 12);
}

/* ---- READ_PLUS decoding ---- */

struct seg {
	bool hole;
	uint64_t off, len;
	const uint8_t *data; /* into the reply */
};

struct rp_reply {
	struct reply rep;
	bool eof;
	uint32_t n;
	struct seg s[MAXSEG];
};

/* One READ_PLUS of [off, off + count) of dir/name; 0 or the op status. */
static uint32_t read_plus(const char *dir, const char *name, uint64_t off,
                          uint32_t count, struct rp_reply *r)
{
	struct cbuf b;
	uint32_t st, type, len, nlook;

	memset(&r->rep.res, 0, sizeof(r->rep.res));
	r->n = 0;
	nlook = begin_on(&b, dir);
	op_name(&b, OP4_LOOKUP, name);
	op(&b, OP4_READ_PLUS);
	put_anon_stateid(&b.x);
	xdr_put_u64(&b.x, off);
	xdr_put_u32(&b.x, count);
	st = c_send(&b, &r->rep);
	if (st != 0)
		return st;
	if (!skip_prefix(&r->rep, nlook) || res_next(&r->rep, OP4_LOOKUP) ||
	    res_next(&r->rep, OP4_READ_PLUS))
		return 0xbad;
	if (!xdr_get_bool(&r->rep.res, &r->eof) ||
	    !xdr_get_u32(&r->rep.res, &r->n) || r->n > MAXSEG)
		return 0xbad1;
	for (uint32_t i = 0; i < r->n; i++) {
		struct seg *s = &r->s[i];

		xdr_get_u32(&r->rep.res, &type);
		xdr_get_u64(&r->rep.res, &s->off);
		s->hole = type == 1;
		if (type == 1) {
			xdr_get_u64(&r->rep.res, &s->len);
		} else if (type == 0) { /* opaque<>: a 32-bit length */
			xdr_get_opaque_ref(&r->rep.res, &s->data, &len,
			                   1u << 30);
			s->len = len;
		} else {
			return 0xbad2;
		}
	}
	return r->rep.res.err || xdr_in_remaining(&r->rep.res) ? 0xbad3 : 0;
}

/* ---- files and their real maps ---- */

struct file {
	char path[160];
	uint8_t *content;
	uint64_t size;
	struct {
		uint64_t off, len;
		bool hole;
	} map[4096];
	int nmap;
};

/* Alternate unit bytes of data and hole; unit 0: all data (data) or all
 * hole; zeros: the "holes" are written zeros (allocated). */
static int make_file(const char *dir, const char *name, uint64_t size,
                     uint64_t unit, bool hole_first, bool data, bool zeros)
{
	char path[200];
	uint8_t *buf = malloc(size);
	int fd, rc = 0;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	fd = open(path, O_CREAT | O_TRUNC | O_WRONLY, 0644);
	if (fd < 0 || !buf) {
		free(buf);
		return -1;
	}
	for (uint64_t i = 0; i < size; i++)
		buf[i] = (uint8_t)(i * 7 + 1) | 1; /* never zero */
	for (uint64_t o = 0; o < size; o += unit ? unit : size) {
		uint64_t n = unit && size - o > unit ? unit : size - o;
		bool is_data =
		    unit ? ((o / unit) % 2 == 0) != hole_first : data;

		if (!is_data && zeros)
			memset(buf + o, 0, n);
		if ((is_data || zeros) && pwrite(fd, buf + o, n, (off_t)o) < 0)
			rc = -1;
	}
	if (ftruncate(fd, (off_t)size) != 0 || fsync(fd) != 0)
		rc = -1;
	close(fd);
	free(buf);
	return rc;
}

static bool load_file(const char *dir, const char *name, struct file *f)
{
	struct stat st;
	uint64_t pos = 0;
	int fd;

	snprintf(f->path, sizeof(f->path), "%s/%s", dir, name);
	fd = open(f->path, O_RDONLY);
	if (fd < 0 || fstat(fd, &st) != 0)
		return false;
	f->size = (uint64_t)st.st_size;
	f->content = malloc(f->size + 1);
	if (pread(fd, f->content, f->size, 0) != (ssize_t)f->size) {
		close(fd);
		return false;
	}
	f->nmap = 0;
	while (pos < f->size && f->nmap < 4096) {
		off_t d = lseek(fd, (off_t)pos, SEEK_DATA);
		uint64_t dd = d < 0 ? f->size : (uint64_t)d, h;

		if (dd > pos) {
			f->map[f->nmap].off = pos;
			f->map[f->nmap].len = dd - pos;
			f->map[f->nmap++].hole = true;
			pos = dd;
			continue;
		}
		h = (uint64_t)lseek(fd, (off_t)pos, SEEK_HOLE);
		f->map[f->nmap].off = pos;
		f->map[f->nmap].len = h - pos;
		f->map[f->nmap++].hole = false;
		pos = h;
	}
	close(fd);
	return true;
}

/* The real extent holding off. */
static int extent_of(const struct file *f, uint64_t off)
{
	for (int i = 0; i < f->nmap; i++)
		if (off >= f->map[i].off && off < f->map[i].off + f->map[i].len)
			return i;
	return -1;
}

static bool all_zero(const uint8_t *p, uint64_t n)
{
	for (uint64_t i = 0; i < n; i++)
		if (p[i])
			return false;
	return true;
}

struct verdict {
	bool ok;           /* contiguous, in range, content right */
	bool exact;        /* HOLE segments are exactly the real holes */
	uint64_t holes;    /* bytes sent as HOLE */
	uint64_t tiny;     /* bytes of real holes under min sent as data */
	uint64_t big_data; /* bytes of real holes >= min sent as data */
	uint64_t wire;     /* reply bytes */
	uint32_t rpcs, segs;
	uint32_t past;   /* holes reported past the range asked for */
	uint32_t parts;  /* DATA segments sent in place (allow_files) */
	uint32_t mapped; /* of those, sent from a mapping */
};

/* Read all of f through READ_PLUS in count-byte calls and judge it against
 * the real map: data bytes must equal the file, holes must be real holes
 * (or zero blocks with detect_zeroes); with min, a real hole is sent as a
 * HOLE segment exactly when it is at least min long. */
static struct verdict read_all(const char *dir, const char *name,
                               const struct file *f, uint32_t count,
                               uint64_t min, bool zeroes)
{
	static struct rp_reply r;
	struct verdict v = {.ok = true, .exact = true};
	uint64_t pos = 0;

	while (pos < f->size && v.ok && v.rpcs < 100000) {
		uint32_t st = read_plus(dir, name, pos, count, &r);
		uint64_t rend = pos + count;

		v.rpcs++;
		v.wire += xdr_out_size(&r.rep.buf);
		v.parts += r.rep.buf.nparts;
		for (uint32_t k = 0; k < r.rep.buf.nparts; k++)
			v.mapped += r.rep.buf.parts[k].mapped;
		if (st != 0 || r.n == 0) {
			v.ok = false;
			break;
		}
		for (uint32_t i = 0; i < r.n && v.ok; i++) {
			const struct seg *s = &r.s[i];
			int e = extent_of(f, s->off);
			uint64_t len = s->len;

			v.segs++;
			if (s->off != pos || s->len == 0 ||
			    s->off + s->len > f->size || e < 0) {
				v.ok = false;
				break;
			}
			/* 15.10.3: the last hole may go on past the range,
			 * then to the real hole's end */
			if (s->hole && s->off + len > rend) {
				uint64_t he = f->map[e].off + f->map[e].len;
				if (i + 1 != r.n || !f->map[e].hole ||
				    s->off + len !=
				        (he < f->size ? he : f->size))
					v.ok = false;
				v.past++;
				len = rend - s->off;
			}
			if (s->hole) {
				v.holes += len;
				if (!f->map[e].hole &&
				    !(zeroes &&
				      all_zero(f->content + s->off, s->len)))
					v.ok = false;
				if (f->map[e].hole &&
				    f->map[e].off + f->map[e].len <
				        s->off + s->len)
					v.ok = false; /* past the hole */
				if (f->map[e].hole && f->map[e].len < min)
					v.exact = false;
			} else {
				if (memcmp(s->data, f->content + s->off,
				           s->len) != 0)
					v.ok = false;
				/* every real hole inside the data */
				for (int k = e; k < f->nmap &&
				                f->map[k].off < s->off + s->len;
				     k++) {
					if (!f->map[k].hole)
						continue;
					if (f->map[k].len < min)
						v.tiny += f->map[k].len;
					else
						v.big_data += f->map[k].len;
				}
			}
			pos = s->off + len;
		}
		if (r.eof != (pos >= f->size))
			v.ok = false;
		if (pos - (r.s[0].off) > count)
			v.ok = false; /* more than asked for */
	}
	if (pos != f->size)
		v.ok = false;
	if (v.big_data)
		v.exact = false;
	rep_free(&r.rep);
	return v;
}

/* ---- tests ---- */

static char rp0[96], rpbig[96], rpdz[96], rpauto[96], rpzc[96], rpmap[96],
    rpmapauto[96];

static const struct shape {
	const char *name;
	uint64_t unit;
	bool hole_first, data;
} shapes[] = {
    {"data", 0, false, true},
    {"hole", 0, false, false},
    {"mixed-4d", 4096, false, false},
    {"mixed-4h", 4096, true, false},
    {"mixed-8d", 8192, false, false},
    {"mixed-16h", 16384, true, false},
    {"mixed-32d", 32768, false, false},
    {"mixed-32h", 32768, true, false},
    /* holes longer than the server's one-call gap (GAP_MAX, 64 KiB) */
    {"mixed-128d", 131072, false, false},
};

/* Make the shape named name in dir and read it all with file parts
 * allowed, in count-byte calls; checks (label in the name) that segments,
 * holes and content match, and returns the verdict for the parts. */
static struct verdict read_shape_count(const char *dir, const char *name,
                                       const char *label, uint32_t count)
{
	const struct shape *sh = NULL;
	static struct file f;
	struct verdict v;
	char msg[160];

	for (size_t k = 0; k < sizeof(shapes) / sizeof(shapes[0]); k++)
		if (!strcmp(shapes[k].name, name))
			sh = &shapes[k];
	make_file(dir, sh->name, FSIZE + 12345, sh->unit, sh->hole_first,
	          sh->data, false);
	CHECK(load_file(dir, sh->name, &f), "load the file");
	allow_files = true;
	v = read_all(dir, sh->name, &f, count, 1, false);
	allow_files = false;
	snprintf(msg, sizeof(msg), "%s %s: segments, holes and content match",
	         label, sh->name);
	CHECK(v.ok && v.exact && v.tiny == 0, msg);
	free(f.content);
	return v;
}

/* read_shape_count in 1 MiB calls */
static struct verdict read_shape_inplace(const char *dir, const char *name,
                                         const char *label)
{
	return read_shape_count(dir, name, label, 1 << 20);
}

/* With file parts allowed, every shape reads the same (segments, bytes,
 * holes): data runs of zerocopy_min (32 KiB) or more go in place, the
 * rest are copied, and a reply mixes both. */
static void test_every_hole_inplace(void)
{
	static const char *names[] = {"data", "mixed-4d", "mixed-16h",
	                              "mixed-32d", "mixed-128d"};
	const uint32_t want_parts[] = {1, 0, 0, 1, 1};
	char msg[160];

	for (size_t i = 0; i < 5; i++) {
		struct verdict v =
		    read_shape_inplace(rp0, names[i], "in place");

		snprintf(msg, sizeof(msg),
		         "in place %s: %s data sent in place (%u parts, %u "
		         "calls)",
		         names[i], want_parts[i] ? "big" : "no small", v.parts,
		         v.rpcs);
		CHECK(want_parts[i] ? v.parts >= v.rpcs - 1 : v.parts == 0,
		      msg);
	}
}

/* name read through dir in 1 MiB calls, every data piece in place. */
static void check_all_in_place(const char *dir, const char *name,
                               const char *label)
{
	struct verdict v = read_shape_inplace(dir, name, label);
	char msg[160];

	snprintf(msg, sizeof(msg),
	         "%s %s: small data sent in place (%u parts, %u segments, "
	         "%u calls)",
	         label, name, v.parts, v.segs, v.rpcs);
	CHECK(v.parts >= v.segs / 2 && v.parts > 0, msg);
}

/* zerocopy_min=4k: the small pieces a plain zerocopy export copies go in
 * place too, mixed with holes, and read the same. */
static void test_zerocopy_min(void)
{
	check_all_in_place(rpzc, "mixed-4d", "zerocopy_min=4k");
	check_all_in_place(rpzc, "mixed-16h", "zerocopy_min=4k");
}

/* zerocopy=auto (rpauto: no option): where sendfile pays every data
 * piece of a page or more goes in place, as zerocopy_min=4k; where it
 * does not, all are copied, or with mapped (rpmapauto) go from a
 * mapping. The machine's own answer is set both ways. */
static void test_zerocopy_auto(void)
{
	static const char *names[] = {"mixed-8d", "mixed-16h", "data"};
	bool was = rpc_sendfile_pays();
	char msg[160];

	for (size_t i = 0; i < 3; i++) {
		rpc_sendfile_pays_set(true);
		check_all_in_place(rpauto, names[i],
		                   "zerocopy=auto, sendfile pays,");
		rpc_sendfile_pays_set(false);
		struct verdict v =
		    read_shape_inplace(rpauto, names[i], "zerocopy=auto");
		snprintf(msg, sizeof(msg),
		         "zerocopy=auto, sendfile does not pay, %s: copied "
		         "(%u parts)",
		         names[i], v.parts);
		CHECK(v.parts == 0, msg);
		v = read_shape_inplace(rpmapauto, names[i], "mapped");
		snprintf(msg, sizeof(msg),
		         "zerocopy=auto, sendfile does not pay, mapped, %s: "
		         "from a mapping (%u parts, %u mapped)",
		         names[i], v.parts, v.mapped);
		CHECK(v.parts > 0 && v.mapped == v.parts, msg);
	}
	rpc_sendfile_pays_set(was);
}

/* mapped (and no_zerocopy): in calls of mapped_min or more
 * every DATA segment goes from a mapping, none by sendfile, holes stay
 * holes and the bytes are the file's; smaller calls are copied. */
static void test_mapped(void)
{
	static const char *names[] = {"data", "mixed-4d", "mixed-16h",
	                              "mixed-32d"};
	char msg[160];

	for (size_t i = 0; i < 4; i++) {
		struct verdict v =
		    read_shape_inplace(rpmap, names[i], "mapped");

		snprintf(msg, sizeof(msg),
		         "mapped %s: every data segment mapped (%u parts, %u "
		         "mapped, %u segments, %u calls)",
		         names[i], v.parts, v.mapped, v.segs, v.rpcs);
		/* the last call covers only the file's 12345-byte tail,
		 * under mapped_min: its few data segments are copied */
		CHECK(v.parts > 0 && v.mapped == v.parts &&
		          v.parts + 3 >= v.segs / 2,
		      msg);
		v = read_shape_count(rpmap, names[i], "mapped, 32 KiB calls",
		                     32768);
		snprintf(msg, sizeof(msg),
		         "mapped %s: calls under mapped_min copied (%u parts)",
		         names[i], v.parts);
		CHECK(v.parts == 0, msg);
	}
}

static void test_every_hole(void)
{
	char msg[128];

	for (size_t i = 0; i < sizeof(shapes) / sizeof(shapes[0]); i++) {
		const struct shape *sh = &shapes[i];
		static struct file f;
		struct verdict v;

		make_file(rp0, sh->name, FSIZE + 12345, sh->unit,
		          sh->hole_first, sh->data, false);
		CHECK(load_file(rp0, sh->name, &f), "load the file");
		for (uint32_t count = 1 << 18; count <= 1 << 20; count <<= 2) {
			v = read_all(rp0, sh->name, &f, count, 1, false);
			snprintf(msg, sizeof(msg),
			         "min_hole=0 %s count %u: segments and "
			         "content match the file",
			         sh->name, count);
			CHECK(v.ok, msg);
			snprintf(msg, sizeof(msg),
			         "min_hole=0 %s count %u: every hole a HOLE "
			         "segment",
			         sh->name, count);
			CHECK(v.exact && v.tiny == 0, msg);
		}
		free(f.content);
	}
}

static void test_threshold(void)
{
	static struct file f;
	struct verdict v;

	/* 4 KiB..32 KiB holes under a 64 KiB threshold go as zeros. */
	make_file(rpbig, "mixed-16h", FSIZE, 16384, true, false, false);
	load_file(rpbig, "mixed-16h", &f);
	v = read_all(rpbig, "mixed-16h", &f, 1 << 20, 65536, false);
	CHECK(v.ok, "min_hole=64k mixed-16h: content right");
	CHECK(v.holes == 0 && v.tiny == FSIZE / 2,
	      "min_hole=64k mixed-16h: 16 KiB holes sent as zeros");
	CHECK(v.segs <= 2, "min_hole=64k mixed-16h: one DATA per reply");
	free(f.content);

	/* 64 KiB and longer holes still go as holes. */
	make_file(rpbig, "mixed-64h", FSIZE, 65536, true, false, false);
	load_file(rpbig, "mixed-64h", &f);
	v = read_all(rpbig, "mixed-64h", &f, 1 << 20, 65536, false);
	CHECK(v.ok && v.exact && v.holes == FSIZE / 2,
	      "min_hole=64k mixed-64h: 64 KiB holes sent as holes");
	free(f.content);

	make_file(rpbig, "hole", FSIZE, 0, false, false, false);
	load_file(rpbig, "hole", &f);
	v = read_all(rpbig, "hole", &f, 1 << 20, 65536, false);
	CHECK(v.ok && v.holes == FSIZE && v.rpcs == 1,
	      "min_hole=64k hole: one HOLE segment");
	CHECK(v.wire < 512, "hole: a reply of a few hundred bytes");
	/* A range inside a hole: the segment says where the hole ends, so
	 * a client reading on needs no more calls for it (15.10.3). */
	v = read_all(rpbig, "hole", &f, 1 << 16, 65536, false);
	CHECK(v.ok && v.holes == FSIZE && v.past == v.rpcs - 1,
	      "hole in 64 KiB calls: each hole segment goes on to the end");
	free(f.content);
}

/* test_threshold_auto's files: their data and holes alternate in units. */
static const char *const thr_names[] = {"mixed-4d", "mixed-8d", "mixed-16h",
                                        "mixed-32d"};
static const uint64_t thr_units[] = {4096, 8192, 16384, 32768};

/* Each of them read whole with min_hole unset and replies that may take
 * the file (the caller sets what decides the threshold t): holes under t
 * as zeros inside DATA, the others as HOLE segments, data in place. */
static void check_zeros_under(const char *dir, const struct file *f, uint64_t t,
                              const char *who)
{
	char msg[160];

	for (int i = 0; i < 4; i++) {
		bool zeros = thr_units[i] < t;
		struct verdict v =
		    read_all(dir, thr_names[i], &f[i], 1 << 20, t, false);

		snprintf(
		    msg, sizeof(msg), "min_hole unset, %s: %s, %s (%u parts)",
		    who, thr_names[i],
		    zeros ? "holes as zeros in DATA" : "holes as HOLE segments",
		    v.parts);
		CHECK(v.ok && v.exact && v.parts > 0 &&
		          v.holes == (zeros ? 0 : FSIZE / 2),
		      msg);
	}
}

/* An export without readplus_min_hole: every hole a hole for most
 * clients, holes under EXP_READPLUS_MIN_HOLE_LINUX as zeros for the Linux
 * kernel client (by its EXCHANGE_ID implementation id); a number set on
 * the export holds for the Linux client too. Ends on a session of another
 * implementation. */
static void test_threshold_auto(void)
{
	static struct file f[4], g;
	char msg[160];
	struct verdict v;

	for (int i = 0; i < 4; i++) {
		make_file(rpauto, thr_names[i], FSIZE, thr_units[i], i == 2,
		          false, false);
		load_file(rpauto, thr_names[i], &f[i]);
	}
	for (int i = 0; i < 4; i++) {
		v = read_all(rpauto, thr_names[i], &f[i], 1 << 20, 0, false);
		snprintf(msg, sizeof(msg),
		         "min_hole unset, a client without an implementation "
		         "id: %s, every hole a HOLE segment",
		         thr_names[i]);
		CHECK(v.ok && v.exact && v.tiny == 0 && v.holes == FSIZE / 2,
		      msg);
	}
	CHECK(make_session_as("readplus-linux", "kernel.org",
	                      "Linux 6.12.95+deb12-amd64 #1 SMP x86_64") == 0,
	      "a session as the Linux kernel client");
	for (int i = 0; i < 4; i++) {
		v = read_all(rpauto, thr_names[i], &f[i], 1 << 20,
		             EXP_READPLUS_MIN_HOLE_LINUX, false);
		snprintf(msg, sizeof(msg),
		         "min_hole unset, the Linux client: %s, %s",
		         thr_names[i],
		         thr_units[i] < EXP_READPLUS_MIN_HOLE_LINUX
		             ? "holes as zeros in DATA"
		             : "holes as HOLE segments");
		CHECK(v.ok && v.exact &&
		          v.holes == (thr_units[i] < EXP_READPLUS_MIN_HOLE_LINUX
		                          ? 0
		                          : FSIZE / 2),
		      msg);
	}
	/* where pages go by sendfile: holes under 16 KiB as zeros */
	bool was = rpc_sendfile_pays();
	rpc_sendfile_pays_set(true);
	allow_files = true;
	check_zeros_under(rpauto, f, EXP_READPLUS_MIN_HOLE_LINUX_ZC,
	                  "the Linux client, sendfile pays");
	allow_files = false;
	v = read_all(rpauto, "mixed-8d", &f[1], 1 << 20,
	             EXP_READPLUS_MIN_HOLE_LINUX, false);
	CHECK(v.ok && v.exact && v.holes == FSIZE / 2 && v.parts == 0,
	      "sendfile pays, but a reply that cannot take a file: copied, "
	      "8 KiB holes as holes");
	rpc_sendfile_pays_set(was);
	make_file(rpbig, "mixed-8d", FSIZE, 8192, false, false, false);
	load_file(rpbig, "mixed-8d", &g);
	v = read_all(rpbig, "mixed-8d", &g, 1 << 20, 65536, false);
	CHECK(
	    v.ok && v.exact && v.holes == 0,
	    "readplus_min_hole=64k on the export: the Linux client gets 8 KiB "
	    "holes as zeros");
	free(g.content);
	free(f[0].content);
	make_file(rp0, "mixed-4d", FSIZE, 4096, false, false, false);
	load_file(rp0, "mixed-4d", &f[0]);
	v = read_all(rp0, "mixed-4d", &f[0], 1 << 20, 0, false);
	CHECK(v.ok && v.exact && v.holes == FSIZE / 2,
	      "readplus_min_hole=0 on the export: the Linux client gets 4 KiB "
	      "holes as holes");
	CHECK(make_session_as("readplus-other", "example.org", "Linux-ish") ==
	          0,
	      "a session with another implementation id");
	v = read_all(rpauto, "mixed-8d", &f[1], 1 << 20, 0, false);
	CHECK(v.ok && v.exact && v.holes == FSIZE / 2,
	      "min_hole unset, another implementation: 8 KiB holes as holes");
	/* where sendfile pays only from 32 KiB, holes under that go as
	 * zeros and the runs by sendfile; 32 KiB holes stay holes */
	uint64_t from_was = rpc_sendfile_from();
	rpc_sendfile_from_set(32768);
	allow_files = true;
	check_zeros_under(rpauto, f, 32768, "sendfile pays from 32 KiB");
	rpc_sendfile_from_set(128 << 10);
	v = read_all(rpauto, "mixed-8d", &f[1], 1 << 20, 4096, false);
	CHECK(v.ok && v.exact && v.holes == FSIZE / 2 && v.parts == 0,
	      "sendfile pays only from 128 KiB: 8 KiB holes as holes, copied "
	      "(zeros that wide cost more than the copies)");
	allow_files = false;
	rpc_sendfile_from_set(32768);
	v = read_all(rpauto, "mixed-8d", &f[1], 1 << 20, 4096, false);
	CHECK(v.ok && v.exact && v.holes == FSIZE / 2 && v.parts == 0,
	      "sendfile pays from 32 KiB, a reply that cannot take a file: "
	      "copied, 8 KiB holes as holes");
	/* with mapped (rpmapauto): holes under 8 KiB as zeros (the runs by
	 * sendfile), the others as holes, the pieces between them under
	 * 32 KiB from a mapping, the others by sendfile */
	allow_files = true;
	for (int i = 0; i < 4; i++) {
		uint64_t u = thr_units[i];
		bool zeros = u < EXP_READPLUS_MIN_HOLE_MAPPED;
		free(f[i].content);
		make_file(rpmapauto, thr_names[i], FSIZE, u, i == 2, false,
		          false);
		load_file(rpmapauto, thr_names[i], &f[i]);
		v = read_all(rpmapauto, thr_names[i], &f[i], 1 << 20,
		             EXP_READPLUS_MIN_HOLE_MAPPED, false);
		snprintf(msg, sizeof(msg),
		         "mapped, sendfile pays from 32 KiB: %s, holes as %s, "
		         "data %s (%u parts, %u mapped)",
		         thr_names[i], zeros ? "zeros" : "holes",
		         !zeros && u < 32768 ? "mapped" : "by sendfile",
		         v.parts, v.mapped);
		CHECK(v.ok && v.exact && v.holes == (zeros ? 0 : FSIZE / 2) &&
		          v.parts > 0 &&
		          v.mapped == (!zeros && u < 32768 ? v.parts : 0),
		      msg);
	}
	allow_files = false;
	rpc_sendfile_from_set(from_was);
	for (int i = 0; i < 4; i++)
		free(f[i].content);
}

static void test_detect_zeroes(void)
{
	static struct file f;
	struct verdict v;

	/* Written zeros, no real holes at all. */
	make_file(rpdz, "zeros-32", FSIZE, 32768, false, false, true);
	load_file(rpdz, "zeros-32", &f);
	CHECK(f.nmap == 1 && !f.map[0].hole, "zeros-32 has no real hole");
	v = read_all(rpdz, "zeros-32", &f, 1 << 20, 1, true);
	CHECK(v.ok, "detect_zeroes zeros-32: content right");
	CHECK(v.holes == FSIZE / 2,
	      "detect_zeroes zeros-32: zero blocks sent as holes");
	v = read_all(rpdz, "zeros-32", &f, 100000, 1, true);
	CHECK(v.ok, "detect_zeroes zeros-32, unaligned count: content right");
	free(f.content);

	make_file(rpdz, "mixed-4d", FSIZE, 4096, false, false, false);
	load_file(rpdz, "mixed-4d", &f);
	v = read_all(rpdz, "mixed-4d", &f, 1 << 20, 1, true);
	CHECK(v.ok && v.holes == FSIZE / 2,
	      "detect_zeroes mixed-4d: real holes still holes");
	free(f.content);

	/* Same zeros without the option: all data. */
	make_file(rp0, "zeros-32", FSIZE, 32768, false, false, true);
	load_file(rp0, "zeros-32", &f);
	v = read_all(rp0, "zeros-32", &f, 1 << 20, 1, false);
	CHECK(v.ok && v.holes == 0, "no detect_zeroes: zero blocks are data");
	free(f.content);
}

/* SEEK answers from the same map. */
static uint32_t seek(const char *dir, const char *name, uint64_t off, bool data,
                     bool *eof, uint64_t *found)
{
	struct reply rep = {0};
	struct cbuf b;
	uint32_t st, nlook;

	nlook = begin_on(&b, dir);
	op_name(&b, OP4_LOOKUP, name);
	op(&b, OP4_SEEK);
	put_anon_stateid(&b.x);
	xdr_put_u64(&b.x, off);
	xdr_put_u32(&b.x, data ? 0 : 1);
	st = c_send(&b, &rep);
	if (st == 0 &&
	    (!skip_prefix(&rep, nlook) || res_next(&rep, OP4_LOOKUP) ||
	     res_next(&rep, OP4_SEEK) || !xdr_get_bool(&rep.res, eof) ||
	     !xdr_get_u64(&rep.res, found)))
		st = 0xbad;
	rep_free(&rep);
	return st;
}

static void test_seek(void)
{
	bool eof;
	uint64_t found;

	make_file(rp0, "mixed-32h", FSIZE, 32768, true, false, false);
	CHECK(seek(rp0, "mixed-32h", 0, true, &eof, &found) == 0 &&
	          found == 32768 && !eof,
	      "SEEK DATA from 0 in mixed-32h");
	CHECK(seek(rp0, "mixed-32h", 40000, false, &eof, &found) == 0 &&
	          found == 65536 && !eof,
	      "SEEK HOLE from inside data");
	CHECK(seek(rp0, "mixed-32h", 10, false, &eof, &found) == 0 &&
	          found == 10,
	      "SEEK HOLE inside a hole is the offset");
	make_file(rp0, "hole", FSIZE, 0, false, false, false);
	CHECK(seek(rp0, "hole", 5, true, &eof, &found) == 0 && eof,
	      "SEEK DATA in an all-hole file: eof");
	CHECK(seek(rp0, "hole", FSIZE, true, &eof, &found) == NFS4ERR_NXIO,
	      "SEEK at EOF: NXIO");
}

/* ---- setup ---- */

/* A count wider than maxread: the reply covers up to count bytes of the
 * file, its data (and headers) within maxread, so a sparse file takes
 * fewer calls (libsnfs sizes its calls so; the Linux client never asks
 * more than rsize). A data file still gets maxread at most, short of the
 * count and not at EOF. */
static void test_wide_count(void)
{
	static struct file f;
	static struct rp_reply r;
	const uint64_t size = 4u << 20;
	uint64_t data = 0, pos = 0;
	struct verdict v;
	char msg[160];
	uint32_t st;

	make_file(rp0, "wide-4d", size, 4096, false, false, false);
	CHECK(load_file(rp0, "wide-4d", &f), "load the 4 MiB mixed-4d file");
	st = read_plus(rp0, "wide-4d", 0, 2u << 20, &r);
	for (uint32_t i = 0; st == 0 && i < r.n; i++) {
		if (r.s[i].off != pos)
			break;
		if (!r.s[i].hole)
			data += r.s[i].len;
		pos += r.s[i].len;
	}
	snprintf(msg, sizeof(msg),
	         "count 2 MiB over mixed-4d: covers more than 1 MiB (%llu "
	         "bytes), data within maxread (%llu)",
	         (unsigned long long)pos, (unsigned long long)data);
	CHECK(st == 0 && pos > (1u << 20) + (512u << 10) && pos <= 2u << 20 &&
	          data <= 1u << 20 && !r.eof,
	      msg);
	v = read_all(rp0, "wide-4d", &f, 2u << 20, 1, false);
	snprintf(msg, sizeof(msg),
	         "count 2 MiB over mixed-4d: every byte and hole right, %u "
	         "calls for 4 MiB",
	         v.rpcs);
	CHECK(v.ok && v.exact && v.rpcs <= 3, msg);
	free(f.content);

	make_file(rp0, "wide-data", size, 0, false, true, false);
	CHECK(load_file(rp0, "wide-data", &f), "load the 4 MiB data file");
	st = read_plus(rp0, "wide-data", 0, 2u << 20, &r);
	CHECK(st == 0 && r.n == 1 && !r.s[0].hole && r.s[0].off == 0 &&
	          r.s[0].len == 1u << 20 &&
	          !memcmp(r.s[0].data, f.content, 1u << 20) && !r.eof,
	      "count 2 MiB over a data file: maxread of data, not at EOF");
	v = read_all(rp0, "wide-data", &f, 8u << 20, 1, false);
	CHECK(v.ok && v.rpcs == 4,
	      "count 8 MiB over a 4 MiB data file: 4 calls of maxread");
	free(f.content);
	rep_free(&r.rep);
}

/* Ranges under 4 bytes go as one DATA segment, holes as zeros: the Linux
 * 6.12 client failed O_DIRECT reads of 1-3 bytes with EIO whenever the
 * reply held a HOLE (tests/interop/fsrand found it). From 4 bytes holes
 * are holes again. */
static void test_tiny_ranges(const char *dir)
{
	static struct rp_reply r;
	static uint8_t d[8192];
	char p[256], msg[200];
	int fd;
	static const struct {
		uint64_t off;
		uint32_t n;
		uint8_t first; /* the first byte's value */
	} q[] = {{8192, 1, 0}, {9000, 2, 0}, {12285, 3, 0},
	         {8191, 2, 7}, {8191, 3, 7}, {12286, 3, 0}};

	snprintf(p, sizeof(p), "%s/tiny", dir);
	memset(d, 7, sizeof(d));
	fd = open(p, O_RDWR | O_CREAT | O_TRUNC, 0644);
	CHECK(fd >= 0 && pwrite(fd, d, sizeof(d), 0) == (ssize_t)sizeof(d) &&
	          ftruncate(fd, 12288 + 1000) == 0 && close(fd) == 0,
	      "tiny: 8 KiB of data, then a hole to 13288");
	for (unsigned i = 0; i < sizeof(q) / sizeof(q[0]); i++) {
		uint32_t st = read_plus(dir, "tiny", q[i].off, q[i].n, &r);
		bool zeros = true;
		for (uint32_t k = 1;
		     st == 0 && r.n == 1 && !r.s[0].hole && k < r.s[0].len; k++)
			zeros = zeros &&
			        r.s[0].data[k] == (q[i].off + k < 8192 ? 7 : 0);
		snprintf(msg, sizeof(msg),
		         "tiny: READ_PLUS of %u bytes at %llu: one DATA "
		         "segment, holes as zeros",
		         q[i].n, (unsigned long long)q[i].off);
		CHECK(st == 0 && r.n == 1 && !r.s[0].hole &&
		          r.s[0].off == q[i].off && r.s[0].len == q[i].n &&
		          r.s[0].data[0] == q[i].first && zeros && !r.eof,
		      msg);
	}
	CHECK(read_plus(dir, "tiny", 9000, 4, &r) == 0 && r.n == 1 &&
	          r.s[0].hole && r.s[0].off == 9000,
	      "tiny: from 4 bytes a hole is a HOLE");
	CHECK(read_plus(dir, "tiny", 13286, 3, &r) == 0 && r.n == 1 &&
	          !r.s[0].hole && r.s[0].len == 2 && r.eof,
	      "tiny: 2 bytes before EOF, in the hole: DATA, eof");
	rep_free(&r.rep);
}

static int setup(void)
{
	const char *specs[7];
	char s0[200], s1[160], s2[160], s3[160], s4[200], s5[200], s6[200];
	char err[256];
	struct export_table *t;
	int rc;

	snprintf(base, sizeof(base), "/tmp/snfs-rplus-XXXXXX");
	if (!mkdtemp(base))
		return -errno;
	snprintf(rp0, sizeof(rp0), "%s/rp0", base);
	snprintf(rpbig, sizeof(rpbig), "%s/rpbig", base);
	snprintf(rpdz, sizeof(rpdz), "%s/rpdz", base);
	snprintf(rpauto, sizeof(rpauto), "%s/rpauto", base);
	snprintf(rpzc, sizeof(rpzc), "%s/rpzc", base);
	mkdir(rpzc, 0755);
	snprintf(rpmap, sizeof(rpmap), "%s/rpmap", base);
	mkdir(rpmap, 0755);
	snprintf(rpmapauto, sizeof(rpmapauto), "%s/rpmapauto", base);
	mkdir(rpmapauto, 0755);
	mkdir(rpauto, 0755);
	mkdir(rp0, 0755);
	mkdir(rpbig, 0755);
	mkdir(rpdz, 0755);
	snprintf(s0, sizeof(s0),
	         "%s:rw,insecure,no_root_squash,"
	         "readplus_min_hole=0,zerocopy,no_mapped",
	         rp0);
	snprintf(s1, sizeof(s1),
	         "%s:rw,insecure,no_root_squash,"
	         "readplus_min_hole=64k",
	         rpbig);
	snprintf(s2, sizeof(s2),
	         "%s:rw,insecure,no_root_squash,"
	         "readplus_min_hole=0,detect_zeroes",
	         rpdz);
	snprintf(s3, sizeof(s3), "%s:rw,insecure,no_root_squash", rpauto);
	specs[0] = s0;
	specs[1] = s1;
	specs[2] = s2;
	snprintf(s4, sizeof(s4),
	         "%s:rw,insecure,no_root_squash,"
	         "readplus_min_hole=0,zerocopy,zerocopy_min=4k",
	         rpzc);
	specs[3] = s3;
	specs[4] = s4;
	snprintf(s5, sizeof(s5),
	         "%s:rw,insecure,no_root_squash,readplus_min_hole=0,mapped,"
	         "no_zerocopy",
	         rpmap);
	specs[5] = s5;
	snprintf(s6, sizeof(s6), "%s:rw,insecure,no_root_squash,mapped",
	         rpmapauto);
	specs[6] = s6;
	rc = exports_load(NULL, specs, 7, &t, err, sizeof(err));
	if (rc) {
		printf("# exports_load: %s\n", err);
		return rc;
	}
	return testsrv_start(t, base);
}

static void test_options(void)
{
	char spec[200], err[256];
	const char *specs[1] = {spec};
	struct export_table *t;

	snprintf(spec, sizeof(spec), "%s:readplus_min_hole=-1", rp0);
	CHECK(exports_load(NULL, specs, 1, &t, err, sizeof(err)) == -EINVAL,
	      "readplus_min_hole=-1 is refused");
	snprintf(spec, sizeof(spec), "%s:readplus_min_hole=2g", rp0);
	CHECK(exports_load(NULL, specs, 1, &t, err, sizeof(err)) == -EINVAL,
	      "readplus_min_hole=2g is refused");
	snprintf(spec, sizeof(spec), "%s:readplus_min_hole=8k", rp0);
	CHECK(exports_load(NULL, specs, 1, &t, err, sizeof(err)) == 0 &&
	          t->v[0].rules[0].readplus_min_hole == 8192 &&
	          !(t->v[0].rules[0].flags & EXP_DETECT_ZEROES),
	      "readplus_min_hole=8k parsed; detect_zeroes off by default");
	if (t)
		exports_free(t);
	snprintf(spec, sizeof(spec),
	         "%s:readplus_min_hole=8k,"
	         "readplus_min_hole=auto",
	         rp0);
	CHECK(exports_load(NULL, specs, 1, &t, err, sizeof(err)) == 0 &&
	          t->v[0].rules[0].readplus_min_hole ==
	              EXP_READPLUS_MIN_HOLE_AUTO,
	      "readplus_min_hole=auto parsed");
	if (t)
		exports_free(t);
	snprintf(spec, sizeof(spec), "%s:rw", rp0);
	CHECK(exports_load(NULL, specs, 1, &t, err, sizeof(err)) == 0 &&
	          t->v[0].rules[0].readplus_min_hole ==
	              EXP_READPLUS_MIN_HOLE_AUTO &&
	          t->v[0].rules[0].zerocopy_min == EXP_ZEROCOPY_MIN_UNSET,
	      "readplus_min_hole unset: auto; zerocopy_min unset");
	if (t)
		exports_free(t);
	snprintf(spec, sizeof(spec), "%s:zerocopy,zerocopy_min=4k", rp0);
	CHECK(exports_load(NULL, specs, 1, &t, err, sizeof(err)) == 0 &&
	          t->v[0].rules[0].zerocopy_min == 4096 &&
	          !(t->v[0].rules[0].flags & EXP_NO_ZEROCOPY),
	      "zerocopy_min=4k parsed");
	if (t)
		exports_free(t);
	snprintf(spec, sizeof(spec), "%s:rw", rp0);
	CHECK(exports_load(NULL, specs, 1, &t, err, sizeof(err)) == 0 &&
	          t->v[0].rules[0].mapped_min == EXP_MAPPED_MIN_DEFAULT &&
	          EXP_MAPPED_MIN_DEFAULT == (64u << 10) &&
	          (t->v[0].rules[0].flags & EXP_NO_MAPPED),
	      "no_mapped by default, mapped_min 64 KiB");
	if (t)
		exports_free(t);
	snprintf(spec, sizeof(spec), "%s:mapped,mapped_min=1m", rp0);
	CHECK(exports_load(NULL, specs, 1, &t, err, sizeof(err)) == 0 &&
	          t->v[0].rules[0].mapped_min == (1u << 20) &&
	          !(t->v[0].rules[0].flags & EXP_NO_MAPPED),
	      "mapped and mapped_min=1m parsed");
	if (t)
		exports_free(t);
	snprintf(spec, sizeof(spec), "%s:zerocopy_min=-4", rp0);
	CHECK(exports_load(NULL, specs, 1, &t, err, sizeof(err)) == -EINVAL,
	      "zerocopy_min=-4 is refused");
	if (t)
		exports_free(t);
}

int main(void)
{
	int rc;

	if (geteuid() != 0) {
		printf("ok - skipped: needs root\n");
		return 0;
	}
	log_set_level(LOG_ERR);
	rc = setup();
	CHECK(rc == 0, "setup: exports and service");
	if (rc)
		TEST_EXIT();
	CHECK(make_session() == 0, "4.2 session");
	test_every_hole();
	test_every_hole_inplace();
	test_zerocopy_min();
	test_zerocopy_auto();
	test_mapped();
	test_threshold();
	test_threshold_auto();
	test_wide_count();
	test_tiny_ranges(rp0);
	test_tiny_ranges(rpauto);
	test_detect_zeroes();
	test_seek();
	test_options();
	testsrv_stop(base);
	TEST_EXIT();
}
