/* nfs:// URLs in libnfs's form (see snfs.h). */
#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "client/client.h"

bool snfs_is_url(const char *s)
{
	return strncmp(s, "nfs://", 6) == 0;
}

static int hexval(int ch)
{
	if (ch >= '0' && ch <= '9')
		return ch - '0';
	ch = tolower(ch);
	if (ch >= 'a' && ch <= 'f')
		return ch - 'a' + 10;
	return -1;
}

/* Percent-decode [s, s+n) into a new string; NUL bytes are refused. */
static char *pct_decode(const char *s, size_t n)
{
	char *out = malloc(n + 1), *o = out;
	if (!out)
		return NULL;
	for (size_t i = 0; i < n; i++) {
		if (s[i] == '%' && i + 2 < n && hexval(s[i + 1]) >= 0 &&
		    hexval(s[i + 2]) >= 0) {
			int v = hexval(s[i + 1]) * 16 + hexval(s[i + 2]);
			if (v == 0) {
				free(out);
				return NULL;
			}
			*o++ = (char)v;
			i += 2;
		} else {
			*o++ = s[i];
		}
	}
	*o = 0;
	return out;
}

static int parse_u32(const char *v, uint32_t max, uint32_t *out)
{
	char *end;
	errno = 0;
	unsigned long long n = strtoull(v, &end, 10);
	if (errno || end == v || n > max)
		return -EINVAL;
	/* size suffixes for the byte-count options */
	if (*end == 'k' || *end == 'K')
		n <<= 10, end++;
	else if (*end == 'm' || *end == 'M')
		n <<= 20, end++;
	if (*end || n > max)
		return -EINVAL;
	*out = (uint32_t)n;
	return 0;
}

static int parse_size(const char *v, size_t *out)
{
	char *end;
	errno = 0;
	unsigned long long n = strtoull(v, &end, 10);
	if (errno || end == v)
		return -EINVAL;
	switch (*end) {
	case 'k':
	case 'K':
		n <<= 10, end++;
		break;
	case 'm':
	case 'M':
		n <<= 20, end++;
		break;
	case 'g':
	case 'G':
		n <<= 30, end++;
		break;
	}
	if (*end)
		return -EINVAL;
	*out = (size_t)n;
	return 0;
}

static int parse_version(const char *v, enum snfs_version *out)
{
	if (!strcmp(v, "3"))
		*out = SNFS_V3;
	else if (!strcmp(v, "4.1"))
		*out = SNFS_V41;
	else if (!strcmp(v, "4.2") || !strcmp(v, "4"))
		*out = SNFS_V42;
	else
		return -EINVAL;
	return 0;
}

/* partial|full|off; a number is libnfs's page count, accepted and
 * ignored so its URLs keep working. */
static int parse_pagecache(const char *v, enum snfs_pagecache *out)
{
	uint32_t n;

	if (!strcmp(v, "partial"))
		*out = SNFS_PC_PARTIAL;
	else if (!strcmp(v, "full"))
		*out = SNFS_PC_FULL;
	else if (!strcmp(v, "off"))
		*out = SNFS_PC_OFF;
	else
		return parse_u32(v, UINT32_MAX, &n);
	return 0;
}

static int parse_option(struct snfs_url *u, const char *k, const char *v)
{
	uint32_t n;
	int rc = 0;

	if (!strcmp(k, "version")) {
		rc = parse_version(v, &u->version);
		u->version_given = true;
	} else if (!strcmp(k, "uid")) {
		rc = parse_u32(v, UINT32_MAX, &u->uid);
		u->uid_given = true;
	} else if (!strcmp(k, "gid")) {
		rc = parse_u32(v, UINT32_MAX, &u->gid);
		u->gid_given = true;
	} else if (!strcmp(k, "rsize")) {
		rc = parse_u32(v, 64u << 20, &u->rsize);
	} else if (!strcmp(k, "wsize")) {
		rc = parse_u32(v, 64u << 20, &u->wsize);
	} else if (!strcmp(k, "readdir-buffer")) {
		rc = parse_u32(v, 1u << 20, &u->readdir_buffer);
	} else if (!strcmp(k, "nfsport") || !strcmp(k, "mountport")) {
		rc = parse_u32(v, 65535, &n);
		if (rc == 0 && n == 0)
			rc = -EINVAL;
		if (k[0] == 'n')
			u->nfsport = (uint16_t)n;
		else
			u->mountport = (uint16_t)n;
	} else if (!strcmp(k, "cache")) {
		rc = parse_size(v, &u->cache_size);
		u->cache_given = true;
	} else if (!strcmp(k, "pagecache")) {
		rc = parse_pagecache(v, &u->pagecache);
	} else if (!strcmp(k, "timeout")) {
		rc = parse_u32(v, 86400, &n);
		u->timeout_ms = n * 1000;
	} else {
		/* libnfs arguments we accept and ignore, so its URLs work */
		static const char *const ignored[] = {"readahead",
		                                      "dircache",
		                                      "autoreconnect",
		                                      "auto-traverse-mounts",
		                                      "tcp-syncnt",
		                                      "debug",
		                                      NULL};
		for (int i = 0; ignored[i]; i++)
			if (!strcmp(k, ignored[i]))
				return 0;
		return snfs_fail(-EINVAL, "unknown URL argument '%s'", k);
	}
	if (rc < 0)
		return snfs_fail(-EINVAL, "bad value '%s' for URL argument %s",
		                 v, k);
	return 0;
}

