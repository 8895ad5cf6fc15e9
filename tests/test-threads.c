/*
 * test-threads.c -- what gguf.h and libgguf(3) promise about threads:
 * one open file read from many threads at once gives every thread the
 * answers one thread gets alone.
 *
 * The test writes a model (scalar, string and string-array keys, F32, F16,
 * Q8_0 and Q4_K tensors) with the library's writer, opens it once mapped
 * and once from memory, records every answer single-threaded, then runs
 * THREADS threads over both handles together, each in its own order:
 * every key and tensor looked up by name, every value and array element
 * read, tensor data copied (gguf_read_data) and dequantized, the file
 * hashed (gguf_hash_file), a lookup that fails (its message in the
 * thread's own gguf_error), rows quantized with OpenMP threads
 * (gguf_quantize_rows) and products taken (gguf_matmul), while one more
 * thread keeps switching the SIMD level (gguf_simd_set).  Each thread also
 * opens the file on a handle of its own and writes and reads back a file
 * of its own, so that gguf_open and writers run side by side too.
 *
 * Quantizing and dequantizing give the same bytes at every level; a
 * gguf_matmul call uses one level throughout, so its result must equal
 * the single-threaded result at one of the levels.
 *
 * Threads count their own checks; the main thread reports after joining.
 * Meant for the sanitizer build (--enable-sanitizers) too, and for
 * ThreadSanitizer or helgrind run by hand (see libgguf(3), THREAD SAFETY).
 */
#include <config.h>

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gguf/gguf.h"
#include "quant/quant.h"
#include "tests/testutil.h"

#define THREADS 8
#define ROUNDS 30
#define N_TENSORS 12
#define NE0 256
#define N_TOKENS 3000
#define N_LEVELS 3

static char tmpdir[256], path[512];

static const uint32_t types[4] = {GGUF_T_F32, GGUF_T_F16, GGUF_T_Q8_0, GGUF_T_Q4_K};

/* What one thread alone sees. */
struct expect {
    uint64_t n_kv, n_tensors;
    uint64_t tokens_hash;               /* XXH3 of every token, in order */
    uint64_t data_hash[N_TENSORS];      /* XXH3 of the dequantized floats */
    gguf_digest file, meta, tensors[N_TENSORS];
    /* gguf_matmul of tensors 2 (Q8_0) and 3 (Q4_K) at each level (those
     * the CPU has; have_level[] says which), on activations x. */
    int have_level[N_LEVELS];
    float prod[N_LEVELS][2][16];
    unsigned char q4k[8 * 144];         /* gguf_quantize_rows(Q4_K) of x8 */
};

static struct expect want;
static float x[NE0];                    /* the activations */
static float x8[8 * NE0];               /* rows to quantize */
static int stop_switching;             /* set by main, read by the switcher (atomic) */

static uint64_t xxh3(const void *p, size_t n)
{
    gguf_digest d;
    if (gguf_hash_buffer(GGUF_HASH_XXH3, p, n, &d) != GGUF_OK) HARD_ERROR("gguf_hash_buffer");
    return gguf_digest_u64(&d);
}

static float value(uint64_t seed, uint64_t i)
{
    uint64_t z = (seed + i) * 0x9e3779b97f4a7c15u;
    z = (z ^ (z >> 31)) * 0xbf58476d1ce4e5b9u;
    return (float)((int64_t)(z >> 40) - (1 << 23)) / (float)(1 << 23);
}

static void tensor_name(char *buf, size_t n, int i)
{
    snprintf(buf, n, "blk.%d.weight_%s", i, gguf_type_str(types[i % 4]));
}

static uint64_t tensor_rows(int i) { return 8 + (uint64_t)i % 4 * 2; }

