#include "util/json.h"
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#define MAX_DEPTH 64

typedef struct {
    const char *b;
    size_t len, pos;
    const char *what;
    cd_error *err;
} jp;

static cd_status fail(jp *p, const char *msg) {
    return cd_err(p->err, CD_E_MODEL, "%s: malformed JSON at byte %zu: %s", p->what, p->pos, msg);
}

static void skip_ws(jp *p) {
    while (p->pos < p->len && strchr(" \t\r\n", p->b[p->pos]) && p->b[p->pos]) p->pos++;
}

static int hexval(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

static cd_status parse_string(jp *p, char **out) {
    p->pos++; /* opening quote */
    size_t cap = 16, n = 0;
    char *s = malloc(cap);
    if (!s) return cd_err(p->err, CD_E_NOMEM, "out of memory");
    for (;;) {
        if (p->pos >= p->len) {
            free(s);
            return fail(p, "unterminated string");
        }
        unsigned char c = (unsigned char)p->b[p->pos++];
        char enc[4];
        int ne = 0;
        if (c == '"') break;
        if (c < 0x20) {
            free(s);
            return fail(p, "control character in a string");
        }
        if (c == '\\') {
            if (p->pos >= p->len) {
                free(s);
                return fail(p, "unterminated escape");
            }
            char e = p->b[p->pos++];
            switch (e) {
            case '"': enc[ne++] = '"'; break;
            case '\\': enc[ne++] = '\\'; break;
            case '/': enc[ne++] = '/'; break;
            case 'b': enc[ne++] = '\b'; break;
            case 'f': enc[ne++] = '\f'; break;
            case 'n': enc[ne++] = '\n'; break;
            case 'r': enc[ne++] = '\r'; break;
            case 't': enc[ne++] = '\t'; break;
            case 'u': {
                if (p->pos + 4 > p->len) {
                    free(s);
                    return fail(p, "short \\u escape");
                }
                unsigned cp = 0;
                for (int k = 0; k < 4; k++) {
                    int h = hexval(p->b[p->pos + (size_t)k]);
                    if (h < 0) {
                        free(s);
                        return fail(p, "bad \\u escape");
                    }
                    cp = cp * 16 + (unsigned)h;
                }
                p->pos += 4;
                if (cp == 0) {
                    free(s);
                    return fail(p, "\\u0000 in a string");
                }
                /* surrogates are kept as their (invalid) 3-byte forms: names here are ASCII */
                if (cp < 0x80)
                    enc[ne++] = (char)cp;
                else if (cp < 0x800) {
                    enc[ne++] = (char)(0xC0 | (cp >> 6));
                    enc[ne++] = (char)(0x80 | (cp & 0x3F));
                } else {
                    enc[ne++] = (char)(0xE0 | (cp >> 12));
                    enc[ne++] = (char)(0x80 | ((cp >> 6) & 0x3F));
                    enc[ne++] = (char)(0x80 | (cp & 0x3F));
                }
                break;
            }
            default: free(s); return fail(p, "unknown escape");
            }
        } else {
            enc[ne++] = (char)c;
        }
        if (n + (size_t)ne + 1 > cap) {
            while (n + (size_t)ne + 1 > cap) cap *= 2;
            char *t = realloc(s, cap);
            if (!t) {
                free(s);
                return cd_err(p->err, CD_E_NOMEM, "out of memory");
            }
            s = t;
        }
        memcpy(s + n, enc, (size_t)ne);
        n += (size_t)ne;
    }
    s[n] = 0;
    *out = s;
    return CD_OK;
}

static cd_status parse_value(jp *p, cd_json *out, int depth);

static cd_status push(jp *p, cd_json *o, int *cap, const cd_json *v, char *key) {
    if (o->n == *cap) {
        int nc = *cap ? *cap * 2 : 8;
        cd_json *ni = realloc(o->items, sizeof *ni * (size_t)nc);
        if (!ni) return cd_err(p->err, CD_E_NOMEM, "out of memory");
        o->items = ni;
        if (o->kind == CD_JSON_OBJ) {
            char **nk = realloc(o->keys, sizeof *nk * (size_t)nc);
            if (!nk) return cd_err(p->err, CD_E_NOMEM, "out of memory");
            o->keys = nk;
        }
        *cap = nc;
    }
    o->items[o->n] = *v;
    if (o->kind == CD_JSON_OBJ) o->keys[o->n] = key;
    o->n++;
    return CD_OK;
}

static cd_status parse_container(jp *p, cd_json *out, int depth, bool obj) {
    out->kind = obj ? CD_JSON_OBJ : CD_JSON_ARR;
    int cap = 0;
    p->pos++;
    skip_ws(p);
    if (p->pos < p->len && p->b[p->pos] == (obj ? '}' : ']')) {
        p->pos++;
        return CD_OK;
    }
    for (;;) {
        char *key = NULL;
        skip_ws(p);
        if (obj) {
            if (p->pos >= p->len || p->b[p->pos] != '"') return fail(p, "expected a key string");
            cd_status st = parse_string(p, &key);
            if (st) return st;
            skip_ws(p);
            if (p->pos >= p->len || p->b[p->pos] != ':') {
                free(key);
                return fail(p, "expected ':'");
            }
            p->pos++;
        }
        cd_json v;
        memset(&v, 0, sizeof v);
        cd_status st = parse_value(p, &v, depth + 1);
        if (!st) st = push(p, out, &cap, &v, key);
        if (st) {
            free(key);
            cd_json_free(&v);
            return st;
        }
        skip_ws(p);
        if (p->pos >= p->len) return fail(p, obj ? "unterminated object" : "unterminated array");
        char c = p->b[p->pos++];
        if (c == ',') continue;
        if (c == (obj ? '}' : ']')) return CD_OK;
        p->pos--;
        return fail(p, obj ? "expected ',' or '}'" : "expected ',' or ']'");
    }
}

static cd_status parse_value(jp *p, cd_json *out, int depth) {
    memset(out, 0, sizeof *out);
    if (depth > MAX_DEPTH) return fail(p, "nested too deeply");
    skip_ws(p);
    if (p->pos >= p->len) return fail(p, "unexpected end of input");
    char c = p->b[p->pos];
    if (c == '{' || c == '[') return parse_container(p, out, depth, c == '{');
    if (c == '"') {
        out->kind = CD_JSON_STR;
        return parse_string(p, &out->str);
    }
    static const char *const words[] = {"null", "true", "false"};
    for (int w = 0; w < 3; w++) {
        size_t l = strlen(words[w]);
        if (p->len - p->pos >= l && !memcmp(p->b + p->pos, words[w], l)) {
            p->pos += l;
            out->kind = w ? CD_JSON_BOOL : CD_JSON_NULL;
            out->num = w == 1;
            return CD_OK;
        }
    }
    if (c == '-' || (c >= '0' && c <= '9')) {
        char tmp[64];
        size_t n = 0;
        while (p->pos + n < p->len && n < sizeof tmp - 1 && strchr("+-0123456789.eE", p->b[p->pos + n]) &&
               p->b[p->pos + n])
            n++;
        memcpy(tmp, p->b + p->pos, n);
        tmp[n] = 0;
        char *end;
        out->num = strtod(tmp, &end);
        if (end != tmp + n || n == 0) return fail(p, "bad number");
        out->kind = CD_JSON_NUM;
        p->pos += n;
        return CD_OK;
    }
    return fail(p, "unexpected character");
}

cd_status cd_json_parse(const char *buf, size_t len, const char *what, cd_json *out, cd_error *err) {
    jp p = {.b = buf, .len = len, .pos = 0, .what = what, .err = err};
    cd_status st = parse_value(&p, out, 0);
    if (!st) {
        skip_ws(&p);
        if (p.pos != p.len) st = fail(&p, "trailing characters after the value");
    }
    if (st) {
        cd_json_free(out);
        memset(out, 0, sizeof *out);
    }
    return st;
}

void cd_json_free(cd_json *j) {
    if (!j) return;
    free(j->str);
    for (int i = 0; i < j->n; i++) {
        cd_json_free(&j->items[i]);
        if (j->keys) free(j->keys[i]);
    }
    free(j->items);
    free(j->keys);
    memset(j, 0, sizeof *j);
}

const cd_json *cd_json_get(const cd_json *j, const char *key) {
    if (!j || j->kind != CD_JSON_OBJ) return NULL;
    for (int i = 0; i < j->n; i++)
        if (!strcmp(j->keys[i], key)) return &j->items[i];
    return NULL;
}
