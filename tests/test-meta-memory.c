/* test-meta-memory.c -- the memory bound gguf.h states for parsing.
 *
 * For each metadata shape that costs the parser most per byte (many tiny
 * scalar pairs, many empty arrays, one array of empty arrays, one array of
 * empty strings, many empty tensors), writes a file of some 300,000
 * items and opens it in a fresh process, mapped and as a stream, reading
 * the peak resident size (VmHWM) before and after.  The growth must stay
 * within the bound gguf.h states: GGUF_PARSE_MEM_MAPPED (mapped) and
 * GGUF_PARSE_MEM_STREAM (stream) times the metadata size, the metadata
 * itself included.  Also checks the metadata size limit at both sides.
 *
 * Usage: test-meta-memory            (the test)
 *        test-meta-memory measure FILE stream|mapped   (one measurement,
 *        run by the test in a new process; prints "HEADER_BYTES GROWTH") */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "gguf/gguf.h"
#include "testutil.h"

#if defined(__SANITIZE_ADDRESS__)
#define UNDER_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define UNDER_ASAN 1
#endif
#endif

/* Items per file.  Two counts: one more than 3/4 of a power of two, where
 * a name set is at its emptiest (the most bytes a name), and one more than
 * a power of two, where a stream's growing tables have just doubled. */
static const uint32_t item_counts[] = {(3u << 17) + 1, (1u << 18) + 1};
static uint32_t N_ITEMS;

/* --- raw little-endian GGUF v3 bytes ---------------------------------- */

static FILE *out;

static void put(const void *p, size_t n)
{
    if (fwrite(p, 1, n, out) != n) HARD_ERROR("write: %s", strerror(errno));
}
static void u32(uint32_t v) { put(&v, 4); }
static void u64(uint64_t v) { put(&v, 8); }
static void u8(uint8_t v) { put(&v, 1); }

/* A unique 3-byte key or name for item i, never NUL: the shortest names
 * a file of this many items can have, so the most items a byte. */
static void name3(uint32_t i)
{
    unsigned char k[3];
    for (int j = 0; j < 3; j++, i /= 255) k[j] = (unsigned char)(1 + i % 255);
    u64(3);
    put(k, 3);
}

static void header(uint64_t n_tensors, uint64_t n_kv)
{
    put("GGUF", 4);
    u32(3);
    u64(n_tensors);
    u64(n_kv);
}

enum shape { SCALARS, EMPTY_ARRAYS, NESTED, STRINGS, TENSORS, N_SHAPES };
static const char *const shape_names[N_SHAPES] = {
    "tiny UINT8 pairs", "empty arrays", "an array of empty arrays", "an array of empty strings",
    "empty tensors"};

static void write_shape(const char *path, enum shape s)
{
    out = fopen(path, "wb");
    if (!out) HARD_ERROR("%s: %s", path, strerror(errno));
    switch (s) {
    case SCALARS:
        header(0, N_ITEMS);
        for (uint32_t i = 0; i < N_ITEMS; i++) {
            name3(i);
            u32(0); /* UINT8 */
            u8(1);
        }
        break;
    case EMPTY_ARRAYS:
        header(0, N_ITEMS);
        for (uint32_t i = 0; i < N_ITEMS; i++) {
            name3(i);
            u32(9); /* ARRAY of UINT8, empty */
            u32(0);
            u64(0);
        }
        break;
    case NESTED:
        header(0, 1);
        name3(0);
        u32(9); /* ARRAY of N_ITEMS ARRAYs, each of no UINT8 */
        u32(9);
        u64(N_ITEMS);
        for (uint32_t i = 0; i < N_ITEMS; i++) {
            u32(0);
            u64(0);
        }
        break;
    case STRINGS:
        header(0, 1);
        name3(0);
        u32(9); /* ARRAY of 4 N_ITEMS empty STRINGs */
        u32(8);
        u64(4ull * N_ITEMS);
        for (uint32_t i = 0; i < 4 * N_ITEMS; i++) u64(0);
        break;
    case TENSORS:
        header(N_ITEMS, 0);
        for (uint32_t i = 0; i < N_ITEMS; i++) {
            name3(i);
            u32(1); /* 1-D F32 of no element at offset 0 */
            u64(0);
            u32(0);
            u64(0);
        }
        break;
    default:
        break;
    }
    /* Pad to the alignment so the (empty) data section starts in the file,
     * then add twice as many bytes as the metadata (a hole): a stream's
     * buffer fills its whole capacity, up to twice the metadata, with
     * whatever follows it. */
    long pos = ftell(out);
    while (pos % 32) {
        u8(0);
        pos++;
    }
    if (fclose(out) != 0) HARD_ERROR("%s: %s", path, strerror(errno));
    if (truncate(path, (off_t)pos * 3) < 0) HARD_ERROR("truncate: %s", strerror(errno));
}

/* --- measuring, in a process of its own -------------------------------- */

/* Peak resident size of this process so far, in bytes (VmHWM). */
static uint64_t peak_rss(void)
{
    FILE *f = fopen("/proc/self/status", "r");
    if (!f) return 0;
    char line[256];
    uint64_t kb = 0;
    while (fgets(line, sizeof line, f))
        if (sscanf(line, "VmHWM: %llu kB", (unsigned long long *)&kb) == 1) break;
    fclose(f);
    return kb * 1024;
}