/* Writes the model to `to` through the library's writer: returns GGUF_OK. */
static int write_model(const char *to, gguf_error *err)
{
    gguf_writer *w = gguf_writer_new();
    if (!w) return GGUF_E_NOMEM;
    char key[64];
    int rc = gguf_writer_add_str(w, "general.architecture", "qwen2", 5, err);
    for (int i = 0; !rc && i < 24; i++) {
        snprintf(key, sizeof key, "test.key_%02d", i);
        rc = i % 3 == 0   ? gguf_writer_add_u32(w, key, (uint32_t)i * 1000u, err)
             : i % 3 == 1 ? gguf_writer_add_f32(w, key, (float)i / 4.0f, err)
                          : gguf_writer_add_str(w, key, key, strlen(key), err);
    }
    /* The caller's own copy: writers run on several threads at once. */
    gguf_str *tokens = malloc(N_TOKENS * sizeof *tokens);
    char (*text)[16] = malloc(N_TOKENS * sizeof *text);
    if (!tokens || !text) HARD_ERROR("out of memory");
    for (int i = 0; i < N_TOKENS; i++) {
        int n = snprintf(text[i], sizeof text[i], "tok%d", i * 7919 % 100003);
        tokens[i].ptr = text[i];
        tokens[i].len = (uint64_t)n;
    }
    if (!rc) rc = gguf_writer_add_str_array(w, "tokenizer.ggml.tokens", tokens, N_TOKENS, err);
    free(tokens);   /* the writer has copied the strings */
    free(text);
    for (int i = 0; !rc && i < N_TENSORS; i++) {
        char name[64];
        tensor_name(name, sizeof name, i);
        const uint64_t ne[2] = {NE0, tensor_rows(i)};
        rc = gguf_writer_add_tensor(w, name, types[i % 4], 2, ne, err);
    }
    if (!rc) rc = gguf_writer_open(w, to, err);
    for (int i = 0; !rc && i < N_TENSORS; i++) {
        uint64_t rows = tensor_rows(i);
        size_t bytes = (size_t)gguf_row_bytes(types[i % 4], NE0) * rows;
        float *f = malloc(rows * NE0 * sizeof *f);
        void *q = malloc(bytes);
        if (!f || !q) HARD_ERROR("out of memory");
        for (uint64_t k = 0; k < rows * NE0; k++) f[k] = value((uint64_t)i << 32, k);
        rc = gguf_quantize_rows(types[i % 4], f, q, (int64_t)rows, NE0, 1);
        if (!rc) rc = gguf_writer_write(w, q, bytes, err);
        free(f);
        free(q);
    }
    if (!rc) rc = gguf_writer_finish(w, err);
    gguf_writer_free(w);
    return rc;
}

static uint64_t tokens_hash(const gguf_file *f)
{
    const gguf_value *arr;
    if (gguf_kv_array(f, "tokenizer.ggml.tokens", GGUF_VT_STRING, &arr, NULL) != GGUF_OK) return 0;
    gguf_hasher *h = gguf_hasher_new(GGUF_HASH_XXH3);
    if (!h) return 0;
    for (uint64_t i = 0; i < arr->count; i++) {
        gguf_value v;
        gguf_str s = gguf_array_str(arr, i);
        if (gguf_array_get(arr, i, &v) != GGUF_OK || v.v.str.ptr != s.ptr) {
            gguf_hasher_free(h);
            return 0;
        }
        gguf_hasher_update(h, s.ptr, (size_t)s.len);
        gguf_hasher_update(h, "\n", 1);
    }
    gguf_digest d;
    gguf_hasher_digest(h, &d);
    gguf_hasher_free(h);
    return gguf_digest_u64(&d);
}

/* gguf_matmul of tensor i (one output per row, up to 16) on x. */
static int product(const gguf_file *f, int i, float *out)
{
    const gguf_tensor *t = gguf_tensor_at(f, (uint64_t)i);
    unsigned char act[512];
    if (gguf_matmul_act_size(t->type, NE0) > sizeof act) return -1;
    if (gguf_matmul_quantize(t->type, x, act, NE0) != GGUF_OK) return -1;
    return gguf_matmul(t->type, t->data, (size_t)gguf_row_bytes(t->type, NE0),
                       (int64_t)t->ne[1], NE0, act, sizeof act, 1, out, 1) == GGUF_OK ? 0 : -1;
}

