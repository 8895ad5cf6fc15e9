/* names.c -- hash sets of the names in a table, for unique keys and tensor
 * names.  Hashing with XXH3 keeps a million names far under a second. */
#include <config.h>

#include <stdlib.h>
#include <xxhash.h>

#include "gguf/internal.h"

void gg_names_init(gg_names *s, gg_name_fn name, const void *ctx)
{
    s->slots = NULL;
    s->cap = 0;
    s->used = 0;
    s->name = name;
    s->ctx = ctx;
}

void gg_names_free(gg_names *s)
{
    if (!s) return;
    free(s->slots);
    gg_names_init(s, s->name, s->ctx);
}

/* The slot for a name of hash h: the one holding an entry of that name, or
 * the empty one where it would go.  Linear probing; the hash's low bits
 * pick the start and its high half, kept in the slot, filters the
 * candidates so that the table's names are read only on a likely match. */
static struct gg_name_slot *probe(const gg_names *s, struct gg_name_slot *slots, uint64_t cap,
                                  const char *ptr, uint64_t len, uint64_t h)
{
    uint32_t tag = (uint32_t)(h >> 32);
    uint64_t i = h & (cap - 1);
    for (;;) {
        struct gg_name_slot *sl = &slots[i];
        if (!sl->idx1) return sl;
        if (sl->tag == tag) {
            gguf_str n = s->name(s->ctx, sl->idx1 - 1u);
            if (n.len == len && memcmp(n.ptr, ptr, len) == 0) return sl;
        }
        i = (i + 1) & (cap - 1);
    }
}

/* Grows the table to ncap slots (a power of two).  Moving a slot needs
 * its full hash, which the slot does not keep: the name is read and hashed
 * again, once per growth. */
static int resize(gg_names *s, uint64_t ncap)
{
    if (ncap > SIZE_MAX / sizeof(struct gg_name_slot)) return -1;
    struct gg_name_slot *ns = calloc(ncap, sizeof *ns);
    if (!ns) return -1;
    for (uint64_t i = 0; i < s->cap; i++) {
        struct gg_name_slot o = s->slots[i];
        if (!o.idx1) continue;
        gguf_str n = s->name(s->ctx, o.idx1 - 1u);
        uint64_t j = XXH3_64bits(n.ptr, n.len) & (ncap - 1);
        while (ns[j].idx1) j = (j + 1) & (ncap - 1);
        ns[j] = o;
    }
    free(s->slots);
    s->slots = ns;
    s->cap = ncap;
    return 0;
}

/* Room for n names at a load of at most 3/4, the most insert allows. */
static uint64_t cap_for(uint64_t n)
{
    uint64_t cap = 64;
    while (cap < UINT64_MAX / 8 && n * 4 > cap * 3) cap *= 2;
    return cap;
}

int gg_names_reserve(gg_names *s, uint64_t n)
{
    if (n > GG_NAMES_MAX_INDEX + 1ull) return -1;
    uint64_t cap = cap_for(n);
    return cap > s->cap ? resize(s, cap) : 0;
}

int gg_names_insert(gg_names *s, const char *ptr, uint64_t len, uint64_t index, uint64_t *existing)
{
    if (index > GG_NAMES_MAX_INDEX) return -1;
    /* A load of at most 3/4: with the hash piece in the slot a probe that
     * runs a few slots further costs little, and the table is half the
     * size a load of 1/2 would need. */
    if ((s->used + 1) * 4 > s->cap * 3 && resize(s, s->cap ? s->cap * 2 : 64) < 0) return -1;
    if (!ptr) ptr = "";
    uint64_t h = XXH3_64bits(ptr, len);
    struct gg_name_slot *sl = probe(s, s->slots, s->cap, ptr, len, h);
    if (sl->idx1) {
        if (existing) *existing = sl->idx1 - 1u;
        return 0;
    }
    sl->tag = (uint32_t)(h >> 32);
    sl->idx1 = (uint32_t)index + 1u;
    s->used++;
    return 1;
}

int gg_names_find(const gg_names *s, const char *ptr, uint64_t len, uint64_t *index)
{
    if (!s->cap) return 0;
    if (!ptr) ptr = "";
    struct gg_name_slot *sl = probe(s, s->slots, s->cap, ptr, len, XXH3_64bits(ptr, len));
    if (!sl->idx1) return 0;
    if (index) *index = sl->idx1 - 1u;
    return 1;
}
