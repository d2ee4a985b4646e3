/* Optional native accelerator for the per-message cost of a request that brings messages no
 * earlier request had (a cold proxy worker): canonical bytes, chained digests and store keys of
 * a whole history, byte for byte what `core/identity.py` computes in Python (the contract,
 * property-tested against this module in tests/core/test_accelerator.py).
 *
 * Only the common shape is handled here (a dict whose identifying fields hold strings, text
 * parts and reasoning blocks); anything else is handed back to Python at its index, which then
 * computes it exactly as without this module. BLAKE2b is written out (RFC 7693) because
 * hashlib's is not reachable from C. */

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

/* ---------------------------------------------------------------- BLAKE2b (RFC 7693) */

static const uint64_t B2_IV[8] = {
    0x6a09e667f3bcc908ULL, 0xbb67ae8584caa73bULL, 0x3c6ef372fe94f82bULL,
    0xa54ff53a5f1d36f1ULL, 0x510e527fade682d1ULL, 0x9b05688c2b3e6c1fULL,
    0x1f83d9abfb41bd6bULL, 0x5be0cd19137e2179ULL,
};

/* Rounds 10 and 11 reuse rows 0 and 1 (`B2_SIGMA[r % 10]`). */
static const uint8_t B2_SIGMA[10][16] = {
    {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15},
    {14, 10, 4, 8, 9, 15, 13, 6, 1, 12, 0, 2, 11, 7, 5, 3},
    {11, 8, 12, 0, 5, 2, 15, 13, 10, 14, 3, 6, 7, 1, 9, 4},
    {7, 9, 3, 1, 13, 12, 11, 14, 2, 6, 5, 10, 4, 0, 15, 8},
    {9, 0, 5, 7, 2, 4, 10, 15, 14, 1, 11, 12, 6, 8, 3, 13},
    {2, 12, 6, 10, 0, 11, 8, 3, 4, 13, 7, 5, 15, 14, 1, 9},
    {12, 5, 1, 15, 14, 13, 4, 10, 0, 7, 6, 3, 9, 2, 8, 11},
    {13, 11, 7, 14, 12, 1, 3, 9, 5, 0, 15, 4, 8, 6, 2, 10},
    {6, 15, 14, 9, 11, 3, 0, 8, 12, 2, 13, 7, 1, 4, 10, 5},
    {10, 2, 8, 4, 7, 6, 1, 5, 15, 11, 9, 14, 3, 12, 13, 0},
};

typedef struct {
    uint64_t h[8];
    uint64_t t[2];
    uint8_t buf[128];
    size_t buflen;
    size_t outlen;
} b2_state;

#define ROTR64(x, n) (((x) >> (n)) | ((x) << (64 - (n))))

static uint64_t load64(const uint8_t *p) {
    return ((uint64_t)p[0]) | ((uint64_t)p[1] << 8) | ((uint64_t)p[2] << 16) |
           ((uint64_t)p[3] << 24) | ((uint64_t)p[4] << 32) | ((uint64_t)p[5] << 40) |
           ((uint64_t)p[6] << 48) | ((uint64_t)p[7] << 56);
}

#define B2_G(r, i, a, b, c, d)                                                                 \
    do {                                                                                       \
        a = a + b + m[B2_SIGMA[(r) % 10][2 * (i)]];                                            \
        d = ROTR64(d ^ a, 32);                                                                 \
        c = c + d;                                                                             \
        b = ROTR64(b ^ c, 24);                                                                 \
        a = a + b + m[B2_SIGMA[(r) % 10][2 * (i) + 1]];                                        \
        d = ROTR64(d ^ a, 16);                                                                 \
        c = c + d;                                                                             \
        b = ROTR64(b ^ c, 63);                                                                 \
    } while (0)

#define B2_ROUND(r)                                                                            \
    do {                                                                                       \
        B2_G(r, 0, v[0], v[4], v[8], v[12]);                                                   \
        B2_G(r, 1, v[1], v[5], v[9], v[13]);                                                   \
        B2_G(r, 2, v[2], v[6], v[10], v[14]);                                                  \
        B2_G(r, 3, v[3], v[7], v[11], v[15]);                                                  \
        B2_G(r, 4, v[0], v[5], v[10], v[15]);                                                  \
        B2_G(r, 5, v[1], v[6], v[11], v[12]);                                                  \
        B2_G(r, 6, v[2], v[7], v[8], v[13]);                                                   \
        B2_G(r, 7, v[3], v[4], v[9], v[14]);                                                   \
    } while (0)

static void b2_compress(b2_state *s, const uint8_t *block, int last) {
    uint64_t m[16], v[16];
    for (int i = 0; i < 16; i++) m[i] = load64(block + 8 * i);
    for (int i = 0; i < 8; i++) {
        v[i] = s->h[i];
        v[i + 8] = B2_IV[i];
    }
    v[12] ^= s->t[0];
    v[13] ^= s->t[1];
    if (last) v[14] = ~v[14];
    /* The rounds written out: each round's message schedule becomes constant offsets. */
    B2_ROUND(0);
    B2_ROUND(1);
    B2_ROUND(2);
    B2_ROUND(3);
    B2_ROUND(4);
    B2_ROUND(5);
    B2_ROUND(6);
    B2_ROUND(7);
    B2_ROUND(8);
    B2_ROUND(9);
    B2_ROUND(10);
    B2_ROUND(11);
    for (int i = 0; i < 8; i++) s->h[i] ^= v[i] ^ v[i + 8];
}

static void b2_init(b2_state *s, size_t outlen) {
    for (int i = 0; i < 8; i++) s->h[i] = B2_IV[i];
    s->h[0] ^= 0x01010000ULL ^ (uint64_t)outlen; /* no key, fanout 1, depth 1 */
    s->t[0] = s->t[1] = 0;
    s->buflen = 0;
    s->outlen = outlen;
}

/* `b2_init` with a personalisation string (16 bytes, zero-padded: hashlib's `person`). */
static void b2_init_person(b2_state *s, size_t outlen, const uint8_t person[16]) {
    b2_init(s, outlen);
    s->h[6] ^= load64(person);
    s->h[7] ^= load64(person + 8);
}

static void b2_count(b2_state *s, size_t n) {
    s->t[0] += (uint64_t)n;
    if (s->t[0] < (uint64_t)n) s->t[1]++;
}

static void b2_update(b2_state *s, const uint8_t *in, size_t len) {
    while (len > 0) {
        if (s->buflen == 128) { /* full, and more follows: not the last block */
            b2_count(s, 128);
            b2_compress(s, s->buf, 0);
            s->buflen = 0;
        }
        size_t take = 128 - s->buflen;
        if (take > len) take = len;
        memcpy(s->buf + s->buflen, in, take);
        s->buflen += take;
        in += take;
        len -= take;
    }
}

static const char HEX[] = "0123456789abcdef";

static void b2_final(b2_state *s, uint8_t *out) {
    b2_count(s, s->buflen);
    memset(s->buf + s->buflen, 0, 128 - s->buflen);
    b2_compress(s, s->buf, 1);
    for (size_t i = 0; i < s->outlen; i++) out[i] = (uint8_t)(s->h[i / 8] >> (8 * (i % 8)));
}

/* The digest as a new str of lowercase hex digits (what `hexdigest()` returns). */
static PyObject *b2_hexdigest(b2_state *s) {
    uint8_t digest[64];
    b2_final(s, digest);
    PyObject *out = PyUnicode_New((Py_ssize_t)(2 * s->outlen), 127);
    if (out == NULL) return NULL;
    Py_UCS1 *w = PyUnicode_1BYTE_DATA(out);
    for (size_t i = 0; i < s->outlen; i++) {
        w[2 * i] = (Py_UCS1)HEX[digest[i] >> 4];
        w[2 * i + 1] = (Py_UCS1)HEX[digest[i] & 15];
    }
    return out;
}

/* ---------------------------------------------------------------- growable bytes */

typedef struct {
    char *data;
    Py_ssize_t len;
    Py_ssize_t cap;
} buffer;

