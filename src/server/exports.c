/* Exports: parsing /etc/exports(5)-style files and -e specs into an
 * immutable, reference-counted table; matching clients against rules and
 * squashing their credentials.
 *
 * Host forms: `*`, an IPv4 or IPv6 address, a CIDR network (`10.0.0.0/8`,
 * `fd00::/8`) or netmask (`10.0.0.0/255.0.0.0`), a hostname. A hostname is
 * resolved once when the table is built and matches the addresses it had
 * then; snfsd does no reverse lookups, so wildcard names (`*.example.com`)
 * are accepted but never match (a warning says so). */
#include "server/exports.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <netdb.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "server/fh.h"
#include "server/snfsd.h"
#include "util/log.h"

#define ANON_ID_DEFAULT 65534u
#define LINE_MAX_LEN (64 * 1024)

/* Where an export came from, for messages. line 0: a -e spec. */
struct origin {
	const char *file;
	int line;
};

/* Options of one rule while it is parsed. */
struct rule_opts {
	uint32_t flags;
	uint32_t anonuid, anongid;
	uint32_t readplus_min_hole;
	uint32_t zerocopy_min;
	uint32_t mapped_min;
	bool fsid_set;
	uint32_t fsid;
};

struct builder {
	struct export_table *t;
	size_t cap;
	struct origin *orig; /* parallel to t->v */
	bool *fsid_set;      /* parallel to t->v: fsid given explicitly */
	char *err;
	size_t errsz;
};

/* ---- messages ---- */

static int fail(struct builder *b, const struct origin *o, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Write "file:line: reason" (or "-e SPEC: reason") into the error buffer. */
static int fail(struct builder *b, const struct origin *o, const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (b->err && b->errsz) {
		if (o->line > 0)
			snprintf(b->err, b->errsz, "%s:%d: %s", o->file,
			         o->line, msg);
		else
			snprintf(b->err, b->errsz, "%s: %s", o->file, msg);
	}
	return -EINVAL;
}

static const char *origin_str(const struct origin *o, char *buf, size_t n)
{
	if (o->line > 0)
		snprintf(buf, n, "%s:%d", o->file, o->line);
	else
		snprintf(buf, n, "%s", o->file);
	return buf;
}

/* ---- options ---- */

/* zerocopy=auto and no_mapped by default. auto sends by sendfile the
 * pieces of a reply from the size where that beats copying them here
 * (rpc_sendfile_from, timed at start): in the emulated guest from a page
 * up; on a 2-CPU VM host from 8-64 KiB, so READ of cached files goes by
 * sendfile (1.5-2x faster than copied, bench/results/stop29) while the
 * smaller pieces of a sparse READ_PLUS reply would be copied, so holes
 * under that size go as zeros with the runs by sendfile (v42.c
 * rp_min_hole). mapped sends those pieces from a mapping kept across
 * replies (rpc/mapcache.c) and every hole from 8 KiB as a hole: a sixth
 * less CPU in all and half the bytes on the wire for mixed-8d/16d, but
 * over loopback here no less time, the server's one copy then being the
 * longer side (bench/results/stop30), so it stays an option. */
static const struct rule_opts file_defaults = {
    .flags = EXP_ROOT_SQUASH | EXP_SECURE | EXP_SYNC | EXP_ZEROCOPY_AUTO |
             EXP_NO_MAPPED,
    .anonuid = ANON_ID_DEFAULT,
    .anongid = ANON_ID_DEFAULT,
    .readplus_min_hole = EXP_READPLUS_MIN_HOLE_AUTO,
    .zerocopy_min = EXP_ZEROCOPY_MIN_UNSET,
    .mapped_min = EXP_MAPPED_MIN_DEFAULT,
};

/* -e exists for quick local use: the kernel client in a test VM arrives
 * from unprivileged ports, and a one-off export is meant to be written. */
static const struct rule_opts cli_defaults = {
    .flags =
        EXP_RW | EXP_ROOT_SQUASH | EXP_SYNC | EXP_ZEROCOPY_AUTO | EXP_NO_MAPPED,
    .anonuid = ANON_ID_DEFAULT,
    .anongid = ANON_ID_DEFAULT,
    .readplus_min_hole = EXP_READPLUS_MIN_HOLE_AUTO,
    .zerocopy_min = EXP_ZEROCOPY_MIN_UNSET,
    .mapped_min = EXP_MAPPED_MIN_DEFAULT,
};

/* Options exports(5) defines that change nothing here. */
static const char *const ignored_opts[] = {
    "no_subtree_check",
    "subtree_check",
    "wdelay",
    "no_wdelay",
    "hide",
    "nohide",
    "crossmnt",
    "nocrossmnt",
    "secure_locks",
    "insecure_locks",
    "auth_nlm",
    "no_auth_nlm",
    "no_acl",
    "acl",
    "sec=sys",
    NULL,
};

static bool parse_u32(const char *s, uint32_t *out)
{
	char *end;
	unsigned long long v;

	if (!isdigit((unsigned char)*s))
		return false;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || *end || v > UINT32_MAX)
		return false;
	*out = (uint32_t)v;
	return true;
}

