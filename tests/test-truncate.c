/*
 * test-truncate.c -- the reader on every prefix of a valid file, on every
 * one-byte corruption of a header, and on a million keys and tensors.
 *
 *  1. A valid file written by the library's writer (KVs of every value type,
 *     nested arrays, empty strings and arrays, tensors of several types) is
 *     cut at every byte of its header and metadata and at a sample of points
 *     inside the data section.  Each prefix is opened from memory (a heap
 *     buffer of exactly that size, so that AddressSanitizer sees any read
 *     past it) and as a stream through a pipe.  Both must fail with
 *     GGUF_E_FORMAT, the same message, naming the file, at an offset inside
 *     the prefix.
 *  2. Every byte of the header region of a small file is flipped (three
 *     masks, one byte at a time); the reader must either accept the file or
 *     fail with a status that means "bad file" and a message.
 *  3. A million KVs and a million tensors open (the time is printed, not
 *     asserted); a million keys plus one duplicate, and a million tensors
 *     plus one duplicate name, are rejected naming the key and the tensor.
 */
#include <config.h>

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "gguf/gguf.h"
#include "tests/testutil.h"
#include "tests/bytes.h"

#define NAME "prefix.gguf"

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* ------------------------------------------------------------------------ */
/* Making files with the writer                                              */

static void wok(int rc, const gguf_error *err, const char *what)
{
    if (rc != GGUF_OK) HARD_ERROR("writer: %s: %s", what, err->message);
}

/* Writes the header and `data_bytes` of patterned tensor data through
 * gguf_writer_open_fd to a temporary file, frees the writer and returns the
 * bytes of the file. */
static struct bytes finish(gguf_writer *w, uint64_t data_bytes)
{
    gguf_error err;
    FILE *tmp = tmpfile();
    if (!tmp) HARD_ERROR("tmpfile: %s", strerror(errno));
    wok(gguf_writer_open_fd(w, fileno(tmp), "(tmp)", &err), &err, "open");
    unsigned char chunk[65536];
    for (size_t i = 0; i < sizeof chunk; i++) chunk[i] = (unsigned char)(i * 131 + 7);
    for (uint64_t left = data_bytes; left;) {
        size_t n = left < sizeof chunk ? (size_t)left : sizeof chunk;
        wok(gguf_writer_write(w, chunk, n, &err), &err, "write");
        left -= n;
    }
    wok(gguf_writer_finish(w, &err), &err, "finish");
    gguf_writer_free(w);

    struct bytes b = {0};
    if (fflush(tmp) != 0 || fseek(tmp, 0, SEEK_SET) != 0) HARD_ERROR("tmpfile: %s", strerror(errno));
    if (b_read(&b, tmp) != 0) HARD_ERROR("tmpfile: read error");
    fclose(tmp);
    return b;
}

/* Bytes of the tensor data of a tensor. */
static uint64_t tensor_bytes(uint32_t type, uint32_t n_dims, const uint64_t *ne)
{
    uint64_t n = gguf_row_bytes(type, ne[0]);
    for (uint32_t d = 1; d < n_dims; d++) n *= ne[d];
    return n;
}

/* A small GGUF made byte by byte holding nested arrays (the writer's API
 * takes nested arrays only as values read from a file):
 *   test.nested = [[1, 2] (u16), ["x", "", "yz"], [[7] (u8)], [] (i32)]  */
static struct bytes nested_source(void)
{
    struct bytes b = b_header(3, 0, 0, 1); /* v3 little-endian, no tensor, 1 KV */
    b_key(&b, "test.nested", GGUF_VT_ARRAY);
    b_arr(&b, GGUF_VT_ARRAY, 4);
    b_arr(&b, GGUF_VT_UINT16, 2);
    b_u16(&b, 1);
    b_u16(&b, 2);
    b_arr(&b, GGUF_VT_STRING, 3);
    b_str(&b, "x", 1);
    b_str(&b, "", 0);
    b_str(&b, "yz", 2);
    b_arr(&b, GGUF_VT_ARRAY, 1);
    b_arr(&b, GGUF_VT_UINT8, 1);
    b_u8(&b, 7);
    b_arr(&b, GGUF_VT_INT32, 0);
    b_pad(&b, 32);
    return b;
}

