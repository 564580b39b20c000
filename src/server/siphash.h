/* SipHash-2-4 (Aumasson and Bernstein, "SipHash: a fast short-input PRF",
 * 2012): a keyed 64-bit MAC for short inputs. snfsd signs file handles with
 * it so forged or corrupted handles are refused without a file system
 * lookup. */
#ifndef SNFS_SIPHASH_H
#define SNFS_SIPHASH_H

#include <stddef.h>
#include <stdint.h>

#define SIPHASH_KEY_LEN 16

uint64_t siphash24(const uint8_t key[SIPHASH_KEY_LEN], const void *data,
                   size_t len);

#endif