/* An id option: anonuid=N, anongid=N or fsid=N. */
static int parse_id_opt(struct builder *b, const struct origin *o,
                        const char *opt, const char *val, uint32_t *out)
{
	if (parse_u32(val, out))
		return 0;
	if (!strcmp(opt, "fsid") && !strcmp(val, "root"))
		return fail(b, o, "fsid=root is not supported; give a number");
	if (!strcmp(opt, "fsid") && strlen(val) >= 16)
		return fail(b, o,
		            "fsid=%s: UUIDs are not supported; give a "
		            "number",
		            val);
	return fail(b, o, "%s=%s: not a number from 0 to 4294967295", opt, val);
}

static bool is_ignored_opt(const char *opt)
{
	for (int i = 0; ignored_opts[i]; i++)
		if (!strcmp(opt, ignored_opts[i]))
			return true;
	return false;
}

/* Flag options: name, bits set, bits cleared. */
static const struct {
	const char *name;
	uint32_t set, clear;
} flag_opts[] = {
    {"rw", EXP_RW, 0},
    {"ro", 0, EXP_RW},
    {"root_squash", EXP_ROOT_SQUASH, 0},
    {"no_root_squash", 0, EXP_ROOT_SQUASH},
    {"all_squash", EXP_ALL_SQUASH, 0},
    {"no_all_squash", 0, EXP_ALL_SQUASH},
    {"secure", EXP_SECURE, 0},
    {"insecure", 0, EXP_SECURE},
    {"sync", EXP_SYNC, 0},
    {"async", 0, EXP_SYNC},
    {"detect_zeroes", EXP_DETECT_ZEROES, 0},
    {"no_detect_zeroes", 0, EXP_DETECT_ZEROES},
    {"zerocopy", 0, EXP_NO_ZEROCOPY | EXP_ZEROCOPY_AUTO},
    {"no_zerocopy", EXP_NO_ZEROCOPY, EXP_ZEROCOPY_AUTO},
    {"mapped", 0, EXP_NO_MAPPED},
    {"no_mapped", EXP_NO_MAPPED, 0},
    {"delegations", EXP_DELEGATIONS, 0},
    {"no_delegations", 0, EXP_DELEGATIONS},
};

/* A byte count with an optional k or m suffix, up to 1 GiB. */
static int parse_size_opt(struct builder *b, const struct origin *o,
                          const char *opt, const char *val, uint32_t *out)
{
	unsigned long long v;
	char *end;

	errno = 0;
	v = strtoull(val, &end, 10);
	if (end != val && (*end == 'k' || *end == 'K'))
		v <<= 10, end++;
	else if (end != val && (*end == 'm' || *end == 'M'))
		v <<= 20, end++;
	if (errno || end == val || *end || *val == '-' || v > (1ull << 30))
		return fail(b, o, "%s=%s: not a size from 0 to 1G", opt, val);
	*out = (uint32_t)v;
	return 0;
}

/* idmap=numeric (the default, as knfsd's nfs4_disable_id_mapping: NFSv4
 * owners go as "1000", which RFC 7530 5.9 allows with AUTH_SYS and the
 * Linux client reads without an idmapper) or idmap=names ("user@domain"
 * for ids with a passwd or group entry, numbers for the rest). */
static int parse_idmap_opt(struct builder *b, const struct origin *o,
                           const char *val, uint32_t *flags)
{
	if (!strcmp(val, "names"))
		*flags |= EXP_IDMAP_NAMES;
	else if (!strcmp(val, "numeric"))
		*flags &= ~(uint32_t)EXP_IDMAP_NAMES;
	else
		return fail(b, o, "idmap=%s: give idmap=names or idmap=numeric",
		            val);
	return 0;
}

static int apply_opt(struct builder *b, const struct origin *o,
                     struct rule_opts *r, char *opt)
{
	char *val;