/* The file of part 1: KVs of every value type and five tensors, in the
 * given GGUF version and byte order. */
static struct bytes rich_file(uint32_t version, int order)
{
    gguf_error err;
    gguf_writer *w = gguf_writer_new();
    if (!w) HARD_ERROR("out of memory");
    wok(gguf_writer_set_version(w, version, &err), &err, "version");
    wok(gguf_writer_set_byte_order(w, order, &err), &err, "byte order");
    wok(gguf_writer_add_str(w, "general.architecture", "llama", 5, &err), &err, "arch");
    wok(gguf_writer_add_u8(w, "t.u8", 200, &err), &err, "u8");
    wok(gguf_writer_add_i8(w, "t.i8", -100, &err), &err, "i8");
    wok(gguf_writer_add_u16(w, "t.u16", 60000, &err), &err, "u16");
    wok(gguf_writer_add_i16(w, "t.i16", -30000, &err), &err, "i16");
    wok(gguf_writer_add_u32(w, "t.u32", 4000000000u, &err), &err, "u32");
    wok(gguf_writer_add_i32(w, "t.i32", -2000000000, &err), &err, "i32");
    wok(gguf_writer_add_u64(w, "t.u64", UINT64_MAX - 1, &err), &err, "u64");
    wok(gguf_writer_add_i64(w, "t.i64", INT64_MIN + 1, &err), &err, "i64");
    wok(gguf_writer_add_f32(w, "t.f32", 1.5f, &err), &err, "f32");
    wok(gguf_writer_add_f64(w, "t.f64", -2.25, &err), &err, "f64");
    wok(gguf_writer_add_bool(w, "t.bool", 1, &err), &err, "bool");
    wok(gguf_writer_add_str(w, "t.str", "a string", 8, &err), &err, "str");
    wok(gguf_writer_add_str(w, "t.empty_str", "", 0, &err), &err, "empty str");

    static const uint32_t fixed[] = {
        GGUF_VT_UINT8, GGUF_VT_INT8, GGUF_VT_UINT16, GGUF_VT_INT16, GGUF_VT_UINT32,
        GGUF_VT_INT32, GGUF_VT_FLOAT32, GGUF_VT_BOOL, GGUF_VT_UINT64, GGUF_VT_INT64,
        GGUF_VT_FLOAT64,
    };
    unsigned char elems[5 * 8];
    for (size_t i = 0; i < sizeof elems; i++) elems[i] = (unsigned char)(i * 29 + 3);
    for (size_t i = 0; i < sizeof fixed / sizeof fixed[0]; i++) {
        char key[32];
        snprintf(key, sizeof key, "t.arr.%s", gguf_vtype_name(fixed[i]));
        if (fixed[i] == GGUF_VT_BOOL)
            for (size_t j = 0; j < 5; j++) elems[j] = (unsigned char)(j & 1);
        wok(gguf_writer_add_array(w, key, fixed[i], elems, 5, &err), &err, key);
    }
    static const gguf_str strs[] = {{"one", 3}, {"", 0}, {"three", 5}};
    wok(gguf_writer_add_str_array(w, "t.arr.STRING", strs, 3, &err), &err, "str array");
    wok(gguf_writer_add_array(w, "t.arr.empty", GGUF_VT_UINT32, elems, 0, &err), &err, "empty");

    struct bytes src = nested_source();
    gguf_file *nf = NULL;
    if (gguf_open_memory(&nf, src.p, src.n, "nested", &err) != GGUF_OK)
        HARD_ERROR("nested-array source does not open: %s", err.message);
    wok(gguf_writer_copy_kv(w, gguf_kv_at(nf, 0), &err), &err, "copy nested");
    gguf_close(nf);
    free(src.p);
    wok(gguf_writer_add_u32(w, "t.last", 1, &err), &err, "last");

