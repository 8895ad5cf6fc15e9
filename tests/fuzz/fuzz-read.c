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
 *    lies inside the input where gguf_read_data() reads the same bytes.
 */
#include <config.h>

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
    gguf_close(f);
    return 0;
}
