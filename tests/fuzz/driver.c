/*
 * driver.c -- main() for a harness of tests/fuzz in builds without
 * libFuzzer: runs LLVMFuzzerTestOneInput() once on each FILE, and on each
 * file of each DIRECTORY, as libFuzzer does with the same arguments:
 *
 *     fuzz-read FILE|DIRECTORY...
 *
 * Each input is given in a buffer of exactly its size, so that in a
 * sanitizer build a read past its end is caught.  A finding aborts (the
 * harness's FUZZ_ASSERT, or a sanitizer); exit 0 means every input ran;
 * 2 an input could not be read.
 */
#include <config.h>

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "tests/fuzz/fuzz.h"

static unsigned long runs;

/* Runs the harness on the file at path.  Returns 0, or 2 after saying why. */
static int run_file(const char *path)
{
    FILE *fp = fopen(path, "rb");
    if (!fp) {
        fprintf(stderr, "fuzz driver: %s: %s\n", path, strerror(errno));
        return 2;
    }
    size_t cap = 4096, n = 0, k;
    uint8_t *buf = malloc(cap);
    while (buf && (k = fread(buf + n, 1, cap - n, fp)) > 0) {
        n += k;
        if (n == cap) {
            uint8_t *nb = realloc(buf, cap *= 2);
            if (!nb) free(buf);
            buf = nb;
        }
    }
    int bad = !buf || ferror(fp);
    fclose(fp);
    if (bad) {
        fprintf(stderr, "fuzz driver: %s: cannot read it\n", path);
        free(buf);
        return 2;
    }
    /* Exactly n bytes, so that nothing past the input is addressable. */
    uint8_t *exact = malloc(n ? n : 1);
    if (!exact) FUZZ_TROUBLE("out of memory");
    memcpy(exact, buf, n);
    free(buf);
    LLVMFuzzerTestOneInput(exact, n);
    free(exact);
    runs++;
    return 0;
}

static int by_name(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Runs the harness on every regular file in dir, in name order. */
static int run_dir(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d) {
        fprintf(stderr, "fuzz driver: %s: %s\n", dir, strerror(errno));
        return 2;
    }
    char **names = NULL;
    size_t n = 0, cap = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.') continue;
        if (n == cap) {
            char **nn = realloc(names, (cap = cap ? cap * 2 : 64) * sizeof *nn);
            if (!nn) FUZZ_TROUBLE("out of memory");
            names = nn;
        }
        size_t len = strlen(dir) + strlen(e->d_name) + 2;
        if (!(names[n] = malloc(len))) FUZZ_TROUBLE("out of memory");
        snprintf(names[n++], len, "%s/%s", dir, e->d_name);
    }
    closedir(d);
    qsort(names, n, sizeof *names, by_name);
    int status = 0;
    for (size_t i = 0; i < n; i++) {
        struct stat st;
        if (stat(names[i], &st) == 0 && S_ISREG(st.st_mode) && run_file(names[i])) status = 2;
        free(names[i]);
    }
    free(names);
    return status;
}

int main(int argc, char **argv)
{
    int status = 0;
    if (argc < 2) {
        fprintf(stderr, "usage: %s FILE|DIRECTORY...\n", argv[0]);
        return 2;
    }
    for (int i = 1; i < argc; i++) {
        struct stat st;
        if (argv[i][0] == '-') continue;    /* libFuzzer options: not for this driver */
        if (stat(argv[i], &st) == 0 && S_ISDIR(st.st_mode)) {
            if (run_dir(argv[i])) status = 2;
        } else if (run_file(argv[i])) {
            status = 2;
        }
    }
    fprintf(stderr, "%s: %lu inputs run\n", argv[0], runs);
    return status;
}
