/*
 * sampler.c -- repetition penalty, greedy, top-k, top-p, min-p,
 * temperature and a seeded draw.  See sampler.h.
 */
#include <config.h>

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "infer/model.h"
#include "infer/sampler.h"

struct cand {
    int32_t id;
    float logit;
};

struct qwen_sampler {
    qwen_sampler_params p;
    int32_t n_vocab;
    uint64_t rng;
    int32_t *recent;        /* (repeat_last_n) ring of the last ids */
    uint32_t n_recent;      /* ids in the ring (<= repeat_last_n) */
    uint32_t head;          /* where the next id goes */
    float *work;            /* (n_vocab) logits after the penalty */
    unsigned char *seen;    /* (n_vocab) 1: in the ring, for this step */
    struct cand *cand;      /* (n_vocab) candidates */
};

qwen_sampler_params qwen_sampler_defaults(void)
{
    qwen_sampler_params p = {0.8f, 40, 0.95f, 0.05f, 1.0f, 64, 0};
    return p;
}

uint64_t qwen_rng_next(uint64_t *state)
{
    uint64_t z = (*state += UINT64_C(0x9e3779b97f4a7c15));
    z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
    return z ^ (z >> 31);
}

double qwen_rng_uniform(uint64_t *state)
{
    return (double)(qwen_rng_next(state) >> 11) * (1.0 / 9007199254740992.0);
}

int qwen_sampler_new(qwen_sampler **out, const qwen_sampler_params *p, int32_t n_vocab,
                     gguf_error *err)
{
    if (!out || !p) return qwen_fail(err, GGUF_E_INVALID, UINT64_MAX, "qwen_sampler_new: NULL argument");
    *out = NULL;
    if (n_vocab < 1)
        return qwen_fail(err, GGUF_E_INVALID, UINT64_MAX, "sampler: empty vocabulary");
    if (isnan(p->temp) || isnan(p->top_p) || isnan(p->min_p) || !(p->repeat_penalty > 0.0f) ||
        p->top_p < 0.0f || p->top_p > 1.0f || p->min_p < 0.0f || p->min_p > 1.0f ||
        !isfinite(p->repeat_penalty) || p->repeat_last_n > (uint32_t)n_vocab * 64u)
        return qwen_fail(err, GGUF_E_INVALID, UINT64_MAX, "sampler: setting out of range");
    qwen_sampler *s = calloc(1, sizeof *s);
    if (!s) return qwen_fail(err, GGUF_E_NOMEM, UINT64_MAX, "sampler: out of memory");
    s->p = *p;
    s->n_vocab = n_vocab;
    s->rng = p->seed;
    s->recent = malloc(sizeof *s->recent * (p->repeat_last_n ? p->repeat_last_n : 1));
    s->work = malloc(sizeof *s->work * (size_t)n_vocab);
    s->seen = calloc((size_t)n_vocab, 1);
    s->cand = malloc(sizeof *s->cand * (size_t)n_vocab);
    if (!s->recent || !s->work || !s->seen || !s->cand) {
        qwen_sampler_free(s);
        return qwen_fail(err, GGUF_E_NOMEM, UINT64_MAX, "sampler: out of memory");
    }
    *out = s;
    return GGUF_OK;
}

void qwen_sampler_free(qwen_sampler *s)
{
    if (!s) return;
    free(s->recent);
    free(s->work);
    free(s->seen);
    free(s->cand);
    free(s);
}

void qwen_sampler_reset(qwen_sampler *s)
{
    s->n_recent = 0;
    s->head = 0;
}

void qwen_sampler_seed(qwen_sampler *s, uint64_t seed)
{
    s->rng = seed;
}

void qwen_sampler_accept(qwen_sampler *s, int32_t id)
{
    if (id < 0 || id >= s->n_vocab || s->p.repeat_last_n == 0) return;
    s->recent[s->head] = id;
    s->head = (s->head + 1) % s->p.repeat_last_n;
    if (s->n_recent < s->p.repeat_last_n) s->n_recent++;
}

/* Candidates ordered by logit, highest first, lower id first among equal
 * logits (so that results do not depend on qsort's order). */
static int cand_cmp(const void *a, const void *b)
{
    const struct cand *x = a, *y = b;
    if (x->logit > y->logit) return -1;
    if (x->logit < y->logit) return 1;
    return (x->id > y->id) - (x->id < y->id);
}

/* Applies the penalty to s->work: each distinct recent token's logit is
 * divided by the penalty when positive and multiplied when not, once however
 * often it occurred (as llama.cpp's penalties sampler does). */
