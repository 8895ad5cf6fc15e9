/*
 * guard.h -- what the tools do when their inputs or their process are
 * taken from under them.  Not installed.
 *
 * Inputs.  libgguf maps regular files and reads them in place; when another
 * process truncates a mapped file, the next touch of a page past its new
 * end raises SIGBUS, which would kill the tool without a word (and leave
 * its temporary output).  guard_init() installs one SIGBUS handler
 * (SA_SIGINFO) that looks for the faulting address in the mappings of the
 * inputs registered here, writes "prog: FILE: file shrank while being read
 * (truncated by another process?)" with async-signal-safe calls only,
 * removes the temporary output if it has a name, and ends the process with
 * _exit(2).
 *
 * The handler ends the process rather than jumping back (siglongjmp) so
 * that one behaviour serves every tool: the fault may come on an OpenMP
 * worker thread (qwen-run's matrix products, gguf-requant's conversion,
 * gguf-dump --stats), where no jump can unwind the other threads, and once
 * a mapping has shrunk every pointer borrowed from it is suspect.  A
 * SIGBUS outside the registered mappings (a bug, or `kill -BUS`) keeps the
 * default action.
 *
 * Outputs.  A file output goes through libgguf's writer, whose temporary
 * file has no name on Linux (O_TMPFILE) and a hidden name elsewhere.  For
 * the named case guard_output_catch() installs handlers for the signals
 * that end a process (SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGPIPE, SIGXFSZ;
 * not those ignored when the program started, as under nohup) that remove
 * the temporary file and die of the same signal, on the main thread;
 * guard_output_open() and guard_output_free() keep the handlers informed
 * of its name.
 *
 * All functions are for the main thread (guard_init() records which one
 * that is); the handlers run on any thread.
 */
#ifndef TOOLS_GUARD_H
#define TOOLS_GUARD_H

#include "gguf/gguf.h"

/* Installs the SIGBUS handler.  Call once, early in main(). */
void guard_init(void);

/* --- inputs --------------------------------------------------------------- */

/* As gguf_open(), with the file guarded from before it is mapped (the
 * parser already reads the mapping) until guard_close().  display_name
 * (or path when NULL) names the file in the message.  Returns what
 * gguf_open() returns. */
int guard_open(gguf_file **f, const char *path, const char *display_name, unsigned flags,
               gguf_error *err);

/* Forgets f's mapping and closes f.  NULL is allowed. */
void guard_close(gguf_file *f);

/* The two halves of guard_open(), for a file that another function opens
 * (qwen_model_open): guard_input_begin() before it, naming the path and
 * the name for messages (display_name may be NULL: path), and
 * guard_input_end() after it with the file it opened, or NULL when it
 * failed.  Until the end, a SIGBUS anywhere is taken to come from this
 * file: the only file-backed memory the opening touches is its mapping.
 * guard_input_forget() before the file is closed.  When more than 64
 * inputs are guarded at once (shards of split sets count one each), the
 * others are not guarded. */
void guard_input_begin(const char *path, const char *display_name);
void guard_input_end(const gguf_file *f);
void guard_input_forget(const gguf_file *f);

/* The same for split sets (gguf_split_open()): every shard guarded, each
 * named by its path.  guard_input_end_split() ends a guard_input_begin()
 * of the path a set was opened from (s NULL: the opening failed). */
int guard_split_open(gguf_split **s, const char *path, unsigned flags, gguf_error *err);
/* guard_open() of the file alone, as a set of one (gguf_split_adopt()):
 * a shard looked at alone, or standard input. */
int guard_split_open_alone(gguf_split **s, const char *path, unsigned flags, gguf_error *err);
void guard_split_close(gguf_split *s);
void guard_input_end_split(const gguf_split *s);
void guard_input_forget_split(const gguf_split *s);

/* After a failed write of the output: when err carries EFAULT and a
 * guarded input is now shorter than its mapping, the cause is that input
 * (write(2) from a mapped page past the end of its file fails with EFAULT
 * where a plain read would raise SIGBUS): reports it as the handler does
 * and returns 1.  Otherwise prints nothing and returns 0. */
int guard_report_shrunk_input(const gguf_error *err);

/* --- outputs -------------------------------------------------------------- */

/* Installs the handlers that remove a named temporary output on a fatal
 * signal (see above). */
void guard_output_catch(void);

/* A finished file of a split output, written under a temporary name
 * until all are done and renamed into place: removed, as the temporary
 * output is, on a fatal signal (up to 4096 of them), until
 * guard_output_kept_clear(). */
void guard_output_keep(const char *path);
void guard_output_kept_clear(void);

/* gguf_writer_open(w, path, err), with the temporary file's name (when it
 * has one) handed to the signal handlers before any signal can act on it:
 * the fatal signals are held back meanwhile.  Returns what
 * gguf_writer_open() returns. */
int guard_output_open(gguf_writer *w, const char *path, gguf_error *err);

/* gguf_writer_finish(w, err); the handlers forget the name once the file is
 * in place.  Returns what gguf_writer_finish() returns. */
int guard_output_finish(gguf_writer *w, gguf_error *err);

/* gguf_writer_free(w), which removes an unfinished temporary file; the
 * handlers forget its name after that.  NULL is allowed. */
void guard_output_free(gguf_writer *w);

#endif /* TOOLS_GUARD_H */
