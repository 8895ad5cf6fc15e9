/*
 * mdiff.h -- the differences between two models' metadata and tensor
 * directories, as gguf-edit --dry-run and gguf-dump --diff show them.  Not
 * installed.
 *
 * Text: diff's unified header ("--- A", "+++ B"), then a line per change,
 * "-" for what A has and B lacks or has otherwise, "+" for B's side:
 *
 *     -general.name: STRING = "Old"
 *     +general.name: STRING = "New"
 *     -tensor blk.0.ffn_down.weight: Q6_K [4864, 896]
 *     +tensor blk.0.ffn_down.weight: Q4_K [4864, 896]
 *     ~tensor blk.1.attn_q.weight: data differs (xxh3 0123... 4567...)
 */
#ifndef TOOLS_MDIFF_H
#define TOOLS_MDIFF_H

#include <stdint.h>

#include "gguf/gguf.h"
#include "tools/cli.h"

/* 1 when the two values are the same: type, element type and bytes. */
int mdiff_same_value(const gguf_value *a, const gguf_value *b);

/* The metadata changes from a to b: removed and changed pairs in a's
 * order, then the added ones in b's; the same pairs in another order
 * count as one change.  With `print`, writes them to o as text (the
 * header lines first, naming a_name and b_name); with `json` (and print),
 * writes the members "kv_removed", "kv_added" and "kv_changed" of an open
 * JSON object instead (each element {"key", "type", "value"}, changed ones
 * {"key", "old", "new"}), each line indented by `indent`.  Returns the
 * number of changes. */
uint64_t mdiff_kv(cli_out *o, const gguf_file *a, const gguf_file *b, const char *a_name,
                  const char *b_name, int print, int json);

/* One side of a tensor-directory diff: a split set (or a file opened as
 * a set of one), with the XXH3 of every tensor's data (sums[i] for tensor
 * i of the set), or sums NULL to compare the directories alone. */
struct mdiff_side {
    const gguf_split *set;
    const uint64_t *sums;
};

/* The tensor changes from a to b: removed ones and those whose type,
 * shape or data (when both sides have sums) differ, in a's order, then the
 * added ones in b's.  Text lines as above (no header), or with json the
 * members "tensors_removed", "tensors_added", "tensors_changed".  Returns
 * the number of changes. */
uint64_t mdiff_tensors(cli_out *o, const struct mdiff_side *a, const struct mdiff_side *b, int print,
                       int json);

#endif /* TOOLS_MDIFF_H */
