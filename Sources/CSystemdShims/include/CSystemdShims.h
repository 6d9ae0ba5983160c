#ifndef BEACON_CSYSTEMD_SHIMS_H
#define BEACON_CSYSTEMD_SHIMS_H
#include <systemd/sd-daemon.h>
int beacon_sd_notify(int unset_environment, const char *state);
#endif