    static const struct {
        const char *name;
        uint32_t type, n_dims;
        uint64_t ne[4];
    } ts[] = {
        {"w.f32", GGUF_T_F32, 2, {4, 3, 1, 1}},
        {"w.q8_0", GGUF_T_Q8_0, 2, {32, 2, 1, 1}},
        {"w.empty", GGUF_T_F16, 2, {8, 0, 1, 1}},
        {"w.q4_k", GGUF_T_Q4_K, 1, {256, 1, 1, 1}},
        {"w.i32", GGUF_T_I32, 4, {2, 2, 2, 2}},
    };
    uint64_t data = 0;
    for (size_t i = 0; i < sizeof ts / sizeof ts[0]; i++) {
        wok(gguf_writer_add_tensor(w, ts[i].name, ts[i].type, ts[i].n_dims, ts[i].ne, &err),
            &err, ts[i].name);
        data += tensor_bytes(ts[i].type, ts[i].n_dims, ts[i].ne);
    }
    return finish(w, data);
}

/* ------------------------------------------------------------------------ */
/* Opening a byte string in two modes                                        */

struct verdict {
    int status;
    gguf_error err;
};

/* Opens n bytes from a heap copy of exactly n bytes. */
static struct verdict open_mem(const unsigned char *p, size_t n)
{
    struct verdict v;
    unsigned char *copy = malloc(n ? n : 1);
    if (!copy) HARD_ERROR("out of memory");
    if (n) memcpy(copy, p, n);
    memset(&v.err, 0, sizeof v.err);
    gguf_file *f = NULL;
    v.status = gguf_open_memory(&f, copy, n, NAME, &v.err);
    gguf_close(f);
    free(copy);
    return v;
}

/* Opens n bytes as a stream through a pipe.  What fits in the pipe buffer is
 * written before reading; the rest, if any, by a child process. */
static struct verdict open_pipe(const unsigned char *p, size_t n)
{
    struct verdict v;
    int fds[2];
    if (pipe(fds) != 0) HARD_ERROR("pipe: %s", strerror(errno));
    int fl = fcntl(fds[1], F_GETFL);
    fcntl(fds[1], F_SETFL, fl | O_NONBLOCK);
    size_t done = 0;
    while (done < n) {
        ssize_t k = write(fds[1], p + done, n - done);
        if (k < 0) {
            if (errno == EAGAIN) break;
            HARD_ERROR("write to pipe: %s", strerror(errno));
        }
        done += (size_t)k;
    }
    pid_t child = -1;
    if (done < n) {
        child = fork();
        if (child < 0) HARD_ERROR("fork: %s", strerror(errno));
        if (child == 0) {
            close(fds[0]);
            fcntl(fds[1], F_SETFL, fl);
            while (done < n) {
                ssize_t k = write(fds[1], p + done, n - done);
                if (k <= 0) _exit(k < 0 && errno == EPIPE ? 0 : 1);
                done += (size_t)k;
            }
            _exit(0);
        }
    }
    close(fds[1]);
    memset(&v.err, 0, sizeof v.err);
    gguf_file *f = NULL;
    v.status = gguf_open_fd(&f, fds[0], NAME, 0, &v.err);  /* takes fds[0] over */
    gguf_close(f);
    if (child > 0) {
        int st;
        waitpid(child, &st, 0);
    }
    return v;
}

