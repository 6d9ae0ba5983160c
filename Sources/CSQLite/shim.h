#ifndef BEACON_CSQLITE_SHIM_H
#define BEACON_CSQLITE_SHIM_H
#include <sqlite3.h>
#endif