	for (size_t i = 0; i < sizeof(flag_opts) / sizeof(flag_opts[0]); i++) {
		if (!strcmp(opt, flag_opts[i].name)) {
			r->flags =
			    (r->flags | flag_opts[i].set) & ~flag_opts[i].clear;
			return 0;
		}
	}
	if (is_ignored_opt(opt))
		return 0;
	val = strchr(opt, '=');
	if (!val)
		return fail(b, o, "unknown option '%s'", opt);
	*val++ = '\0';
	if (!strcmp(opt, "anonuid"))
		return parse_id_opt(b, o, opt, val, &r->anonuid);
	if (!strcmp(opt, "anongid"))
		return parse_id_opt(b, o, opt, val, &r->anongid);
	if (!strcmp(opt, "fsid")) {
		r->fsid_set = true;
		return parse_id_opt(b, o, opt, val, &r->fsid);
	}
	if (!strcmp(opt, "readplus_min_hole") && !strcmp(val, "auto")) {
		r->readplus_min_hole = EXP_READPLUS_MIN_HOLE_AUTO;
		return 0;
	}
	if (!strcmp(opt, "readplus_min_hole"))
		return parse_size_opt(b, o, opt, val, &r->readplus_min_hole);
	if (!strcmp(opt, "zerocopy") && !strcmp(val, "auto")) {
		r->flags = (r->flags | EXP_ZEROCOPY_AUTO) & ~EXP_NO_ZEROCOPY;
		return 0;
	}
	if (!strcmp(opt, "zerocopy_min"))
		return parse_size_opt(b, o, opt, val, &r->zerocopy_min);
	if (!strcmp(opt, "mapped_min"))
		return parse_size_opt(b, o, opt, val, &r->mapped_min);
	if (!strcmp(opt, "idmap"))
		return parse_idmap_opt(b, o, val, &r->flags);
	if (!strcmp(opt, "sec"))
		return fail(b, o, "sec=%s: only sec=sys is supported", val);
	return fail(b, o, "unknown option '%s=%s'", opt, val);
}

/* Apply a comma-separated option list (modified in place). */
static int apply_opts(struct builder *b, const struct origin *o,
                      struct rule_opts *r, char *list)
{
	char *save = NULL, *opt;
	int rc;

	for (opt = strtok_r(list, ",", &save); opt;
	     opt = strtok_r(NULL, ",", &save)) {
		rc = apply_opt(b, o, r, opt);
		if (rc)
			return rc;
	}
	return 0;
}

/* ---- addresses ---- */

/* IPv4-mapped IPv6 addresses (a dual-stack socket's view of IPv4 peers)
 * become plain IPv4 so one rule covers both. */
static void normalize_addr(const struct sockaddr *in,
                           struct sockaddr_storage *out)
{
	memset(out, 0, sizeof(*out));
	if (in->sa_family == AF_INET6) {
		const struct sockaddr_in6 *s6 = (const void *)in;
		if (IN6_IS_ADDR_V4MAPPED(&s6->sin6_addr)) {
			struct sockaddr_in *s4 = (void *)out;
			s4->sin_family = AF_INET;
			memcpy(&s4->sin_addr, &s6->sin6_addr.s6_addr[12], 4);
			return;
		}
		memcpy(out, in, sizeof(*s6));
	} else if (in->sa_family == AF_INET) {
		memcpy(out, in, sizeof(struct sockaddr_in));
	} else {
		out->ss_family = in->sa_family;
	}
}

/* The raw address bytes of an AF_INET or AF_INET6 sockaddr. */
static const uint8_t *addr_bytes(const struct sockaddr_storage *ss, size_t *len)
{
	if (ss->ss_family == AF_INET) {
		*len = 4;
		return (const uint8_t *)&((const struct sockaddr_in *)ss)
		    ->sin_addr;
	}
	if (ss->ss_family == AF_INET6) {
		*len = 16;
		return ((const struct sockaddr_in6 *)ss)->sin6_addr.s6_addr;
	}
	*len = 0;
	return NULL;
}

static bool prefix_equal(const uint8_t *a, const uint8_t *b, int bits)
{
	int whole = bits / 8, rest = bits % 8;

	if (memcmp(a, b, (size_t)whole))
		return false;
	if (rest) {
		uint8_t mask = (uint8_t)(0xff << (8 - rest));
		return (a[whole] & mask) == (b[whole] & mask);
	}
	return true;
}

/* Parse a numeric address into a sockaddr. */
static bool parse_ip(const char *s, struct sockaddr_storage *ss)
{
	struct sockaddr_in *s4 = (void *)ss;
	struct sockaddr_in6 *s6 = (void *)ss;
	struct sockaddr_storage tmp;

	memset(ss, 0, sizeof(*ss));
	if (inet_pton(AF_INET, s, &s4->sin_addr) == 1) {
		s4->sin_family = AF_INET;
		return true;
	}
	if (inet_pton(AF_INET6, s, &s6->sin6_addr) == 1) {
		s6->sin6_family = AF_INET6;
		normalize_addr((struct sockaddr *)ss, &tmp);
		*ss = tmp;
		return true;
	}
	return false;
}

/* The prefix length of a contiguous IPv4 netmask, or -1. */
static int netmask_prefix(const char *s)
{
	struct in_addr m;
	uint32_t v;
	int n = 0;

	if (inet_pton(AF_INET, s, &m) != 1)
		return -1;
	v = ntohl(m.s_addr);
	while (n < 32 && (v & (0x80000000u >> n)))
		n++;
	if (n < 32 && (v << n))
		return -1;
	return n;
}

/* ---- rules ---- */