/* Checks one rejected prefix of length n in both modes. */
static void check_prefix(const struct bytes *file, size_t n)
{
    struct verdict m = open_mem(file->p, n);
    struct verdict s = open_pipe(file->p, n);
    CHECK(m.status == GGUF_E_FORMAT, "prefix %zu (memory): status %d: %s", n, m.status,
          m.err.message);
    CHECK(s.status == GGUF_E_FORMAT, "prefix %zu (pipe): status %d: %s", n, s.status,
          s.err.message);
    CHECK(m.err.message[0] != '\0', "prefix %zu: empty message", n);
    CHECK(strstr(m.err.message, NAME) != NULL, "prefix %zu: message lacks the name: %s", n,
          m.err.message);
    CHECK(m.err.offset <= n, "prefix %zu: error offset %llu is past the input: %s", n,
          (unsigned long long)m.err.offset, m.err.message);
    CHECK(s.err.offset == m.err.offset, "prefix %zu: offsets differ: memory %llu, pipe %llu", n,
          (unsigned long long)m.err.offset, (unsigned long long)s.err.offset);
    CHECK(strcmp(m.err.message, s.err.message) == 0,
          "prefix %zu: messages differ:\n  memory: %s\n  pipe:   %s", n, m.err.message,
          s.err.message);
}

/* Part 1: every prefix of the header and metadata, a sample of the data. */
static void test_prefixes(uint32_t version, int order)
{
    struct bytes file = rich_file(version, order);
    gguf_file *f = NULL;
    gguf_error err;
    int rc = gguf_open_memory(&f, file.p, file.n, NAME, &err);
    REQUIRE(rc == GGUF_OK, "valid file: %s", err.message);
    uint64_t doff = gguf_data_offset(f), dend = gguf_data_end(f);
    REQUIRE(gguf_kv_count(f) > 25 && gguf_tensor_count(f) == 5, "file has %llu KVs",
            (unsigned long long)gguf_kv_count(f));
    gguf_close(f);
    REQUIRE(doff < dend && dend <= file.n, "data offset %llu, end %llu, size %zu",
            (unsigned long long)doff, (unsigned long long)dend, file.n);

    /* The whole file is valid in both modes (the control). */
    struct verdict m = open_mem(file.p, file.n), s = open_pipe(file.p, file.n);
    CHECK(m.status == GGUF_OK, "whole file (memory): %s", m.err.message);
    CHECK(s.status == GGUF_OK, "whole file (pipe): %s", s.err.message);

    int before = tu_failures;
    size_t n_checked = 0;
    for (size_t n = 0; n <= doff; n++, n_checked++) {
        check_prefix(&file, n);
        if (tu_failures - before > 20) break;   /* enough to see the pattern */
    }
    for (size_t n = (size_t)doff + 1; n < dend; n += 37, n_checked++) check_prefix(&file, n);
    check_prefix(&file, (size_t)dend - 1);
    fprintf(stderr, "prefixes (v%u, %s): %zu checked, header and metadata %llu bytes, "
            "file %zu bytes\n", version, order == GGUF_BIG_ENDIAN ? "big-endian" : "little-endian",
            n_checked + 1, (unsigned long long)doff, file.n);
    free(file.p);
}