static int buf_reserve(buffer *b, Py_ssize_t extra) {
    if (b->len + extra <= b->cap) return 0;
    Py_ssize_t cap = b->cap ? b->cap : 256;
    while (cap < b->len + extra) cap *= 2;
    char *data = PyMem_Realloc(b->data, (size_t)cap);
    if (data == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    b->data = data;
    b->cap = cap;
    return 0;
}

static int buf_put(buffer *b, const char *s, Py_ssize_t n) {
    if (buf_reserve(b, n) < 0) return -1;
    memcpy(b->data + b->len, s, (size_t)n);
    b->len += n;
    return 0;
}

static int buf_char(buffer *b, char c) { return buf_put(b, &c, 1); }

/* Whether any of the 8 bytes in `x` is below 0x20, `"` or `\` (a byte equal to k is a zero
 * byte of x ^ k*0x01..01). Exact as to whether there is one: a borrow flags a byte only past a
 * true one, and a byte >= 0x80 (UTF-8 beyond ASCII) is never flagged by itself. */
static int may_need_escape(uint64_t x) {
    const uint64_t ones = 0x0101010101010101ULL, highs = 0x8080808080808080ULL;
    uint64_t quote = x ^ (ones * '"'), backslash = x ^ (ones * '\\');
    uint64_t below = (x - ones * 0x20) & ~x;
    quote = (quote - ones) & ~quote;
    backslash = (backslash - ones) & ~backslash;
    return ((below | quote | backslash) & highs) != 0;
}

/* What `json.encoder.encode_basestring` writes for UTF-8 text, without its quotes: escapes for
 * `"`, `\` and control characters below 0x20, everything else as it is (every byte of a
 * multi-byte UTF-8 sequence is >= 0x80, so escaping byte by byte is escaping by character). */
static int buf_escaped(buffer *b, const char *s, Py_ssize_t n) {
    if (buf_reserve(b, n) < 0) return -1;
    Py_ssize_t start = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        /* Eight bytes at a time past text that needs no escape (most of it). */
        while (i + 8 <= n) {
            uint64_t word;
            memcpy(&word, s + i, 8);
            if (may_need_escape(word)) break;
            i += 8;
        }
        if (i >= n) break;
        unsigned char c = (unsigned char)s[i];
        if (c >= 0x20 && c != '"' && c != '\\') continue;
        if (buf_put(b, s + start, i - start) < 0) return -1;
        char esc[6] = {'\\', 0, 0, 0, 0, 0};
        Py_ssize_t len = 2;
        switch (c) {
            case '"': esc[1] = '"'; break;
            case '\\': esc[1] = '\\'; break;
            case '\b': esc[1] = 'b'; break;
            case '\f': esc[1] = 'f'; break;
            case '\n': esc[1] = 'n'; break;
            case '\r': esc[1] = 'r'; break;
            case '\t': esc[1] = 't'; break;
            default:
                esc[1] = 'u';
                esc[2] = '0';
                esc[3] = '0';
                esc[4] = HEX[c >> 4];
                esc[5] = HEX[c & 15];
                len = 6;
        }
        if (buf_put(b, esc, len) < 0) return -1;
        start = i + 1;
    }
    return buf_put(b, s + start, n - start);
}

/* ---------------------------------------------------------------- what Python configures */

static PyObject *TURN_KEY = NULL;       /* "turn" */
static PyObject *EXTRAS_KEY = NULL;     /* "provider_specific_fields" */
static PyObject *BLOCK_TYPES = NULL;    /* tuple of str: reasoning block types */
static PyObject *CARRIER_KEYS = NULL;   /* tuple of str: message keys that hold reasoning */
static const char *SEPARATOR = NULL;    /* LiteLLM's thought-signature separator in call ids */
static Py_ssize_t SEPARATOR_LEN = 0;
static PyObject *SEPARATOR_OBJ = NULL;
static PyObject *K_ROLE, *K_CONTENT, *K_TOOL_CALLS, *K_TOOL_CALL_ID, *K_TYPE, *K_TEXT, *K_ID,
    *K_FUNCTION, *K_NAME;

#define FACT_TURN 1
#define FACT_CALL_EXTRAS 2

/* Result of reading one message: 1 read, 0 not a shape handled here (Python reads it), -1 error. */
#define HANDLED 1
#define NOT_HANDLED 0

/* UTF-8 of a str, or NULL with no error set when it has none (a lone surrogate: Python's
 * `.encode()` raises there, so Python is left to do the same). */
static const char *utf8_of(PyObject *text, Py_ssize_t *size) {
    const char *s = PyUnicode_AsUTF8AndSize(text, size);
    if (s == NULL) PyErr_Clear();
    return s;
}

static const char *find_separator(const char *s, Py_ssize_t n) {
    if (SEPARATOR_LEN == 0 || n < SEPARATOR_LEN) return NULL;
    for (Py_ssize_t i = 0; i + SEPARATOR_LEN <= n; i++) {
        if (s[i] == SEPARATOR[0] && memcmp(s + i, SEPARATOR, (size_t)SEPARATOR_LEN) == 0)
            return s + i;
    }
    return NULL;
}

static int is_block_type(PyObject *kind) {
    Py_ssize_t n = PyTuple_GET_SIZE(BLOCK_TYPES);
    for (Py_ssize_t i = 0; i < n; i++) {
        int eq = PyUnicode_Compare(kind, PyTuple_GET_ITEM(BLOCK_TYPES, i));
        if (eq == -1 && PyErr_Occurred()) return -1;
        if (eq == 0) return 1;
    }
    return 0;
}

/* A quoted string (`_quote(text)`), `text` cut at the separator when `cut`. */
static int put_quoted(buffer *b, PyObject *text, int cut) {
    Py_ssize_t n;
    const char *s = utf8_of(text, &n);
    if (s == NULL) return NOT_HANDLED;
    if (cut) {
        const char *at = find_separator(s, n);
        if (at != NULL) n = at - s;
    }
    if (buf_char(b, '"') < 0 || buf_escaped(b, s, n) < 0 || buf_char(b, '"') < 0) return -1;
    return HANDLED;
}

/* Looks `key` up in dict `d`: a borrowed value, NULL when missing (or on error, set). */
static PyObject *get(PyObject *d, PyObject *key) { return PyDict_GetItemWithError(d, key); }

