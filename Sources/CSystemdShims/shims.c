#include "CSystemdShims.h"
int beacon_sd_notify(int unset_environment, const char *state) { return sd_notify(unset_environment, state); }
