/*
 * test-hash.c -- libgguf's hashing API: known answers for each algorithm
 * (values printed by xxhsum -H3/-H2/-H1/-H0 and Python's zlib.crc32,
 * hashlib.sha256 and hashlib.sha1 for the same bytes; SHA-256 and SHA-1 of
 * "" and "abc" are FIPS 180's own examples), incremental hashing split at every kind of boundary equal
 * to one shot, hex round trips, and gguf_hash_file() over a file with
 * padding between its tensors and an empty one, mapped, in memory and as a
 * stream: every digest equals the one-shot digest of the same byte range,
 * the tensor data's that of the tensors one after the other.
 * GGUF_OPEN_STOP_AT_TRAILING: a short tail is read and counted exactly, a
 * longer or endless one stops the reading GGUF_TRAILING_READ_MAX bytes past
 * the data section, for gguf_hash_file() and gguf_read_to_end() alike.
 */
#include <config.h>

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "gguf/gguf.h"
#include "tests/testutil.h"

struct kat {
    const char *text;           /* NULL: the 1,000,000-byte pattern */
    const char *hex[GGUF_HASH_COUNT];
};

static const struct kat kats[] = {
    { "", { "2d06800538d394c2", "99aa06d3014798d86001c324468d497f", "ef46db3751d8e999",
            "00000000", "02cc5d05",
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
            "da39a3ee5e6b4b0d3255bfef95601890afd80709" } },
    { "abc", { "78af5f94892f3950", "06b05ab6733a618578af5f94892f3950", "44bc2cf5ad770999",
               "352441c2", "32d153ff",
               "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad",
               "a9993e364706816aba3e25717850c26c9cd0d89d" } },
    { "The quick brown fox jumps over the lazy dog",
      { "ce7d19a5418fb365", "ddd650205ca3e7fa24a1cc2e3a8a7651", "0b242d361fda71bc",
        "414fa339", "e85ea4de",
        "d7a8fbb307d7809469ca9abcb0082e4f8d5651e46d3cdb762d02d0bf37c9e592",
        "2fd4e1c67a2d28fced849ee1bb76e7391b93eb12" } },
    { NULL, { "0a8b9cfcd629bb97", "0e8e6fe1a1638b080a8b9cfcd629bb97", "b978085cc8e7010e",
              "12ad5d03", "b33e7df6",
              "1dc6622e2b0d38fe9e646130ff9014746cfa84d65e17c919e2834277d318c78a",
              "7fda63b11f96ee5ed7d49943c7146b22ee404ea3" } },
};

#define PATTERN_LEN 1000000

static unsigned char *pattern(void)
{
    unsigned char *p = malloc(PATTERN_LEN);
    if (!p) HARD_ERROR("out of memory");
    for (size_t i = 0; i < PATTERN_LEN; i++) p[i] = (unsigned char)(i * 7 + 3);
    return p;
}

static void test_names(void)
{
    static const char *const names[] = { "xxh3", "xxh128", "xxh64", "crc32", "xxh32", "sha256", "sha1" };
    static const uint32_t sizes[] = { 8, 16, 8, 4, 4, 32, 20 };
    for (uint32_t a = 0; a < GGUF_HASH_COUNT; a++) {
        uint32_t got = 99;
        CHECK(strcmp(gguf_hash_name(a), names[a]) == 0, "name of %u", a);
        CHECK(gguf_hash_size(a) == sizes[a], "size of %u", a);
        CHECK(gguf_hash_parse(names[a], &got) == GGUF_OK && got == a, "parse %s", names[a]);
    }
    uint32_t got;
    CHECK(gguf_hash_parse("XXH128", &got) == GGUF_OK && got == GGUF_HASH_XXH128, "any case");
    CHECK(gguf_hash_parse("sha512", &got) == GGUF_E_NOT_FOUND, "unknown name");
    CHECK(gguf_hash_parse(NULL, &got) == GGUF_E_INVALID, "NULL name");
    CHECK(gguf_hash_name(GGUF_HASH_COUNT) == NULL, "unknown id has no name");
    CHECK(gguf_hash_size(GGUF_HASH_COUNT) == 0, "unknown id has no size");
    CHECK(gguf_hasher_new(GGUF_HASH_COUNT) == NULL, "no hasher for an unknown id");
    gguf_hasher_free(NULL);
}

