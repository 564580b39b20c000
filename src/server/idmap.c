/* NFSv4 owner strings: ids to "user@domain" and back (RFC 7530 5.9).
 *
 * The domain is what nfsidmap (rpc.idmapd, the Linux client's
 * nfsidmap) would pick, so names match the clients' on a host set up for
 * NFSv4: [General] Domain in /etc/idmapd.conf, else the DNS domain of the
 * host, else "localdomain". Names come from the passwd and group
 * databases (NSS: files, LDAP, sssd); an id without an entry goes as its
 * number, which RFC 7530 5.9 allows and every client decodes. */
#include "server/idmap.h"

#include <ctype.h>
#include <errno.h>
#include <grp.h>
#include <netdb.h>
#include <pthread.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

const struct idmap_sources idmap_system_sources = {
    .conf = "/etc/idmapd.conf",
    .dns = true,
    .resolv = "/etc/resolv.conf",
};

/* ---- the domain ---- */

/* Copy a domain from a configuration value: one word, no '@', without
 * the trailing dot of an absolute DNS name. */
static int set_domain(char dom[IDMAP_DOMAIN_MAX], const char *v, size_t n)
{
	if (n && v[n - 1] == '.')
		n--;
	if (n == 0 || n >= IDMAP_DOMAIN_MAX)
		return -EINVAL;
	for (size_t i = 0; i < n; i++)
		if (!isgraph((unsigned char)v[i]) || v[i] == '@')
			return -EINVAL;
	memcpy(dom, v, n);
	dom[n] = '\0';
	return 0;
}

static char *trim(char *s)
{
	size_t n;

	while (isspace((unsigned char)*s))
		s++;
	n = strlen(s);
	while (n && isspace((unsigned char)s[n - 1]))
		s[--n] = '\0';
	return s;
}

/* Read one line into buf; a line too long for it is skipped whole (no
 * setting we read is that long). Returns false at the end of the file. */
static bool read_line(FILE *f, char *buf, size_t n)
{
	size_t len;
	int ch;

	while (fgets(buf, (int)n, f)) {
		len = strlen(buf);
		if (len + 1 < n || buf[len - 1] == '\n')
			return true;
		while ((ch = getc(f)) != EOF && ch != '\n')
			;
	}
	return false;
}

/* "[General]" (any case, spaces inside the brackets allowed). */
static bool is_section(char *s, const char *name)
{
	char *end = strchr(s, ']');

	if (!end)
		return false;
	*end = '\0';
	return !strcasecmp(trim(s + 1), name);
}

/* "Key = value" with key in any case: the value, trimmed and unquoted,
 * or NULL for another key. */
static char *conf_value(char *s, const char *key)
{
	size_t k = strlen(key), n;
	char *v;

	if (strncasecmp(s, key, k))
		return NULL;
	v = s + k;
	while (*v == ' ' || *v == '\t')
		v++;
	if (*v != '=')
		return NULL;
	v = trim(v + 1);
	n = strlen(v);
	if (n >= 2 && v[0] == '"' && v[n - 1] == '"') {
		v[n - 1] = '\0';
		v++;
	}
	return v;
}

int idmap_conf_domain(const char *path, char dom[IDMAP_DOMAIN_MAX])
{
	char line[1024], *s, *v;
	bool general = false;
	int rc = -ENOENT;
	FILE *f = fopen(path, "re");

	if (!f)
		return -errno;
	while (rc == -ENOENT && read_line(f, line, sizeof(line))) {
		s = trim(line);
		if (*s == '#' || *s == ';' || *s == '\0')
			continue;
		if (*s == '[')
			general = is_section(s, "General");
		else if (general && (v = conf_value(s, "Domain")))
			rc = set_domain(dom, v, strlen(v));
	}
	fclose(f);
	return rc;
}

/* resolv.conf(5): "domain NAME" or "search NAME..."; of several, the
 * last one wins; a search list's first name is the host's domain. */
