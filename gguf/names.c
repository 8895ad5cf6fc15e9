/* names.c -- hash sets of byte strings, for unique keys and tensor names.
 * Hashing with XXH3 keeps a million names far under a second. */
#include <config.h>

#include <stdlib.h>
#include <xxhash.h>

#include "gguf/internal.h"

void gg_names_init(gg_names *s)
{
    s->slots = NULL;
    s->cap = 0;
    s->used = 0;
}

void gg_names_free(gg_names *s)
{
    if (!s) return;
    free(s->slots);
    gg_names_init(s);
}

/* Slot for (ptr,len,h): the matching one, or the empty one to fill. */
static struct gg_name_slot *probe(struct gg_name_slot *slots, uint64_t cap, const char *ptr,
                                  uint64_t len, uint64_t h)
{
    uint64_t i = h & (cap - 1);
    for (;;) {
        struct gg_name_slot *sl = &slots[i];
        if (!sl->ptr) return sl;
        if (sl->hash == h && sl->len == len && memcmp(sl->ptr, ptr, len) == 0) return sl;
        i = (i + 1) & (cap - 1);
    }
}

static int grow(gg_names *s)
{
    uint64_t ncap = s->cap ? s->cap * 2 : 64;
    if (ncap > SIZE_MAX / sizeof(struct gg_name_slot)) return -1;
    struct gg_name_slot *ns = calloc(ncap, sizeof *ns);
    if (!ns) return -1;
    for (uint64_t i = 0; i < s->cap; i++) {
        struct gg_name_slot *o = &s->slots[i];
        if (o->ptr) *probe(ns, ncap, o->ptr, o->len, o->hash) = *o;
    }
    free(s->slots);
    s->slots = ns;
    s->cap = ncap;
    return 0;
}

int gg_names_insert(gg_names *s, const char *ptr, uint64_t len, uint64_t value, uint64_t *existing)
{
    /* Keep the load under 1/2 so probes stay short. */
    if ((s->used + 1) * 2 > s->cap && grow(s) < 0) return -1;
    /* An empty string still needs a non-NULL pointer to mark the slot used. */
    if (!ptr) ptr = "";
    uint64_t h = XXH3_64bits(ptr, len);
    struct gg_name_slot *sl = probe(s->slots, s->cap, ptr, len, h);
    if (sl->ptr) {
        if (existing) *existing = sl->value;
        return 0;
    }
    sl->ptr = ptr;
    sl->len = len;
    sl->hash = h;
    sl->value = value;
    s->used++;
    return 1;
}

int gg_names_find(const gg_names *s, const char *ptr, uint64_t len, uint64_t *value)
{
    if (!s->cap) return 0;
    if (!ptr) ptr = "";
    struct gg_name_slot *sl = probe(s->slots, s->cap, ptr, len, XXH3_64bits(ptr, len));
    if (!sl->ptr) return 0;
    if (value) *value = sl->value;
    return 1;
}
