/* cl_faults.h -- OpenCL calls that fail on demand, for test_cl_faults.c.
 *
 * cl_faults.c defines the OpenCL entry points attn calls (creating,
 * building, setting arguments, enqueueing, waiting) in the test executable
 * itself. attn's objects are linked statically into it, so their calls
 * resolve to these definitions, which pass each call on to the real one
 * (dlsym RTLD_NEXT) -- except the one call chosen to fail, which returns an
 * OpenCL error (CL_OUT_OF_RESOURCES, or CL_MEM_OBJECT_ALLOCATION_FAILURE for
 * a buffer) without doing anything, as a driver short of memory does.
 *
 * Calls are counted only while armed, so the test's own set-up (buffers,
 * uploads, downloads) never fails. Every object created or retained, and
 * every release, is counted whether armed or not, per kind, so that a test
 * can check that everything made while it ran was given back. */
#ifndef ATTN_TEST_CL_FAULTS_H
#define ATTN_TEST_CL_FAULTS_H

enum {
    CL_FAULTS_MEM,
    CL_FAULTS_KERNEL,
    CL_FAULTS_PROGRAM,
    CL_FAULTS_EVENT,
    CL_FAULTS_QUEUE,
    CL_FAULTS_CONTEXT,
    CL_FAULTS_KINDS
};

/* Starts a new count (disarmed): the armed call numbered fail_at (1-based;
 * 0: none) will fail. */
void cl_faults_reset(long fail_at);
/* Calls count (and may fail) only between cl_faults_arm and
 * cl_faults_disarm. */
void cl_faults_arm(void);
void cl_faults_disarm(void);
/* Armed calls counted since cl_faults_reset. */
long cl_faults_calls(void);
/* The OpenCL function whose call was made to fail since cl_faults_reset,
 * or NULL when none was. */
const char *cl_faults_failed(void);
/* Objects of a kind created or retained minus those released, since the
 * program started. */
long cl_faults_live(int kind);
/* The kind's name ("mem", "kernel", ...). */
const char *cl_faults_kind_name(int kind);

#endif /* ATTN_TEST_CL_FAULTS_H */