/* Part 2: each byte of the header region flipped, one at a time. */
static void test_flips(void)
{
    gguf_error err;
    gguf_writer *w = gguf_writer_new();
    if (!w) HARD_ERROR("out of memory");
    static const uint16_t a16[3] = {1, 2, 3};
    static const gguf_str strs[2] = {{"ab", 2}, {"c", 1}};
    static const uint64_t ne0[2] = {32, 2}, ne1[1] = {8};
    wok(gguf_writer_add_str(w, "general.architecture", "llama", 5, &err), &err, "arch");
    wok(gguf_writer_add_u32(w, "general.alignment", 32, &err), &err, "alignment");
    wok(gguf_writer_add_bool(w, "x.bool", 0, &err), &err, "bool");
    wok(gguf_writer_add_array(w, "x.u16s", GGUF_VT_UINT16, a16, 3, &err), &err, "u16s");
    wok(gguf_writer_add_str_array(w, "x.strs", strs, 2, &err), &err, "strs");
    wok(gguf_writer_add_tensor(w, "a", GGUF_T_Q8_0, 2, ne0, &err), &err, "a");
    wok(gguf_writer_add_tensor(w, "b", GGUF_T_F32, 1, ne1, &err), &err, "b");
    struct bytes file = finish(w, 2 * 34 + 8 * 4);

    gguf_file *f = NULL;
    int rc = gguf_open_memory(&f, file.p, file.n, NAME, &err);
    REQUIRE(rc == GGUF_OK, "small file: %s", err.message);
    size_t hdr = (size_t)gguf_data_offset(f);
    gguf_close(f);

    static const unsigned char masks[] = {0xff, 0x01, 0x80};
    unsigned char *copy = malloc(file.n);
    if (!copy) HARD_ERROR("out of memory");
    unsigned n_ok = 0, n_bad = 0;
    int before = tu_failures;
    for (size_t mi = 0; mi < sizeof masks; mi++) {
        for (size_t i = 0; i < hdr; i++) {
            memcpy(copy, file.p, file.n);
            copy[i] ^= masks[mi];
            gguf_error e;
            memset(&e, 0, sizeof e);
            f = NULL;
            rc = gguf_open_memory(&f, copy, file.n, NAME, &e);
            /* The same bytes through a pipe get the same verdict. */
            struct verdict s = open_pipe(copy, file.n);
            CHECK(s.status == rc && (rc == GGUF_OK || strcmp(s.err.message, e.message) == 0),
                  "byte %zu ^ 0x%02x: memory gives %d '%s', pipe %d '%s'", i, masks[mi], rc,
                  rc ? e.message : "", s.status, s.status ? s.err.message : "");
            if (rc == GGUF_OK) {
                n_ok++;
                CHECK(f != NULL, "byte %zu ^ 0x%02x: OK without a handle", i, masks[mi]);
                gguf_close(f);
                continue;
            }
            n_bad++;
            CHECK(f == NULL, "byte %zu ^ 0x%02x: a handle on failure", i, masks[mi]);
            CHECK(rc == GGUF_E_FORMAT || rc == GGUF_E_UNSUPPORTED,
                  "byte %zu ^ 0x%02x: status %d (%s): %s", i, masks[mi], rc, gguf_strerror(rc),
                  e.message);
            CHECK(e.status == rc, "byte %zu ^ 0x%02x: err.status %d, returned %d", i,
                  masks[mi], e.status, rc);
            CHECK(strstr(e.message, NAME) != NULL && strlen(e.message) > strlen(NAME) + 2,
                  "byte %zu ^ 0x%02x: message: '%s'", i, masks[mi], e.message);
            if (tu_failures - before > 20) break;
        }
    }
    fprintf(stderr, "flips: %zu header bytes x %zu masks: %u accepted, %u rejected\n", hdr,
            sizeof masks, n_ok, n_bad);
    CHECK(n_bad > hdr, "too few flips rejected: %u", n_bad);
    free(copy);
    free(file.p);
}

/* Part 3: a million keys, a million tensors, and one duplicate of each.
 * Each file holds a million items plus one more with a unique name of the
 * same length (the writer refuses duplicates); it must open, and once that
 * last name is patched into a copy of an earlier one, it must be rejected. */
#define MILLION 1000000u

static struct bytes many_keys(void)
{
    gguf_error err;
    gguf_writer *w = gguf_writer_new();
    if (!w) HARD_ERROR("out of memory");
    char key[32];
    for (unsigned i = 0; i <= MILLION; i++) {
        snprintf(key, sizeof key, "key.%07u", i);
        wok(gguf_writer_add_u8(w, key, (uint8_t)i, &err), &err, key);
    }
    return finish(w, 0);
}

static struct bytes many_tensors(void)
{
    gguf_error err;
    gguf_writer *w = gguf_writer_new();
    if (!w) HARD_ERROR("out of memory");
    static const uint64_t ne[1] = {1};
    char name[32];
    for (unsigned i = 0; i <= MILLION; i++) {
        snprintf(name, sizeof name, "t.%07u", i);
        wok(gguf_writer_add_tensor(w, name, GGUF_T_I8, 1, ne, &err), &err, name);
    }
    return finish(w, MILLION + 1);
}

