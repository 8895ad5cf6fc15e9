/*
 * qwen-run-check.c -- independent answers for the qwen-run tests.
 *
 *   qwen-run-check tokenize MODEL FILE
 *       The ids of FILE's bytes as qwen_tokenize gives them with special
 *       tokens recognised, on one line.
 *   qwen-run-check logits MODEL N
 *       Reads token ids (whitespace-separated) from standard input, runs
 *       them through qwen_forward in one batch and prints the N highest
 *       logits as "ID LOGIT" (shortest round-trip decimal), highest first,
 *       lower id first among equal values.
 *   qwen-run-check ref-logits MODEL N
 *       The same from the float64 reference forward pass (tests/ref-forward.c),
 *       logits printed with %.9g.
 *
 * Exit status: 0 printed, 2 trouble.
 */
#include <config.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gguf/gguf.h"
#include "infer/forward.h"
#include "infer/model.h"
#include "infer/tokenizer.h"
#include "tests/ref-forward.h"
#include "tools/cli.h"

static void die(const char *msg)
{
    fprintf(stderr, "qwen-run-check: %s\n", msg);
    exit(2);
}

/* Reads the ids on standard input into *ids. */
static void read_ids(qwen_ids *ids)
{
    long v;
    while (scanf("%ld", &v) == 1)
        if (qwen_ids_push(ids, (int32_t)v)) die("out of memory");
    if (ids->n == 0) die("no token ids on standard input");
}

struct top {
    int32_t id;
    double v;
};

static int top_cmp(const void *a, const void *b)
{
    const struct top *x = a, *y = b;
    if (x->v != y->v) return x->v > y->v ? -1 : 1;
    return (x->id > y->id) - (x->id < y->id);
}

/* Sorts the n values (highest first) into a new array. */
static struct top *rank(const float *f, const double *d, int32_t n)
{
    struct top *t = malloc(sizeof *t * (size_t)n);
    if (!t) die("out of memory");
    for (int32_t i = 0; i < n; i++) t[i] = (struct top){i, f ? f[i] : d[i]};
    qsort(t, (size_t)n, sizeof *t, top_cmp);
    return t;
}

int main(int argc, char **argv)
{
    if (argc != 4) die("usage: qwen-run-check tokenize|logits|ref-logits MODEL ARG");
    gguf_error err = {0};
    qwen_ids ids = QWEN_IDS_INIT;
    if (strcmp(argv[1], "tokenize") == 0) {
        gguf_file *f;
        qwen_tokenizer *tok;
        if (gguf_open(&f, argv[2], NULL, 0, &err) || qwen_tokenizer_load(&tok, f, &err))
            die(err.message);
        FILE *in = fopen(argv[3], "rb");
        if (!in) die("cannot open the text file");
        static char buf[1 << 20];
        size_t n = fread(buf, 1, sizeof buf, in);
        fclose(in);
        if (qwen_tokenize(tok, buf, n, QWEN_TOKENIZE_SPECIAL, &ids, &err)) die(err.message);
        for (size_t i = 0; i < ids.n; i++) printf(i ? " %d" : "%d", (int)ids.v[i]);
        printf("\n");
        qwen_tokenizer_free(tok);
        gguf_close(f);
    } else if (strcmp(argv[1], "logits") == 0) {
        int top = atoi(argv[3]);
        qwen_model *m;
        qwen_state *s;
        read_ids(&ids);
        if (qwen_model_open(&m, argv[2], &err)) die(err.message);
        if (qwen_state_new(&s, m, (uint32_t)ids.n, (uint32_t)ids.n, &err)) die(err.message);
        if (qwen_forward(s, ids.v, (uint32_t)ids.n, &err)) die(err.message);
        struct top *t = rank(qwen_state_logits(s), NULL, (int32_t)m->config.n_vocab);
        for (int i = 0; i < top && i < (int)m->config.n_vocab; i++) {
            char b[32];
            cli_fmt_f32(b, (float)t[i].v);
            printf("%d %s\n", (int)t[i].id, b);
        }
        free(t);
        qwen_state_free(s);
        qwen_model_close(m);
    } else if (strcmp(argv[1], "ref-logits") == 0) {
        int top = atoi(argv[3]);
        char msg[512];
        read_ids(&ids);
        ref_model *m = ref_model_load(argv[2], msg, sizeof msg);
        if (!m) die(msg);
        uint32_t nv = ref_model_vocab(m);
        double *l = malloc(sizeof *l * nv);
        if (!l) die("out of memory");
        ref_forward(m, ids.v, (uint32_t)ids.n, 1, l);
        struct top *t = rank(NULL, l, (int32_t)nv);
        for (int i = 0; i < top && i < (int)nv; i++) printf("%d %.9g\n", (int)t[i].id, t[i].v);
        free(t);
        free(l);
        ref_model_free(m);
    } else {
        die("unknown command");
    }
    qwen_ids_free(&ids);
    return 0;
}