/* `identity.read(message)` into `b` (its canonical bytes), `*decided` and `*facts`. */
static int read_message(PyObject *message, buffer *b, int *decided, int *facts) {
    PyObject *role = get(message, K_ROLE);
    if (role == NULL && PyErr_Occurred()) return -1;
    PyObject *content = get(message, K_CONTENT);
    if (content == NULL && PyErr_Occurred()) return -1;
    PyObject *calls = get(message, K_TOOL_CALLS);
    if (calls == NULL && PyErr_Occurred()) return -1;
    PyObject *call_id = get(message, K_TOOL_CALL_ID);
    if (call_id == NULL && PyErr_Occurred()) return -1;
    if (role == Py_None) role = NULL;
    if (content == Py_None) content = NULL;
    if (calls == Py_None) calls = NULL;
    if (call_id == Py_None) call_id = NULL;
    if ((role && !PyUnicode_CheckExact(role)) || (call_id && !PyUnicode_CheckExact(call_id)) ||
        (calls && !PyList_CheckExact(calls)))
        return NOT_HANDLED;
    *decided = 1;
    *facts = 0;
    int r;

    /* role */
    if (role && PyUnicode_GET_LENGTH(role) > 0) {
        if (buf_char(b, '[') < 0) return -1;
        if ((r = put_quoted(b, role, 0)) != HANDLED) return r;
    } else if (buf_put(b, "[\"\"", 3) < 0) {
        return -1;
    }

    /* content */
    if (content == NULL || PyUnicode_CheckExact(content)) {
        if (content && PyUnicode_GET_LENGTH(content) > 0) {
            if (buf_put(b, ",[", 2) < 0) return -1;
            if ((r = put_quoted(b, content, 0)) != HANDLED) return r;
            if (buf_char(b, ']') < 0) return -1;
        } else if (buf_put(b, ",[]", 3) < 0) {
            return -1;
        }
    } else if (PyList_CheckExact(content)) {
        /* the text parts joined: written as found, the quotes put around afterwards */
        if (buf_put(b, ",[\"", 3) < 0) return -1;
        Py_ssize_t opened = b->len;
        Py_ssize_t n = PyList_GET_SIZE(content);
        for (Py_ssize_t i = 0; i < n; i++) {
            PyObject *part = PyList_GET_ITEM(content, i);
            if (!PyDict_CheckExact(part)) return NOT_HANDLED;
            PyObject *kind = get(part, K_TYPE);
            if (kind == NULL) {
                if (PyErr_Occurred()) return -1;
                return NOT_HANDLED; /* None: neither text nor a reasoning block */
            }
            if (!PyUnicode_CheckExact(kind)) return NOT_HANDLED;
            if (PyUnicode_CompareWithASCIIString(kind, "text") == 0) {
                PyObject *text = get(part, K_TEXT);
                if (text == NULL) {
                    if (PyErr_Occurred()) return -1;
                } else {
                    if (!PyUnicode_CheckExact(text)) return NOT_HANDLED;
                    Py_ssize_t size;
                    const char *s = utf8_of(text, &size);
                    if (s == NULL) return NOT_HANDLED;
                    if (buf_escaped(b, s, size) < 0) return -1;
                }
            } else {
                int block = is_block_type(kind);
                if (block < 0) return -1;
                if (!block) return NOT_HANDLED;
            }
            int turn = PyDict_Contains(part, TURN_KEY);
            if (turn < 0) return -1;
            if (turn) *facts |= FACT_TURN;
        }
        if (b->len == opened) {
            b->len -= 3; /* no text: no content */
            if (buf_put(b, ",[]", 3) < 0) return -1;
        } else if (buf_put(b, "\"]", 2) < 0) {
            return -1;
        }
    } else {
        return NOT_HANDLED;
    }

    /* tool calls */
    if (calls && PyList_GET_SIZE(calls) > 0) {
        if (buf_put(b, ",[", 2) < 0) return -1;
        Py_ssize_t n = PyList_GET_SIZE(calls);
        for (Py_ssize_t i = 0; i < n; i++) {
            PyObject *call = PyList_GET_ITEM(calls, i);
            if (!PyDict_CheckExact(call)) return NOT_HANDLED;
            PyObject *identifier = get(call, K_ID);
            if (identifier == NULL && PyErr_Occurred()) return -1;
            PyObject *function = get(call, K_FUNCTION);
            if (function == NULL && PyErr_Occurred()) return -1;
            PyObject *name = NULL;
            if (function != NULL && PyDict_CheckExact(function)) {
                name = get(function, K_NAME);
                if (name == NULL && PyErr_Occurred()) return -1;
                int has = PyDict_Contains(function, TURN_KEY);
                if (has < 0) return -1;
                if (has) *facts |= FACT_TURN;
                has = PyDict_Contains(function, EXTRAS_KEY);
                if (has < 0) return -1;
                if (has) *facts |= FACT_CALL_EXTRAS;
            } else if (function != NULL && PyDict_Check(function)) {
                return NOT_HANDLED; /* a dict subclass: Python decides */
            } else if (function != NULL && function != Py_None) {
                *decided = 0;
            }
            if (identifier == Py_None) identifier = NULL;
            if (name == Py_None) name = NULL;
            if ((identifier && !PyUnicode_CheckExact(identifier)) ||
                (name && !PyUnicode_CheckExact(name)))
                return NOT_HANDLED;
            int has = PyDict_Contains(call, TURN_KEY);
            if (has < 0) return -1;
            if (has) *facts |= FACT_TURN;
            has = PyDict_Contains(call, EXTRAS_KEY);
            if (has < 0) return -1;
            if (has) *facts |= FACT_CALL_EXTRAS;
            if (i && buf_char(b, ',') < 0) return -1;
            if (buf_char(b, '[') < 0) return -1;
            if (identifier) {
                if ((r = put_quoted(b, identifier, 1)) != HANDLED) return r;
            } else if (buf_put(b, "\"\"", 2) < 0) {
                return -1;
            }
            if (buf_char(b, ',') < 0) return -1;
            if (name) {
                if ((r = put_quoted(b, name, 0)) != HANDLED) return r;
            } else if (buf_put(b, "\"\"", 2) < 0) {
                return -1;
            }
            if (buf_char(b, ']') < 0) return -1;
        }
        if (buf_char(b, ']') < 0) return -1;
    } else if (buf_put(b, ",[]", 3) < 0) {
        return -1;
    }

    /* tool call id */
    if (call_id && PyUnicode_GET_LENGTH(call_id) > 0) {
        if (buf_char(b, ',') < 0) return -1;
        if ((r = put_quoted(b, call_id, 1)) != HANDLED) return r;
        if (buf_char(b, ']') < 0) return -1;
    } else if (buf_put(b, ",\"\"]", 4) < 0) {
        return -1;
    }
    return HANDLED;
}

/* `extract.own_fields_carry_nothing(message)`. */
static int own_fields_carry_nothing(PyObject *message) {
    Py_ssize_t n = PyTuple_GET_SIZE(CARRIER_KEYS);
    for (Py_ssize_t i = 0; i < n; i++) {
        int has = PyDict_Contains(message, PyTuple_GET_ITEM(CARRIER_KEYS, i));
        if (has != 0) return has < 0 ? -1 : 0;
    }
    PyObject *content = get(message, K_CONTENT);
    if (content == NULL && PyErr_Occurred()) return -1;
    return content == NULL || !PyList_CheckExact(content);
}

static int append_index(PyObject *list, Py_ssize_t index) {
    PyObject *value = PyLong_FromSsize_t(index);
    if (value == NULL) return -1;
    int r = PyList_Append(list, value);
    Py_DECREF(value);
    return r;
}

/* ---------------------------------------------------------------- walk */

PyDoc_STRVAR(walk_doc,
"walk(messages, start, previous) -> (stop, shapes, digests, users, assistants, to_read,\n"
"    flagged, unsure)\n\n"
"`identity.read` and `identity.chain` of `messages[start:stop]`, chained from the digest\n"
"`previous`; `stop` is the first index from `start` on that is not handled here (or the\n"
"length). The index lists say which of them are user and assistant messages, which assistant\n"
"messages may carry reasoning (read in Python), which carry `turn`, and where equality does\n"
"not decide the canonical bytes.");

static PyObject *walk(PyObject *self, PyObject *args) {
    PyObject *messages, *previous;
    Py_ssize_t start;
    if (!PyArg_ParseTuple(args, "O!nU", &PyList_Type, &messages, &start, &previous)) return NULL;
    if (TURN_KEY == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "configure() first");
        return NULL;
    }
    Py_ssize_t prev_len;
    const char *prev = PyUnicode_AsUTF8AndSize(previous, &prev_len);
    if (prev == NULL) return NULL;
    char last[64];
    if (prev_len > (Py_ssize_t)sizeof(last)) {
        PyErr_SetString(PyExc_ValueError, "previous is not a digest");
        return NULL;
    }
    memcpy(last, prev, (size_t)prev_len);
    PyObject *shapes = PyList_New(0), *digests = PyList_New(0), *users = PyList_New(0),
             *assistants = PyList_New(0), *to_read = PyList_New(0), *flagged = PyList_New(0),
             *unsure = PyList_New(0);
    buffer b = {NULL, 0, 0};
    Py_ssize_t index = start < 0 ? 0 : start;
    if (!shapes || !digests || !users || !assistants || !to_read || !flagged || !unsure)
        goto error;
    for (; index < PyList_GET_SIZE(messages); index++) {
        PyObject *message = PyList_GET_ITEM(messages, index);
        if (!PyDict_CheckExact(message)) break;
        Py_INCREF(message); /* kept alive while its fields are read (a key's __eq__ may run) */
        b.len = 0;
        int decided, facts;
        int r = read_message(message, &b, &decided, &facts);
        if (r != HANDLED) {
            Py_DECREF(message);
            if (r < 0) goto error;
            break;
        }
        PyObject *shape = PyBytes_FromStringAndSize(b.data, b.len);
        b2_state s;
        b2_init(&s, 16);
        b2_update(&s, (const uint8_t *)last, (size_t)prev_len);
        b2_update(&s, (const uint8_t *)b.data, (size_t)b.len);
        PyObject *digest = shape ? b2_hexdigest(&s) : NULL;
        if (digest == NULL || PyList_Append(shapes, shape) < 0 ||
            PyList_Append(digests, digest) < 0) {
            Py_XDECREF(shape);
            Py_XDECREF(digest);
            Py_DECREF(message);
            goto error;
        }
        memcpy(last, PyUnicode_1BYTE_DATA(digest), 32);
        prev_len = 32;
        Py_DECREF(shape);
        Py_DECREF(digest);
        PyObject *role = get(message, K_ROLE);
        if (role == NULL && PyErr_Occurred()) {
            Py_DECREF(message);
            goto error;
        }
        int failed = 0;
        if (role != NULL && PyUnicode_CheckExact(role)) {
            if (PyUnicode_CompareWithASCIIString(role, "assistant") == 0) {
                failed |= append_index(assistants, index) < 0;
                int nothing = (facts & FACT_CALL_EXTRAS) ? 0 : own_fields_carry_nothing(message);
                if (nothing < 0) failed = 1;
                else if (!nothing) failed |= append_index(to_read, index) < 0;
            } else if (PyUnicode_CompareWithASCIIString(role, "user") == 0) {
                failed |= append_index(users, index) < 0;
            }
        }
        int turn = PyDict_Contains(message, TURN_KEY);
        if (turn < 0) failed = 1;
        else if (turn || (facts & FACT_TURN)) failed |= append_index(flagged, index) < 0;
        if (!decided) failed |= append_index(unsure, index) < 0;
        Py_DECREF(message);
        if (failed) goto error;
    }
    PyMem_Free(b.data);
    return Py_BuildValue("(nNNNNNNN)", index, shapes, digests, users, assistants, to_read,
                         flagged, unsure);
