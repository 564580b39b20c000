/* SipHash-2-4, written from section 2 of the SipHash paper: four 64-bit
 * words of state, two SipRounds per message word, four to finalize. */
#include "server/siphash.h"

#include <endian.h>
#include <string.h>

/* Every step below is inline: a file handle is checked on every call,
 * and a call per SipRound cost more than the round (callgrind: ~9
 * rounds a hash, ~430 instructions of calls and spills a handle). */
static inline uint64_t rotl64(uint64_t x, unsigned b)
{
	return (x << b) | (x >> (64 - b));
}

/* Message words and the key are read little-endian (paper, section 2):
 * one unaligned load, byte-swapped on a big-endian host. */
static inline uint64_t load_le64(const uint8_t *p)
{
	uint64_t v;

	memcpy(&v, p, sizeof(v));
	return le64toh(v);
}

struct sip_state {
	uint64_t v0, v1, v2, v3;
};

static inline void sip_round(struct sip_state *s)
{
	s->v0 += s->v1;
	s->v1 = rotl64(s->v1, 13);
	s->v1 ^= s->v0;
	s->v0 = rotl64(s->v0, 32);
	s->v2 += s->v3;
	s->v3 = rotl64(s->v3, 16);
	s->v3 ^= s->v2;
	s->v0 += s->v3;
	s->v3 = rotl64(s->v3, 21);
	s->v3 ^= s->v0;
	s->v2 += s->v1;
	s->v1 = rotl64(s->v1, 17);
	s->v1 ^= s->v2;
	s->v2 = rotl64(s->v2, 32);
}

/* Compression: c = 2 SipRounds per word. */
static inline void sip_compress(struct sip_state *s, uint64_t m)
{
	s->v3 ^= m;
	sip_round(s);
	sip_round(s);
	s->v0 ^= m;
}

uint64_t siphash24(const uint8_t key[SIPHASH_KEY_LEN], const void *data,
                   size_t len)
{
	const uint8_t *p = data;
	uint64_t k0 = load_le64(key), k1 = load_le64(key + 8);
	struct sip_state s = {
	    .v0 = k0 ^ 0x736f6d6570736575ULL,
	    .v1 = k1 ^ 0x646f72616e646f6dULL,
	    .v2 = k0 ^ 0x6c7967656e657261ULL,
	    .v3 = k1 ^ 0x7465646279746573ULL,
	};
	size_t full = len & ~(size_t)7;
	uint64_t last;

	for (size_t i = 0; i < full; i += 8)
		sip_compress(&s, load_le64(p + i));

	/* The final word holds the remaining 0..7 bytes and, in its top
	 * byte, the message length modulo 256. */
	last = (uint64_t)(len & 0xff) << 56;
	for (size_t i = 0; i < (len & 7); i++)
		last |= (uint64_t)p[full + i] << (8 * i);
	sip_compress(&s, last);

	/* Finalization: d = 4 SipRounds. */
	s.v2 ^= 0xff;
	for (int i = 0; i < 4; i++)
		sip_round(&s);
	return s.v0 ^ s.v1 ^ s.v2 ^ s.v3;
}
