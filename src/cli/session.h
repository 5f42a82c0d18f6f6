/* A session: one model loaded, planned and fed, one dump open, runs added to it. Shared by
 * `cldiff run` and the differential command. */
#ifndef CD_SESSION_H
#define CD_SESSION_H
#include "cli/cli.h"
#include "cli/inputs.h"
#include "engine/crash.h"
#include "engine/executor.h"
#include "store/dump.h"

typedef struct cd_session {
    const cd_cli_opts *o;
    cd_graph *g;
    cd_shape *in_shapes;
    cd_plan plan; /* at o->prec */
    bool have_plan;
    cd_plan plan32; /* float32 golden plan (fp16 runs only) */
    bool have_plan32;
    cd_input_set inputs;
    bool *mask;
    int n_probed;
    cd_dump *dump;
    char dump_path[1024];
    char sha256[65];
    char model_format[320];
    char input_desc[512];
    /* a run started ahead (cd_session_prestart): its request and the backend's handle */
    const struct cd_run_req *pre_q;
    const struct cd_backend_def *pre_def;
    void *pre_handle;
} cd_session;

/* Per-run outcome. */
typedef struct cd_run_result {
    double wall_ms;
    double local_ms; /* of it, the local pass (teacher forcing), 0 when none ran */
    int n_local_hits;
    bool complete;
    char device[256], driver[512], variant[16];
    char compute[8];     /* the arithmetic the backend recorded (CD_RUN_ATTR_COMPUTE), "" none */
    cd_crash_info crash; /* when the OpenCL child crashed or hung */
    int n_hits;
} cd_run_result;

cd_status cd_session_open(cd_session *s, const cd_cli_opts *o, cd_error *err);
/* Runs one backend ("cpu" or "opencl") at precision prec into /runs/<run>. A crashed
 * OpenCL child returns CD_E_CRASH with res->crash filled; the run stays marked incomplete
 * while everything captured before the crash is kept. */
cd_status cd_session_run(cd_session *s, const char *backend, const char *run, cd_precision prec, cd_run_result *res,
                         cd_error *err);
/* A run with the local check's extras (docs/verdicts.md). */
typedef struct cd_run_req {
    const char *backend; /* "cpu" or "opencl" */
    const char *run;     /* dump run of the free run (NULL with local_only) */
    cd_precision prec;
    const cd_plan *plan;     /* NULL: the session's plan for prec */
    cd_forcing *record;      /* keep the activations probed ops read (run A) */
    const cd_forcing *force; /* then run every probed op again on the recorded inputs ... */
    const char *local_run;   /* ... into this dump run */
    const char *forced_from; /* run the record came from (an attribute of the local run) */
    bool local_only;         /* no free run: only the local pass */
    /* with force: ops whose free-run outputs settle (cd_exec_opts.settle) skip the local pass;
     * settled[op] (n_ops entries, the caller's) is set for each */
    bool (*settle)(void *user, const cd_forcing *force, int op, int tensor, const cd_value *out, cd_settle_info *info);
    void *settle_user;
    bool *settled;
    cd_settle_info *settled_info; /* n_ops entries: the settle summary of each settled op */
    bool no_quant;                /* cpu: the unquantized float model (float int8 weights, calib identity) */
    bool int8_dequant;            /* cpu: int8 weights dequantized, float arithmetic (not --int8 arm) */
    int threads;                  /* cpu: threads of this run; 0: --threads (cd_session_helper_threads) */
} cd_run_req;
cd_status cd_session_run_req(cd_session *s, const cd_run_req *q, cd_run_result *res, cd_error *err);
/* cd_session_open without the availability check of backend number defer (-1: none), which
 * cd_session_prestart then makes. */
cd_status cd_session_open_defer(cd_session *s, const cd_cli_opts *o, int defer, cd_error *err);
/* Starts run q ahead where its backend can (cd_backend_def.prestart: the OpenCL child loads its
 * driver and prepares while run A runs), answering as the availability check does; q (the
 * same pointer, unchanged, everything it points to made before this call except the contents
 * of a shared record) is then run by cd_session_run_req. */
cd_status cd_session_prestart(cd_session *s, const cd_run_req *q, cd_error *err);
/* The availability answer of the run started ahead, where the start did not wait for it (the
 * device found on an earlier run): CD_OK, or the error the check gives (nothing of the run
 * should then be kept: the run could not have started). */
cd_status cd_session_prestart_check(cd_session *s, cd_error *err);
/* Finishes the dump: complete -> root complete=1 and renamed into place. */
cd_status cd_session_close(cd_session *s, bool complete, cd_error *err);
void cd_session_free(cd_session *s);
cd_backend_opts cd_session_backend_opts(const cd_cli_opts *o, cd_precision prec);
/* Threads of the CPU runs a differential run makes for itself (fp16 golden and ref_local, the
 * quantized models' float_ref): --threads, or with the default --threads 2 on a machine with
 * more cores, half the online cores up to 8 (CPU results do not depend on the thread count);
 * CLDIFF_HELPER_THREADS=N sets N. */
int cd_session_helper_threads(const cd_cli_opts *o);
/* mkdir -p; CD_E_IO when it cannot be created or written. */
cd_status cd_make_dirs(const char *path, cd_error *err);
/* Set by SIGINT/SIGTERM handlers. */
extern volatile int cd_stop_flag;
void cd_install_signal_handlers(void);
#endif