int idmap_resolv_domain(const char *path, char dom[IDMAP_DOMAIN_MAX])
{
	char line[1024], *s, *save, *kw, *v;
	int rc = -ENOENT;
	FILE *f = fopen(path, "re");

	if (!f)
		return -errno;
	while (read_line(f, line, sizeof(line))) {
		s = trim(line);
		if (*s == '#' || *s == ';')
			continue;
		kw = strtok_r(s, " \t", &save);
		if (!kw || (strcmp(kw, "domain") && strcmp(kw, "search")))
			continue;
		v = strtok_r(NULL, " \t", &save);
		if (v && strcmp(v, ".") && !set_domain(dom, v, strlen(v)))
			rc = 0;
	}
	fclose(f);
	return rc;
}

/* The DNS domain, as nfsidmap finds it: the canonical name of the host
 * name (getaddrinfo AI_CANONNAME, so /etc/hosts and DNS both count) less
 * its first label. getdomainname(2) would give the NIS domain, which is
 * something else. */
int idmap_dns_domain(char dom[IDMAP_DOMAIN_MAX])
{
	struct addrinfo hints = {.ai_flags = AI_CANONNAME,
	                         .ai_socktype = SOCK_STREAM};
	struct addrinfo *res = NULL;
	char host[256];
	const char *dot;
	int rc = -ENOENT;

	if (gethostname(host, sizeof(host)))
		return -errno;
	host[sizeof(host) - 1] = '\0';
	dot = strchr(host, '.');
	if (dot)
		return set_domain(dom, dot + 1, strlen(dot + 1));
	if (getaddrinfo(host, NULL, &hints, &res))
		return -ENOENT;
	if (res->ai_canonname && (dot = strchr(res->ai_canonname, '.')))
		rc = set_domain(dom, dot + 1, strlen(dot + 1));
	freeaddrinfo(res);
	return rc ? -ENOENT : 0;
}

enum idmap_origin idmap_find_domain(const struct idmap_sources *src,
                                    char dom[IDMAP_DOMAIN_MAX])
{
	if (src->conf && !idmap_conf_domain(src->conf, dom))
		return IDMAP_FROM_CONF;
	if (src->dns && !idmap_dns_domain(dom))
		return IDMAP_FROM_DNS;
	if (src->resolv && !idmap_resolv_domain(src->resolv, dom))
		return IDMAP_FROM_RESOLV;
	strcpy(dom, IDMAP_DOMAIN_FALLBACK);
	return IDMAP_FROM_FALLBACK;
}

const char *idmap_origin_name(enum idmap_origin o)
{
	switch (o) {
	case IDMAP_FROM_CONF:
		return "idmapd.conf";
	case IDMAP_FROM_DNS:
		return "the host's DNS name";
	case IDMAP_FROM_RESOLV:
		return "resolv.conf";
	case IDMAP_FROM_FALLBACK:
		break;
	}
	return "default";
}

/* ---- passwd and group lookups ---- */

/* The _r lookups want a buffer; a group entry lists its members and can
 * be far larger than a passwd one, so ERANGE doubles it up to 1 MiB. */
#define NSS_BUF_START 4096
#define NSS_BUF_MAX (1u << 20)

struct nss_key {
	bool group;
	const char *name; /* by name if set, else by id */
	uint32_t id;
};

struct nss_ent {
	const char *name; /* inside the lookup's buffer */
	uint32_t id;
};

/* The errors getpwnam_r(3) lists for "not found", and "no entry". */
static int not_found(int rc, bool found)
{
	if (rc == ENOENT || rc == ESRCH || rc == EBADF || rc == EPERM)
		return ENOENT;
	return rc == 0 && !found ? ENOENT : rc;
}

static int nss_once(const struct nss_key *k, char *buf, size_t sz,
                    struct nss_ent *e)
{
	int rc;

	if (k->group) {
		struct group gr, *res = NULL;

		rc = k->name ? getgrnam_r(k->name, &gr, buf, sz, &res)
		             : getgrgid_r(k->id, &gr, buf, sz, &res);
		if (!rc && res) {
			e->name = res->gr_name;
			e->id = res->gr_gid;
		}
		return not_found(rc, res != NULL);
	}
	struct passwd pw, *res = NULL;

	rc = k->name ? getpwnam_r(k->name, &pw, buf, sz, &res)
	             : getpwuid_r(k->id, &pw, buf, sz, &res);
	if (!rc && res) {
		e->name = res->pw_name;
		e->id = res->pw_uid;
	}
	return not_found(rc, res != NULL);
}

/* 0 with the entry in e, -ENOENT, or -errno. *buf holds the entry and is
 * the caller's to free, also on error. */
