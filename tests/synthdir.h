/* synthdir.h -- synthetic models for C tests: a temporary directory,
 * removed at exit, and tests/gguf-synth (found through $top_builddir) to
 * write models into it.  Include after testutil.h. */
#ifndef TESTS_SYNTHDIR_H
#define TESTS_SYNTHDIR_H

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char tu_tmpdir[256];
static char tu_synth[512];

static void tu_synth_cleanup(void)
{
    char cmd[600];
    if (!tu_tmpdir[0]) return;
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tu_tmpdir);
    if (system(cmd) != 0) fprintf(stderr, "cannot remove %s\n", tu_tmpdir);
}

/* Finds gguf-synth and makes the directory (named after the test). */
static inline void tu_synth_init(const char *test)
{
    const char *top = getenv("top_builddir");
    snprintf(tu_synth, sizeof tu_synth, "%s/tests/gguf-synth", top ? top : ".");
    if (access(tu_synth, X_OK) != 0)
        HARD_ERROR("%s: %s (build it with make check)", tu_synth, strerror(errno));
    const char *t = getenv("TMPDIR");
    snprintf(tu_tmpdir, sizeof tu_tmpdir, "%s/%s.XXXXXX", t && *t ? t : "/tmp", test);
    if (!mkdtemp(tu_tmpdir)) HARD_ERROR("mkdtemp %s: %s", tu_tmpdir, strerror(errno));
    atexit(tu_synth_cleanup);
}

/* Writes the model of gguf-synth's options `args` (seed 7 unless args
 * give one) to the directory as name, once; its path in path (cap
 * bytes). */
static inline void tu_synth_model(char *path, size_t cap, const char *name, const char *args)
{
    snprintf(path, cap, "%s/%s.gguf", tu_tmpdir, name);
    if (access(path, F_OK) == 0) return;
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "'%s' --seed 7 -j 1 %s -o '%s'", tu_synth, args, path);
    if (system(cmd) != 0) HARD_ERROR("cannot run: %s", cmd);
}

/* The model of architecture `arch`, `size` and `type` (untied: with an
 * output.weight of its own), written once as ARCH-SIZE-TYPE[-untied];
 * its path in path (cap bytes). */
static inline void tu_synth_shape(char *path, size_t cap, const char *arch, const char *size,
                                  const char *type, int untied)
{
    char name[128], args[256];
    snprintf(name, sizeof name, "%s-%s-%s%s", arch, size, type, untied ? "-untied" : "");
    snprintf(args, sizeof args, "--arch %s --size %s --type %s%s", arch, size, type,
             untied ? " --untied" : "");
    tu_synth_model(path, cap, name, args);
}

#endif