static void test_kats(void)
{
    unsigned char *pat = pattern();
    for (size_t k = 0; k < sizeof kats / sizeof kats[0]; k++) {
        const unsigned char *p = kats[k].text ? (const unsigned char *)kats[k].text : pat;
        size_t n = kats[k].text ? strlen(kats[k].text) : PATTERN_LEN;
        for (uint32_t a = 0; a < GGUF_HASH_COUNT; a++) {
            gguf_digest d, want;
            char hex[GGUF_DIGEST_HEX_MAX];
            CHECK(gguf_hash_buffer(a, p, n, &d) == GGUF_OK, "hash");
            CHECK(strcmp(gguf_digest_hex(&d, hex), kats[k].hex[a]) == 0,
                  "%s of vector %zu: %s, expected %s", gguf_hash_name(a), k, hex, kats[k].hex[a]);
            CHECK(gguf_digest_parse(a, kats[k].hex[a], strlen(kats[k].hex[a]), &want) == GGUF_OK &&
                  gguf_digest_equal(&d, &want), "parse back %s", kats[k].hex[a]);
            /* Incremental, split at odd places: the same digest. */
            gguf_hasher *h = gguf_hasher_new(a);
            REQUIRE(h, "hasher");
            gguf_hasher_update(h, "garbage", 7);
            gguf_hasher_reset(h);
            size_t step = 1, done = 0;
            while (done < n) {
                size_t m = n - done < step ? n - done : step;
                gguf_hasher_update(h, p + done, m);
                done += m;
                step = step * 3 + 1;
            }
            gguf_hasher_update(h, NULL, 0);
            gguf_digest inc;
            gguf_hasher_digest(h, &inc);
            CHECK(gguf_digest_equal(&d, &inc), "%s of vector %zu incrementally",
                  gguf_hash_name(a), k);
            gguf_hasher_digest(h, &inc);  /* a second digest: still the same */
            CHECK(gguf_digest_equal(&d, &inc), "digest twice");
            gguf_hasher_free(h);
        }
    }
    free(pat);
    gguf_digest d;
    CHECK(gguf_hash_buffer(GGUF_HASH_XXH3, "abc", 3, &d) == GGUF_OK &&
          gguf_digest_u64(&d) == UINT64_C(0x78af5f94892f3950), "XXH3 as an integer");
    CHECK(gguf_hash_buffer(GGUF_HASH_CRC32, "abc", 3, &d) == GGUF_OK && gguf_digest_u64(&d) == 0,
          "no integer for a 4-byte digest");
    CHECK(gguf_hash_buffer(GGUF_HASH_COUNT, "abc", 3, &d) == GGUF_E_INVALID, "unknown algorithm");
    CHECK(gguf_digest_parse(GGUF_HASH_XXH3, "78AF5F94892F3950", 16, &d) == GGUF_OK &&
          gguf_digest_u64(&d) == UINT64_C(0x78af5f94892f3950), "upper-case hex");
    CHECK(gguf_digest_parse(GGUF_HASH_XXH3, "78af5f94892f395", 15, &d) == GGUF_E_INVALID,
          "short hex");
    CHECK(gguf_digest_parse(GGUF_HASH_XXH3, "78af5f94892f395g", 16, &d) == GGUF_E_INVALID,
          "bad digit");
    CHECK(gguf_digest_parse(GGUF_HASH_CRC32, "78af5f94892f3950", 16, &d) == GGUF_E_INVALID,
          "wrong length for crc32");
    gguf_digest a, b;
    gguf_hash_buffer(GGUF_HASH_XXH3, "", 0, &a);
    gguf_hash_buffer(GGUF_HASH_XXH64, "", 0, &b);
    CHECK(!gguf_digest_equal(&a, &b), "different algorithms never equal");
}

/* A file with alignment 64, tensors of odd sizes (so padding between
 * them), an empty tensor and a large one, written to `path`. */
static void write_file(const char *path)
{
    gguf_error err;
    gguf_writer *w = gguf_writer_new();
    if (!w) HARD_ERROR("out of memory");
    /* d is larger than the reader's stream buffer, so that a stream's
     * bytes are really gone once passed. */
    const uint64_t a[1] = { 37 }, b[2] = { 64, 3 }, c[2] = { 0, 5 }, d[1] = { 200000 };
    if (gguf_writer_add_str(w, "general.architecture", "test", 4, &err) ||
        gguf_writer_add_u32(w, "general.alignment", 64, &err) ||
        gguf_writer_add_tensor(w, "a", GGUF_T_I8, 1, a, &err) ||
        gguf_writer_add_tensor(w, "b", GGUF_T_Q8_0, 2, b, &err) ||
        gguf_writer_add_tensor(w, "empty", GGUF_T_F32, 2, c, &err) ||
        gguf_writer_add_tensor(w, "d", GGUF_T_F16, 1, d, &err) ||
        gguf_writer_open(w, path, &err))
        HARD_ERROR("writer: %s", err.message);
    unsigned char buf[4096];
    for (size_t i = 0; i < sizeof buf; i++) buf[i] = (unsigned char)(i * 31 + 1);
    size_t total = 37 + 2 * 34 * 3 + 400000;
    while (total) {
        size_t k = total < sizeof buf ? total : sizeof buf;
        if (gguf_writer_write(w, buf, k, &err)) HARD_ERROR("write: %s", err.message);
        total -= k;
    }
    if (gguf_writer_finish(w, &err)) HARD_ERROR("finish: %s", err.message);
    gguf_writer_free(w);
}