error:
    PyMem_Free(b.data);
    Py_XDECREF(shapes);
    Py_XDECREF(digests);
    Py_XDECREF(users);
    Py_XDECREF(assistants);
    Py_XDECREF(to_read);
    Py_XDECREF(flagged);
    Py_XDECREF(unsure);
    return NULL;
}

/* ---------------------------------------------------------------- keys */

/* `identity.has_tool_call_ids(message)`: 1, 0, NOT_HANDLED_KEY (Python decides), -1 error. */
#define NOT_HANDLED_KEY 2
static int has_tool_call_ids(PyObject *message) {
    if (!PyDict_CheckExact(message)) return NOT_HANDLED_KEY;
    PyObject *calls = get(message, K_TOOL_CALLS);
    if (calls == NULL) return PyErr_Occurred() ? -1 : 0;
    if (!PyList_CheckExact(calls)) return PyList_Check(calls) ? NOT_HANDLED_KEY : 0;
    int found = 0;
    Py_ssize_t n = PyList_GET_SIZE(calls);
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *call = PyList_GET_ITEM(calls, i);
        if (!PyDict_Check(call)) continue;
        if (!PyDict_CheckExact(call)) return NOT_HANDLED_KEY;
        PyObject *identifier = get(call, K_ID);
        if (identifier == NULL && PyErr_Occurred()) return -1;
        if (identifier == NULL || !PyUnicode_CheckExact(identifier)) return NOT_HANDLED_KEY;
        if (PyUnicode_GET_LENGTH(identifier) == 0) return 0;
        int starts = (int)PyUnicode_Tailmatch(identifier, SEPARATOR_OBJ, 0, PY_SSIZE_T_MAX, -1);
        if (starts < 0) return -1;
        if (starts) return 0;
        found = 1;
    }
    return found;
}

PyDoc_STRVAR(keys_doc,
"keys(messages, indices, shapes, digests, users, head, system, position_head) -> list\n\n"
"The store keys `identity.key_makers` makes for `messages[i]`, `i` in `indices` (ascending):\n"
"`head` is b\"tc3\\0\" + scope, `system` the system prompt's digest (bytes), `position_head`\n"
"b\"pos\\0\" + scope + b\"\\0\"; `users` the user messages' indices. None where Python decides.");

static PyObject *keys(PyObject *self, PyObject *args) {
    PyObject *messages, *indices, *shapes, *digests, *users;
    const char *head, *system, *position_head;
    Py_ssize_t head_len, system_len, position_len;
    if (!PyArg_ParseTuple(args, "O!O!O!O!O!y#y#y#", &PyList_Type, &messages, &PyList_Type,
                          &indices, &PyList_Type, &shapes, &PyList_Type, &digests, &PyList_Type,
                          &users, &head, &head_len, &system, &system_len, &position_head,
                          &position_len))
        return NULL;
    if (TURN_KEY == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "configure() first");
        return NULL;
    }
    Py_ssize_t n = PyList_GET_SIZE(indices);
    PyObject *out = PyList_New(n);
    if (out == NULL) return NULL;
    Py_ssize_t user_at = 0; /* users[:user_at] lie before the current index */
    Py_ssize_t n_users = PyList_GET_SIZE(users);
    for (Py_ssize_t j = 0; j < n; j++) {
        Py_ssize_t index = PyLong_AsSsize_t(PyList_GET_ITEM(indices, j));
        if (index == -1 && PyErr_Occurred()) goto error;
        if (index < 0 || index >= PyList_GET_SIZE(messages) ||
            index >= PyList_GET_SIZE(shapes) || index >= PyList_GET_SIZE(digests)) {
            PyErr_SetString(PyExc_IndexError, "index out of range");
            goto error;
        }
        PyObject *message = PyList_GET_ITEM(messages, index);
        Py_INCREF(message);
        int tool = has_tool_call_ids(message);
        Py_DECREF(message);
        if (tool < 0) goto error;
        PyObject *key;
        b2_state s;
        b2_init(&s, 20);
        if (tool == NOT_HANDLED_KEY) {
            Py_INCREF(Py_None);
            PyList_SET_ITEM(out, j, Py_None);
            continue;
        } else if (tool) {
            /* bisect_left(users, index): the users before it */
            while (user_at < n_users) {
                Py_ssize_t u = PyLong_AsSsize_t(PyList_GET_ITEM(users, user_at));
                if (u == -1 && PyErr_Occurred()) goto error;
                if (u >= index) break;
                user_at++;
            }
            while (user_at > 0) { /* indices ascend; stay safe if they do not */
                Py_ssize_t u = PyLong_AsSsize_t(PyList_GET_ITEM(users, user_at - 1));
                if (u == -1 && PyErr_Occurred()) goto error;
                if (u < index) break;
                user_at--;
            }
            Py_ssize_t offset;
            const char *user = "";
            Py_ssize_t user_len = 0;
            if (user_at == 0) {
                offset = index + 1;
            } else {
                Py_ssize_t u = PyLong_AsSsize_t(PyList_GET_ITEM(users, user_at - 1));
                if (u == -1 && PyErr_Occurred()) goto error;
                if (u < 0 || u >= PyList_GET_SIZE(shapes)) {
                    PyErr_SetString(PyExc_IndexError, "user index out of range");
                    goto error;
                }
                PyObject *user_shape = PyList_GET_ITEM(shapes, u);
                if (!PyBytes_Check(user_shape)) {
                    PyErr_SetString(PyExc_TypeError, "shapes must be bytes");
                    goto error;
                }
                user = PyBytes_AS_STRING(user_shape);
                user_len = PyBytes_GET_SIZE(user_shape);
                offset = index - u;
            }
            PyObject *shape = PyList_GET_ITEM(shapes, index);
            if (!PyBytes_Check(shape)) {
                PyErr_SetString(PyExc_TypeError, "shapes must be bytes");
                goto error;
            }
            char number[32];
            int number_len = snprintf(number, sizeof(number), "%zd", offset);
            b2_update(&s, (const uint8_t *)head, (size_t)head_len);
            b2_update(&s, (const uint8_t *)"\0", 1);
            b2_update(&s, (const uint8_t *)PyBytes_AS_STRING(shape), (size_t)PyBytes_GET_SIZE(shape));
            b2_update(&s, (const uint8_t *)"\0", 1);
            b2_update(&s, (const uint8_t *)number, (size_t)number_len);
            b2_update(&s, (const uint8_t *)"\0", 1);
            b2_update(&s, (const uint8_t *)system, (size_t)system_len);
            b2_update(&s, (const uint8_t *)"\0", 1);
            b2_update(&s, (const uint8_t *)user, (size_t)user_len);
        } else {
            PyObject *digest = PyList_GET_ITEM(digests, index);
            Py_ssize_t digest_len;
            const char *d = PyUnicode_Check(digest) ? PyUnicode_AsUTF8AndSize(digest, &digest_len)
                                                    : NULL;
            if (d == NULL) {
                if (!PyErr_Occurred()) PyErr_SetString(PyExc_TypeError, "digests must be str");
                goto error;
            }
            b2_update(&s, (const uint8_t *)position_head, (size_t)position_len);
            b2_update(&s, (const uint8_t *)d, (size_t)digest_len);
        }
        key = b2_hexdigest(&s);
        if (key == NULL) goto error;
        PyList_SET_ITEM(out, j, key);
    }
    return out;
error:
    Py_DECREF(out);
    return NULL;
}

/* ---------------------------------------------------------------- record digests */

PyDoc_STRVAR(digests_doc,
"digests(datas, digest_size, person) -> list[bytes]: [hashlib.blake2b(d, digest_size=...,\n"
"person=person).digest() for d in datas] (`person` at most 16 bytes), in one call.");

static PyObject *digests(PyObject *self, PyObject *args) {
    PyObject *datas;
    Py_ssize_t size;
    const char *person;
    Py_ssize_t person_len;
    if (!PyArg_ParseTuple(args, "O!ny#", &PyList_Type, &datas, &size, &person, &person_len))
        return NULL;
    if (size < 1 || size > 64 || person_len > 16) {
        PyErr_SetString(PyExc_ValueError, "digest_size must be 1..64, person at most 16 bytes");
        return NULL;
    }
    uint8_t padded[16] = {0};
    memcpy(padded, person, (size_t)person_len);
    Py_ssize_t n = PyList_GET_SIZE(datas);
    PyObject *out = PyList_New(n);
    if (out == NULL) return NULL;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *data = PyList_GET_ITEM(datas, i);
        if (!PyBytes_Check(data)) {
            Py_DECREF(out);
            PyErr_SetString(PyExc_TypeError, "datas must be bytes");
            return NULL;
        }
        b2_state s;
        b2_init_person(&s, (size_t)size, padded);
        b2_update(&s, (const uint8_t *)PyBytes_AS_STRING(data), (size_t)PyBytes_GET_SIZE(data));
        uint8_t digest[64];
        b2_final(&s, digest);
        PyObject *value = PyBytes_FromStringAndSize((const char *)digest, size);
        if (value == NULL) {
            Py_DECREF(out);
            return NULL;
        }
        PyList_SET_ITEM(out, i, value);
    }
    return out;
}