static int nss_lookup(const struct nss_key *k, char **buf, struct nss_ent *e)
{
	size_t sz = NSS_BUF_START;
	char *nb;
	int rc;

	for (;;) {
		nb = realloc(*buf, sz);
		if (!nb)
			return -ENOMEM;
		*buf = nb;
		rc = nss_once(k, *buf, sz, e);
		if (rc != ERANGE || sz >= NSS_BUF_MAX)
			return -rc;
		sz *= 2;
	}
}

/* The name of an id into out (IDMAP_NAME_MAX bytes, not terminated):
 * 0 with its length in *len, -ENOENT, or -errno. */
static int lookup_name(uint32_t id, bool group, char *out, size_t *len)
{
	struct nss_key k = {.group = group, .id = id};
	struct nss_ent e;
	char *buf = NULL;
	int rc = nss_lookup(&k, &buf, &e);

	if (!rc) {
		*len = strlen(e.name);
		if (*len == 0 || *len >= IDMAP_NAME_MAX)
			rc = -ENOENT; /* not one a client could send back */
		else
			memcpy(out, e.name, *len);
	}
	free(buf);
	if (rc == -ENOENT && id == 0) { /* root without an entry */
		memcpy(out, "root", 4);
		*len = 4;
		rc = 0;
	}
	return rc;
}

/* ---- the per-thread cache of names ----
 *
 * An NSS lookup costs tens of microseconds when it finds an entry in
 * /etc/passwd, and ~145 us here for an id with none (files, then
 * systemd's userdb over varlink); READDIR wants two per entry. So names
 * and "no entry" are kept per thread (no lock), a minute each, so a
 * renamed user or a new entry shows within one. The cache is 8-way set
 * associative: a directory's owners mostly share a handful of ids, and
 * one with a thousand distinct owners and groups still fits (4096
 * entries, 168 KiB per thread, allocated at a thread's first lookup;
 * with 2048, such a directory left a tenth of its ids in sets that
 * overflow, missing on every READDIR: 3-5x the numeric CPU). */
#define ID_CACHE_WAYS 8
#define ID_CACHE_SET_BITS 9
#define ID_CACHE_SETS (1u << ID_CACHE_SET_BITS)
#define ID_CACHE_NAME 32 /* useradd's limit; longer names are not kept */
#define ID_CACHE_TTL 60  /* seconds */
#define ID_USED 1
#define ID_GROUP 2

/* One set: the keys first, so a probe reads one cache line. */
struct id_set {
	uint32_t id[ID_CACHE_WAYS];
	uint32_t expires[ID_CACHE_WAYS]; /* monotonic seconds */
	uint8_t flags[ID_CACHE_WAYS];    /* ID_USED, ID_GROUP */
	uint8_t len[ID_CACHE_WAYS];      /* 0: the id has no entry */
	char name[ID_CACHE_WAYS][ID_CACHE_NAME];
};

static _Thread_local struct id_set *id_cache;
static pthread_key_t id_cache_key;
static pthread_once_t id_cache_once = PTHREAD_ONCE_INIT;

static void id_cache_key_init(void)
{
	/* free() at thread exit; a failure only leaks one table a thread */
	(void)pthread_key_create(&id_cache_key, free);
}

/* This thread's table, made on first use; NULL without memory. */
static struct id_set *id_cache_get(void)
{
	if (id_cache)
		return id_cache;
	pthread_once(&id_cache_once, id_cache_key_init);
	id_cache = calloc(ID_CACHE_SETS, sizeof(*id_cache));
	if (id_cache)
		(void)pthread_setspecific(id_cache_key, id_cache);
	return id_cache;
}

static uint32_t now_seconds(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
	return (uint32_t)ts.tv_sec;
}

static struct id_set *set_of(struct id_set *t, uint32_t id, bool group)
{
	uint32_t h = (id ^ (group ? 0x9e3779b9u : 0)) * 2654435761u;

	return &t[h >> (32 - ID_CACHE_SET_BITS)];
}

/* The way holding (id, group) in set, or -1. */
static int way_of(const struct id_set *set, uint32_t id, uint8_t flags)
{
	for (int w = 0; w < ID_CACHE_WAYS; w++)
		if (set->id[w] == id && set->flags[w] == flags)
			return w;
	return -1;
}

