/*
 * test-split.c -- split sets (gguf_split_*, gguf.h): sets written with the
 * library's writer as llama.cpp's gguf-split and the gguf Python package
 * write them, opened from each shard; hostile sets (a shard missing, one
 * too many, split.no out of range or claimed twice, split.count or
 * split.tensors.count that disagree, a tensor in two shards, keys of the
 * wrong type, a shard without its name) refused with a message naming the
 * file and the item; the shard names.
 */
#include <config.h>

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "gguf/gguf.h"
#include "tests/testutil.h"

static char dir[] = "/tmp/test-split.XXXXXX";

/* How a shard is to be written (a valid set when all are zero). */
struct shard_opts {
    int no_delta;        /* added to split.no */
    int count_delta;     /* added to split.count */
    int tensors_delta;   /* added to split.tensors.count */
    int no_as_string;    /* split.no as a string */
    int no_keys;         /* no split keys at all */
    const char *extra_tensor; /* one more tensor of this name */
};

static void wok(int rc, const gguf_error *err, const char *what)
{
    if (rc != GGUF_OK) HARD_ERROR("writer: %s: %s", what, err->message);
}

/* The value of element j of tensor t of shard s: a pattern to check. */
static float value(uint32_t s, uint32_t t, uint32_t j)
{
    return (float)(s * 1000 + t * 10 + j);
}

/* Writes shard `no` of `count` (3 tensors "s<no>.t<t>", 8 floats each; shard
 * 0 with the model's keys) at path. */
static void write_shard(const char *path, uint32_t no, uint32_t count, uint32_t total,
                        const struct shard_opts *o)
{
    gguf_error err;
    gguf_writer *w = gguf_writer_new();
    if (!w) HARD_ERROR("out of memory");
    if (no == 0) {
        wok(gguf_writer_add_str(w, "general.architecture", "qwen2", 5, &err), &err, "arch");
        wok(gguf_writer_add_str(w, "general.name", "split test", 10, &err), &err, "name");
    }
    if (!o->no_keys) {
        if (o->no_as_string)
            wok(gguf_writer_add_str(w, "split.no", "1", 1, &err), &err, "split.no");
        else
            wok(gguf_writer_add_u16(w, "split.no", (uint16_t)((int)no + o->no_delta), &err), &err, "split.no");
        wok(gguf_writer_add_u16(w, "split.count", (uint16_t)((int)count + o->count_delta), &err), &err,
            "split.count");
        wok(gguf_writer_add_i32(w, "split.tensors.count", (int32_t)total + o->tensors_delta, &err), &err,
            "split.tensors.count");
    }
    const uint64_t ne[1] = {8};
    char name[64];
    const uint32_t nt = o->extra_tensor ? 4 : 3;
    for (uint32_t t = 0; t < 3; t++) {
        snprintf(name, sizeof name, "s%u.t%u", no, t);
        wok(gguf_writer_add_tensor(w, name, GGUF_T_F32, 1, ne, &err), &err, "tensor");
    }
    if (o->extra_tensor) wok(gguf_writer_add_tensor(w, o->extra_tensor, GGUF_T_F32, 1, ne, &err), &err, "tensor");
    wok(gguf_writer_open(w, path, &err), &err, "open");
    for (uint32_t t = 0; t < nt; t++) {
        float v[8];
        for (uint32_t j = 0; j < 8; j++) v[j] = value(no, t, j);
        wok(gguf_writer_write(w, v, sizeof v, &err), &err, "write");
    }
    wok(gguf_writer_finish(w, &err), &err, "finish");
    gguf_writer_free(w);
}

static char *shard_path(const char *prefix, uint32_t no, uint32_t count)
{
    static char buf[4][512];
    static int k;
    char *p = buf[k++ % 4];
    if (gguf_split_name(p, 512, prefix, no, count) < 0) HARD_ERROR("gguf_split_name");
    return p;
}

