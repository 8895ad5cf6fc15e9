/* guard.c -- the tools' guard over mapped inputs and temporary outputs; see
 * guard.h.
 *
 * The handlers read state that the main thread writes, from any thread:
 * each record is filled first and published last with a release store,
 * and the handlers read the publishing field with an acquire load, so
 * that a handler never sees half a record.  Everything a handler calls is
 * async-signal-safe (stat, fstat, write, unlink, sigaction, raise, _exit,
 * pause, pthread_self, pthread_kill). */
#include <config.h>

#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "gguf/gguf.h"
#include "tools/cli.h"
#include "tools/guard.h"

/* What the message says; the handler and guard_report_shrunk_input() share it. */
#define SHRANK_MSG "file shrank while being read (truncated by another process?)"
#define UNREADABLE_MSG "cannot read the mapped file (an I/O error?)"

#define MAX_INPUTS 64

enum { SLOT_FREE, SLOT_OPENING, SLOT_MAPPED };

struct input {
    int state;                  /* enum above; published last (release) */
    const gguf_file *file;      /* SLOT_MAPPED: the file */
    uintptr_t base;             /* SLOT_MAPPED: the mapping */
    size_t len;
    uint64_t size;              /* the file's size when opened: less now means it shrank */
    int is_stdin;               /* path "-": stat descriptor 0 */
    char path[PATH_MAX];        /* for stat() in the handler */
    char shown[1024];           /* the display name, escaped as cli_error() does */
};

static struct input inputs[MAX_INPUTS];
static struct input *opening;   /* between guard_input_begin and _end */

/* The temporary output's name while it exists and has one. */
static char temp_name[PATH_MAX + 256];
static int temp_set;

static const int fatal_signals[] = { SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGPIPE, SIGXFSZ };
#define N_FATAL (sizeof fatal_signals / sizeof fatal_signals[0])
static sigset_t fatal_set;
/* The thread that runs main(), which handles the fatal signals. */
static pthread_t main_thread;

static int load(const int *p) { return __atomic_load_n(p, __ATOMIC_ACQUIRE); }
static void store(int *p, int v) { __atomic_store_n(p, v, __ATOMIC_RELEASE); }

/* Finished shards of a split output not yet in place (guard_output_keep). */
#define MAX_KEPT 4096
static char *kept[MAX_KEPT];
static int n_kept;

static void remove_temp(void)
{
    if (load(&temp_set)) unlink(temp_name);
    for (int i = 0, n = load(&n_kept); i < n; i++) unlink(kept[i]);
}

/* Appends the NUL-terminated s to buf (of size n, holding *len bytes). */
static void append(char *buf, size_t n, size_t *len, const char *s)
{
    while (*s && *len < n) buf[(*len)++] = *s++;
}

/* The input whose mapping holds addr; else the one being opened; else NULL. */
static const struct input *input_at(uintptr_t addr)
{
    for (size_t i = 0; i < MAX_INPUTS; i++) {
        const struct input *in = &inputs[i];
        if (load(&in->state) == SLOT_MAPPED && addr - in->base < in->len) return in;
    }
    for (size_t i = 0; i < MAX_INPUTS; i++)
        if (load(&inputs[i].state) == SLOT_OPENING) return &inputs[i];
    return NULL;
}

/* The size of in's file now, or UINT64_MAX when it cannot be told. */
static uint64_t current_size(const struct input *in)
{
    struct stat st;
    int rc = in->is_stdin ? fstat(0, &st) : stat(in->path, &st);
    return rc == 0 ? (uint64_t)st.st_size : UINT64_MAX;
}

/* Restores the default action of sig and raises it: the process dies of
 * it at once, or in a handler (where sig is blocked) when that returns. */
static void die_of(int sig)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = SIG_DFL;
    sigaction(sig, &sa, NULL);
    raise(sig);
}