struct rule_list {
	struct export_rule *v;
	size_t n, cap;
};

static int rule_push(struct rule_list *l, const struct export_rule *r)
{
	if (l->n == l->cap) {
		size_t cap = l->cap ? l->cap * 2 : 4;
		struct export_rule *v = realloc(l->v, cap * sizeof(*v));
		if (!v)
			return -ENOMEM;
		l->v = v;
		l->cap = cap;
	}
	l->v[l->n++] = *r;
	return 0;
}

static void rules_free(struct export_rule *v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(v[i].pattern);
	free(v);
}

/* Add a rule of the given kind; pattern is the host as written, shown by
 * MOUNT EXPORT. */
static int add_rule(struct rule_list *l, enum export_match_kind kind,
                    const struct sockaddr_storage *addr, int prefix,
                    const char *host, const struct rule_opts *o)
{
	struct export_rule r = {
	    .kind = kind,
	    .prefix = prefix,
	    .flags = o->flags,
	    .anonuid = o->anonuid,
	    .anongid = o->anongid,
	    .readplus_min_hole = o->readplus_min_hole,
	    .zerocopy_min = o->zerocopy_min,
	    .mapped_min = o->mapped_min,
	};
	int rc;

	if (addr)
		r.addr = *addr;
	r.pattern = strdup(host);
	if (!r.pattern)
		return -ENOMEM;
	rc = rule_push(l, &r);
	if (rc)
		free(r.pattern);
	return rc;
}

static int add_cidr_rule(struct builder *b, const struct origin *o,
                         struct rule_list *l, const char *host,
                         const struct rule_opts *ro)
{
	char addr[INET6_ADDRSTRLEN + 1];
	const char *slash = strchr(host, '/');
	struct sockaddr_storage ss;
	size_t alen = (size_t)(slash - host), nbytes;
	uint32_t prefix;
	int max;

	if (alen >= sizeof(addr))
		return fail(b, o, "bad network '%s'", host);
	memcpy(addr, host, alen);
	addr[alen] = '\0';
	if (!parse_ip(addr, &ss))
		return fail(b, o, "bad network address '%s'", host);
	max = ss.ss_family == AF_INET ? 32 : 128;
	if (parse_u32(slash + 1, &prefix)) {
		if (prefix > (uint32_t)max)
			return fail(b, o, "bad prefix length in '%s'", host);
	} else {
		int p =
		    ss.ss_family == AF_INET ? netmask_prefix(slash + 1) : -1;
		if (p < 0)
			return fail(b, o, "bad netmask in '%s'", host);
		prefix = (uint32_t)p;
	}
	/* A host part beyond the prefix would never matter; clear it so
	 * MOUNT EXPORT and comparisons see the network itself. */
	{
		uint8_t *bytes = (uint8_t *)addr_bytes(&ss, &nbytes);
		for (size_t i = 0; i < nbytes; i++) {
			int keep = (int)prefix - (int)(i * 8);
			if (keep <= 0)
				bytes[i] = 0;
			else if (keep < 8)
				bytes[i] &= (uint8_t)(0xff << (8 - keep));
		}
	}
	return add_rule(l, MATCH_CIDR, &ss, (int)prefix, host, ro);
}

static bool valid_hostname(const char *h)
{
	if (!*h)
		return false;
	for (; *h; h++)
		if (!isalnum((unsigned char)*h) && !strchr(".-_*?[]", *h))
			return false;
	return true;
}

/* A hostname: resolved now into one MATCH_ADDR rule per address. A name
 * that does not resolve, or a wildcard, stays a MATCH_NAME rule, which
 * never matches (no reverse lookups); a warning says so. */
static int add_name_rules(struct builder *b, const struct origin *o,
                          struct rule_list *l, const char *host,
                          const struct rule_opts *ro)
{
	struct addrinfo hints = {.ai_socktype = SOCK_STREAM};
	struct addrinfo *res = NULL, *ai;
	char where[PATH_MAX + 32];
	size_t before = l->n;
	int rc = 0;

	if (!valid_hostname(host))
		return fail(b, o, "bad host '%s'", host);
	if (strpbrk(host, "*?[")) {
		log_warn("%s: wildcard host '%s' never matches (snfsd does "
		         "no reverse lookups)",
		         origin_str(o, where, sizeof(where)), host);
		return add_rule(l, MATCH_NAME, NULL, 0, host, ro);
	}
	if (getaddrinfo(host, NULL, &hints, &res) != 0) {
		log_warn("%s: cannot resolve host '%s'; its rule never "
		         "matches",
		         origin_str(o, where, sizeof(where)), host);
		return add_rule(l, MATCH_NAME, NULL, 0, host, ro);
	}
	for (ai = res; ai && !rc; ai = ai->ai_next) {
		struct sockaddr_storage ss;
		bool dup = false;

		if (ai->ai_family != AF_INET && ai->ai_family != AF_INET6)
			continue;
		normalize_addr(ai->ai_addr, &ss);
		for (size_t i = before; i < l->n; i++) {
			size_t n1, n2;
			const uint8_t *a1 = addr_bytes(&l->v[i].addr, &n1);
			const uint8_t *a2 = addr_bytes(&ss, &n2);
			if (n1 == n2 && !memcmp(a1, a2, n1))
				dup = true;
		}
		if (!dup)
			rc = add_rule(l, MATCH_ADDR, &ss, 0, host, ro);
	}
	freeaddrinfo(res);
	return rc;
}