/* The way to fill: an empty one, else the one filled first. */
static int way_to_fill(const struct id_set *set)
{
	int best = 0;

	for (int w = 0; w < ID_CACHE_WAYS; w++) {
		if (!set->flags[w])
			return w;
		if (set->expires[w] < set->expires[best])
			best = w;
	}
	return best;
}

static void id_cache_put(struct id_set *set, int w, uint32_t id, uint8_t flags,
                         const char *name, size_t len, uint32_t now)
{
	set->id[w] = id;
	set->flags[w] = flags;
	set->len[w] = (uint8_t)len;
	set->expires[w] = now + ID_CACHE_TTL;
	memcpy(set->name[w], name, len);
}

/* The name of an id into out (IDMAP_NAME_MAX bytes): its length, or 0
 * for none. A failed lookup (not "no entry") is not kept. */
static size_t id_name(uint32_t id, bool group, char *out)
{
	struct id_set *t = id_cache_get(), *set = NULL;
	uint8_t flags = ID_USED | (group ? ID_GROUP : 0);
	uint32_t now = now_seconds();
	size_t len = 0;
	int w = -1, rc;

	if (t) {
		set = set_of(t, id, group);
		w = way_of(set, id, flags);
		if (w >= 0 && (int32_t)(set->expires[w] - now) > 0) {
			memcpy(out, set->name[w], set->len[w]);
			return set->len[w];
		}
	}
	rc = lookup_name(id, group, out, &len);
	if (rc && rc != -ENOENT)
		return 0;
	if (rc)
		len = 0;
	if (set && len <= ID_CACHE_NAME)
		id_cache_put(set, w >= 0 ? w : way_to_fill(set), id, flags, out,
		             len, now);
	return len;
}

size_t idmap_owner_name(const char *domain, uint32_t id, bool group, char *out)
{
	size_t dn = strlen(domain), n;

	if (dn == 0 || dn >= IDMAP_DOMAIN_MAX)
		return 0;
	n = id_name(id, group, out);
	if (n == 0)
		return 0;
	out[n] = '@';
	memcpy(out + n + 1, domain, dn);
	return n + 1 + dn;
}

/* ---- owner strings to ids ---- */

/* Decimal digits only, up to UINT32_MAX. */
static bool parse_id(const char *s, uint32_t *id)
{
	uint64_t v = 0;

	if (*s == '\0')
		return false;
	for (; *s; s++) {
		if (*s < '0' || *s > '9')
			return false;
		v = v * 10 + (uint64_t)(*s - '0');
		if (v > UINT32_MAX)
			return false;
	}
	*id = (uint32_t)v;
	return true;
}

/* A name of our domain; "1000@domain" (as some servers write numbers)
 * and "root@domain" are taken without an entry too. */
static int name_to_id(const char *name, bool group, uint32_t *id)
{
	struct nss_key k = {.group = group, .name = name};
	struct nss_ent e;
	char *buf = NULL;
	int rc = nss_lookup(&k, &buf, &e);

	if (!rc)
		*id = e.id;
	free(buf);
	if (rc != -ENOENT)
		return rc ? -EAGAIN : 0;
	if (parse_id(name, id))
		return 0;
	if (!strcmp(name, "root")) {
		*id = 0;
		return 0;
	}
	return -EINVAL;
}

int idmap_owner_id(const char *domain, const uint8_t *s, size_t n, bool group,
                   uint32_t *id)
{
	char str[IDMAP_OWNER_MAX], *at;

	if (n == 0 || n >= sizeof(str) || memchr(s, 0, n))
		return -EINVAL;
	memcpy(str, s, n);
	str[n] = '\0';
	/* RFC 7530 5.9: a string without '@' can only be a numeric id; a
	 * bare name means nothing across hosts. */
	at = strrchr(str, '@');
	if (!at)
		return parse_id(str, id) ? 0 : -EINVAL;
	*at = '\0';
	/* A name of another domain is another user, whatever our passwd
	 * file has under that name: BADOWNER, as RFC 7530 5.9 says. */
	if (str[0] == '\0' || domain[0] == '\0' || strcasecmp(at + 1, domain))
		return -EINVAL;
	return name_to_id(str, group, id);
}
