#ifndef BATCHDL_CYAML_SHIM_H
#define BATCHDL_CYAML_SHIM_H
#include <yaml.h>
#endif
