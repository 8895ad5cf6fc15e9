/*
 * test-sampler.c -- the sampler (infer/sampler.h) against a plain
 * reference written here: every candidate sorted (logit, then id), then
 * the penalty, top-k, top-p, min-p and temperature steps of sampler.h.
 * The sampler keeps only the top k in a heap before sorting; the draws
 * must be the same, id for id, for random logits with ties, infinities
 * and NaN, over many seeds and settings.
 */
#include <config.h>

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "infer/sampler.h"
#include "tests/testutil.h"

struct rc {
    int32_t id;
    float logit;
};

static int rc_cmp(const void *a, const void *b)
{
    const struct rc *x = a, *y = b;
    if (x->logit != y->logit) return x->logit > y->logit ? -1 : 1;
    return (x->id > y->id) - (x->id < y->id);
}

/* The reference draw (no penalty: repeat_penalty 1). */
static int32_t ref_sample(const qwen_sampler_params *p, const float *logits, int32_t nv,
                          uint64_t *rng, struct rc *c)
{
    size_t n = 0;
    for (int32_t i = 0; i < nv; i++)
        if (!isnan(logits[i])) c[n++] = (struct rc){i, logits[i]};
    if (n == 0) return 0;
    qsort(c, n, sizeof *c, rc_cmp);
    if (c[0].logit == -INFINITY) return c[0].id;
    if (p->top_k > 0 && (size_t)p->top_k < n) n = (size_t)p->top_k;
    float max = c[0].logit;
    if (p->top_p < 1.0f) {
        double sum = 0, cum = 0;
        for (size_t i = 0; i < n; i++) sum += exp((double)(c[i].logit - max));
        for (size_t i = 0; i < n; i++) {
            cum += exp((double)(c[i].logit - max)) / sum;
            if (cum >= p->top_p) {
                n = i + 1;
                break;
            }
        }
    }
    if (p->min_p > 0.0f) {
        float floor = max + logf(p->min_p);
        size_t keep = 1;
        while (keep < n && c[keep].logit >= floor) keep++;
        n = keep;
    }
    double sum = 0, cum = 0;
    for (size_t i = 0; i < n; i++) sum += exp((double)((c[i].logit - max) / p->temp));
    double r = qwen_rng_uniform(rng) * sum;
    for (size_t i = 0; i < n; i++) {
        cum += exp((double)((c[i].logit - max) / p->temp));
        if (r < cum) return c[i].id;
    }
    return c[n - 1].id;
}

int main(void)
{
    const int32_t nv = 3000;
    float *logits = malloc(sizeof *logits * nv);
    struct rc *c = malloc(sizeof *c * nv);
    REQUIRE(logits && c, "out of memory");
    static const struct {
        float temp;
        int32_t top_k;
        float top_p, min_p;
    } settings[] = {{0.8f, 40, 0.95f, 0.05f}, {1.5f, 5, 1.0f, 0.0f}, {1.0f, 1, 1.0f, 0.0f},
                    {0.7f, 2999, 0.9f, 0.0f}, {1.2f, 0, 1.0f, 0.0f}, {0.9f, 100, 1.0f, 0.2f},
                    {2.0f, 3000, 0.5f, 0.0f}, {1.0f, 7, 1.0f, 0.0f}};
    uint64_t gen = 12345;
    int draws = 0, bad = 0;
    for (int round = 0; round < 40; round++) {
        /* logits of a few distinct values (ties), some -inf, some NaN */
        const int coarse = round % 3;
        for (int32_t i = 0; i < nv; i++) {
            double u = qwen_rng_uniform(&gen);
            logits[i] = coarse == 0 ? (float)(u * 20 - 10) : (float)floor(u * (coarse == 1 ? 6 : 400)) * 0.5f;
            double w = qwen_rng_uniform(&gen);
            if (w < 0.01) logits[i] = -INFINITY;
            else if (w < 0.015) logits[i] = NAN;
        }
        for (size_t k = 0; k < sizeof settings / sizeof settings[0]; k++) {
            qwen_sampler_params p = qwen_sampler_defaults();
            p.temp = settings[k].temp;
            p.top_k = settings[k].top_k;
            p.top_p = settings[k].top_p;
            p.min_p = settings[k].min_p;
            p.seed = (uint64_t)round * 31 + k;
            qwen_sampler *s;
            gguf_error err;
            REQUIRE(qwen_sampler_new(&s, &p, nv, &err) == GGUF_OK, "%s", err.message);
            uint64_t rng = p.seed;
            for (int d = 0; d < 5; d++) {
                int32_t got = qwen_sampler_sample(s, logits), want = ref_sample(&p, logits, nv, &rng, c);
                bad += got != want;
                draws++;
                if (got != want && bad < 5)
                    fprintf(stderr, "round %d setting %zu draw %d: %d, reference %d\n", round, k, d,
                            got, want);
            }
            qwen_sampler_free(s);
        }
    }
    CHECK(bad == 0, "%d of %d draws differ from the reference", bad, draws);
    fprintf(stderr, "%d draws equal to the reference's\n", draws);
    free(logits);
    free(c);
    tu_finish();
}
