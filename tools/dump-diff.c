/* dump-diff.c -- gguf-dump --diff; see dump-diff.h. */
#include <config.h>

#include <stdlib.h>
#include <string.h>

#include "gguf/gguf.h"
#include "tools/dump-diff.h"
#include "tools/guard.h"
#include "tools/mdiff.h"

/* One model: its set and the XXH3 of each tensor of the set. */
struct side {
    const char *path;
    gguf_split *set;
    uint64_t *sums;
};

/* Opens path and hashes every tensor.  Returns 0, or -1 after a message. */
static int side_open(struct side *s, const char *path, int shard)
{
    gguf_error err;
    err.message[0] = '\0';
    s->path = path;
    const unsigned flags = GGUF_OPEN_SEQUENTIAL;
    int rc = shard || strcmp(path, "-") == 0 ? guard_split_open_alone(&s->set, path, flags, &err)
                                             : guard_split_open(&s->set, path, flags, &err);
    if (rc) {
        cli_message(err.message[0] ? err.message : gguf_strerror(rc));
        return -1;
    }
    const uint64_t n = gguf_split_tensor_count(s->set);
    if (!(s->sums = calloc((size_t)(n ? n : 1), sizeof *s->sums))) goto nomem;
    for (uint32_t k = 0; k < gguf_split_count(s->set); k++) {
        gguf_file *f = gguf_split_shard(s->set, k);
        const uint64_t nt = gguf_tensor_count(f);
        gguf_digest *d = calloc((size_t)(nt ? nt : 1), sizeof *d);
        if (!d) goto nomem;
        rc = gguf_hash_file(f, GGUF_HASH_XXH3, NULL, NULL, NULL, d, NULL, NULL, &err);
        if (rc) {
            free(d);
            cli_message(err.message[0] ? err.message : gguf_strerror(rc));
            return -1;
        }
        for (uint64_t i = 0; i < n; i++) {
            uint32_t sh;
            const gguf_tensor *t = gguf_split_tensor_at(s->set, i, &sh);
            if (sh == k) s->sums[i] = gguf_digest_u64(&d[gguf_tensor_index(f, t)]);
        }
        free(d);
    }
    return 0;
nomem:
    cli_error(path, "out of memory");
    return -1;
}

static void side_close(struct side *s)
{
    guard_split_close(s->set);
    free(s->sums);
}

/* "GGUF v3, little-endian" */
static void put_header(cli_out *o, const gguf_file *f)
{
    cli_out_printf(o, "GGUF v%u, %s-endian", (unsigned)gguf_version(f),
                   gguf_byte_order(f) == GGUF_BIG_ENDIAN ? "big" : "little");
}

int dump_diff(cli_out *o, const char *a, const char *b, int json, int shard)
{
    if (strcmp(a, "-") == 0 && strcmp(b, "-") == 0) {
        cli_error("-", "--diff: standard input can be one side only");
        return CLI_EXIT_TROUBLE;
    }
    struct side sa = {0}, sb = {0};
    int status = CLI_EXIT_TROUBLE;
    if (side_open(&sa, a, shard) || side_open(&sb, b, shard)) goto done;
    const gguf_file *fa = gguf_split_shard(sa.set, 0), *fb = gguf_split_shard(sb.set, 0);
    const struct mdiff_side da = {sa.set, sa.sums}, db = {sb.set, sb.sums};
    const int header_diff = gguf_version(fa) != gguf_version(fb) || gguf_byte_order(fa) != gguf_byte_order(fb);
    /* count first: the JSON document says whether they are the same before the lists */
    uint64_t changes = (uint64_t)header_diff + mdiff_kv(o, fa, fb, a, b, 0, 0) +
                       mdiff_tensors(o, &da, &db, 0, 0);
    if (json) {
        cli_out_str(o, "{\n  \"a\": ");
        cli_out_json_str(o, a, strlen(a));
        cli_out_str(o, ",\n  \"b\": ");
        cli_out_json_str(o, b, strlen(b));
        cli_out_printf(o, ",\n  \"same\": %s,\n  \"changes\": ", changes ? "false" : "true");
        cli_out_u64(o, changes);
        cli_out_printf(o, ",\n  \"header_changed\": %s,\n", header_diff ? "true" : "false");
        mdiff_kv(o, fa, fb, a, b, 1, 1);
        mdiff_tensors(o, &da, &db, 1, 1);
        cli_out_str(o, "\n}\n");
    } else if (changes) {
        mdiff_kv(o, fa, fb, a, b, 1, 0);
        if (header_diff) {
            cli_out_str(o, "-header: ");
            put_header(o, fa);
            cli_out_str(o, "\n+header: ");
            put_header(o, fb);
            cli_out_putc(o, '\n');
        }
        mdiff_tensors(o, &da, &db, 1, 0);
    }
    status = changes ? CLI_EXIT_NEGATIVE : CLI_EXIT_OK;
done:
    side_close(&sa);
    side_close(&sb);
    return status;
}
