#ifndef BEACON_CMALLOC_SHIM_H
#define BEACON_CMALLOC_SHIM_H
#include <malloc.h>
#endif