static int measure(const char *path, int stream)
{
    uint64_t before = peak_rss();
    gguf_file *f;
    gguf_error err;
    int rc = gguf_open(&f, path, NULL, stream ? GGUF_OPEN_NO_MMAP : 0, &err);
    if (rc != GGUF_OK) {
        fprintf(stderr, "%s\n", err.message);
        return 2;
    }
    uint64_t after = peak_rss();
    printf("%llu %llu\n", (unsigned long long)gguf_header_size(f),
           (unsigned long long)(after - before));
    gguf_close(f);
    return 0;
}

/* Runs "SELF measure PATH MODE" and reads its two numbers. */
static int run_measure(const char *self, const char *path, int stream, uint64_t *hdr,
                       uint64_t *growth)
{
    int fd[2];
    if (pipe(fd) < 0) HARD_ERROR("pipe: %s", strerror(errno));
    pid_t pid = fork();
    if (pid < 0) HARD_ERROR("fork: %s", strerror(errno));
    if (pid == 0) {
        dup2(fd[1], 1);
        close(fd[0]);
        close(fd[1]);
        execl(self, self, "measure", path, stream ? "stream" : "mapped", (char *)NULL);
        _exit(127);
    }
    close(fd[1]);
    char buf[128] = {0};
    ssize_t got = read(fd[0], buf, sizeof buf - 1);
    close(fd[0]);
    int st;
    waitpid(pid, &st, 0);
    unsigned long long h, g;
    if (got <= 0 || !WIFEXITED(st) || WEXITSTATUS(st) != 0 || sscanf(buf, "%llu %llu", &h, &g) != 2)
        return -1;
    *hdr = h;
    *growth = g;
    return 0;
}

/* --- the size limit ------------------------------------------------------ */

/* One string value of `len` bytes (zeros, from a sparse file). */
static void write_long_string(const char *path, uint64_t len)
{
    out = fopen(path, "wb");
    if (!out) HARD_ERROR("%s: %s", path, strerror(errno));
    header(0, 1);
    name3(0);
    u32(8);
    u64(len);
    if (fclose(out) != 0) HARD_ERROR("%s: %s", path, strerror(errno));
    if (truncate(path, (off_t)(47 + len + 64)) < 0) HARD_ERROR("truncate: %s", strerror(errno));
}

static void test_limit(const char *dir)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/long.gguf", dir);
    gguf_file *f;
    gguf_error err;
    /* Header 24 bytes, key 11, type 4, length 8, then the string: its
     * end exactly at the limit, then one byte past it. */
    uint64_t room = GGUF_METADATA_MAX - 24 - 11 - 4 - 8;
    write_long_string(path, room);
    int rc = gguf_open(&f, path, NULL, 0, &err);
    CHECK(rc == GGUF_OK, "metadata of exactly GGUF_METADATA_MAX bytes: %s", err.message);
    if (rc == GGUF_OK) {
        CHECK(gguf_header_size(f) == GGUF_METADATA_MAX, "header size %llu",
              (unsigned long long)gguf_header_size(f));
        gguf_close(f);
    }
    write_long_string(path, room + 1);
    rc = gguf_open(&f, path, NULL, 0, &err);
    CHECK(rc == GGUF_E_FORMAT && strstr(err.message, "MiB limit"),
          "metadata one byte over the limit: rc %d, %s", rc, rc ? err.message : "accepted");
    unlink(path);
}

int main(int argc, char **argv)
{
    if (argc == 4 && strcmp(argv[1], "measure") == 0)
        return measure(argv[2], strcmp(argv[3], "stream") == 0);
#ifdef UNDER_ASAN
    SKIP("AddressSanitizer's redzones and quarantine change what allocations cost");
#endif
    if (peak_rss() == 0) SKIP("no /proc/self/status VmHWM to read the peak resident size from");

    char dir[] = "/tmp/test-meta-memory.XXXXXX";
    if (!mkdtemp(dir)) HARD_ERROR("mkdtemp: %s", strerror(errno));
    char path[4096];
    snprintf(path, sizeof path, "%s/m.gguf", dir);
    char self[4096];
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    if (n <= 0) HARD_ERROR("readlink /proc/self/exe: %s", strerror(errno));
    self[n] = '\0';

    for (size_t c = 0; c < sizeof item_counts / sizeof item_counts[0]; c++)
    for (int s = 0; s < N_SHAPES; s++) {
        N_ITEMS = item_counts[c];
        write_shape(path, (enum shape)s);
        for (int stream = 0; stream <= 1; stream++) {
            uint64_t hdr, growth;
            REQUIRE(run_measure(self, path, stream, &hdr, &growth) == 0, "%s: %s open failed",
                    shape_names[s], stream ? "stream" : "mapped");
            double ratio = (double)growth / (double)hdr;
            double bound = stream ? GGUF_PARSE_MEM_STREAM : GGUF_PARSE_MEM_MAPPED;
            fprintf(stderr, "%7u %-26s %-6s metadata %9llu bytes, peak growth %10llu bytes: %.2fx (bound %.0fx)\n",
                    (unsigned)N_ITEMS, shape_names[s], stream ? "stream" : "mapped", (unsigned long long)hdr,
                    (unsigned long long)growth, ratio, bound);
            CHECK(ratio <= bound, "%s (%s): %.2fx the metadata, over the stated %.0fx",
                  shape_names[s], stream ? "stream" : "mapped", ratio, bound);
        }
    }
    unlink(path);
    test_limit(dir);
    rmdir(dir);
    tu_finish();
}
