// A kernel that imports a function nobody defines (tests/c/test_opencl_backend.c):
// its build fails, with the runtime's log in the status.
#define SG __attribute__((intel_reqd_sub_group_size(16)))
void zt_no_such_function(ulong);
kernel SG void unresolved(ulong out) { zt_no_such_function(out); }
