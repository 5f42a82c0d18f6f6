/* `cldiff import DIR --manifest M -o dump.h5` (stub, being written). */
#include "cli/cli.h"
int cd_cmd_import(int argc, char **argv) { (void)argc; (void)argv; return CD_E_UNSUPPORTED; }
