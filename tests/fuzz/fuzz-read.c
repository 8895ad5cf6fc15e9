/*
 * fuzz-read.c -- the reader on bytes in memory (gguf_open_memory), then a
 * walk over everything an accepted file offers, checking what libgguf(3)
 * promises of it:
 *  - a refusal is GGUF_E_FORMAT, GGUF_E_UNSUPPORTED or GGUF_E_NOMEM, with a
 *    message that starts with the display name;
 *  - the header facts hang together (header size <= data offset <= data
 *    end <= input size, the data offset aligned);
 *  - every KV pair: gguf_kv_find() of its key gives it back (keys without
 *    NUL), exactly one typed getter accepts it, every array element can be
 *    read (gguf_array_get, gguf_array_str, gguf_array_data agreeing),
 *    nested arrays included, every string inside the input;
 *  - every tensor: gguf_tensor_find() of its name gives it back, its data
 *    lies inside the input where gguf_read_data() reads the same bytes;
 *  - gguf_hash_file() gives, for XXH3 and for CRC-32 (whose whole-file
 *    value is combined from the parts), the one-shot digests of the whole
 *    input, of the metadata and of each tensor's bytes.
 */
#include <config.h>

#include <stdlib.h>

#include "gguf/gguf.h"
#include "tests/fuzz/fuzz.h"
#include "tests/fuzz/walk.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    gguf_file *f = NULL;
    gguf_error err;
    memset(&err, 0, sizeof err);
    int rc = gguf_open_memory(&f, data, size, "fuzz.gguf", &err);
    if (rc != GGUF_OK) {
        fuzz_check_refusal(rc, f, &err, "fuzz.gguf", 0);
        return 0;
    }
    fuzz_walk_file(f, data, size);
    uint64_t n = gguf_tensor_count(f);
    gguf_digest whole, meta, want, *t = calloc((size_t)(n ? n : 1), sizeof *t);
    if (!t) FUZZ_TROUBLE("out of memory");
    static const uint32_t algos[] = { GGUF_HASH_XXH3, GGUF_HASH_CRC32 };
    for (size_t a = 0; a < sizeof algos / sizeof algos[0]; a++) {
        FUZZ_ASSERT(gguf_hash_file(f, algos[a], &whole, &meta, NULL, t, NULL, NULL, &err) == GGUF_OK,
                    "hash: %s", err.message);
        gguf_hash_buffer(algos[a], data, size, &want);
        FUZZ_ASSERT(gguf_digest_equal(&whole, &want), "%s: whole file", gguf_hash_name(algos[a]));
        gguf_hash_buffer(algos[a], data, (size_t)gguf_header_size(f), &want);
        FUZZ_ASSERT(gguf_digest_equal(&meta, &want), "%s: metadata", gguf_hash_name(algos[a]));
        for (uint64_t i = 0; i < n; i++) {
            const gguf_tensor *ti = gguf_tensor_at(f, i);
            gguf_hash_buffer(algos[a], ti->data, (size_t)ti->size, &want);
            FUZZ_ASSERT(gguf_digest_equal(&t[i], &want), "%s: tensor %llu",
                        gguf_hash_name(algos[a]), (unsigned long long)i);
        }
    }
    free(t);
    gguf_close(f);
    return 0;
}