/* A set of `count` shards named PREFIX-..., shard `bad` (or none: -1)
 * written with o. */
static void write_set(const char *prefix, uint32_t count, int bad, const struct shard_opts *o)
{
    static const struct shard_opts plain;
    for (uint32_t i = 0; i < count; i++)
        write_shard(shard_path(prefix, i, count), i, count, 3 * count, (int)i == bad ? o : &plain);
}

static void remove_set(const char *prefix, uint32_t count)
{
    for (uint32_t i = 0; i < count; i++) unlink(shard_path(prefix, i, count));
}

/* gguf_split_open() of path must fail with status and a message holding
 * each of the NULL-ended strings. */
static void expect_fail(const char *path, int status, const char *what, ...)
{
    gguf_error err;
    gguf_split *s = (gguf_split *)&err; /* must be set to NULL */
    const int rc = gguf_split_open(&s, path, 0, &err);
    CHECK(rc == status, "%s: status %d, expected %d (%s)", what, rc, status, rc ? err.message : "opened");
    CHECK(s == NULL, "%s: *out not NULL on failure", what);
    if (rc == GGUF_OK) {
        gguf_split_close(s);
        return;
    }
    va_list ap;
    va_start(ap, what);
    for (const char *p; (p = va_arg(ap, const char *)) != NULL;)
        CHECK(strstr(err.message, p) != NULL, "%s: message '%s' lacks '%s'", what, err.message, p);
    va_end(ap);
}

static void test_names(void)
{
    char buf[64];
    uint32_t no = 99, count = 99;
    CHECK(gguf_split_name(buf, sizeof buf, "dir/m", 0, 3) == 25 && strcmp(buf, "dir/m-00001-of-00003.gguf") == 0,
          "name: %s", buf);
    CHECK(gguf_split_name(buf, sizeof buf, "m", 65534, 65535) == 21 && strcmp(buf, "m-65535-of-65535.gguf") == 0,
          "name: %s", buf);
    CHECK(gguf_split_name(NULL, 0, "m", 1, 2) == 21, "length only");
    CHECK(gguf_split_name(buf, sizeof buf, "m", 3, 3) == -1, "no >= count");
    CHECK(gguf_split_name(buf, sizeof buf, "m", 0, 0) == -1, "count 0");
    CHECK(gguf_split_name(buf, sizeof buf, "m", 0, 65536) == -1, "count above 65535");
    CHECK(gguf_split_prefix("dir/m-00002-of-00003.gguf", &no, &count) == 5 && no == 1 && count == 3,
          "prefix: %u %u", no, count);
    CHECK(gguf_split_prefix("-00001-of-00001.gguf", NULL, NULL) == 0, "empty prefix");
    CHECK(gguf_split_prefix("m-00000-of-00003.gguf", NULL, NULL) == 0, "shard 0");
    CHECK(gguf_split_prefix("m-00004-of-00003.gguf", NULL, NULL) == 0, "shard past the count");
    CHECK(gguf_split_prefix("m-00001-of-00000.gguf", NULL, NULL) == 0, "count 0");
    CHECK(gguf_split_prefix("m-0001-of-00003.gguf", NULL, NULL) == 0, "four digits");
    CHECK(gguf_split_prefix("m-00001-of-00003.gguf.gz", NULL, NULL) == 0, "compressed");
    CHECK(gguf_split_prefix("m.gguf", NULL, NULL) == 0, "plain");
    CHECK(gguf_split_prefix(NULL, NULL, NULL) == 0, "NULL");
}

