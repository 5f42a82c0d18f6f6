#include "cli/cli.h"
int main(int argc, char **argv) { return cd_cli_main(argc, argv); }
