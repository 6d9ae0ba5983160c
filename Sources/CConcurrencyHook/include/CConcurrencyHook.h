#ifndef BEACON_CCONCURRENCY_HOOK_H
#define BEACON_CCONCURRENCY_HOOK_H

/// The Swift runtime's hook for enqueueing a job on the global executor (`swift_task_enqueueGlobal_hook`), found by
/// the linker rather than by name at run time: with the standard library linked statically the symbol is hidden
/// in the executable, where `dlsym` cannot see it.
void **beacon_concurrency_enqueue_global_hook(void);

#endif