static void on_sigbus(int sig, siginfo_t *si, void *uctx)
{
    (void)uctx;
    /* Threads that fault at once: the first reports, the others wait for
     * its _exit. */
    static int busy;
    if (__atomic_exchange_n(&busy, 1, __ATOMIC_ACQ_REL))
        for (;;) pause();
    const struct input *in = si->si_code > 0 ? input_at((uintptr_t)si->si_addr) : NULL;
    remove_temp();
    if (!in) {
        /* Not ours: the default action (a core dump where enabled), as
         * soon as the handler returns and unblocks the signal. */
        die_of(sig);
        return;
    }
    char msg[2048];
    size_t len = 0;
    append(msg, sizeof msg - 1, &len, cli_prog);
    append(msg, sizeof msg - 1, &len, ": ");
    append(msg, sizeof msg - 1, &len, in->shown);
    append(msg, sizeof msg - 1, &len, ": ");
    append(msg, sizeof msg - 1, &len, current_size(in) < in->size ? SHRANK_MSG : UNREADABLE_MSG);
    msg[len++] = '\n';
    ssize_t k;
    do k = write(2, msg, len); while (k < 0 && errno == EINTR);
    _exit(CLI_EXIT_TROUBLE);
}

void guard_init(void)
{
    main_thread = pthread_self();
    sigemptyset(&fatal_set);
    for (size_t i = 0; i < N_FATAL; i++) sigaddset(&fatal_set, fatal_signals[i]);
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_sigbus;
    sa.sa_flags = SA_SIGINFO;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGBUS, &sa, NULL);
}

/* --- inputs --------------------------------------------------------------- */

void guard_input_begin(const char *path, const char *display_name)
{
    opening = NULL;
    struct input *in = NULL;
    for (size_t i = 0; i < MAX_INPUTS && !in; i++)
        if (inputs[i].state == SLOT_FREE) in = &inputs[i];
    if (!in || strlen(path) >= sizeof in->path) return;
    const char *shown = display_name ? display_name : path;
    cli_text_escape(in->shown, sizeof in->shown, shown, strlen(shown));
    memcpy(in->path, path, strlen(path) + 1);
    in->is_stdin = strcmp(path, "-") == 0;
    in->file = NULL;
    in->base = 0;
    in->len = 0;
    in->size = current_size(in);
    if (in->size == UINT64_MAX) in->size = 0;   /* the open fails; no fault can come */
    opening = in;
    store(&in->state, SLOT_OPENING);
}

void guard_input_end(const gguf_file *f)
{
    struct input *in = opening;
    opening = NULL;
    if (!in) return;
    const void *base;
    size_t len;
    if (!f || !gguf_mapped_range(f, &base, &len)) {
        store(&in->state, SLOT_FREE);
        return;
    }
    /* A handler that still sees SLOT_OPENING does not read the range. */
    in->file = f;
    in->base = (uintptr_t)base;
    in->len = len;
    in->size = len;
    store(&in->state, SLOT_MAPPED);
}

void guard_input_forget(const gguf_file *f)
{
    for (size_t i = 0; f && i < MAX_INPUTS; i++)
        if (inputs[i].state == SLOT_MAPPED && inputs[i].file == f) store(&inputs[i].state, SLOT_FREE);
}

int guard_open(gguf_file **f, const char *path, const char *display_name, unsigned flags,
               gguf_error *err)
{
    guard_input_begin(path, display_name);
    int rc = gguf_open(f, path, display_name, flags, err);
    guard_input_end(rc == GGUF_OK ? *f : NULL);
    return rc;
}

int guard_split_open_alone(gguf_split **s, const char *path, unsigned flags, gguf_error *err)
{
    gguf_file *f = NULL;
    *s = NULL;
    int rc = guard_open(&f, path, NULL, flags, err);
    if (rc) return rc;
    /* the mapping stays where it is: guarded again as the set's shard */
    guard_input_forget(f);
    rc = gguf_split_adopt(s, f, err);
    guard_input_begin(path, NULL);
    guard_input_end_split(rc == GGUF_OK ? *s : NULL);
    return rc;
}

