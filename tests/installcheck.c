/*
 * installcheck.c -- a program built against the INSTALLED libgguf by
 * `make installcheck` (tests/installcheck.sh), once linked to the shared
 * library and once fully static, with nothing but the flags pkg-config
 * gives for the installed libgguf.pc.  It touches each of the library's
 * dependencies, so that a flag missing from the .pc file fails the link:
 * gguf_quantize_rows() (libm, the OpenMP runtime: two threads), a
 * gguf_writer round trip through gguf_open()/gguf_close() (the reader),
 * the XXH3 of the tensor (libxxhash) and a gzip copy of the file read
 * back (zlib, inside the library).  The program itself uses nothing but
 * libgguf and libc, so that the shared link needs no private library.
 *
 *   installcheck DIR   writes its files into DIR; exits 0 when all is
 *                      well, 1 with a message otherwise.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <gguf/gguf.h>
#include <gguf/quant.h>

#define ROWS 4
#define COLS 256

static int fails;

static void fail(const char *what, const char *detail)
{
    fprintf(stderr, "installcheck: %s%s%s\n", what, detail ? ": " : "", detail ? detail : "");
    fails++;
}

/* The CRC-32 of gzip (RFC 1952), bit by bit: a few KiB are checked. */
static uint32_t crc32_of(const unsigned char *p, size_t n)
{
    uint32_t c = 0xffffffffu;
    for (size_t i = 0; i < n; i++) {
        c ^= p[i];
        for (int k = 0; k < 8; k++) c = c & 1 ? (c >> 1) ^ 0xedb88320u : c >> 1;
    }
    return ~c;
}

static void put_le32(unsigned char *p, uint32_t v)
{
    for (int i = 0; i < 4; i++) p[i] = (unsigned char)(v >> (8 * i));
}

/* Writes the n bytes at p to path as a gzip file of stored (uncompressed)
 * deflate blocks, which needs no compressor.  Returns 0, or -1 (reported). */
static int write_gzip(const char *path, const unsigned char *p, size_t n)
{
    static const unsigned char head[10] = {0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 3};
    FILE *fp = fopen(path, "wb");
    int ok = fp && fwrite(head, 1, sizeof head, fp) == sizeof head;
    size_t done = 0;
    do {
        size_t k = n - done < 65535 ? n - done : 65535;
        unsigned char b[5] = {done + k == n, (unsigned char)k, (unsigned char)(k >> 8),
                              (unsigned char)~k, (unsigned char)(~k >> 8)};
        ok = ok && fwrite(b, 1, 5, fp) == 5 && fwrite(p + done, 1, k, fp) == k;
        done += k;
    } while (ok && done < n);
    unsigned char tail[8];
    put_le32(tail, crc32_of(p, n));
    put_le32(tail + 4, (uint32_t)n);
    ok = ok && fwrite(tail, 1, 8, fp) == 8;
    if (fp && fclose(fp) != 0) ok = 0;
    if (!ok) fail(path, "cannot write");
    return ok ? 0 : -1;
}

/* Reads path whole into a malloc'ed buffer; *n gets its size.  NULL on
 * failure (reported). */
static unsigned char *slurp(const char *path, size_t *n)
{
    FILE *fp = fopen(path, "rb");
    unsigned char *buf = NULL;
    long size = -1;
    if (fp && fseek(fp, 0, SEEK_END) == 0 && (size = ftell(fp)) >= 0 && fseek(fp, 0, SEEK_SET) == 0 &&
        (buf = malloc(size ? (size_t)size : 1)) && fread(buf, 1, (size_t)size, fp) == (size_t)size) {
        fclose(fp);
        *n = (size_t)size;
        return buf;
    }
    if (fp) fclose(fp);
    free(buf);
    fail(path, "cannot read");
    return NULL;
}

