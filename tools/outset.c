/* outset.c -- the files of one output, a plain file or a split set; see
 * outset.h. */
#include <config.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gguf/gguf.h"
#include "tools/cli.h"
#include "tools/guard.h"
#include "tools/outset.h"

int outset_init(struct outset *s, const char *out, uint32_t n, int split)
{
    memset(s, 0, sizeof *s);
    s->n = n;
    s->split = split;
    s->path = calloc(n, sizeof *s->path);
    s->tmp = calloc(n, sizeof *s->tmp);
    s->done = calloc(n, sizeof *s->done);
    size_t plen = strlen(out);
    if (plen > 5 && strcmp(out + plen - 5, ".gguf") == 0) plen -= 5;
    char *prefix = strndup(out, plen);
    int ok = s->path && s->tmp && s->done && prefix;
    for (uint32_t i = 0; ok && i < n; i++) {
        if (!split) {
            ok = (s->path[i] = strdup(out)) != NULL;
            continue;
        }
        int len = gguf_split_name(NULL, 0, prefix, i, n);
        if (len < 0 || !(s->path[i] = malloc((size_t)len + 1)) || !(s->tmp[i] = malloc((size_t)len + 16))) {
            ok = 0;
            break;
        }
        gguf_split_name(s->path[i], (size_t)len + 1, prefix, i, n);
        const char *slash = strrchr(s->path[i], '/');
        size_t dlen = slash ? (size_t)(slash - s->path[i]) + 1 : 0;
        snprintf(s->tmp[i], (size_t)len + 16, "%.*s.%s.partial", (int)dlen, s->path[i], s->path[i] + dlen);
    }
    free(prefix);
    if (ok) return 0;
    outset_free(s);
    cli_error(NULL, "out of memory");
    return -1;
}

void outset_name_message(const struct outset *s, char *msg, size_t size)
{
    for (uint32_t i = 0; s->split && i < s->n; i++) {
        char *at = s->tmp[i] ? strstr(msg, s->tmp[i]) : NULL;
        if (!at) continue;
        char *buf = malloc(size);
        if (!buf) return;
        snprintf(buf, size, "%.*s%s%s", (int)(at - msg), msg, s->path[i], at + strlen(s->tmp[i]));
        snprintf(msg, size, "%s", buf);
        free(buf);
        return;
    }
}

const char *outset_target(const struct outset *s, uint32_t i)
{
    return s->split ? s->tmp[i] : s->path[i];
}

void outset_done(struct outset *s, uint32_t i)
{
    if (!s->split) return;
    s->done[i] = 1;
    guard_output_keep(s->tmp[i]);
}

int outset_place(struct outset *s)
{
    if (!s->split) return 0;
    for (uint32_t i = 0; i < s->n; i++) {
        if (rename(s->tmp[i], s->path[i]) != 0) {
            cli_error(s->path[i], "cannot put in place: %s", strerror(errno));
            for (uint32_t j = 0; j < i; j++) unlink(s->path[j]);
            return -1;
        }
        s->done[i] = 0;
    }
    const char *slash = strrchr(s->path[0], '/');
    char *dir = slash ? strndup(s->path[0], (size_t)(slash - s->path[0]) + 1) : strdup(".");
    int fd = dir ? open(dir, O_RDONLY | O_DIRECTORY) : -1;
    if (fd < 0 || fsync(fd) != 0) {
        cli_error(dir ? dir : ".", "cannot sync the directory: %s", strerror(errno));
        if (fd >= 0) close(fd);
        free(dir);
        return -1;
    }
    close(fd);
    free(dir);
    return 0;
}

void outset_free(struct outset *s)
{
    for (uint32_t i = 0; i < s->n; i++) {
        if (s->done && s->done[i] && s->tmp && s->tmp[i]) unlink(s->tmp[i]);
        if (s->path) free(s->path[i]);
        if (s->tmp) free(s->tmp[i]);
    }
    free(s->path);
    free(s->tmp);
    free(s->done);
    guard_output_kept_clear();
    memset(s, 0, sizeof *s);
}
