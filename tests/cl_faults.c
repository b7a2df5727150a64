/* cl_faults.c -- the OpenCL entry points attn calls, defined in the test
 * executable so that one chosen call fails (cl_faults.h). Each passes its
 * arguments on to the real function, found once with dlsym(RTLD_NEXT). */
#define _GNU_SOURCE /* RTLD_NEXT */
#include "cl_faults.h"

#ifdef __APPLE__
#include <OpenCL/opencl.h>
#else
#include <CL/cl.h>
#endif

#include <dlfcn.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>

static atomic_int armed;
static atomic_long calls, fail_at;
static _Atomic(const char *) failed;
static atomic_long live[CL_FAULTS_KINDS];

void cl_faults_reset(long at)
{
    atomic_store(&armed, 0);
    atomic_store(&calls, 0);
    atomic_store(&fail_at, at);
    atomic_store(&failed, NULL);
}

void cl_faults_arm(void) { atomic_store(&armed, 1); }
void cl_faults_disarm(void) { atomic_store(&armed, 0); }
long cl_faults_calls(void) { return atomic_load(&calls); }
const char *cl_faults_failed(void) { return atomic_load(&failed); }
long cl_faults_live(int kind) { return atomic_load(&live[kind]); }

const char *cl_faults_kind_name(int kind)
{
    static const char *const names[CL_FAULTS_KINDS] = {"mem", "kernel", "program",
                                                       "event", "queue", "context"};
    return names[kind];
}

/* Whether this call of name is the one to fail (counting it when armed). */
static int fail_now(const char *name)
{
    if (!atomic_load(&armed)) return 0;
    if (atomic_fetch_add(&calls, 1) + 1 != atomic_load(&fail_at)) return 0;
    atomic_store(&failed, name);
    return 1;
}

static void *real_fn(const char *name)
{
    void *f = dlsym(RTLD_NEXT, name);
    if (!f) {
        fprintf(stderr, "cl_faults: no real %s: %s\n", name, dlerror());
        abort();
    }
    return f;
}

