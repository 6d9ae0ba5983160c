#ifndef BEACON_CSYSTEMD_SHIM_H
#define BEACON_CSYSTEMD_SHIM_H
// sd-bus's declarations only: the functions are defined in CSystemdShims (sd-bus-on-demand.c), which opens
// libsystemd when the lifecycle bridge first needs it.
#include <systemd/sd-bus.h>
#endif