/* Writes a one-tensor GGUF file (the Q8_0 rows q) to path.  Returns 0. */
static int write_model(const char *path, const void *q, size_t n)
{
    gguf_error err = {0};
    const uint64_t ne[2] = {COLS, ROWS};
    gguf_writer *w = gguf_writer_new();
    if (!w) {
        fail("gguf_writer_new", "out of memory");
        return -1;
    }
    int rc = gguf_writer_add_str(w, "general.name", "installcheck", 12, &err);
    if (!rc) rc = gguf_writer_add_tensor(w, "w", GGUF_T_Q8_0, 2, ne, &err);
    if (!rc) rc = gguf_writer_open(w, path, &err);
    if (!rc) rc = gguf_writer_write(w, q, n, &err);
    if (!rc) rc = gguf_writer_finish(w, &err);
    gguf_writer_free(w);
    if (rc) fail("writing the model", err.message);
    return rc ? -1 : 0;
}

/* Opens path, which must be read in input mode `mode`, and checks what
 * write_model() put there. */
static void read_model(const char *path, int mode, const void *q, size_t n)
{
    gguf_error err = {0};
    gguf_file *f;
    if (gguf_open(&f, path, NULL, 0, &err) != GGUF_OK) {
        fail("gguf_open", err.message);
        return;
    }
    if (gguf_input_mode(f) != mode) fail(path, "not read in the expected input mode");
    gguf_str name;
    if (gguf_kv_str(f, "general.name", &name, &err) != GGUF_OK || name.len != 12 ||
        memcmp(name.ptr, "installcheck", 12) != 0)
        fail(path, "general.name is not read back");
    const gguf_tensor *t = gguf_tensor_find(f, "w");
    unsigned char *back = malloc(n);
    if (!t || t->size != n || !back)
        fail(path, "tensor 'w' is missing or has the wrong size");
    else if (gguf_read_data(f, t->file_offset, back, n, &err) != GGUF_OK)
        fail("gguf_read_data", err.message);
    else if (memcmp(back, q, n) != 0)
        fail(path, "tensor 'w' does not hold the bytes written");
    free(back);
    gguf_close(f);
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: installcheck DIR\n");
        return 1;
    }
    static float x[ROWS * COLS];
    for (int i = 0; i < ROWS * COLS; i++) x[i] = (float)((i * 37) % 101 - 50) / 16.0f;

    /* OpenMP and libm: two threads must give the row-by-row bytes. */
    size_t row = (size_t)gguf_row_bytes(GGUF_T_Q8_0, COLS), n = row * ROWS;
    unsigned char *q = malloc(n), *q1 = malloc(n);
    if (!q || !q1) {
        fail("out of memory", NULL);
        return 1;
    }
    if (gguf_quantize_rows(GGUF_T_Q8_0, x, q, ROWS, COLS, 2) != GGUF_OK)
        fail("gguf_quantize_rows", "failed");
    for (int r = 0; r < ROWS; r++)
        if (gguf_quantize_row(GGUF_T_Q8_0, x + r * COLS, q1 + r * row, COLS) != GGUF_OK)
            fail("gguf_quantize_row", "failed");
    if (memcmp(q, q1, n) != 0) fail("gguf_quantize_rows", "differs from gguf_quantize_row");

    /* The writer and the reader, through a mapped file. */
    char path[4096], gz[4200];
    snprintf(path, sizeof path, "%s/installcheck.gguf", argv[1]);
    if (write_model(path, q, n) == 0) read_model(path, GGUF_INPUT_MAPPED, q, n);

    /* xxHash: a digest of known length that is not all zero. */
    gguf_digest d;
    if (gguf_hash_buffer(GGUF_HASH_XXH3, q, n, &d) != GGUF_OK || d.size != 8 ||
        gguf_digest_u64(&d) == 0)
        fail("gguf_hash_buffer", "no XXH3 digest");

    /* zlib: the same file as gzip reads back the same (inflated by the
     * library as a stream). */
    snprintf(gz, sizeof gz, "%s.gz", path);
    size_t fsize;
    unsigned char *file = slurp(path, &fsize);
    if (file && write_gzip(gz, file, fsize) == 0) read_model(gz, GGUF_INPUT_GZIP, q, n);
    free(file);

    free(q);
    free(q1);
    if (fails) return 1;
    printf("libgguf %s: quantize_rows, writer, reader, xxh3 and gzip input work\n",
           gguf_version_string());
    return 0;
}