/* One host element: "*", address, network or name, with its options. */
static int add_host(struct builder *b, const struct origin *o,
                    struct rule_list *l, const char *host,
                    const struct rule_opts *ro)
{
	struct sockaddr_storage ss;

	if (!*host || !strcmp(host, "*"))
		return add_rule(l, MATCH_ANY, NULL, 0, "*", ro);
	if (host[0] == '@')
		return fail(b, o, "netgroups (%s) are not supported", host);
	if (strchr(host, '/'))
		return add_cidr_rule(b, o, l, host, ro);
	if (parse_ip(host, &ss))
		return add_rule(l, MATCH_ADDR, &ss, 0, host, ro);
	return add_name_rules(b, o, l, host, ro);
}

/* A host token "host(opts)", "host" or "(opts)"; tok is modified. */
static int parse_host_token(struct builder *b, const struct origin *o,
                            struct rule_list *l, char *tok,
                            const struct rule_opts *defaults,
                            struct rule_opts *fsid_out)
{
	struct rule_opts ro = *defaults;
	char *paren = strchr(tok, '(');
	int rc;

	if (paren) {
		size_t n = strlen(paren);
		if (n < 2 || paren[n - 1] != ')')
			return fail(b, o, "missing ')' in '%s'", tok);
		paren[n - 1] = '\0';
		*paren = '\0';
		if (strchr(paren + 1, '(') || strchr(paren + 1, ')'))
			return fail(b, o, "bad parentheses in '%s'", tok);
		rc = apply_opts(b, o, &ro, paren + 1);
		if (rc)
			return rc;
	}
	if (ro.fsid_set) {
		if (fsid_out->fsid_set && fsid_out->fsid != ro.fsid)
			return fail(b, o, "conflicting fsid= values");
		fsid_out->fsid_set = true;
		fsid_out->fsid = ro.fsid;
	}
	return add_host(b, o, l, tok, &ro);
}

/* ---- paths ---- */

/* Lexically clean an absolute path: no "//", no "." components, no
 * trailing "/". ".." is refused: an export names one place plainly. */
static int clean_path(struct builder *b, const struct origin *o, const char *in,
                      char *out, size_t outsz)
{
	size_t n = 0;
	const char *p = in;

	if (in[0] != '/')
		return fail(b, o, "export path '%s' is not absolute", in);
	while (*p) {
		const char *c;
		size_t len;

		while (*p == '/')
			p++;
		c = p;
		while (*p && *p != '/')
			p++;
		len = (size_t)(p - c);
		if (len == 0 || (len == 1 && c[0] == '.'))
			continue;
		if (len == 2 && c[0] == '.' && c[1] == '.')
			return fail(b, o, "export path '%s' contains '..'", in);
		if (n + 1 + len + 1 > outsz)
			return fail(b, o, "export path too long");
		out[n++] = '/';
		memcpy(out + n, c, len);
		n += len;
	}
	if (n == 0)
		out[n++] = '/';
	out[n] = '\0';
	return 0;
}

/* FNV-1a: a stable 32-bit fsid from the canonical path, so handles
 * survive restarts without an fsid= option. */
static uint32_t path_fsid(const char *path)
{
	uint32_t h = 2166136261u;

	for (const unsigned char *p = (const void *)path; *p; p++) {
		h ^= *p;
		h *= 16777619u;
	}
	return h;
}

/* ---- the table being built ---- */

static int builder_grow(struct builder *b)
{
	size_t cap = b->cap ? b->cap * 2 : 8;
	struct export *v;
	struct origin *orig;
	bool *fs;

	v = realloc(b->t->v, cap * sizeof(*v));
	if (!v)
		return -ENOMEM;
	b->t->v = v;
	orig = realloc(b->orig, cap * sizeof(*orig));
	if (!orig)
		return -ENOMEM;
	b->orig = orig;
	fs = realloc(b->fsid_set, cap * sizeof(*fs));
	if (!fs)
		return -ENOMEM;
	b->fsid_set = fs;
	b->cap = cap;
	return 0;
}

/* Check the directory, open it in the backend, and append the export.
 * Takes ownership of rules. */