/* ---------------------------------------------------------------- copy */

PyDoc_STRVAR(copy_doc,
"copy(values) -> list | None\n\n"
"A copy of the list `values` whose dicts and lists are new and whose leaves (str, int, float,\n"
"bool, None, bytes: immutable) are shared; None when anything else is in it (a tuple, a set,\n"
"a subclass, nesting deeper than 200). Equal to `marshal.loads(marshal.dumps(values))` for\n"
"what it copies, without writing and parsing the bytes. Its containers are not tracked by\n"
"the garbage collector (a tree over immutable leaves holds no cycle).");

#define COPY_MAX_DEPTH 200

static int shared_leaf(PyObject *v) {
    return PyUnicode_CheckExact(v) || PyLong_CheckExact(v) || PyBool_Check(v) ||
           PyFloat_CheckExact(v) || v == Py_None || PyBytes_CheckExact(v);
}

/* A copy is a tree of new containers over immutable leaves, never changed after it is made:
   it can hold no reference cycle, so the garbage collector need not look at it. Kept untracked,
   the memo's copies (thousands of containers per remembered history, long-lived) no longer make
   every collection of a large process (LiteLLM's proxy: ~700,000 objects) longer and more
   frequent; reference counting still frees them. */
static void untrack(PyObject *container) {
    if (PyObject_GC_IsTracked(container)) PyObject_GC_UnTrack(container);
}

/* The copy of `v` (new reference); NULL with no exception set: not plain data. */
static PyObject *copy_value(PyObject *v, int depth) {
    if (shared_leaf(v)) {
        Py_INCREF(v);
        return v;
    }
    if (depth > COPY_MAX_DEPTH) return NULL;
    if (PyList_CheckExact(v)) {
        Py_ssize_t n = PyList_GET_SIZE(v);
        PyObject *out = PyList_New(n);
        if (out == NULL) return NULL;
        for (Py_ssize_t i = 0; i < n; i++) {
            PyObject *item = copy_value(PyList_GET_ITEM(v, i), depth + 1);
            if (item == NULL) {
                Py_DECREF(out);
                return NULL;
            }
            PyList_SET_ITEM(out, i, item);
        }
        untrack(out);
        return out;
    }
    if (PyDict_CheckExact(v)) {
        /* The table copied whole (leaves shared, keys in their order: cheaper than inserting
           each key), then each container value replaced by its copy: replacing the value of a
           key leaves the keys as they are, which `PyDict_Next` allows. */
        PyObject *out = PyDict_Copy(v);
        if (out == NULL) return NULL;
        Py_ssize_t pos = 0;
        PyObject *key, *value;
        while (PyDict_Next(out, &pos, &key, &value)) {
            /* A shared key is immutable and hashes in C (str caches its hash): no Python code
               runs while `out` is iterated. */
            if (!shared_leaf(key)) {
                Py_DECREF(out);
                return NULL;
            }
            if (shared_leaf(value)) continue;
            PyObject *copied = copy_value(value, depth + 1);
            if (copied == NULL) {
                Py_DECREF(out);
                return NULL;
            }
            int r = PyDict_SetItem(out, key, copied);
            Py_DECREF(copied);
            if (r < 0) {
                Py_DECREF(out);
                return NULL;
            }
        }
        untrack(out);
        return out;
    }
    return NULL;
}

static PyObject *copy(PyObject *self, PyObject *args) {
    PyObject *values;
    if (!PyArg_ParseTuple(args, "O!", &PyList_Type, &values)) return NULL;
    PyObject *out = copy_value(values, 0);
    if (out != NULL) return out;
    if (PyErr_Occurred()) return NULL;
    Py_RETURN_NONE;
}

/* ---------------------------------------------------------------- equal_prefix */

PyDoc_STRVAR(equal_prefix_doc,
"equal_prefix(messages, copies, limit) -> int\n\n"
"How many leading items of the lists `messages` and `copies` (the memo's copies, `copy`)\n"
"are equal (`==`), up to `limit`: the index of the first unequal pair, else `limit`. Dicts\n"
"whose keys stand in the same order, lists and str are compared side by side; anything else\n"
"(and a dict whose keys stand in another order) by `==` itself, so the answer is `==`'s.\n"
"Raises what `==` raises.");

/* 1: equal, 0: not, -1: error. `b` is a copy (plain data, `copy_value`), `a` anything. Dict
   equality looks every key of one up in the other; two dicts parsed from the same JSON hold
   their keys in the same order, so they are walked side by side instead (no hashing, no probe
   of the other's table), and handed to `==` where that order differs. */
static int same_value(PyObject *a, PyObject *b, int depth) {
    if (a == b) return 1;
    PyTypeObject *type = Py_TYPE(a);
    if (type != Py_TYPE(b) || depth > COPY_MAX_DEPTH) return PyObject_RichCompareBool(a, b, Py_EQ);
    if (type == &PyUnicode_Type) {
        Py_ssize_t n = PyUnicode_GET_LENGTH(a);
        int kind = PyUnicode_KIND(a);
        /* A str is stored in its narrowest kind: equal ones have the same kind. */
        return n == PyUnicode_GET_LENGTH(b) && kind == (int)PyUnicode_KIND(b) &&
               memcmp(PyUnicode_DATA(a), PyUnicode_DATA(b), (size_t)n * (size_t)kind) == 0;
    }
    if (type == &PyList_Type) {
        if (PyList_GET_SIZE(a) != PyList_GET_SIZE(b)) return 0;
        /* As `list.__eq__`: the sizes read again, the items held while compared (`==` of an
           item may run Python code that changes the list). */
        for (Py_ssize_t i = 0; i < PyList_GET_SIZE(a) && i < PyList_GET_SIZE(b); i++) {
            PyObject *x = PyList_GET_ITEM(a, i), *y = PyList_GET_ITEM(b, i);
            Py_INCREF(x);
            Py_INCREF(y);
            int r = same_value(x, y, depth + 1);
            Py_DECREF(x);
            Py_DECREF(y);
            if (r != 1) return r;
        }
        return PyList_GET_SIZE(a) == PyList_GET_SIZE(b);
    }
    if (type == &PyDict_Type) {
        if (PyDict_GET_SIZE(a) != PyDict_GET_SIZE(b)) return 0;
        Py_ssize_t pa = 0, pb = 0;
        PyObject *ka, *va, *kb, *vb;
        while (PyDict_Next(a, &pa, &ka, &va)) {
            if (!PyDict_Next(b, &pb, &kb, &vb)) return PyObject_RichCompareBool(a, b, Py_EQ);
            if (ka != kb) {
                if (!PyUnicode_CheckExact(ka) || !PyUnicode_CheckExact(kb) ||
                    same_value(ka, kb, depth + 1) != 1)
                    return PyObject_RichCompareBool(a, b, Py_EQ); /* another order */
            }
            Py_INCREF(va);
            Py_INCREF(vb);
            Py_ssize_t size = PyDict_GET_SIZE(a);
            int r = same_value(va, vb, depth + 1);
            Py_DECREF(va);
            Py_DECREF(vb);
            if (r != 1) return r;
            if (PyDict_GET_SIZE(a) != size || PyDict_GET_SIZE(b) != size)
                return PyObject_RichCompareBool(a, b, Py_EQ); /* changed by `==`: ask again */
        }
        return 1;
    }
    return PyObject_RichCompareBool(a, b, Py_EQ);
}

static PyObject *equal_prefix(PyObject *self, PyObject *args) {
    PyObject *messages, *copies;
    Py_ssize_t limit;
    if (!PyArg_ParseTuple(args, "O!O!n", &PyList_Type, &messages, &PyList_Type, &copies, &limit))
        return NULL;
    Py_ssize_t i = 0;
    for (; i < limit && i < PyList_GET_SIZE(messages) && i < PyList_GET_SIZE(copies); i++) {
        PyObject *a = PyList_GET_ITEM(messages, i), *b = PyList_GET_ITEM(copies, i);
        Py_INCREF(a);
        Py_INCREF(b);
        int r = same_value(a, b, 0);
        Py_DECREF(a);
        Py_DECREF(b);
        if (r < 0) return NULL;
        if (r == 0) break;
    }
    return PyLong_FromSsize_t(i);
}