/* The valid set of 3, opened from each shard; a plain file. */
static void test_valid(void)
{
    char prefix[256];
    snprintf(prefix, sizeof prefix, "%s/m", dir);
    const struct shard_opts none = {0};
    write_set(prefix, 3, -1, &none);
    for (uint32_t from = 0; from < 3; from++) {
        gguf_error err;
        gguf_split *s = NULL;
        const char *p = shard_path(prefix, from, 3);
        int rc = gguf_split_open(&s, p, 0, &err);
        REQUIRE(rc == GGUF_OK, "open %s: %s", p, err.message);
        CHECK(gguf_split_count(s) == 3, "count %u", gguf_split_count(s));
        CHECK(gguf_split_tensor_count(s) == 9, "tensors %llu", (unsigned long long)gguf_split_tensor_count(s));
        for (uint32_t i = 0; i < 3; i++) {
            CHECK(strcmp(gguf_split_path(s, i), shard_path(prefix, i, 3)) == 0, "path %u: %s", i,
                  gguf_split_path(s, i));
            uint16_t no = 99;
            CHECK(gguf_kv_u16(gguf_split_shard(s, i), "split.no", &no, NULL) == GGUF_OK && no == i,
                  "shard %u has split.no %u", i, no);
        }
        CHECK(gguf_split_shard(s, 3) == NULL && gguf_split_path(s, 3) == NULL, "shard 3");
        CHECK(gguf_kv_find(gguf_split_shard(s, 0), "general.architecture") != NULL, "metadata in shard 0");
        for (uint64_t i = 0; i < 9; i++) {
            uint32_t sh = 99;
            const gguf_tensor *t = gguf_split_tensor_at(s, i, &sh);
            char want[32];
            snprintf(want, sizeof want, "s%u.t%u", (unsigned)(i / 3), (unsigned)(i % 3));
            REQUIRE(t != NULL, "tensor %llu", (unsigned long long)i);
            CHECK(sh == i / 3 && t->name.len == strlen(want) && memcmp(t->name.ptr, want, t->name.len) == 0,
                  "tensor %llu: shard %u", (unsigned long long)i, sh);
            uint32_t sh2 = 99;
            CHECK(gguf_split_tensor_find(s, want, &sh2) == t && sh2 == sh, "find %s", want);
            const float *v = t->data;
            CHECK(v && v[5] == value(sh, (uint32_t)(i % 3), 5), "data of %s", want);
        }
        CHECK(gguf_split_tensor_at(s, 9, NULL) == NULL, "tensor past the end");
        CHECK(gguf_split_tensor_find(s, "s0.t3", NULL) == NULL, "no such tensor");
        CHECK(gguf_split_tensor_find(s, "s2.t2", NULL) != NULL, "find without shard");
        gguf_split_close(s);
    }
    /* a plain file is a set of one */
    char plain[300];
    snprintf(plain, sizeof plain, "%s/plain.gguf", dir);
    const struct shard_opts nokeys = {.no_keys = 1};
    write_shard(plain, 0, 1, 3, &nokeys);
    gguf_error err;
    gguf_split *s = NULL;
    REQUIRE(gguf_split_open(&s, plain, 0, &err) == GGUF_OK, "plain: %s", err.message);
    CHECK(gguf_split_count(s) == 1 && gguf_split_tensor_count(s) == 3, "plain: %u shards",
          gguf_split_count(s));
    CHECK(gguf_split_tensor_find(s, "s0.t1", NULL) == gguf_tensor_find(gguf_split_shard(s, 0), "s0.t1"),
          "plain: find");
    gguf_split_close(s);
    /* a file with split.count 1 under any name */
    write_shard(plain, 0, 1, 3, &none);
    REQUIRE(gguf_split_open(&s, plain, GGUF_OPEN_NO_MMAP, &err) == GGUF_OK, "count 1: %s", err.message);
    CHECK(gguf_split_count(s) == 1, "count 1");
    gguf_split_close(s);
    unlink(plain);
    /* a shard read from standard input cannot lead to the others */
    int fd = open(shard_path(prefix, 1, 3), O_RDONLY);
    int saved = dup(0);
    if (fd < 0 || saved < 0 || dup2(fd, 0) < 0) HARD_ERROR("redirecting stdin");
    expect_fail("-", GGUF_E_FORMAT, "stdin", "shard 2 of a split set of 3", "-00002-of-00003.gguf", NULL);
    dup2(saved, 0);
    close(saved);
    close(fd);
    /* nor a shard under another name */
    char other[300];
    snprintf(other, sizeof other, "%s/renamed.gguf", dir);
    if (link(shard_path(prefix, 0, 3), other) != 0) HARD_ERROR("link");
    expect_fail(other, GGUF_E_FORMAT, "renamed", "renamed.gguf", "does not end in '-00001-of-00003.gguf'", NULL);
    unlink(other);
    /* a shard alone: adopted as a set of one, whatever its split keys */
    gguf_file *alone = NULL;
    REQUIRE(gguf_open(&alone, shard_path(prefix, 1, 3), NULL, 0, &err) == GGUF_OK, "open: %s", err.message);
    REQUIRE(gguf_split_adopt(&s, alone, &err) == GGUF_OK, "adopt: %s", err.message);
    CHECK(gguf_split_count(s) == 1 && gguf_split_shard(s, 0) == alone && gguf_split_tensor_count(s) == 3,
          "adopted: %u shards", gguf_split_count(s));
    CHECK(strcmp(gguf_split_path(s, 0), shard_path(prefix, 1, 3)) == 0, "adopted path");
    uint32_t sh = 9;
    CHECK(gguf_split_tensor_find(s, "s1.t2", &sh) == gguf_tensor_at(alone, 2) && sh == 0, "adopted find");
    CHECK(gguf_split_tensor_find(s, "s0.t0", NULL) == NULL, "adopted: the other shards' tensors");
    gguf_split_close(s);
    CHECK(gguf_split_adopt(&s, NULL, NULL) == GGUF_E_INVALID && s == NULL, "adopt NULL");
    /* gguf_split_open() arguments */
    CHECK(gguf_split_open(NULL, plain, 0, NULL) == GGUF_E_INVALID, "NULL out");
    CHECK(gguf_split_open(&s, NULL, 0, NULL) == GGUF_E_INVALID, "NULL path");
    CHECK(gguf_split_count(NULL) == 0 && gguf_split_tensor_count(NULL) == 0, "NULL set");
    gguf_split_close(NULL);
    remove_set(prefix, 3);
}

