// sd-bus, loaded when first used.
//
// The daemon needs libsystemd only for sd-bus, which the lifecycle bridge uses to reach logind. Linked at start-up,
// libsystemd brings six more libraries (libgcrypt, libgpg-error, liblz4, libzstd, liblzma, libcap) that the dynamic
// loader maps and relocates before main runs, whether or not the bridge is on. Here each sd-bus function the
// bridge calls is defined with its own signature, and the first call opens libsystemd.so.0 with dlopen and looks all
// of them up. Without the library (or with one that lacks a function) every call fails as sd-bus would: the
// functions that open a bus return -ENOSYS, the checks say "not valid", and the others are never reached, since
// they need a bus.

#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stddef.h>
#include <systemd/sd-bus.h>

// result, name, (parameters), (arguments), result when libsystemd cannot be loaded
#define BEACON_SD_BUS_FUNCTIONS(X)                                                                                    \
    X(int, sd_bus_new, (sd_bus * *ret), (ret), -ENOSYS)                                                               \
    X(int, sd_bus_open_system, (sd_bus * *ret), (ret), -ENOSYS)                                                       \
    X(int, sd_bus_open_user, (sd_bus * *ret), (ret), -ENOSYS)                                                         \
    X(int, sd_bus_set_address, (sd_bus * bus, const char *address), (bus, address), -ENOSYS)                        \
    X(int, sd_bus_set_bus_client, (sd_bus * bus, int b), (bus, b), -ENOSYS)                                           \
    X(int, sd_bus_start, (sd_bus * bus), (bus), -ENOSYS)                                                              \
    X(sd_bus *, sd_bus_unref, (sd_bus * bus), (bus), NULL)                                                            \
    X(sd_bus *, sd_bus_flush_close_unref, (sd_bus * bus), (bus), NULL)                                                \
    X(int, sd_bus_is_open, (sd_bus * bus), (bus), 0)                                                                  \
    X(int, sd_bus_get_fd, (sd_bus * bus), (bus), -ENOSYS)                                                             \
    X(int, sd_bus_get_events, (sd_bus * bus), (bus), -ENOSYS)                                                         \
    X(int, sd_bus_get_timeout, (sd_bus * bus, uint64_t * timeout_usec), (bus, timeout_usec), -ENOSYS)                \
    X(int, sd_bus_process, (sd_bus * bus, sd_bus_message * *r), (bus, r), -ENOSYS)                                    \
    X(int, sd_bus_add_match,                                                                                          \
      (sd_bus * bus, sd_bus_slot * *slot, const char *match, sd_bus_message_handler_t callback, void *userdata),     \
      (bus, slot, match, callback, userdata), -ENOSYS)                                                                \
    X(int, sd_bus_call_async,                                                                                         \
      (sd_bus * bus, sd_bus_slot * *slot, sd_bus_message * m, sd_bus_message_handler_t callback, void *userdata,      \
       uint64_t usec),                                                                                                \
      (bus, slot, m, callback, userdata, usec), -ENOSYS)                                                              \
    X(sd_bus_slot *, sd_bus_slot_unref, (sd_bus_slot * slot), (slot), NULL)                                           \
    X(int, sd_bus_slot_set_floating, (sd_bus_slot * slot, int b), (slot, b), -ENOSYS)                                \
    X(int, sd_bus_slot_set_destroy_callback, (sd_bus_slot * s, sd_bus_destroy_t callback), (s, callback), -ENOSYS)  \
    X(int, sd_bus_message_new_method_call,                                                                            \
      (sd_bus * bus, sd_bus_message * *m, const char *destination, const char *path, const char *interface,          \
       const char *member),                                                                                           \
      (bus, m, destination, path, interface, member), -ENOSYS)                                                        \
    X(sd_bus_message *, sd_bus_message_unref, (sd_bus_message * m), (m), NULL)                                        \
    X(int, sd_bus_message_append_basic, (sd_bus_message * m, char type, const void *p), (m, type, p), -ENOSYS)      \
    X(int, sd_bus_message_read_basic, (sd_bus_message * m, char type, void *p), (m, type, p), -ENOSYS)              \
    X(int, sd_bus_message_peek_type, (sd_bus_message * m, char *type, const char **contents), (m, type, contents),  \
      -ENOSYS)                                                                                                        \
    X(int, sd_bus_message_enter_container, (sd_bus_message * m, char type, const char *contents),                   \
      (m, type, contents), -ENOSYS)                                                                                   \
    X(int, sd_bus_message_exit_container, (sd_bus_message * m), (m), -ENOSYS)                                         \
    X(int, sd_bus_message_is_method_error, (sd_bus_message * m, const char *name), (m, name), 0)                      \
    X(const sd_bus_error *, sd_bus_message_get_error, (sd_bus_message * m), (m), NULL)                                \
    X(const char *, sd_bus_message_get_sender, (sd_bus_message * m), (m), NULL)                                       \
    X(const char *, sd_bus_message_get_path, (sd_bus_message * m), (m), NULL)                                         \
    X(const char *, sd_bus_message_get_interface, (sd_bus_message * m), (m), NULL)                                    \
    X(const char *, sd_bus_message_get_member, (sd_bus_message * m), (m), NULL)                                       \
    X(int, sd_bus_service_name_is_valid, (const char *p), (p), 0)                                                     \
    X(int, sd_bus_object_path_is_valid, (const char *p), (p), 0)                                                      \
    X(int, sd_bus_interface_name_is_valid, (const char *p), (p), 0)                                                   \
    X(int, sd_bus_member_name_is_valid, (const char *p), (p), 0)

#define BEACON_FIELD(result, name, parameters, arguments, fallback) result(*name) parameters;
static struct {
    BEACON_SD_BUS_FUNCTIONS(BEACON_FIELD)
} beacon_sd_bus;

static pthread_once_t beacon_sd_bus_once = PTHREAD_ONCE_INIT;
static int beacon_sd_bus_loaded;

static void beacon_sd_bus_load(void) {
    void *library = dlopen("libsystemd.so.0", RTLD_NOW | RTLD_LOCAL);
    if (library == NULL) {
        return;
    }
#define BEACON_RESOLVE(result, name, parameters, arguments, fallback)                                                 \
    beacon_sd_bus.name = (result(*) parameters)dlsym(library, #name);                                                 \
    if (beacon_sd_bus.name == NULL) {                                                                                 \
        return;                                                                                                       \
    }
    BEACON_SD_BUS_FUNCTIONS(BEACON_RESOLVE)
    beacon_sd_bus_loaded = 1;
}

static int beacon_sd_bus_ready(void) {
    pthread_once(&beacon_sd_bus_once, beacon_sd_bus_load);
    return beacon_sd_bus_loaded;
}

#define BEACON_DEFINE(result, name, parameters, arguments, fallback)                                                  \
    result name parameters { return beacon_sd_bus_ready() ? beacon_sd_bus.name arguments : fallback; }
BEACON_SD_BUS_FUNCTIONS(BEACON_DEFINE)