/* The real function, looked up on first use. */
#define REAL(name)                                                                                 \
    static __typeof__(&name) real_##name;                                                          \
    if (!real_##name) real_##name = (__typeof__(&name))real_fn(#name)

static void count(int kind, long d) { atomic_fetch_add(&live[kind], d); }

/* The three shapes of a wrapped call, each given its parameter list and
 * the same names as an argument list. A create that fails returns NULL and
 * its error; a created object is counted as one of its kind. */
#define CREATE(type, kind, name, error, params, args)                                              \
    CL_API_ENTRY type CL_API_CALL name params                                                      \
    {                                                                                              \
        REAL(name);                                                                                \
        if (fail_now(#name)) {                                                                     \
            if (errcode_ret) *errcode_ret = (error);                                               \
            return NULL;                                                                           \
        }                                                                                          \
        type made = real_##name args;                                                              \
        if (made) count(kind, 1);                                                                  \
        return made;                                                                               \
    }

/* A call returning a cl_int that may fail, doing nothing (a failed query
 * writes nothing: a caller that goes on reads what it had before). */
#define FAILABLE(name, error, params, args)                                                        \
    CL_API_ENTRY cl_int CL_API_CALL name params                                                    \
    {                                                                                              \
        REAL(name);                                                                                \
        if (fail_now(#name)) return (error);                                                       \
        return real_##name args;                                                                   \
    }

/* An enqueue that may fail; the event it returns, when asked for, counts. */
#define ENQUEUE(name, params, args)                                                                \
    CL_API_ENTRY cl_int CL_API_CALL name params                                                    \
    {                                                                                              \
        REAL(name);                                                                                \
        if (fail_now(#name)) return CL_OUT_OF_RESOURCES;                                           \
        const cl_int err = real_##name args;                                                       \
        if (err == CL_SUCCESS && event) count(CL_FAULTS_EVENT, 1);                                 \
        return err;                                                                                \
    }

typedef void(CL_CALLBACK *context_notify)(const char *, const void *, size_t, void *);
typedef void(CL_CALLBACK *build_notify)(cl_program, void *);

/* ---- creating ---- */

CREATE(cl_context, CL_FAULTS_CONTEXT, clCreateContext, CL_OUT_OF_HOST_MEMORY,
       (const cl_context_properties *properties, cl_uint num_devices, const cl_device_id *devices,
        context_notify pfn_notify, void *user_data, cl_int *errcode_ret),
       (properties, num_devices, devices, pfn_notify, user_data, errcode_ret))
CREATE(cl_command_queue, CL_FAULTS_QUEUE, clCreateCommandQueue, CL_OUT_OF_RESOURCES,
       (cl_context context, cl_device_id device, cl_command_queue_properties properties,
        cl_int *errcode_ret),
       (context, device, properties, errcode_ret))
CREATE(cl_mem, CL_FAULTS_MEM, clCreateBuffer, CL_MEM_OBJECT_ALLOCATION_FAILURE,
       (cl_context context, cl_mem_flags flags, size_t size, void *host_ptr, cl_int *errcode_ret),
       (context, flags, size, host_ptr, errcode_ret))
CREATE(cl_program, CL_FAULTS_PROGRAM, clCreateProgramWithSource, CL_OUT_OF_HOST_MEMORY,
       (cl_context context, cl_uint n, const char **strings, const size_t *lengths,
        cl_int *errcode_ret),
       (context, n, strings, lengths, errcode_ret))
CREATE(cl_program, CL_FAULTS_PROGRAM, clCreateProgramWithBinary, CL_OUT_OF_HOST_MEMORY,
       (cl_context context, cl_uint num_devices, const cl_device_id *device_list,
        const size_t *lengths, const unsigned char **binaries, cl_int *binary_status,
        cl_int *errcode_ret),
       (context, num_devices, device_list, lengths, binaries, binary_status, errcode_ret))
CREATE(cl_kernel, CL_FAULTS_KERNEL, clCreateKernel, CL_OUT_OF_RESOURCES,
       (cl_program program, const char *kernel_name, cl_int *errcode_ret),
       (program, kernel_name, errcode_ret))

/* ---- building, arguments, device lists and information ---- */

FAILABLE(clBuildProgram, CL_OUT_OF_HOST_MEMORY,
         (cl_program program, cl_uint num_devices, const cl_device_id *device_list,
          const char *options, build_notify pfn_notify, void *user_data),
         (program, num_devices, device_list, options, pfn_notify, user_data))
FAILABLE(clSetKernelArg, CL_OUT_OF_RESOURCES,
         (cl_kernel kernel, cl_uint arg_index, size_t arg_size, const void *arg_value),
         (kernel, arg_index, arg_size, arg_value))
FAILABLE(clGetPlatformIDs, CL_OUT_OF_HOST_MEMORY,
         (cl_uint num_entries, cl_platform_id *platforms, cl_uint *num_platforms),
         (num_entries, platforms, num_platforms))
FAILABLE(clGetDeviceIDs, CL_OUT_OF_HOST_MEMORY,
         (cl_platform_id platform, cl_device_type type, cl_uint num_entries,
          cl_device_id *devices, cl_uint *num_devices),
         (platform, type, num_entries, devices, num_devices))

/* The information queries: object, what, size, value, size returned. */
#define INFO_QUERY(name, obj_type, info_type)                                                      \
    FAILABLE(name, CL_OUT_OF_HOST_MEMORY,                                                          \
             (obj_type obj, info_type param, size_t size, void *value, size_t *size_ret),          \
             (obj, param, size, value, size_ret))

INFO_QUERY(clGetPlatformInfo, cl_platform_id, cl_platform_info)
INFO_QUERY(clGetDeviceInfo, cl_device_id, cl_device_info)
INFO_QUERY(clGetCommandQueueInfo, cl_command_queue, cl_command_queue_info)
INFO_QUERY(clGetMemObjectInfo, cl_mem, cl_mem_info)
INFO_QUERY(clGetProgramInfo, cl_program, cl_program_info)
INFO_QUERY(clGetKernelInfo, cl_kernel, cl_kernel_info)
INFO_QUERY(clGetEventProfilingInfo, cl_event, cl_profiling_info)

FAILABLE(clGetProgramBuildInfo, CL_OUT_OF_HOST_MEMORY,
         (cl_program program, cl_device_id device, cl_program_build_info param, size_t size,
          void *value, size_t *size_ret),
         (program, device, param, size, value, size_ret))
FAILABLE(clGetKernelWorkGroupInfo, CL_OUT_OF_HOST_MEMORY,
         (cl_kernel kernel, cl_device_id device, cl_kernel_work_group_info param, size_t size,
          void *value, size_t *size_ret),
         (kernel, device, param, size, value, size_ret))

/* ---- enqueueing and waiting ---- */

ENQUEUE(clEnqueueNDRangeKernel,
        (cl_command_queue queue, cl_kernel kernel, cl_uint work_dim, const size_t *global_offset,
         const size_t *global_size, const size_t *local_size, cl_uint nwait,
         const cl_event *wait, cl_event *event),
        (queue, kernel, work_dim, global_offset, global_size, local_size, nwait, wait, event))
ENQUEUE(clEnqueueReadBuffer,
        (cl_command_queue queue, cl_mem buffer, cl_bool blocking, size_t offset, size_t size,
         void *ptr, cl_uint nwait, const cl_event *wait, cl_event *event),
        (queue, buffer, blocking, offset, size, ptr, nwait, wait, event))
ENQUEUE(clEnqueueWriteBuffer,
        (cl_command_queue queue, cl_mem buffer, cl_bool blocking, size_t offset, size_t size,
         const void *ptr, cl_uint nwait, const cl_event *wait, cl_event *event),
        (queue, buffer, blocking, offset, size, ptr, nwait, wait, event))
ENQUEUE(clEnqueueReadBufferRect,
        (cl_command_queue queue, cl_mem buffer, cl_bool blocking, const size_t *buffer_origin,
         const size_t *host_origin, const size_t *region, size_t buffer_row_pitch,
         size_t buffer_slice_pitch, size_t host_row_pitch, size_t host_slice_pitch, void *ptr,
         cl_uint nwait, const cl_event *wait, cl_event *event),
        (queue, buffer, blocking, buffer_origin, host_origin, region, buffer_row_pitch,
         buffer_slice_pitch, host_row_pitch, host_slice_pitch, ptr, nwait, wait, event))
ENQUEUE(clEnqueueCopyBuffer,
        (cl_command_queue queue, cl_mem src, cl_mem dst, size_t src_offset, size_t dst_offset,
         size_t size, cl_uint nwait, const cl_event *wait, cl_event *event),
        (queue, src, dst, src_offset, dst_offset, size, nwait, wait, event))
ENQUEUE(clEnqueueCopyBufferRect,
        (cl_command_queue queue, cl_mem src, cl_mem dst, const size_t *src_origin,
         const size_t *dst_origin, const size_t *region, size_t src_row_pitch,
         size_t src_slice_pitch, size_t dst_row_pitch, size_t dst_slice_pitch, cl_uint nwait,
         const cl_event *wait, cl_event *event),
        (queue, src, dst, src_origin, dst_origin, region, src_row_pitch, src_slice_pitch,
         dst_row_pitch, dst_slice_pitch, nwait, wait, event))
ENQUEUE(clEnqueueFillBuffer,
        (cl_command_queue queue, cl_mem buffer, const void *pattern, size_t pattern_size,
         size_t offset, size_t size, cl_uint nwait, const cl_event *wait, cl_event *event),
        (queue, buffer, pattern, pattern_size, offset, size, nwait, wait, event))
ENQUEUE(clEnqueueMarkerWithWaitList,
        (cl_command_queue queue, cl_uint nwait, const cl_event *wait, cl_event *event),
        (queue, nwait, wait, event))
ENQUEUE(clEnqueueBarrierWithWaitList,
        (cl_command_queue queue, cl_uint nwait, const cl_event *wait, cl_event *event),
        (queue, nwait, wait, event))

FAILABLE(clFinish, CL_OUT_OF_RESOURCES, (cl_command_queue queue), (queue))
FAILABLE(clWaitForEvents, CL_OUT_OF_RESOURCES, (cl_uint n, const cl_event *events), (n, events))

/* ---- retaining and releasing (never failed, always counted) ---- */

#define RETAIN_RELEASE(type, suffix, kind)                                                         \
    CL_API_ENTRY cl_int CL_API_CALL clRetain##suffix(type x)                                       \
    {                                                                                              \
        REAL(clRetain##suffix);                                                                    \
        const cl_int err = real_clRetain##suffix(x);                                               \
        if (err == CL_SUCCESS) count(kind, 1);                                                     \
        return err;                                                                                \
    }                                                                                              \
    CL_API_ENTRY cl_int CL_API_CALL clRelease##suffix(type x)                                      \
    {                                                                                              \
        REAL(clRelease##suffix);                                                                   \
        const cl_int err = real_clRelease##suffix(x);                                              \
        if (err == CL_SUCCESS) count(kind, -1);                                                    \
        return err;                                                                                \
    }

RETAIN_RELEASE(cl_mem, MemObject, CL_FAULTS_MEM)
RETAIN_RELEASE(cl_kernel, Kernel, CL_FAULTS_KERNEL)
RETAIN_RELEASE(cl_program, Program, CL_FAULTS_PROGRAM)
RETAIN_RELEASE(cl_event, Event, CL_FAULTS_EVENT)
RETAIN_RELEASE(cl_command_queue, CommandQueue, CL_FAULTS_QUEUE)
RETAIN_RELEASE(cl_context, Context, CL_FAULTS_CONTEXT)