/* A thread's own tally. */
struct worker {
    int id;
    gguf_file *mapped, *memory;
    int checks, failures;
    char first[1400];       /* the first failure */
};

#define T_CHECK(wk, cond, ...)                                               \
    do {                                                                     \
        (wk)->checks++;                                                      \
        if (!(cond)) {                                                       \
            if (!(wk)->failures++)                                           \
                snprintf((wk)->first, sizeof (wk)->first, __VA_ARGS__);      \
        }                                                                    \
    } while (0)

static uint32_t next(uint32_t *s)
{
    *s = *s * 1664525u + 1013904223u;
    return *s >> 8;
}

/* One pass over handle f in the thread's own order. */
static void read_all(struct worker *wk, gguf_file *f, uint32_t *rng)
{
    char key[64], name[64];
    gguf_error err = {0};
    T_CHECK(wk, gguf_kv_count(f) == want.n_kv && gguf_tensor_count(f) == want.n_tensors,
            "counts");
    for (int k = 0; k < 24; k++) {
        int i = (int)(next(rng) % 24);
        snprintf(key, sizeof key, "test.key_%02d", i);
        const gguf_kv *kv = gguf_kv_find(f, key);
        T_CHECK(wk, kv && kv == gguf_kv_at(f, (uint64_t)i + 1), "gguf_kv_find(%s)", key);
        if (i % 3 == 0) {
            uint32_t v = 0;
            T_CHECK(wk, gguf_kv_u32(f, key, &v, &err) == GGUF_OK && v == (uint32_t)i * 1000u,
                    "%s", key);
        } else if (i % 3 == 1) {
            float v = 0;
            T_CHECK(wk, gguf_kv_f32(f, key, &v, &err) == GGUF_OK && v == (float)i / 4.0f, "%s",
                    key);
        } else {
            gguf_str s;
            T_CHECK(wk, gguf_kv_str(f, key, &s, &err) == GGUF_OK && s.len == strlen(key) &&
                        memcmp(s.ptr, key, s.len) == 0, "%s", key);
        }
    }
    /* A failure names the thread's own key in the thread's own error. */
    snprintf(key, sizeof key, "test.absent_%d", wk->id);
    uint32_t v;
    T_CHECK(wk, gguf_kv_u32(f, key, &v, &err) == GGUF_E_NOT_FOUND && strstr(err.message, key),
            "error for %s: %s", key, err.message);
    T_CHECK(wk, tokens_hash(f) == want.tokens_hash, "tokens differ");

    float *fl = malloc(16 * NE0 * sizeof *fl);
    unsigned char *copy = malloc(16 * NE0 * sizeof(float));
    if (!fl || !copy) HARD_ERROR("out of memory");
    for (int k = 0; k < N_TENSORS; k++) {
        int i = (int)(next(rng) % N_TENSORS);
        tensor_name(name, sizeof name, i);
        const gguf_tensor *t = gguf_tensor_find(f, name);
        T_CHECK(wk, t && t == gguf_tensor_at(f, (uint64_t)i) && gguf_tensor_index(f, t) == (uint64_t)i,
                "gguf_tensor_find(%s)", name);
        if (!t) continue;
        T_CHECK(wk, gguf_read_data(f, t->file_offset, copy, (size_t)t->size, &err) == GGUF_OK &&
                    memcmp(copy, t->data, (size_t)t->size) == 0, "gguf_read_data(%s)", name);
        T_CHECK(wk, gguf_dequantize_rows(t->type, t->data, fl, (int64_t)t->ne[1], NE0, 1) == GGUF_OK &&
                    xxh3(fl, (size_t)t->n_elements * sizeof *fl) == want.data_hash[i],
                "dequantized %s differs", name);
    }
    free(fl);
    free(copy);

    float prod[16];
    for (int m = 0; m < 2; m++) {
        int same = 0;
        if (product(f, 2 + m, prod) == 0)
            for (int l = 0; l < N_LEVELS; l++)
                if (want.have_level[l] &&
                    memcmp(prod, want.prod[l][m], tensor_rows(2 + m) * sizeof *prod) == 0)
                    same = 1;
        T_CHECK(wk, same, "gguf_matmul of tensor %d equals no level's single-threaded result", 2 + m);
    }
}