static unsigned char *slurp(const char *path, size_t *n)
{
    FILE *fp = fopen(path, "rb");
    if (!fp) HARD_ERROR("%s", path);
    fseek(fp, 0, SEEK_END);
    long len = ftell(fp);
    fseek(fp, 0, SEEK_SET);
    unsigned char *p = malloc((size_t)len + 1);
    if (!p || fread(p, 1, (size_t)len, fp) != (size_t)len) HARD_ERROR("read %s", path);
    fclose(fp);
    *n = (size_t)len;
    return p;
}

static int calls;
static uint64_t last_done, last_total;
static void progress(void *ctx, uint64_t done, uint64_t total)
{
    (void)ctx;
    calls++;
    last_done = done;
    last_total = total;
}

/* Hashes f with every algorithm and compares with one-shot digests of the
 * byte ranges of `bytes`. */
static void check_file(gguf_file *f, const unsigned char *bytes, size_t n, const char *mode,
                       uint32_t algo)
{
    uint64_t nt = gguf_tensor_count(f);
    gguf_digest whole, meta, data, t[8], want;
    gguf_error err;
    calls = 0;
    int rc = gguf_hash_file(f, algo, &whole, &meta, &data, t, progress, NULL, &err);
    CHECK(rc == GGUF_OK, "%s %s: %s", mode, gguf_hash_name(algo), rc ? err.message : "");
    if (rc) return;
    gguf_hash_buffer(algo, bytes, n, &want);
    CHECK(gguf_digest_equal(&whole, &want), "%s %s: whole file", mode, gguf_hash_name(algo));
    gguf_hash_buffer(algo, bytes, (size_t)gguf_header_size(f), &want);
    CHECK(gguf_digest_equal(&meta, &want), "%s %s: metadata", mode, gguf_hash_name(algo));
    for (uint64_t i = 0; i < nt; i++) {
        const gguf_tensor *tt = gguf_tensor_at(f, i);
        gguf_hash_buffer(algo, bytes + tt->file_offset, (size_t)tt->size, &want);
        CHECK(gguf_digest_equal(&t[i], &want), "%s %s: tensor %llu", mode, gguf_hash_name(algo),
              (unsigned long long)i);
    }
    /* the tensor data: every tensor's bytes in directory order */
    gguf_hasher *h = gguf_hasher_new(algo);
    REQUIRE(h != NULL, "hasher");
    for (uint64_t i = 0; i < nt; i++) {
        const gguf_tensor *tt = gguf_tensor_at(f, i);
        gguf_hasher_update(h, bytes + tt->file_offset, (size_t)tt->size);
    }
    gguf_hasher_digest(h, &want);
    gguf_hasher_free(h);
    CHECK(gguf_digest_equal(&data, &want), "%s %s: tensor data", mode, gguf_hash_name(algo));
    CHECK(calls >= 1 && last_done == n, "%s: progress reaches the end (%llu of %zu)", mode,
          (unsigned long long)last_done, n);
    CHECK(gguf_file_size(f) == n, "%s: size known after hashing", mode);
    (void)last_total;
}