static int add_export(struct builder *b, const struct origin *o,
                      const char *path, struct rule_list *rules,
                      const struct rule_opts *fsid)
{
	char clean[PATH_MAX], canon[PATH_MAX], where[PATH_MAX + 32];
	struct export ex = {0};
	struct stat st;
	int rc;

	rc = clean_path(b, o, path, clean, sizeof(clean));
	if (rc)
		goto err;
	for (size_t i = 0; i < b->t->n; i++) {
		if (!strcmp(b->t->v[i].path, clean)) {
			rc = fail(
			    b, o, "%s is exported twice (also at %s)", clean,
			    origin_str(&b->orig[i], where, sizeof(where)));
			goto err;
		}
	}
	if (!realpath(clean, canon) || stat(canon, &st)) {
		rc = fail(b, o, "%s: %s", clean, strerror(errno));
		goto err;
	}
	if (!S_ISDIR(st.st_mode)) {
		rc = fail(b, o, "%s: not a directory", clean);
		goto err;
	}
	if (b->t->n == b->cap && (rc = builder_grow(b)))
		goto err;
	ex.path = strdup(clean);
	if (!ex.path) {
		rc = -ENOMEM;
		goto err;
	}
	ex.fsid = fsid->fsid_set ? fsid->fsid : path_fsid(canon);
	ex.ops = &bk_posix_ops;
	rc = ex.ops->export_open(canon, &ex.bk);
	if (rc) {
		rc = fail(b, o, "cannot open export %s: %s", clean,
		          strerror(-rc));
		free(ex.path);
		goto err;
	}
	ex.rules = rules->v;
	ex.nrules = rules->n;
	b->orig[b->t->n] = *o;
	b->fsid_set[b->t->n] = fsid->fsid_set;
	b->t->v[b->t->n++] = ex;
	return 0;
err:
	rules_free(rules->v, rules->n);
	return rc;
}

/* ---- exports(5) lines ---- */

/* Split a logical line into whitespace-separated tokens in place. Double
 * quotes group (for paths with spaces); \ooo octal escapes, as exportfs
 * writes them, are decoded. Returns the count or -1 on a bad quote. */
static int tokenize(char *line, char **tok, int max)
{
	int n = 0;
	char *r = line, *w;

	while (*r) {
		bool quoted = false;

		while (isspace((unsigned char)*r))
			r++;
		if (!*r)
			break;
		if (n == max)
			return -2;
		tok[n++] = w = r;
		while (*r && (quoted || !isspace((unsigned char)*r))) {
			if (*r == '"') {
				quoted = !quoted;
				r++;
			} else if (r[0] == '\\' && r[1] >= '0' && r[1] <= '3' &&
			           r[2] >= '0' && r[2] <= '7' && r[3] >= '0' &&
			           r[3] <= '7') {
				*w++ = (char)((r[1] - '0') * 64 +
				              (r[2] - '0') * 8 + (r[3] - '0'));
				r += 4;
			} else {
				*w++ = *r++;
			}
		}
		if (quoted)
			return -1;
		if (*r)
			r++;
		*w = '\0';
	}
	return n;
}

/* Parse the host list of an export (tokens after the path). A token
 * "-opts" sets defaults for the hosts after it (exports(5)). No host at
 * all means "*" with the defaults. */
static int parse_hosts(struct builder *b, const struct origin *o,
                       const char *path, char **tok, int ntok,
                       const struct rule_opts *defaults)
{
	struct rule_list rules = {0};
	struct rule_opts def = *defaults, fsid = {0};
	int rc = 0;

	for (int i = 0; i < ntok && !rc; i++) {
		if (tok[i][0] == '-') {
			rc = apply_opts(b, o, &def, tok[i] + 1);
			if (!rc && def.fsid_set) {
				fsid.fsid_set = true;
				fsid.fsid = def.fsid;
			}
		} else {
			rc =
			    parse_host_token(b, o, &rules, tok[i], &def, &fsid);
		}
	}
	if (!rc && rules.n == 0)
		rc = add_rule(&rules, MATCH_ANY, NULL, 0, "*", &def);
	if (rc) {
		rules_free(rules.v, rules.n);
		return rc;
	}
	return add_export(b, o, path, &rules, &fsid);
}

#define MAX_TOKENS 256

static int parse_line(struct builder *b, const struct origin *o, char *line)
{
	char *tok[MAX_TOKENS];
	int n = tokenize(line, tok, MAX_TOKENS);

	if (n == -1)
		return fail(b, o, "unterminated quote");
	if (n == -2)
		return fail(b, o, "too many hosts on one line");
	if (n == 0)
		return 0;
	if (!tok[0][0] || tok[0][0] == '-' || strchr(tok[0], '('))
		return fail(b, o, "missing export path");
	if (tok[0][0] != '/')
		return fail(b, o, "export path '%s' is not absolute", tok[0]);
	return parse_hosts(b, o, tok[0], tok + 1, n - 1, &file_defaults);
}