static void test_hostile(void)
{
    char prefix[256];
    snprintf(prefix, sizeof prefix, "%s/h", dir);
    /* a shard missing: from the first and from the last */
    const struct shard_opts none = {0};
    write_set(prefix, 3, -1, &none);
    unlink(shard_path(prefix, 1, 3));
    expect_fail(shard_path(prefix, 0, 3), GGUF_E_IO, "missing", "h-00002-of-00003.gguf",
                "shard 2 of 3 is missing", NULL);
    expect_fail(shard_path(prefix, 2, 3), GGUF_E_IO, "missing", "h-00002-of-00003.gguf", NULL);
    remove_set(prefix, 3);

    /* one shard too many, named as shard 4 of 3 */
    write_set(prefix, 3, -1, &none);
    char extra[300];
    snprintf(extra, sizeof extra, "%s-00004-of-00003.gguf", prefix);
    write_shard(extra, 0, 1, 3, &none);
    expect_fail(shard_path(prefix, 1, 3), GGUF_E_FORMAT, "extra", "h-00004-of-00003.gguf",
                "past the last of the set of 3", NULL);
    unlink(extra);
    /* a set of another count beside it is not ours */
    write_shard(shard_path(prefix, 0, 2), 0, 2, 6, &none);
    gguf_split *s = NULL;
    gguf_error err;
    CHECK(gguf_split_open(&s, shard_path(prefix, 0, 3), 0, &err) == GGUF_OK, "beside another set: %s",
          err.message);
    gguf_split_close(s);
    unlink(shard_path(prefix, 0, 2));
    remove_set(prefix, 3);

    /* split.no out of range */
    const struct shard_opts out_of_range = {.no_delta = 4};
    write_set(prefix, 3, 1, &out_of_range);
    expect_fail(shard_path(prefix, 0, 3), GGUF_E_FORMAT, "split.no 5", "h-00002-of-00003.gguf",
                "key split.no (at byte", "5, but split.count is 3", NULL);
    expect_fail(shard_path(prefix, 1, 3), GGUF_E_FORMAT, "split.no 5, opened", "split.no", NULL);
    remove_set(prefix, 3);

    /* two shards claiming one number */
    const struct shard_opts twice = {.no_delta = -1};
    write_set(prefix, 3, 2, &twice);
    expect_fail(shard_path(prefix, 0, 3), GGUF_E_FORMAT, "claimed twice", "h-00003-of-00003.gguf",
                "two files claim shard 2", NULL);
    /* opened from that shard: its name does not match its split.no */
    expect_fail(shard_path(prefix, 2, 3), GGUF_E_FORMAT, "claimed twice, opened", "does not end in", NULL);
    remove_set(prefix, 3);

    /* split.count that disagrees */
    const struct shard_opts count4 = {.count_delta = 1};
    write_set(prefix, 3, 2, &count4);
    expect_fail(shard_path(prefix, 0, 3), GGUF_E_FORMAT, "count", "h-00003-of-00003.gguf",
                "key split.count (at byte", "4, but shard 1", NULL);
    remove_set(prefix, 3);

    /* a shard without split keys */
    const struct shard_opts nokeys = {.no_keys = 1};
    write_set(prefix, 3, 1, &nokeys);
    expect_fail(shard_path(prefix, 0, 3), GGUF_E_FORMAT, "no keys", "h-00002-of-00003.gguf",
                "no key split.count", NULL);
    remove_set(prefix, 3);

    /* split.tensors.count that disagrees between shards, or with the sum */
    const struct shard_opts tensors = {.tensors_delta = 1};
    write_set(prefix, 3, 1, &tensors);
    expect_fail(shard_path(prefix, 0, 3), GGUF_E_FORMAT, "tensors.count", "h-00002-of-00003.gguf",
                "split.tensors.count: 10, but shard 1", NULL);
    remove_set(prefix, 3);
    for (uint32_t i = 0; i < 3; i++) write_shard(shard_path(prefix, i, 3), i, 3, 8, &none);
    expect_fail(shard_path(prefix, 1, 3), GGUF_E_FORMAT, "tensor sum", "h-00001-of-00003.gguf",
                "8, but the 3 shards hold 9 tensors", NULL);
    remove_set(prefix, 3);

    /* a tensor in two shards */
    const struct shard_opts dup = {.extra_tensor = "s0.t1"};
    for (uint32_t i = 0; i < 3; i++) write_shard(shard_path(prefix, i, 3), i, 3, 10, i == 2 ? &dup : &none);
    expect_fail(shard_path(prefix, 0, 3), GGUF_E_FORMAT, "duplicate tensor", "h-00003-of-00003.gguf",
                "tensor 's0.t1' (at byte", "also in shard 1 of 3", NULL);
    remove_set(prefix, 3);

    /* split.no of another type */
    const struct shard_opts str = {.no_as_string = 1};
    write_set(prefix, 3, 1, &str);
    expect_fail(shard_path(prefix, 0, 3), GGUF_E_FORMAT, "string split.no", "h-00002-of-00003.gguf",
                "key split.no (at byte", "STRING, not an integer", NULL);
    remove_set(prefix, 3);
}

int main(void)
{
    if (!mkdtemp(dir)) HARD_ERROR("mkdtemp: %s", strerror(errno));
    test_names();
    test_valid();
    test_hostile();
    if (rmdir(dir) != 0) CHECK(0, "files left in %s", dir);
    tu_finish();
}