static void test_file(void)
{
    char path[] = "/tmp/test-hash.XXXXXX";
    int fd = mkstemp(path);
    if (fd < 0) HARD_ERROR("mkstemp");
    close(fd);
    write_file(path);
    size_t n;
    unsigned char *bytes = slurp(path, &n);
    gguf_error err;
    for (uint32_t a = 0; a < GGUF_HASH_COUNT; a++) {
        gguf_file *f;
        REQUIRE(gguf_open(&f, path, NULL, 0, &err) == GGUF_OK, "open: %s", err.message);
        CHECK(gguf_input_mode(f) == GGUF_INPUT_MAPPED, "mapped");
        check_file(f, bytes, n, "mapped", a);
        check_file(f, bytes, n, "mapped, again", a);
        gguf_close(f);
        REQUIRE(gguf_open_memory(&f, bytes, n, "mem", &err) == GGUF_OK, "memory: %s", err.message);
        check_file(f, bytes, n, "memory", a);
        gguf_close(f);
        unsigned fl = GGUF_OPEN_NO_MMAP | GGUF_OPEN_SEQUENTIAL;
        REQUIRE(gguf_open(&f, path, NULL, fl, &err) == GGUF_OK, "stream: %s", err.message);
        CHECK(gguf_input_mode(f) == GGUF_INPUT_STREAM, "stream");
        check_file(f, bytes, n, "stream", a);
        gguf_digest w;
        CHECK(gguf_hash_file(f, a, &w, NULL, NULL, NULL, NULL, NULL, &err) == GGUF_E_INVALID,
              "a stream hashed twice");
        gguf_close(f);
    }
    /* Only what is asked for; a stream opened without GGUF_OPEN_SEQUENTIAL. */
    gguf_file *f;
    gguf_digest w, want;
    REQUIRE(gguf_open(&f, path, NULL, 0, &err) == GGUF_OK, "open");
    CHECK(gguf_hash_file(f, GGUF_HASH_XXH3, &w, NULL, NULL, NULL, NULL, NULL, &err) == GGUF_OK,
          "whole only");
    gguf_hash_buffer(GGUF_HASH_XXH3, bytes, n, &want);
    CHECK(gguf_digest_equal(&w, &want), "whole only: value");
    CHECK(gguf_hash_file(f, GGUF_HASH_COUNT, &w, NULL, NULL, NULL, NULL, NULL, &err) == GGUF_E_INVALID,
          "unknown algorithm");
    gguf_close(f);
    CHECK(gguf_hash_file(NULL, GGUF_HASH_XXH3, &w, NULL, NULL, NULL, NULL, NULL, &err) == GGUF_E_INVALID,
          "NULL file");
    REQUIRE(gguf_open(&f, path, NULL, GGUF_OPEN_NO_MMAP, &err) == GGUF_OK, "drained stream");
    CHECK(gguf_hash_file(f, GGUF_HASH_XXH3, &w, NULL, NULL, NULL, NULL, NULL, &err) == GGUF_E_INVALID,
          "a stream read at open: its data is gone");
    gguf_close(f);

    /* A stream that ends inside a tensor: the tensor is named. */
    FILE *fp = fopen(path, "wb");
    if (!fp || fwrite(bytes, 1, n - 15000, fp) != n - 15000 || fclose(fp)) HARD_ERROR("rewrite");
    REQUIRE(gguf_open(&f, path, NULL, GGUF_OPEN_NO_MMAP | GGUF_OPEN_SEQUENTIAL, &err) == GGUF_OK,
            "open the cut stream");
    err.message[0] = '\0';
    CHECK(gguf_hash_file(f, GGUF_HASH_XXH3, &w, NULL, NULL, NULL, NULL, NULL, &err) == GGUF_E_FORMAT,
          "cut stream");
    CHECK(strstr(err.message, "tensor 3 'd': data ends at byte") != NULL, "names it: %s",
          err.message);
    gguf_close(f);
    unlink(path);
    free(bytes);
}

/* A pipe that gives the n bytes at p, then `tail` zero bytes (SIZE_MAX:
 * zeros without end), from a child process.  Returns the read end. */
static int feed_pipe(const unsigned char *p, size_t n, size_t tail, pid_t *child)
{
    int fds[2];
    if (pipe(fds) < 0) HARD_ERROR("pipe");
    pid_t pid = fork();
    if (pid < 0) HARD_ERROR("fork");
    if (pid == 0) {
        static const unsigned char zeros[65536];
        close(fds[0]);
        for (size_t off = 0; off < n;) {
            ssize_t w = write(fds[1], p + off, n - off);
            if (w <= 0) _exit(1);
            off += (size_t)w;
        }
        while (tail > 0) {
            size_t k = tail < sizeof zeros ? tail : sizeof zeros;
            ssize_t w = write(fds[1], zeros, k);
            if (w <= 0) _exit(0);       /* the reader stopped */
            if (tail != SIZE_MAX) tail -= (size_t)w;
        }
        _exit(0);
    }
    close(fds[1]);
    *child = pid;
    return fds[0];
}

/* The file followed by `tail` zero bytes through a pipe, opened with
 * GGUF_OPEN_STOP_AT_TRAILING; read by gguf_hash_file() or, with
 * to_end, gguf_read_to_end().  `stops`: whether the reading must stop
 * before the end. */
