/* types.c -- the tensor type table, value type names, file type names. */
#include <config.h>

#include <strings.h>

#include "gguf/internal.h"

/* Every ggml type id assigned to date.  Removed ids keep the layout they had
 * when files carried them, so that old files still dump and verify. */
static const gguf_type_info type_table[GGUF_T_COUNT] = {
    [GGUF_T_F32] = {"F32", 1, 4, 0, 0},
    [GGUF_T_F16] = {"F16", 1, 2, 0, 0},
    [GGUF_T_Q4_0] = {"Q4_0", 32, 18, 1, 0},
    [GGUF_T_Q4_1] = {"Q4_1", 32, 20, 1, 0},
    [GGUF_T_Q4_2] = {"Q4_2", 16, 10, 1, 1},
    [GGUF_T_Q4_3] = {"Q4_3", 16, 12, 1, 1},
    [GGUF_T_Q5_0] = {"Q5_0", 32, 22, 1, 0},
    [GGUF_T_Q5_1] = {"Q5_1", 32, 24, 1, 0},
    [GGUF_T_Q8_0] = {"Q8_0", 32, 34, 1, 0},
    [GGUF_T_Q8_1] = {"Q8_1", 32, 36, 1, 0},
    [GGUF_T_Q2_K] = {"Q2_K", 256, 84, 1, 0},
    [GGUF_T_Q3_K] = {"Q3_K", 256, 110, 1, 0},
    [GGUF_T_Q4_K] = {"Q4_K", 256, 144, 1, 0},
    [GGUF_T_Q5_K] = {"Q5_K", 256, 176, 1, 0},
    [GGUF_T_Q6_K] = {"Q6_K", 256, 210, 1, 0},
    [GGUF_T_Q8_K] = {"Q8_K", 256, 292, 1, 0},
    [GGUF_T_IQ2_XXS] = {"IQ2_XXS", 256, 66, 1, 0},
    [GGUF_T_IQ2_XS] = {"IQ2_XS", 256, 74, 1, 0},
    [GGUF_T_IQ3_XXS] = {"IQ3_XXS", 256, 98, 1, 0},
    [GGUF_T_IQ1_S] = {"IQ1_S", 256, 50, 1, 0},
    [GGUF_T_IQ4_NL] = {"IQ4_NL", 32, 18, 1, 0},
    [GGUF_T_IQ3_S] = {"IQ3_S", 256, 110, 1, 0},
    [GGUF_T_IQ2_S] = {"IQ2_S", 256, 82, 1, 0},
    [GGUF_T_IQ4_XS] = {"IQ4_XS", 256, 136, 1, 0},
    [GGUF_T_I8] = {"I8", 1, 1, 0, 0},
    [GGUF_T_I16] = {"I16", 1, 2, 0, 0},
    [GGUF_T_I32] = {"I32", 1, 4, 0, 0},
    [GGUF_T_I64] = {"I64", 1, 8, 0, 0},
    [GGUF_T_F64] = {"F64", 1, 8, 0, 0},
    [GGUF_T_IQ1_M] = {"IQ1_M", 256, 56, 1, 0},
    [GGUF_T_BF16] = {"BF16", 1, 2, 0, 0},
    [GGUF_T_Q4_0_4_4] = {"Q4_0_4_4", 32, 18, 1, 1},
    [GGUF_T_Q4_0_4_8] = {"Q4_0_4_8", 32, 18, 1, 1},
    [GGUF_T_Q4_0_8_8] = {"Q4_0_8_8", 32, 18, 1, 1},
    [GGUF_T_TQ1_0] = {"TQ1_0", 256, 54, 1, 0},
    [GGUF_T_TQ2_0] = {"TQ2_0", 256, 66, 1, 0},
    [GGUF_T_IQ4_NL_4_4] = {"IQ4_NL_4_4", 32, 18, 1, 1},
    [GGUF_T_IQ4_NL_4_8] = {"IQ4_NL_4_8", 32, 18, 1, 1},
    [GGUF_T_IQ4_NL_8_8] = {"IQ4_NL_8_8", 32, 18, 1, 1},
    [GGUF_T_MXFP4] = {"MXFP4", 32, 17, 1, 0},
    [GGUF_T_NVFP4] = {"NVFP4", 64, 36, 1, 0},
    [GGUF_T_Q1_0] = {"Q1_0", 128, 18, 1, 0},
};