/* ---------------------------------------------------------------- exact_prefix */

PyDoc_STRVAR(exact_prefix_doc,
"exact_prefix(items, copies, limit) -> int\n\n"
"How many leading items of the lists `items` and `copies` (the memo's copies, `copy`) are\n"
"the same plain data, up to `limit`: the same types all the way down (str, int, float, bool,\n"
"None, bytes, list, dict; a subclass is never the same), equal values (a float bit for bit,\n"
"so 0.0 is not -0.0), dict keys in the same order. Stricter than `==` (1 == 1.0 == True): what\n"
"a format reads of an item (its JSON, its blocks) is then what it read of the copy. Runs no\n"
"Python code.");

/* 1: the same plain data, 0: not. `b` is a copy (`copy_value`). */
static int exact_value(PyObject *a, PyObject *b, int depth) {
    if (a == b) return 1; /* a leaf the copy shares (copies never leave the memo) */
    PyTypeObject *type = Py_TYPE(a);
    if (type != Py_TYPE(b) || depth > COPY_MAX_DEPTH) return 0;
    if (type == &PyUnicode_Type) {
        Py_ssize_t n = PyUnicode_GET_LENGTH(a);
        int kind = PyUnicode_KIND(a);
        return n == PyUnicode_GET_LENGTH(b) && kind == (int)PyUnicode_KIND(b) &&
               memcmp(PyUnicode_DATA(a), PyUnicode_DATA(b), (size_t)n * (size_t)kind) == 0;
    }
    if (type == &PyLong_Type) {
        int overflow_a, overflow_b;
        long long x = PyLong_AsLongLongAndOverflow(a, &overflow_a);
        long long y = PyLong_AsLongLongAndOverflow(b, &overflow_b);
        if (!overflow_a && !overflow_b) return x == y;
        if (PyErr_Occurred()) PyErr_Clear();
        /* beyond 64 bits: compared as ints are (C, no Python code) */
        int r = PyObject_RichCompareBool(a, b, Py_EQ);
        if (r < 0) {
            PyErr_Clear();
            return 0;
        }
        return r;
    }
    if (type == &PyFloat_Type) {
        double x = PyFloat_AS_DOUBLE(a), y = PyFloat_AS_DOUBLE(b);
        return memcmp(&x, &y, sizeof(double)) == 0;
    }
    if (type == &PyBytes_Type) {
        Py_ssize_t n = PyBytes_GET_SIZE(a);
        return n == PyBytes_GET_SIZE(b) &&
               memcmp(PyBytes_AS_STRING(a), PyBytes_AS_STRING(b), (size_t)n) == 0;
    }
    if (type == &PyList_Type) {
        Py_ssize_t n = PyList_GET_SIZE(a);
        if (n != PyList_GET_SIZE(b)) return 0;
        for (Py_ssize_t i = 0; i < n; i++) {
            if (!exact_value(PyList_GET_ITEM(a, i), PyList_GET_ITEM(b, i), depth + 1)) return 0;
        }
        return 1;
    }
    if (type == &PyDict_Type) {
        if (PyDict_GET_SIZE(a) != PyDict_GET_SIZE(b)) return 0;
        Py_ssize_t pa = 0, pb = 0;
        PyObject *ka, *va, *kb, *vb;
        while (PyDict_Next(a, &pa, &ka, &va)) {
            if (!PyDict_Next(b, &pb, &kb, &vb)) return 0;
            if (!exact_value(ka, kb, depth + 1) || !exact_value(va, vb, depth + 1)) return 0;
        }
        return 1;
    }
    return 0; /* bool and None are singletons (equal: the same object); anything else differs */
}

static PyObject *exact_prefix(PyObject *self, PyObject *args) {
    PyObject *items, *copies;
    Py_ssize_t limit;
    if (!PyArg_ParseTuple(args, "O!O!n", &PyList_Type, &items, &PyList_Type, &copies, &limit))
        return NULL;
    Py_ssize_t i = 0;
    /* No Python code runs: the lists cannot change while they are compared. */
    for (; i < limit && i < PyList_GET_SIZE(items) && i < PyList_GET_SIZE(copies); i++) {
        if (!exact_value(PyList_GET_ITEM(items, i), PyList_GET_ITEM(copies, i), 0)) break;
    }
    return PyLong_FromSsize_t(i);
}

/* ---------------------------------------------------------------- turn_marked */

PyDoc_STRVAR(turn_marked_doc,
"turn_marked(items) -> list\n\n"
"The indices of the items `turns.item_without_turn` may change: a dict holding `turn`, or a\n"
"dict of its `content` or `tool_calls` list (or that dict's `function` dict) holding it, as\n"
"`turns.carries_turn` reads them; and every item that is not a dict (a subclass too: Python\n"
"asks it). Every other item is sent as it is.");

/* 1: `d` (an exact dict) holds `turn` at the top or in a part `_nested_turn` reads; 0: not;
   -1: error set. */
static int holds_turn(PyObject *d) {
    int r = PyDict_Contains(d, TURN_KEY);
    if (r) return r;
    PyObject *names[2] = {K_CONTENT, K_TOOL_CALLS};
    for (int n = 0; n < 2; n++) {
        PyObject *value = get(d, names[n]);
        if (value == NULL) {
            if (PyErr_Occurred()) return -1;
            continue;
        }
        if (!PyList_CheckExact(value)) continue;
        Py_INCREF(value); /* held: a key's `__eq__` may run while its parts are read */
        for (Py_ssize_t i = 0; i < PyList_GET_SIZE(value); i++) {
            PyObject *part = PyList_GET_ITEM(value, i);
            if (!PyDict_CheckExact(part)) continue;
            Py_INCREF(part);
            r = PyDict_Contains(part, TURN_KEY);
            if (r == 0) {
                PyObject *function = get(part, K_FUNCTION);
                if (function == NULL) {
                    if (PyErr_Occurred()) r = -1;
                } else if (PyDict_CheckExact(function)) {
                    r = PyDict_Contains(function, TURN_KEY);
                }
            }
            Py_DECREF(part);
            if (r) {
                Py_DECREF(value);
                return r;
            }
        }
        Py_DECREF(value);
    }
    return 0;
}

static PyObject *turn_marked(PyObject *self, PyObject *args) {
    PyObject *items;
    if (!PyArg_ParseTuple(args, "O!", &PyList_Type, &items)) return NULL;
    if (TURN_KEY == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "configure() first");
        return NULL;
    }
    PyObject *marked = PyList_New(0);
    if (marked == NULL) return NULL;
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(items); i++) {
        PyObject *item = PyList_GET_ITEM(items, i);
        Py_INCREF(item);
        int r = PyDict_CheckExact(item) ? holds_turn(item) : 1;
        Py_DECREF(item);
        if (r < 0 || (r && append_index(marked, i) < 0)) {
            Py_DECREF(marked);
            return NULL;
        }
    }
    return marked;
}

/* ---------------------------------------------------------------- sizes */

PyDoc_STRVAR(sizes_doc,
"sizes(shapes, start, total, overhead) -> list[int]\n\n"
"The prefix memo's cumulative size estimates of the messages from `start` on, copied by\n"
"`copy`: for each, `total` plus twice the canonical bytes (`shapes`, bytes) of it and those\n"
"before it from `start`, plus `overhead` per message (`prefix_cache._spread_sizes`).");

static PyObject *sizes(PyObject *self, PyObject *args) {
    PyObject *shapes;
    Py_ssize_t start, total, overhead;
    if (!PyArg_ParseTuple(args, "O!nnn", &PyList_Type, &shapes, &start, &total, &overhead))
        return NULL;
    Py_ssize_t n = PyList_GET_SIZE(shapes);
    if (start < 0) start = 0;
    PyObject *out = PyList_New(start < n ? n - start : 0);
    if (out == NULL) return NULL;
    long long running = total;
    for (Py_ssize_t i = start; i < n; i++) {
        PyObject *shape = PyList_GET_ITEM(shapes, i);
        if (!PyBytes_Check(shape)) {
            Py_DECREF(out);
            PyErr_SetString(PyExc_TypeError, "shapes must be bytes");
            return NULL;
        }
        running += 2 * (long long)PyBytes_GET_SIZE(shape) + overhead;
        PyObject *value = PyLong_FromLongLong(running);
        if (value == NULL) {
            Py_DECREF(out);
            return NULL;
        }
        PyList_SET_ITEM(out, i - start, value);
    }
    return out;
}

/* ---------------------------------------------------------------- untrack */

