/* NFSv4 owner strings (RFC 7530 5.9, RFC 8881 5.9): uids and gids as
 * "user@domain" names and back, and the server's id-mapping domain.
 *
 * The domain is read once at start (idmap_find_domain) into the server
 * context; every function here takes it as an argument. */
#ifndef SNFS_SERVER_IDMAP_H
#define SNFS_SERVER_IDMAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define IDMAP_DOMAIN_MAX 256 /* bytes with the NUL: a DNS name fits */
#define IDMAP_NAME_MAX 256   /* bytes of a user or group name, with NUL */
/* "name@domain" with its NUL; longer owner strings are refused. */
#define IDMAP_OWNER_MAX (IDMAP_NAME_MAX + IDMAP_DOMAIN_MAX)
/* What nfsidmap uses when nothing names a domain. */
#define IDMAP_DOMAIN_FALLBACK "localdomain"

/* Where idmap_find_domain looks; NULL paths and dns=false skip a step. */
struct idmap_sources {
	const char *conf; /* idmapd.conf: [General] Domain = */
	bool dns;         /* the part of the host's FQDN after its first dot */
	const char *resolv; /* resolv.conf: the last domain or search line */
};

enum idmap_origin {
	IDMAP_FROM_CONF,
	IDMAP_FROM_DNS,
	IDMAP_FROM_RESOLV,
	IDMAP_FROM_FALLBACK,
};

/* The sources a server uses: /etc/idmapd.conf, DNS, /etc/resolv.conf. */
extern const struct idmap_sources idmap_system_sources;

/* Write the domain of the first source that names one into dom (else
 * IDMAP_DOMAIN_FALLBACK); returns which source it was. */
enum idmap_origin idmap_find_domain(const struct idmap_sources *src,
                                    char dom[IDMAP_DOMAIN_MAX]);
const char *idmap_origin_name(enum idmap_origin o);

/* The steps of idmap_find_domain: 0 with the domain in dom, -ENOENT when
 * the source names none, or another -errno. */
int idmap_conf_domain(const char *path, char dom[IDMAP_DOMAIN_MAX]);
int idmap_resolv_domain(const char *path, char dom[IDMAP_DOMAIN_MAX]);
int idmap_dns_domain(char dom[IDMAP_DOMAIN_MAX]);

/* "name@domain" for uid (group false) or gid id into out (at least
 * IDMAP_OWNER_MAX bytes, not NUL-terminated): its length, or 0 when the
 * id has no passwd or group entry and goes as a number. Id 0 is "root"
 * even without an entry. Names come from a small per-thread cache that
 * forgets them after a minute: READDIR asks for two per entry. */
size_t idmap_owner_name(const char *domain, uint32_t id, bool group, char *out);

/* The id an owner string names: a number ("1000"), or name@domain with
 * our domain (compared without case, as DNS names are). Returns 0,
 * -EINVAL for an owner we cannot map (NFS4ERR_BADOWNER), -EAGAIN when
 * the lookup itself failed. */
int idmap_owner_id(const char *domain, const uint8_t *s, size_t n, bool group,
                   uint32_t *id);

#endif