static void apply_penalty(qwen_sampler *s)
{
    float pen = s->p.repeat_penalty;
    if (pen == 1.0f) return;
    for (uint32_t i = 0; i < s->n_recent; i++) {
        int32_t id = s->recent[i];
        if (s->seen[id]) continue;
        s->seen[id] = 1;
        s->work[id] = s->work[id] > 0.0f ? s->work[id] / pen : s->work[id] * pen;
    }
    for (uint32_t i = 0; i < s->n_recent; i++) s->seen[s->recent[i]] = 0;
}

/* The k first of s->work's candidates (NaN left out) in cand_cmp's order,
 * kept in a heap whose root is the last of them, into s->cand (in heap
 * order): the same k as sorting all (the order is total), for a fraction
 * of the time.  Returns how many (fewer when fewer are not NaN). */
static size_t select_top(qwen_sampler *s, size_t k)
{
    size_t n = 0;
    for (int32_t i = 0; i < s->n_vocab; i++) {
        if (isnan(s->work[i])) continue;
        struct cand c = {i, s->work[i]};
        if (n < k) {
            size_t j = n++;
            while (j > 0 && cand_cmp(&s->cand[(j - 1) / 2], &c) < 0) {
                s->cand[j] = s->cand[(j - 1) / 2];
                j = (j - 1) / 2;
            }
            s->cand[j] = c;
        } else if (cand_cmp(&c, &s->cand[0]) < 0) {
            size_t j = 0;
            for (;;) {
                size_t l = 2 * j + 1, r = l + 1, w = j;
                const struct cand *wc = &c;
                if (l < n && cand_cmp(&s->cand[l], wc) > 0) w = l, wc = &s->cand[l];
                if (r < n && cand_cmp(&s->cand[r], wc) > 0) w = r;
                if (w == j) break;
                s->cand[j] = s->cand[w];
                j = w;
            }
            s->cand[j] = c;
        }
    }
    return n;
}

size_t qwen_sampler_order(qwen_sampler *s, const float *logits, size_t m, int32_t *ids)
{
    memcpy(s->work, logits, sizeof *s->work * (size_t)s->n_vocab);
    apply_penalty(s);
    size_t n = select_top(s, m);
    qsort(s->cand, n, sizeof *s->cand, cand_cmp);
    for (size_t i = 0; i < n; i++) ids[i] = s->cand[i].id;
    return n;
}

int32_t qwen_sampler_sample(qwen_sampler *s, const float *logits)
{
    int32_t nv = s->n_vocab;
    memcpy(s->work, logits, sizeof *s->work * (size_t)nv);
    apply_penalty(s);

    if (!(s->p.temp > 0.0f)) {
        int32_t best = -1;
        for (int32_t i = 0; i < nv; i++)
            if (!isnan(s->work[i]) && (best < 0 || s->work[i] > s->work[best])) best = i;
        return best < 0 ? 0 : best;
    }

    const size_t k = s->p.top_k > 0 ? (size_t)s->p.top_k : SIZE_MAX;
    size_t n = k < (size_t)nv ? select_top(s, k) : 0;
    if (k >= (size_t)nv)
        for (int32_t i = 0; i < nv; i++)
            if (!isnan(s->work[i])) s->cand[n++] = (struct cand){i, s->work[i]};
    if (n == 0) return 0;
    qsort(s->cand, n, sizeof *s->cand, cand_cmp);
    if (s->cand[0].logit == -INFINITY) return s->cand[0].id;

    if (k < n) n = k;

    /* top-p and min-p work on the probabilities at temperature 1. */
    float max = s->cand[0].logit;
    if (s->p.top_p < 1.0f) {
        double sum = 0.0;
        for (size_t i = 0; i < n; i++) sum += exp((double)(s->cand[i].logit - max));
        double cum = 0.0;
        for (size_t i = 0; i < n; i++) {
            cum += exp((double)(s->cand[i].logit - max)) / sum;
            if (cum >= s->p.top_p) {
                n = i + 1;
                break;
            }
        }
    }
    if (s->p.min_p > 0.0f) {
        /* p_i >= min_p * p_max  <=>  logit_i >= max + log(min_p) */
        float floor = max + logf(s->p.min_p);
        size_t keep = 1;
        while (keep < n && s->cand[keep].logit >= floor) keep++;
        n = keep;
    }

    double sum = 0.0;
    for (size_t i = 0; i < n; i++) sum += exp((double)((s->cand[i].logit - max) / s->p.temp));
    double r = qwen_rng_uniform(&s->rng) * sum, cum = 0.0;
    for (size_t i = 0; i < n; i++) {
        cum += exp((double)((s->cand[i].logit - max) / s->p.temp));
        if (r < cum) return s->cand[i].id;
    }
    return s->cand[n - 1].id;
}