PyDoc_STRVAR(untrack_doc,
"untrack(objects) -> None\n\n"
"Take each object of the list `objects` (None skipped) off the garbage collector's lists.\n"
"Only for objects in no reference cycle that nothing will change: reference counting still\n"
"frees them. The memo's render recipes (long-lived, thousands per remembered history) made\n"
"each collection of a large process longer and more frequent.");

static PyObject *untrack_many(PyObject *self, PyObject *args) {
    PyObject *objects;
    if (!PyArg_ParseTuple(args, "O!", &PyList_Type, &objects)) return NULL;
    Py_ssize_t n = PyList_GET_SIZE(objects);
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *item = PyList_GET_ITEM(objects, i);
        if (item != Py_None && PyObject_IS_GC(item)) untrack(item);
    }
    Py_RETURN_NONE;
}

/* ---------------------------------------------------------------- replay */

PyDoc_STRVAR(replay_doc,
"replay(out, indices, recipes, owns, stored, keep_after, tools_keep, dialect, lists, bare)\n"
"-> list\n\n"
"`core.render`'s loop over the assistant messages `indices`, for the messages whose\n"
"remembered recipe holds as it is (the same objects: `Recipe.keep` the keep decision,\n"
"`Recipe.dialect` == `dialect`, `Recipe.from_store` is `stored.get(i)` when kept, else None,\n"
"`Recipe.own` is `owns[i]`) and remakes them as `How.SAME` or `How.MERGE`: `out[i]` becomes\n"
"`{**out[i], **recipe.extra}` for MERGE, and `i` is appended to `lists[recipe.outcome]` (and\n"
"to `lists[0]` too for RESTORED), as Python does. Kept: `i > keep_after`, or `tools_keep` and\n"
"`out[i]` has tool calls. A message without a recipe that is kept, carries nothing of its own\n"
"(`owns[i]` None, `bare[i]` True) and takes a stored record decided for `dialect` before\n"
"(`Reasoning._plain`: dialect name, outcome, the fields it adds as (key, value) pairs) is\n"
"remade by that decision the same way (MERGE with fields, SAME without). Returns the indices\n"
"it left to Python (its general path), in order.");

/* `How` and `Outcome` of core/render.py (tests/core/test_accelerator.py checks them). */
#define HOW_SAME 0
#define HOW_MERGE 1
#define OUTCOME_RESTORED 1
#define OUTCOME_NOTHING 5
#define OUTCOMES 5

static PyObject *A_KEEP, *A_DIALECT, *A_FROM_STORE, *A_OWN, *A_HOW, *A_EXTRA, *A_OUTCOME, *A_PLAIN;

/* `getattr(obj, name)` as a C long (an IntEnum member), -2 with an error set on failure. */
static long long_attr(PyObject *obj, PyObject *name) {
    PyObject *value = PyObject_GetAttr(obj, name);
    if (value == NULL) return -2;
    long v = PyLong_AsLong(value);
    Py_DECREF(value);
    if (v == -1 && PyErr_Occurred()) return -2;
    return v;
}

/* Whether `getattr(obj, name) is expected`: 1, 0, or -1 with an error set. */
static int attr_is(PyObject *obj, PyObject *name, PyObject *expected) {
    PyObject *value = PyObject_GetAttr(obj, name);
    if (value == NULL) return -1;
    int same = value == expected;
    Py_DECREF(value);
    return same;
}

/* Whether `made_for` names `dialect`: 1, 0, or -1 with an error set. */
static int same_name(PyObject *made_for, PyObject *dialect) {
    if (made_for == dialect) return 1;
    if (!PyUnicode_CheckExact(made_for)) return 0;
    int r = PyUnicode_Compare(made_for, dialect) == 0;
    return PyErr_Occurred() ? -1 : r;
}

/* `out[index]` remade as `how` with `extra` (SAME or MERGE; `extra` a dict, or a tuple of
   (key, value) pairs), `index_obj` appended to the list of `outcome`: 1; 0: left to Python
   (another how or outcome); -1: error set. */
static int remade(PyObject *out, Py_ssize_t index, PyObject *index_obj, PyObject *base, long how,
                  long outcome, PyObject *extra, PyObject *lists) {
    if (how != HOW_SAME && how != HOW_MERGE) return 0;
    if (outcome < 0 || outcome > OUTCOME_NOTHING) return 0;
    if (how == HOW_MERGE) {
        int pairs = PyTuple_CheckExact(extra);
        if (!pairs && !PyDict_CheckExact(extra)) return 0;
        PyObject *merged = PyDict_Copy(base);
        if (merged == NULL ||
            (pairs ? PyDict_MergeFromSeq2(merged, extra, 1) : PyDict_Update(merged, extra)) < 0) {
            Py_XDECREF(merged);
            return -1;
        }
        PyList_SetItem(out, index, merged); /* steals `merged`, releases `base` */
    }
    if (outcome != OUTCOME_NOTHING) {
        if (outcome == OUTCOME_RESTORED && PyList_Append(PyTuple_GET_ITEM(lists, 0), index_obj) < 0)
            return -1;
        if (PyList_Append(PyTuple_GET_ITEM(lists, outcome), index_obj) < 0) return -1;
    }
    return 1;
}

/* A kept message without a recipe, remade by its stored record's `_plain` decision (1), or
   left to Python (0); -1: error set. */
static int plain_one(PyObject *out, Py_ssize_t index, PyObject *index_obj, PyObject *base,
                     PyObject *owns, PyObject *stored, PyObject *bare, PyObject *dialect,
                     PyObject *lists) {
    if (index >= PyList_GET_SIZE(bare) || PyList_GET_ITEM(bare, index) != Py_True ||
        PyList_GET_ITEM(owns, index) != Py_None)
        return 0;
    PyObject *record = PyDict_GetItemWithError(stored, index_obj);
    if (record == NULL) return PyErr_Occurred() ? -1 : 0;
    PyObject *plain = PyObject_GetAttr(record, A_PLAIN);
    if (plain == NULL) {
        if (!PyErr_ExceptionMatches(PyExc_AttributeError)) return -1;
        PyErr_Clear(); /* not a record: Python decides */
        return 0;
    }
    int r = 0;
    if (PyTuple_CheckExact(plain) && PyTuple_GET_SIZE(plain) == 3 &&
        PyLong_CheckExact(PyTuple_GET_ITEM(plain, 1)) &&
        PyTuple_CheckExact(PyTuple_GET_ITEM(plain, 2))) {
        r = same_name(PyTuple_GET_ITEM(plain, 0), dialect);
        if (r == 1) {
            long outcome = PyLong_AsLong(PyTuple_GET_ITEM(plain, 1));
            PyObject *fields = PyTuple_GET_ITEM(plain, 2);
            /* fields to add: merged into a copy; none: the message is sent as it is */
            long how = PyTuple_GET_SIZE(fields) ? HOW_MERGE : HOW_SAME;
            r = PyErr_Occurred() ? -1
                                 : remade(out, index, index_obj, base, how, outcome, fields, lists);
        }
    }
    Py_DECREF(plain);
    return r;
}

/* 1: message `index` replayed; 0: left to Python; -1: error set. */
static int replay_one(PyObject *out, PyObject *index_obj, PyObject *recipes, PyObject *owns,
                      PyObject *stored, Py_ssize_t keep_after, int tools_keep, PyObject *dialect,
                      PyObject *lists, PyObject *bare) {
    Py_ssize_t index = PyLong_AsSsize_t(index_obj);
    if (index == -1 && PyErr_Occurred()) return -1;
    if (index < 0 || index >= PyList_GET_SIZE(out) || index >= PyList_GET_SIZE(recipes) ||
        index >= PyList_GET_SIZE(owns))
        return 0;
    PyObject *recipe = PyList_GET_ITEM(recipes, index);
    PyObject *base = PyList_GET_ITEM(out, index);
    if (!PyDict_CheckExact(base)) return 0;
    int keep = index > keep_after;
    if (!keep && tools_keep) {
        PyObject *calls = get(base, K_TOOL_CALLS);
        if (calls == NULL && PyErr_Occurred()) return -1;
        if (calls != NULL && (keep = PyObject_IsTrue(calls)) < 0) return -1;
    }
    if (recipe == Py_None)
        return keep ? plain_one(out, index, index_obj, base, owns, stored, bare, dialect, lists)
                    : 0;
    int r = attr_is(recipe, A_KEEP, keep ? Py_True : Py_False);
    if (r <= 0) return r;
    PyObject *made_for = PyObject_GetAttr(recipe, A_DIALECT);
    if (made_for == NULL) return -1;
    r = same_name(made_for, dialect);
    Py_DECREF(made_for);
    if (r <= 0) return r;
    PyObject *from_store = Py_None;
    if (keep) {
        from_store = PyDict_GetItemWithError(stored, index_obj);
        if (from_store == NULL) {
            if (PyErr_Occurred()) return -1;
            from_store = Py_None;
        }
    }
    if ((r = attr_is(recipe, A_FROM_STORE, from_store)) <= 0) return r;
    if ((r = attr_is(recipe, A_OWN, PyList_GET_ITEM(owns, index))) <= 0) return r;
    long how = long_attr(recipe, A_HOW);
    if (how == -2) return -1;
    if (how != HOW_SAME && how != HOW_MERGE) return 0;
    long outcome = long_attr(recipe, A_OUTCOME);
    if (outcome == -2) return -1;
    PyObject *extra = PyObject_GetAttr(recipe, A_EXTRA);
    if (extra == NULL) return -1;
    r = remade(out, index, index_obj, base, how, outcome, extra, lists);
    Py_DECREF(extra);
    return r;
}