void guard_close(gguf_file *f)
{
    guard_input_forget(f);
    gguf_close(f);
}

void guard_input_end_split(const gguf_split *s)
{
    guard_input_end(NULL);
    for (uint32_t i = 0; s && i < gguf_split_count(s); i++) {
        guard_input_begin(gguf_split_path(s, i), NULL);
        guard_input_end(gguf_split_shard(s, i));
    }
}

void guard_input_forget_split(const gguf_split *s)
{
    for (uint32_t i = 0; s && i < gguf_split_count(s); i++) guard_input_forget(gguf_split_shard(s, i));
}

int guard_split_open(gguf_split **s, const char *path, unsigned flags, gguf_error *err)
{
    guard_input_begin(path, NULL);
    int rc = gguf_split_open(s, path, flags, err);
    guard_input_end_split(rc == GGUF_OK ? *s : NULL);
    return rc;
}

void guard_split_close(gguf_split *s)
{
    guard_input_forget_split(s);
    gguf_split_close(s);
}

int guard_report_shrunk_input(const gguf_error *err)
{
    if (!err || err->sys_errno != EFAULT) return 0;
    for (size_t i = 0; i < MAX_INPUTS; i++) {
        const struct input *in = &inputs[i];
        if (in->state == SLOT_MAPPED && current_size(in) < in->size) {
            cli_error(gguf_name(in->file), SHRANK_MSG);
            return 1;
        }
    }
    return 0;
}

/* --- outputs -------------------------------------------------------------- */

/* Removes the temporary output and dies of the same signal, on the main
 * thread.  The main thread holds the signals back while it creates the
 * temporary file (guard_output_open) and while the writer gives an
 * unnamed file a hidden name before renaming it (gguf_writer_finish);
 * only the main thread knows when, so a signal that another thread takes
 * (an OpenMP worker) is sent on to the main thread, to wait there. */
static void on_fatal_signal(int sig)
{
    if (!pthread_equal(pthread_self(), main_thread)) {
        pthread_kill(main_thread, sig);
        return;
    }
    remove_temp();
    die_of(sig);
}

void guard_output_catch(void)
{
    for (size_t i = 0; i < N_FATAL; i++) {
        struct sigaction old, sa;
        if (sigaction(fatal_signals[i], NULL, &old) == 0 && old.sa_handler == SIG_IGN) continue;
        memset(&sa, 0, sizeof sa);
        sa.sa_handler = on_fatal_signal;
        sa.sa_mask = fatal_set;
        /* A worker's calls go on after it passes the signal on. */
        sa.sa_flags = SA_RESTART;
        sigaction(fatal_signals[i], &sa, NULL);
    }
}

int guard_output_open(gguf_writer *w, const char *path, gguf_error *err)
{
    /* Held back until the handler knows the name. */
    sigset_t old;
    pthread_sigmask(SIG_BLOCK, &fatal_set, &old);
    int rc = gguf_writer_open(w, path, err);
    const char *tmp = rc == GGUF_OK ? gguf_writer_temp_path(w) : NULL;
    if (tmp && strlen(tmp) < sizeof temp_name) {
        memcpy(temp_name, tmp, strlen(tmp) + 1);
        store(&temp_set, 1);
    }
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    return rc;
}

int guard_output_finish(gguf_writer *w, gguf_error *err)
{
    int rc = gguf_writer_finish(w, err);
    /* A late signal in between unlinks a name that is gone already. */
    store(&temp_set, 0);
    return rc;
}

void guard_output_keep(const char *path)
{
    if (n_kept == MAX_KEPT) return;
    char *p = strdup(path);
    if (!p) return;
    kept[n_kept] = p;
    store(&n_kept, n_kept + 1);
}

void guard_output_kept_clear(void)
{
    int n = n_kept;
    store(&n_kept, 0);
    for (int i = 0; i < n; i++) {
        free(kept[i]);
        kept[i] = NULL;
    }
}

void guard_output_free(gguf_writer *w)
{
    gguf_writer_free(w);
    store(&temp_set, 0);
}
