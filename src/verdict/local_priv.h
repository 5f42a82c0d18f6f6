/* Private to the verdict module (local.c, local_spec.c, local_mag.c, local_allow.c,
 * local_inputs.c, local_int8.c): the magnitude machinery and the family helpers the parts
 * share. Not a module interface: other modules include verdict/verdict.h. Calls run one way:
 * verdict.c -> local.c -> local_mag.c -> local_allow.c -> local_inputs.c. */
#ifndef CD_LOCAL_PRIV_H
#define CD_LOCAL_PRIV_H
#include "verdict/verdict.h"

/* Keeps run `run`'s tensor table of the dump while the check runs, for cd_local_load_inputs
 * (local_inputs.c); r NULL drops it. */
void cd_local_tab_keep(const cd_dump_reader *r, const char *run);
/* The row of (op_index, tensor) in a run's tensor table, or NULL. */
const cd_dump_tensor_info *cd_local_find_tensor(const cd_dump_tensor_info *t, int n, int op_index, const char *name);

/* Whether |ref| is a lower bound of the magnitude (the cheap check may pass a layer). */
bool cd_local_cheap_valid(const cd_op *op);

typedef enum { ME_CONV = 1, ME_FC, ME_SCALE } me_kind;
typedef struct mag_elem {
    const cd_local_req *q;   /* A's input from the dump (the check after the runs), or ... */
    const cd_forcing *force; /* ... from the forcing record (settling, in B's process) */
    const cd_graph *g;
    const cd_plan *plan; /* parameters, as the checked side has them */
    int op_index;
    cd_shape out_shape;
    const char *run; /* the dump run of the input (NULL: q->run_a) */
    bool keep_sign;  /* x as it is, not |x| */
    int state;       /* 0 not set up, 1 ready, -1 unavailable */
    me_kind kind;
    float *x, *w, *b; /* owned: A's input, weights, bias (float) */
    int64_t n_out;
    int64_t N, C, H, W, O, Ho, Wo, KH, KW, G, sh, sw, pt, pl, dh, dw;
    int64_t M, K; /* fc/mul: rows and depth (O columns) */
    double sc, bi;
    bool bias_after;
    int64_t calls, budget;
    /* the Winograd magnitude (docs/verdicts.md "Winograd convolutions"): the tiles B may have
     * run the conv with (n_wino of them; 0: the direct magnitude) and their transforms */
    int n_wino;
    struct cd_wino_tile *wino[3];
    /* the magnitude handed to the bound is max(Winograd, wino_dir sum|w x|) + wino_rho sum|w x|
     * (bounds.h wino_k): wino_dir = max(1, gamma_{K+2}(b.u) / gamma_{wino_k}(b.u)) keeps B's direct
     * kernel (the engine may not take Winograd) and |ref| under it, wino_rho =
     * gamma_{K+2}(ref.u) / gamma_{wino_k}(b.u) is the reference's share */
    double wino_rho, wino_dir;
    float *xs, *ws; /* owned: the signed input and weights (the transforms' cancellations) */
} mag_elem;

/* The Winograd tiles (m + k - 1) side b may have run conv op with, ascending, at most 3; their
 * interpolation points come from b->wino. 0: a direct convolution (not a conv, not square,
 * strided, dilated, depthwise, or b runs no Winograd). */
int cd_local_wino_tiles(const cd_op *op, const cd_plan *plan, const cd_arith *b, int alpha[3]);

/* sum |w x| + |b| of output element i (NaN when unavailable or over budget); set up lazily. */
double cd_local_mag_at(void *user, int64_t i);
void cd_local_me_setup(mag_elem *m);
void cd_local_me_free(mag_elem *m);
/* The whole magnitude run of layer l on the CPU (float32, |A's inputs|). */
cd_status cd_local_magnitude(const cd_local_req *q, const cd_layer_cmp *l, float **mag, int64_t *nmag, char *note,
                             size_t note_len, cd_error *err);
/* Ops whose bound is a per-element allowance from their own inputs (families recurrent, norm;
 * local_allow.c), and that allowance for layer l: it stands where the magnitude array would. */
bool cd_local_allow_op(const cd_op *op);
cd_status cd_local_allowance(const cd_local_req *q, const cd_layer_cmp *l, float **mag, int64_t *nmag, char *note,
                             size_t note_len, cd_error *err);
/* Forgets what cd_local_allowance kept between the outputs of one op (every check ends so). */
void cd_local_allow_drop(void);
/* Free-run evidence of a conv/fc layer run again whose local check passed (local_mag.c). */
bool cd_local_free_evidence(const cd_local_req *q, const cd_layer_cmp *l, const cd_bound_spec *spec, const float *ref,
                            int64_t n, cd_local_result *r);
/* The first float input of op l with want_n values, from A's run (rounding ops). */
cd_status cd_local_op_input(const cd_local_req *q, const cd_layer_cmp *l, int64_t want_n, float **x, cd_error *err);
#endif