static void check_stop(const unsigned char *bytes, size_t n, size_t tail, int to_end, int stops)
{
    char what[96];
    snprintf(what, sizeof what, "%s, tail of %s%zu", to_end ? "read to end" : "hash",
             tail == SIZE_MAX ? "endless " : "", tail == SIZE_MAX ? 0 : tail);
    pid_t child;
    int fd = feed_pipe(bytes, n, tail, &child);
    gguf_file *f;
    gguf_error err;
    REQUIRE(gguf_open_fd(&f, fd, "(pipe)", GGUF_OPEN_SEQUENTIAL | GGUF_OPEN_STOP_AT_TRAILING,
                         &err) == GGUF_OK, "%s: open: %s", what, err.message);
    uint64_t nt = gguf_tensor_count(f);
    gguf_digest whole, t[8], want;
    int rc;
    if (to_end) {
        rc = gguf_read_to_end(f, &err);
    } else {
        rc = gguf_hash_file(f, GGUF_HASH_XXH3, &whole, NULL, NULL, t, NULL, NULL, &err);
    }
    CHECK(rc == GGUF_OK, "%s: %s", what, rc ? err.message : "");
    CHECK(gguf_stopped_at_trailing(f) == stops, "%s: stopped %d, expected %d", what,
          gguf_stopped_at_trailing(f), stops);
    if (!rc && !stops) {
        CHECK(gguf_file_size(f) == n + tail, "%s: size %llu, expected %zu", what,
              (unsigned long long)gguf_file_size(f), n + tail);
    }
    if (!rc && stops) {
        CHECK(gguf_file_size(f) > n + GGUF_TRAILING_READ_MAX, "%s: %llu bytes read", what,
              (unsigned long long)gguf_file_size(f));
    }
    if (!rc && !to_end) {
        for (uint64_t i = 0; i < nt; i++) {
            const gguf_tensor *tt = gguf_tensor_at(f, i);
            gguf_hash_buffer(GGUF_HASH_XXH3, bytes + tt->file_offset, (size_t)tt->size, &want);
            CHECK(gguf_digest_equal(&t[i], &want), "%s: tensor %llu", what, (unsigned long long)i);
        }
        if (!stops) {
            unsigned char *all = calloc(1, n + tail);
            if (!all) HARD_ERROR("out of memory");
            memcpy(all, bytes, n);
            gguf_hash_buffer(GGUF_HASH_XXH3, all, n + tail, &want);
            CHECK(gguf_digest_equal(&whole, &want), "%s: the whole input hashed", what);
            free(all);
        }
    }
    gguf_close(f);
    if (tail == SIZE_MAX) kill(child, SIGKILL);
    waitpid(child, NULL, 0);
}

static void test_stop(void)
{
    char path[] = "/tmp/test-hash.XXXXXX";
    int fd = mkstemp(path);
    if (fd < 0) HARD_ERROR("mkstemp");
    close(fd);
    write_file(path);
    size_t n;
    unsigned char *bytes = slurp(path, &n);
    for (int to_end = 0; to_end < 2; to_end++) {
        check_stop(bytes, n, 0, to_end, 0);
        check_stop(bytes, n, 10, to_end, 0);
        check_stop(bytes, n, GGUF_TRAILING_READ_MAX, to_end, 0);
        check_stop(bytes, n, GGUF_TRAILING_READ_MAX + 1, to_end, 1);
        check_stop(bytes, n, SIZE_MAX, to_end, 1);
    }
    /* A mapped file's size is known: the flag changes nothing. */
    FILE *fp = fopen(path, "ab");
    static const unsigned char zeros[GGUF_TRAILING_READ_MAX + 100];
    if (!fp || fwrite(zeros, 1, sizeof zeros, fp) != sizeof zeros || fclose(fp))
        HARD_ERROR("append to %s", path);
    gguf_file *f;
    gguf_error err;
    REQUIRE(gguf_open(&f, path, NULL, GGUF_OPEN_SEQUENTIAL | GGUF_OPEN_STOP_AT_TRAILING, &err) ==
                GGUF_OK, "mapped: %s", err.message);
    gguf_digest w;
    CHECK(gguf_hash_file(f, GGUF_HASH_XXH3, &w, NULL, NULL, NULL, NULL, NULL, &err) == GGUF_OK &&
              !gguf_stopped_at_trailing(f) && gguf_file_size(f) == n + sizeof zeros,
          "mapped: read whole");
    gguf_close(f);
    unlink(path);
    free(bytes);
}

int main(void)
{
    signal(SIGPIPE, SIG_IGN);   /* the feeding children write on */
    alarm(120);                 /* an endless input that is never left fails, not hangs */
    test_names();
    test_kats();
    test_file();
    test_stop();
    tu_finish();
}