/* Cut a comment (# outside quotes) off a physical line. */
static void strip_comment(char *s)
{
	bool quoted = false;

	for (; *s; s++) {
		if (*s == '"')
			quoted = !quoted;
		else if (*s == '#' && !quoted) {
			*s = '\0';
			return;
		}
	}
}

static void rstrip(char *s)
{
	size_t n = strlen(s);

	while (n && isspace((unsigned char)s[n - 1]))
		s[--n] = '\0';
}

/* Read an exports file. A backslash at the end of a line continues it;
 * errors name the line where the entry starts. */
static int parse_file(struct builder *b, const char *file)
{
	FILE *f = fopen(file, "re");
	char *phys = NULL, *logical = NULL;
	size_t physcap = 0, loglen = 0;
	struct origin o = {.file = file};
	int lineno = 0, rc = 0;
	ssize_t got;

	if (!f) {
		int e = errno;
		snprintf(b->err, b->errsz, "%s: %s", file, strerror(e));
		return -e;
	}
	logical = malloc(LINE_MAX_LEN);
	if (!logical) {
		fclose(f);
		return -ENOMEM;
	}
	while (!rc && (got = getline(&phys, &physcap, f)) >= 0) {
		size_t n;
		bool cont;

		lineno++;
		if (loglen == 0)
			o.line = lineno;
		strip_comment(phys);
		rstrip(phys);
		n = strlen(phys);
		cont = n && phys[n - 1] == '\\';
		if (cont)
			phys[--n] = '\0';
		if (loglen + n + 2 > LINE_MAX_LEN) {
			rc = fail(b, &o, "line too long");
			break;
		}
		memcpy(logical + loglen, phys, n);
		loglen += n;
		logical[loglen++] = ' ';
		logical[loglen] = '\0';
		if (cont)
			continue;
		rc = parse_line(b, &o, logical);
		loglen = 0;
	}
	if (!rc && loglen)
		rc = parse_line(b, &o, logical);
	if (!rc && ferror(f)) {
		rc = -EIO;
		snprintf(b->err, b->errsz, "%s: read error", file);
	}
	free(phys);
	free(logical);
	fclose(f);
	return rc;
}

/* ---- -e specs ---- */

/* "DIR[:OPTIONS]": OPTIONS is a plain option list for "*" ("rw,insecure")
 * or host(opts) elements separated by spaces. A relative DIR is taken from
 * the current directory. */
static int parse_spec(struct builder *b, const char *spec)
{
	char label[PATH_MAX + 8];
	struct origin o = {.file = label};
	char *copy = strdup(spec), *colon, *opts = NULL;
	char dir[PATH_MAX];
	char *tok[MAX_TOKENS];
	int rc, n;

	snprintf(label, sizeof(label), "-e %s", spec);
	if (!copy)
		return -ENOMEM;
	colon = strchr(copy, ':');
	if (colon) {
		*colon = '\0';
		opts = colon + 1;
	}
	if (!copy[0]) {
		rc = fail(b, &o, "missing export path");
		goto out;
	}
	if (copy[0] != '/') {
		if (!realpath(copy, dir)) {
			rc = fail(b, &o, "%s: %s", copy, strerror(errno));
			goto out;
		}
	} else {
		snprintf(dir, sizeof(dir), "%s", copy);
	}
	/* An option list without parentheses is one "*" element. */
	if (opts && !strchr(opts, '(')) {
		char *one[1];
		char *star;

		if (asprintf(&star, "*(%s)", opts) < 0) {
			rc = -ENOMEM;
			goto out;
		}
		one[0] = star;
		rc = parse_hosts(b, &o, dir, one, 1, &cli_defaults);
		free(star);
		goto out;
	}
	n = opts ? tokenize(opts, tok, MAX_TOKENS) : 0;
	if (n < 0) {
		rc = fail(b, &o, "bad host list");
		goto out;
	}
	rc = parse_hosts(b, &o, dir, tok, n, &cli_defaults);
out:
	free(copy);
	return rc;
}

/* ---- load and free ---- */

/* Two exports with one fsid would make handles ambiguous. */
static int check_fsids(struct builder *b)
{
	const struct export *v = b->t->v;

	for (size_t j = 1; j < b->t->n; j++) {
		for (size_t i = 0; i < j; i++) {
			if (v[i].fsid != v[j].fsid)
				continue;
			if (!b->fsid_set[i] && !b->fsid_set[j])
				return fail(b, &b->orig[j],
				            "fsid of %s collides with %s; set "
				            "fsid= on one",
				            v[j].path, v[i].path);
			return fail(b, &b->orig[j],
			            "duplicate fsid %u (also used by %s)",
			            v[j].fsid, v[i].path);
		}
	}
	return 0;
}

int exports_load(const char *file, const char *const *specs, int nspecs,
                 struct export_table **out, char *err, size_t errsz)
{
	char dummy[1];
	struct builder b = {
	    .err = errsz ? err : dummy,
	    .errsz = errsz ? errsz : sizeof(dummy),
	};
	int rc = 0;