/* Opens b as `name`, timing it; stores the status and message. */
static gguf_file *timed_open(const struct bytes *b, const char *name, int *rc, gguf_error *err)
{
    gguf_file *f = NULL;
    double t0 = now();
    *rc = gguf_open_memory(&f, b->p, b->n, name, err);
    fprintf(stderr, "%s (%zu bytes): %s in %.3f s%s%s\n", name, b->n,
            *rc == GGUF_OK ? "opened" : "rejected", now() - t0, *rc ? ": " : "",
            *rc ? err->message : "");
    return f;
}

static void test_million(void)
{
    gguf_error err;
    int rc;
    double t0 = now();
    struct bytes b = many_keys();
    fprintf(stderr, "writing %u KVs took %.3f s\n", MILLION + 1, now() - t0);
    gguf_file *f = timed_open(&b, "keys.gguf", &rc, &err);
    CHECK(rc == GGUF_OK, "a million keys: %s", err.message);
    if (rc == GGUF_OK) {
        uint8_t v = 0;
        CHECK(gguf_kv_count(f) == MILLION + 1, "kv count %llu",
              (unsigned long long)gguf_kv_count(f));
        CHECK(gguf_kv_u8(f, "key.0765432", &v, NULL) == GGUF_OK && v == (uint8_t)765432,
              "key.0765432 = %u", v);
        memcpy(b.p + gguf_kv_at(f, MILLION)->offset + 8, "key.0000123", 11);
        gguf_close(f);
        f = timed_open(&b, "dupkeys.gguf", &rc, &err);
        CHECK(rc == GGUF_E_FORMAT && f == NULL, "duplicate among a million keys: status %d", rc);
        CHECK(strstr(err.message, "key.0000123") && strstr(err.message, "dupkeys.gguf"),
              "message does not name the duplicate key and file: %s", err.message);
    }
    gguf_close(f);
    free(b.p);

    t0 = now();
    b = many_tensors();
    fprintf(stderr, "writing %u tensors took %.3f s\n", MILLION + 1, now() - t0);
    f = timed_open(&b, "tensors.gguf", &rc, &err);
    CHECK(rc == GGUF_OK, "a million tensors: %s", err.message);
    if (rc == GGUF_OK) {
        CHECK(gguf_tensor_count(f) == MILLION + 1, "tensor count %llu",
              (unsigned long long)gguf_tensor_count(f));
        const gguf_tensor *t = gguf_tensor_find(f, "t.0999999");
        CHECK(t && gguf_tensor_index(f, t) == MILLION - 1, "t.0999999 not found at its index");
        memcpy(b.p + gguf_tensor_at(f, MILLION)->info_offset + 8, "t.0004567", 9);
        gguf_close(f);
        f = timed_open(&b, "duptensors.gguf", &rc, &err);
        CHECK(rc == GGUF_E_FORMAT && f == NULL, "duplicate among a million tensors: status %d",
              rc);
        CHECK(strstr(err.message, "t.0004567") && strstr(err.message, "duptensors.gguf"),
              "message does not name the duplicate tensor and file: %s", err.message);
    }
    gguf_close(f);
    free(b.p);
}

int main(void)
{
    signal(SIGPIPE, SIG_IGN);   /* a reader that stops early must not kill the writer side */
    double t0 = now();
    test_prefixes(3, GGUF_LITTLE_ENDIAN);
    test_prefixes(3, GGUF_BIG_ENDIAN);
    test_prefixes(1, GGUF_LITTLE_ENDIAN);
    double t1 = now();
    test_flips();
    double t2 = now();
    test_million();
    double t3 = now();
    fprintf(stderr, "time: prefixes %.2f s, flips %.2f s, million %.2f s\n", t1 - t0, t2 - t1,
            t3 - t2);
    tu_finish();
    return 0;
}
