/* dump-estimate.h -- gguf-dump --estimate.  Not installed. */
#ifndef TOOLS_DUMP_ESTIMATE_H
#define TOOLS_DUMP_ESTIMATE_H

#include <stdint.h>

#include "tools/cli.h"

/* The settings of an estimate: as qwen-run's options. */
struct estimate_opts {
    uint32_t n_ctx;         /* -c: positions per sequence; 0: qwen-run's default */
    uint32_t n_seq;         /* --parallel: sequences (qwen-run --each-line --parallel) */
    int n_threads;          /* -t; 0: qwen-run's default */
    int kv_q8_0;            /* --kv-type q8_0 (llama.cpp's figure only) */
};

/* Prints what qwen-run would allocate for each of the n models at paths
 * (and llama.cpp's key/value cache at the same settings) to o, as text or
 * JSON (an array for more than one); `shard`: each file alone.  Returns
 * 0, or 2 after a message when a file cannot be read or the settings do
 * not fit a model (the others are still shown). */
int dump_estimate(cli_out *o, char **paths, int n, const struct estimate_opts *e, int json,
                  int shard);

#endif /* TOOLS_DUMP_ESTIMATE_H */