static void *work(void *arg)
{
    struct worker *wk = arg;
    uint32_t rng = 0x12345u + (uint32_t)wk->id * 7777u;
    gguf_error err = {0};
    char own[600];
    snprintf(own, sizeof own, "%s/thread-%d.gguf", tmpdir, wk->id);
    for (int r = 0; r < ROUNDS; r++) {
        read_all(wk, wk->mapped, &rng);
        read_all(wk, wk->memory, &rng);
        if (r % 2 == wk->id % 2) {
            gguf_digest file, meta, *tens = malloc(N_TENSORS * sizeof *tens);
            if (!tens) HARD_ERROR("out of memory");
            gguf_file *f = r % 4 < 2 ? wk->mapped : wk->memory;
            T_CHECK(wk, gguf_hash_file(f, GGUF_HASH_XXH3, &file, &meta, NULL, tens, NULL, NULL, &err) ==
                            GGUF_OK && gguf_digest_equal(&file, &want.file) &&
                        gguf_digest_equal(&meta, &want.meta) &&
                        memcmp(tens, want.tensors, sizeof want.tensors) == 0,
                    "gguf_hash_file: %s", err.message);
            free(tens);
        }
        /* OpenMP teams started from several threads at once. */
        unsigned char q[sizeof want.q4k];
        T_CHECK(wk, gguf_quantize_rows(GGUF_T_Q4_K, x8, q, 8, NE0, 2) == GGUF_OK &&
                    memcmp(q, want.q4k, sizeof q) == 0, "gguf_quantize_rows on 2 threads");
        /* A handle of its own, opened while the others read. */
        gguf_file *mine;
        if (gguf_open(&mine, path, NULL, 0, &err) == GGUF_OK) {
            read_all(wk, mine, &rng);
            gguf_close(mine);
        } else {
            T_CHECK(wk, 0, "gguf_open: %s", err.message);
        }
        /* A writer of its own, finishing while other writers do. */
        int rc = write_model(own, &err);
        T_CHECK(wk, rc == GGUF_OK, "writing %s: %s", own, err.message);
        if (rc == GGUF_OK && gguf_open(&mine, own, NULL, 0, &err) == GGUF_OK) {
            T_CHECK(wk, tokens_hash(mine) == want.tokens_hash, "%s: tokens", own);
            gguf_close(mine);
        }
    }
    unlink(own);
    return NULL;
}

/* Switches the SIMD level round the levels the CPU has until told to stop. */
static void *switcher(void *arg)
{
    (void)arg;
    unsigned n = 0;
    while (!__atomic_load_n(&stop_switching, __ATOMIC_ACQUIRE)) {
        int l = (int)(n++ % N_LEVELS);
        if (want.have_level[l]) gguf_simd_set(l);
        struct timespec ts = {0, 200000};
        nanosleep(&ts, NULL);
    }
    return NULL;
}

static void cleanup(void)
{
    if (path[0]) unlink(path);
    if (tmpdir[0]) rmdir(tmpdir);
}