static PyObject *replay(PyObject *self, PyObject *args) {
    PyObject *out, *indices, *recipes, *owns, *stored, *dialect, *lists, *bare;
    Py_ssize_t keep_after;
    int tools_keep;
    if (!PyArg_ParseTuple(args, "O!O!O!O!O!npUO!O!", &PyList_Type, &out, &PyList_Type, &indices,
                          &PyList_Type, &recipes, &PyList_Type, &owns, &PyDict_Type, &stored,
                          &keep_after, &tools_keep, &dialect, &PyTuple_Type, &lists,
                          &PyList_Type, &bare))
        return NULL;
    if (PyTuple_GET_SIZE(lists) != OUTCOMES) {
        PyErr_SetString(PyExc_ValueError, "lists: one list per outcome");
        return NULL;
    }
    for (Py_ssize_t i = 0; i < OUTCOMES; i++) {
        if (!PyList_CheckExact(PyTuple_GET_ITEM(lists, i))) {
            PyErr_SetString(PyExc_TypeError, "lists: lists");
            return NULL;
        }
    }
    PyObject *left = PyList_New(0);
    if (left == NULL) return NULL;
    Py_ssize_t n = PyList_GET_SIZE(indices);
    for (Py_ssize_t pos = 0; pos < n; pos++) {
        PyObject *index_obj = PyList_GET_ITEM(indices, pos);
        int r = 0;
        if (PyLong_CheckExact(index_obj)) {
            r = replay_one(out, index_obj, recipes, owns, stored, keep_after, tools_keep, dialect,
                           lists, bare);
        }
        if (r < 0 || (r == 0 && PyList_Append(left, index_obj) < 0)) {
            Py_DECREF(left);
            return NULL;
        }
    }
    return left;
}

/* ---------------------------------------------------------------- configure */

PyDoc_STRVAR(configure_doc,
"configure(turn_key, extras_key, block_types, carrier_keys, separator)\n\n"
"The names `identity.read` looks for, given once by Python (one source of truth).");

static int set_ref(PyObject **slot, PyObject *value) {
    Py_INCREF(value);
    Py_XSETREF(*slot, value);
    return 0;
}

static PyObject *configure(PyObject *self, PyObject *args) {
    PyObject *turn_key, *extras_key, *block_types, *carrier_keys, *separator;
    if (!PyArg_ParseTuple(args, "UUO!O!U", &turn_key, &extras_key, &PyTuple_Type, &block_types,
                          &PyTuple_Type, &carrier_keys, &separator))
        return NULL;
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(block_types); i++)
        if (!PyUnicode_CheckExact(PyTuple_GET_ITEM(block_types, i))) goto not_str;
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(carrier_keys); i++)
        if (!PyUnicode_CheckExact(PyTuple_GET_ITEM(carrier_keys, i))) goto not_str;
    Py_ssize_t sep_len;
    const char *sep = PyUnicode_AsUTF8AndSize(separator, &sep_len);
    if (sep == NULL) return NULL;
    set_ref(&TURN_KEY, turn_key);
    set_ref(&EXTRAS_KEY, extras_key);
    set_ref(&BLOCK_TYPES, block_types);
    set_ref(&CARRIER_KEYS, carrier_keys);
    set_ref(&SEPARATOR_OBJ, separator);
    SEPARATOR = sep; /* owned by SEPARATOR_OBJ, kept alive above */
    SEPARATOR_LEN = sep_len;
    Py_RETURN_NONE;
not_str:
    PyErr_SetString(PyExc_TypeError, "names must be str");
    return NULL;
}

/* ---------------------------------------------------------------- filed_for */

static PyObject *A_CONVERSATION;

PyDoc_STRVAR(filed_for_doc,
"filed_for(keys, before, found) -> bool\n\n"
"Whether no record `found` (key -> record) holds under a key of `keys` (message index -> key)\n"
"is filed for another conversation than its message's: each one's `conversation` is None,\n"
"`before` (index -> digest) holds None or nothing for its index, or the two are equal (`==`).\n"
"A key `found` lacks is passed. What `Engine._own_conversations` asks first, in one pass.");

static PyObject *filed_for(PyObject *self, PyObject *args) {
    PyObject *keys, *before, *found;
    if (!PyArg_ParseTuple(args, "O!O!O!", &PyDict_Type, &keys, &PyDict_Type, &before,
                          &PyDict_Type, &found))
        return NULL;
    Py_ssize_t position = 0;
    PyObject *index, *key;
    while (PyDict_Next(keys, &position, &index, &key)) {
        PyObject *record = PyDict_GetItemWithError(found, key); /* borrowed */
        if (record == NULL) {
            if (PyErr_Occurred()) return NULL;
            continue; /* not found */
        }
        /* Held while asked: an attribute or `==` may run Python code. */
        Py_INCREF(index);
        Py_INCREF(record);
        PyObject *held = PyObject_GetAttr(record, A_CONVERSATION);
        Py_DECREF(record);
        if (held == NULL) {
            Py_DECREF(index);
            return NULL;
        }
        PyObject *conversation = held == Py_None ? NULL : PyDict_GetItemWithError(before, index);
        Py_DECREF(index);
        if (conversation == NULL || conversation == Py_None) {
            Py_DECREF(held);
            if (PyErr_Occurred()) return NULL;
            continue; /* filed for no conversation, or the message's is not known */
        }
        Py_INCREF(conversation);
        int same = PyObject_RichCompareBool(held, conversation, Py_EQ);
        Py_DECREF(conversation);
        Py_DECREF(held);
        if (same < 0) return NULL;
        if (!same) Py_RETURN_FALSE;
    }
    Py_RETURN_TRUE;
}

static PyMethodDef methods[] = {
    {"walk", walk, METH_VARARGS, walk_doc},
    {"keys", keys, METH_VARARGS, keys_doc},
    {"digests", digests, METH_VARARGS, digests_doc},
    {"copy", copy, METH_VARARGS, copy_doc},
    {"equal_prefix", equal_prefix, METH_VARARGS, equal_prefix_doc},
    {"exact_prefix", exact_prefix, METH_VARARGS, exact_prefix_doc},
    {"turn_marked", turn_marked, METH_VARARGS, turn_marked_doc},
    {"sizes", sizes, METH_VARARGS, sizes_doc},
    {"untrack", untrack_many, METH_VARARGS, untrack_doc},
    {"replay", replay, METH_VARARGS, replay_doc},
    {"filed_for", filed_for, METH_VARARGS, filed_for_doc},
    {"configure", configure, METH_VARARGS, configure_doc},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "litellm_reasoning._accel",
    "Optional native accelerator of core/identity.py (see its source).", -1, methods,
};

PyMODINIT_FUNC PyInit__accel(void) {
    PyObject *m = PyModule_Create(&module);
    if (m == NULL) return NULL;
#define INTERN(var, text) \
    if ((var = PyUnicode_InternFromString(text)) == NULL) return NULL;
    INTERN(K_ROLE, "role");
    INTERN(K_CONTENT, "content");
    INTERN(K_TOOL_CALLS, "tool_calls");
    INTERN(K_TOOL_CALL_ID, "tool_call_id");
    INTERN(K_TYPE, "type");
    INTERN(K_TEXT, "text");
    INTERN(K_ID, "id");
    INTERN(K_FUNCTION, "function");
    INTERN(K_NAME, "name");
    INTERN(A_KEEP, "keep");
    INTERN(A_PLAIN, "_plain");
    INTERN(A_DIALECT, "dialect");
    INTERN(A_FROM_STORE, "from_store");
    INTERN(A_OWN, "own");
    INTERN(A_HOW, "how");
    INTERN(A_EXTRA, "extra");
    INTERN(A_OUTCOME, "outcome");
    INTERN(A_CONVERSATION, "conversation");
#undef INTERN
    return m;
}