static int parse_query(struct snfs_url *u, const char *q)
{
	char *dup = strdup(q), *save = NULL;
	int rc = 0;

	if (!dup)
		return -ENOMEM;
	for (char *kv = strtok_r(dup, "&", &save); kv && rc == 0;
	     kv = strtok_r(NULL, "&", &save)) {
		char *eq = strchr(kv, '=');
		if (!eq) {
			rc = snfs_fail(-EINVAL,
			               "URL argument '%s' needs a value", kv);
			break;
		}
		*eq = 0;
		rc = parse_option(u, kv, eq + 1);
	}
	free(dup);
	return rc;
}

/* host, [v6], with an optional :port */
static int parse_authority(struct snfs_url *u, const char *s, size_t n)
{
	const char *hend = s + n, *colon = NULL;

	if (n == 0)
		return snfs_fail(-EINVAL, "URL has no host");
	if (s[0] == '[') {
		const char *rb = memchr(s, ']', n);
		if (!rb)
			return snfs_fail(-EINVAL, "URL host: missing ']'");
		u->host = strndup(s + 1, (size_t)(rb - s - 1));
		if (rb + 1 < hend) {
			if (rb[1] != ':')
				return snfs_fail(-EINVAL, "bad URL host");
			colon = rb + 1;
		}
	} else {
		colon = memchr(s, ':', n);
		u->host = strndup(s, colon ? (size_t)(colon - s) : n);
	}
	if (!u->host)
		return -ENOMEM;
	if (!u->host[0])
		return snfs_fail(-EINVAL, "URL has no host");
	if (colon) {
		char port[8];
		uint32_t p;
		size_t pl = (size_t)(hend - colon - 1);
		if (pl == 0 || pl >= sizeof(port))
			return snfs_fail(-EINVAL, "bad URL port");
		memcpy(port, colon + 1, pl);
		port[pl] = 0;
		if (parse_u32(port, 65535, &p) < 0 || p == 0)
			return snfs_fail(-EINVAL, "bad URL port '%s'", port);
		u->port = (uint16_t)p;
	}
	return 0;
}

int snfs_url_parse(const char *url, struct snfs_url *u)
{
	int rc;

	memset(u, 0, sizeof(*u));
	u->version = SNFS_V3;
	u->uid = getuid();
	u->gid = getgid();
	if (!snfs_is_url(url))
		return snfs_fail(-EINVAL, "'%s' is not an nfs:// URL", url);
	const char *a = url + 6;
	size_t alen = strcspn(a, "/?");
	rc = parse_authority(u, a, alen);
	if (rc < 0)
		goto err;
	const char *p = a + alen;
	size_t plen = strcspn(p, "?");
	if (plen == 0) {
		u->path = strdup("/");
	} else {
		u->path = pct_decode(p, plen);
	}
	if (!u->path) {
		rc = snfs_fail(-EINVAL, "bad URL path");
		goto err;
	}
	if (p[plen] == '?') {
		rc = parse_query(u, p + plen + 1);
		if (rc < 0)
			goto err;
	}
	if (u->nfsport == 0)
		u->nfsport = u->port;
	return 0;
err:
	snfs_url_free(u);
	return rc;
}

void snfs_url_free(struct snfs_url *u)
{
	free(u->host);
	free(u->path);
	u->host = u->path = NULL;
}