int main(void)
{
    const char *t = getenv("TMPDIR");
    snprintf(tmpdir, sizeof tmpdir, "%s/test-threads.XXXXXX", t && *t ? t : "/tmp");
    if (!mkdtemp(tmpdir)) HARD_ERROR("mkdtemp %s", tmpdir);
    atexit(cleanup);
    snprintf(path, sizeof path, "%s/model.gguf", tmpdir);
    for (int i = 0; i < NE0; i++) x[i] = value(99, (uint64_t)i);
    for (int i = 0; i < 8 * NE0; i++) x8[i] = value(77, (uint64_t)i);

    gguf_error err;
    REQUIRE(write_model(path, &err) == GGUF_OK, "writing the model: %s", err.message);
    gguf_file *mapped, *memory;
    REQUIRE(gguf_open(&mapped, path, NULL, 0, &err) == GGUF_OK, "%s", err.message);
    REQUIRE(gguf_input_mode(mapped) == GGUF_INPUT_MAPPED, "not mapped");
    const void *base;
    size_t len;
    REQUIRE(gguf_mapped_range(mapped, &base, &len) == 1, "no mapping");
    void *bytes = malloc(len);
    REQUIRE(bytes != NULL, "out of memory");
    memcpy(bytes, base, len);
    REQUIRE(gguf_open_memory(&memory, bytes, len, "memory", &err) == GGUF_OK, "%s", err.message);

    /* The answers of one thread alone. */
    want.n_kv = gguf_kv_count(mapped);
    want.n_tensors = gguf_tensor_count(mapped);
    REQUIRE(want.n_tensors == N_TENSORS && want.n_kv == 26, "counts %llu %llu",
            (unsigned long long)want.n_kv, (unsigned long long)want.n_tensors);
    want.tokens_hash = tokens_hash(mapped);
    REQUIRE(want.tokens_hash != 0, "tokens unreadable");
    float *fl = malloc(16 * NE0 * sizeof *fl);
    REQUIRE(fl != NULL, "out of memory");
    for (int i = 0; i < N_TENSORS; i++) {
        const gguf_tensor *tt = gguf_tensor_at(mapped, (uint64_t)i);
        REQUIRE(gguf_dequantize_rows(tt->type, tt->data, fl, (int64_t)tt->ne[1], NE0, 1) == GGUF_OK,
                "dequantize %d", i);
        want.data_hash[i] = xxh3(fl, (size_t)tt->n_elements * sizeof *fl);
    }
    free(fl);
    REQUIRE(gguf_hash_file(mapped, GGUF_HASH_XXH3, &want.file, &want.meta, NULL, want.tensors, NULL, NULL,
                           &err) == GGUF_OK, "%s", err.message);
    REQUIRE(gguf_quantize_rows(GGUF_T_Q4_K, x8, want.q4k, 8, NE0, 1) == GGUF_OK, "quantize");
    const int level0 = gguf_simd_get();
    int levels = 0;
    for (int l = 0; l < N_LEVELS; l++) {
        if (gguf_simd_set(l) != GGUF_OK) continue;
        want.have_level[l] = 1;
        levels++;
        for (int m = 0; m < 2; m++)
            REQUIRE(product(mapped, 2 + m, want.prod[l][m]) == 0, "gguf_matmul at level %d", l);
    }
    gguf_simd_set(level0);
    fprintf(stderr, "%d threads, %d rounds each, SIMD levels switched among: %d\n", THREADS, ROUNDS,
            levels);

    struct worker wk[THREADS];
    pthread_t th[THREADS], sw;
    memset(wk, 0, sizeof wk);
    REQUIRE(pthread_create(&sw, NULL, switcher, NULL) == 0, "pthread_create");
    for (int i = 0; i < THREADS; i++) {
        wk[i].id = i;
        wk[i].mapped = mapped;
        wk[i].memory = memory;
        REQUIRE(pthread_create(&th[i], NULL, work, &wk[i]) == 0, "pthread_create");
    }
    for (int i = 0; i < THREADS; i++) pthread_join(th[i], NULL);
    __atomic_store_n(&stop_switching, 1, __ATOMIC_RELEASE);
    pthread_join(sw, NULL);
    gguf_simd_set(level0);

    for (int i = 0; i < THREADS; i++) {
        CHECK(wk[i].checks > 0 && wk[i].failures == 0, "thread %d: %d of %d checks failed, first: %s",
              i, wk[i].failures, wk[i].checks, wk[i].first);
        tu_checks += wk[i].checks;
    }
    gguf_close(memory);
    gguf_close(mapped);
    free(bytes);
    tu_finish();
}