const gguf_type_info *gguf_type_get(uint32_t type)
{
    if (type >= GGUF_T_COUNT || !type_table[type].name) return NULL;
    return &type_table[type];
}

const char *gguf_type_str(uint32_t type)
{
    const gguf_type_info *t = gguf_type_get(type);
    return t ? t->name : NULL;
}

int gguf_type_parse(const char *name, uint32_t *type)
{
    if (!name) return GGUF_E_INVALID;
    for (uint32_t i = 0; i < GGUF_T_COUNT; i++) {
        if (type_table[i].name && strcasecmp(type_table[i].name, name) == 0) {
            if (type) *type = i;
            return GGUF_OK;
        }
    }
    return GGUF_E_NOT_FOUND;
}

uint64_t gguf_row_bytes(uint32_t type, uint64_t ne0)
{
    const gguf_type_info *t = gguf_type_get(type);
    uint64_t r;
    if (!t || ne0 % t->block_size) return 0;
    if (!gg_mul(ne0 / t->block_size, t->type_size, &r)) return 0;
    return r;
}

static const char *const vtype_names[GGUF_VT_COUNT] = {
    "UINT8", "INT8", "UINT16", "INT16", "UINT32", "INT32", "FLOAT32",
    "BOOL", "STRING", "ARRAY", "UINT64", "INT64", "FLOAT64",
};

const char *gguf_vtype_name(uint32_t vtype)
{
    return vtype < GGUF_VT_COUNT ? vtype_names[vtype] : NULL;
}

size_t gguf_vtype_size(uint32_t vtype)
{
    static const unsigned char sizes[GGUF_VT_COUNT] = {1, 1, 2, 2, 4, 4, 4, 1, 0, 0, 8, 8, 8};
    return vtype < GGUF_VT_COUNT ? sizes[vtype] : 0;
}

/* llama.cpp's enum llama_ftype, the values of general.file_type. */
static const struct { uint32_t id; const char *name; } file_types[] = {
    {0, "ALL_F32"}, {1, "F16"}, {2, "Q4_0"}, {3, "Q4_1"}, {4, "Q4_1_SOME_F16"},
    {7, "Q8_0"}, {8, "Q5_0"}, {9, "Q5_1"}, {10, "Q2_K"}, {11, "Q3_K_S"},
    {12, "Q3_K_M"}, {13, "Q3_K_L"}, {14, "Q4_K_S"}, {15, "Q4_K_M"}, {16, "Q5_K_S"},
    {17, "Q5_K_M"}, {18, "Q6_K"}, {19, "IQ2_XXS"}, {20, "IQ2_XS"}, {21, "Q2_K_S"},
    {22, "IQ3_XS"}, {23, "IQ3_XXS"}, {24, "IQ1_S"}, {25, "IQ4_NL"}, {26, "IQ3_S"},
    {27, "IQ3_M"}, {28, "IQ2_S"}, {29, "IQ2_M"}, {30, "IQ4_XS"}, {31, "IQ1_M"},
    {32, "BF16"}, {33, "Q4_0_4_4"}, {34, "Q4_0_4_8"}, {35, "Q4_0_8_8"},
    {36, "TQ1_0"}, {37, "TQ2_0"}, {38, "MXFP4_MOE"}, {39, "NVFP4"}, {40, "Q1_0"},
    {1024, "GUESSED"},
};

const char *gguf_file_type_name(uint32_t file_type)
{
    for (size_t i = 0; i < sizeof file_types / sizeof file_types[0]; i++)
        if (file_types[i].id == file_type) return file_types[i].name;
    return NULL;
}

int gguf_swap_elements(uint32_t type, void *dst, const void *src, uint64_t n)
{
    const gguf_type_info *ti = gguf_type_get(type);
    if (!ti || ti->quantized || ti->block_size != 1) return GGUF_E_UNSUPPORTED;
    const size_t es = ti->type_size;
    unsigned char *d = dst;
    const unsigned char *s = src;
    for (uint64_t i = 0; i < n; i++, d += es, s += es) {
        /* element by element, so that dst may be src */
        for (size_t k = 0; k < es / 2; k++) {
            unsigned char a = s[k], b = s[es - 1 - k];
            d[k] = b;
            d[es - 1 - k] = a;
        }
        if (es % 2) d[es / 2] = s[es / 2];
    }
    return GGUF_OK;
}