	b.err[0] = '\0';
	*out = NULL;
	b.t = calloc(1, sizeof(*b.t));
	if (!b.t)
		return -ENOMEM;
	atomic_init(&b.t->refs, 1);
	if (file)
		rc = parse_file(&b, file);
	for (int i = 0; !rc && i < nspecs; i++)
		rc = parse_spec(&b, specs[i]);
	if (!rc)
		rc = check_fsids(&b);
	free(b.orig);
	free(b.fsid_set);
	if (rc) {
		if (rc == -ENOMEM && !b.err[0])
			snprintf(b.err, b.errsz, "out of memory");
		exports_free(b.t);
		return rc;
	}
	*out = b.t;
	return 0;
}

void exports_free(struct export_table *t)
{
	if (!t)
		return;
	for (size_t i = 0; i < t->n; i++) {
		struct export *ex = &t->v[i];
		if (ex->bk)
			ex->ops->export_close(ex->bk);
		rules_free(ex->rules, ex->nrules);
		free(ex->path);
	}
	free(t->v);
	free(t);
}

/* ---- the server's current table ---- */

struct export_table *exports_acquire(struct snfsd *s)
{
	struct export_table *t;

	pthread_mutex_lock(&s->exports_lock);
	t = s->exports;
	if (t)
		atomic_fetch_add(&t->refs, 1);
	pthread_mutex_unlock(&s->exports_lock);
	return t;
}

void exports_release(struct export_table *t)
{
	if (t && atomic_fetch_sub(&t->refs, 1) == 1)
		exports_free(t);
}

void exports_replace(struct snfsd *s, struct export_table *t)
{
	struct export_table *old;

	/* before any call can see t: its exports are read unlocked */
	if (t)
		fh_prepare_table(s, t);
	pthread_mutex_lock(&s->exports_lock);
	old = s->exports;
	s->exports = t;
	pthread_mutex_unlock(&s->exports_lock);
	/* The server's own reference; calls in flight keep theirs. */
	exports_release(old);
}

struct export *exports_by_fsid(const struct export_table *t, uint32_t fsid)
{
	for (size_t i = 0; i < t->n; i++)
		if (t->v[i].fsid == fsid)
			return &t->v[i];
	return NULL;
}

struct export *exports_by_path(const struct export_table *t, const char *path)
{
	for (size_t i = 0; i < t->n; i++)
		if (!strcmp(t->v[i].path, path))
			return &t->v[i];
	return NULL;
}

/* ---- matching and squashing ---- */

static bool rule_matches(const struct export_rule *r,
                         const struct sockaddr_storage *peer)
{
	size_t n1, n2;
	const uint8_t *a, *p;

	switch (r->kind) {
	case MATCH_ANY:
		return true;
	case MATCH_ADDR:
	case MATCH_CIDR:
		if (r->addr.ss_family != peer->ss_family)
			return false;
		a = addr_bytes(&r->addr, &n1);
		p = addr_bytes(peer, &n2);
		if (!a || !p || n1 != n2)
			return false;
		return prefix_equal(
		    a, p, r->kind == MATCH_CIDR ? r->prefix : (int)n1 * 8);
	case MATCH_NAME:
		return false; /* no reverse lookups: see the file comment */
	}
	return false;
}

/* exports(5): the first rule that names the client wins. */
const struct export_rule *export_match(const struct export *ex,
                                       const struct sockaddr *peer)
{
	struct sockaddr_storage p;

	normalize_addr(peer, &p);
	for (size_t i = 0; i < ex->nrules; i++)
		if (rule_matches(&ex->rules[i], &p))
			return &ex->rules[i];
	return NULL;
}

/* AUTH_NONE and all_squash become the anonymous ids; root_squash maps
 * uid 0 and gid 0 (also among the supplementary groups, as Linux nfsd
 * does) to them. */
void export_squash(const struct export_rule *r, const struct rpc_cred *in,
                   struct bk_cred *out)
{
	uint32_t n;

	memset(out, 0, sizeof(*out));
	if (in->flavor != RPC_AUTH_SYS || (r->flags & EXP_ALL_SQUASH)) {
		out->uid = r->anonuid;
		out->gid = r->anongid;
		return;
	}
	out->uid = in->uid;
	out->gid = in->gid;
	n = in->ngids < BK_MAX_GIDS ? in->ngids : BK_MAX_GIDS;
	memcpy(out->gids, in->gids, n * sizeof(out->gids[0]));
	out->ngids = n;
	if (!(r->flags & EXP_ROOT_SQUASH))
		return;
	if (out->uid == 0)
		out->uid = r->anonuid;
	if (out->gid == 0)
		out->gid = r->anongid;
	for (uint32_t i = 0; i < n; i++)
		if (out->gids[i] == 0)
			out->gids[i] = r->anongid;
}
